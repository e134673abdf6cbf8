"""The ``bash`` built-in: run a shell command.

``bash{command, workdir?, timeout?, description?}`` runs ``command`` with the shell prefix
(``builtins["shell"]``, else ``bash -c``, ``/bin/sh -c`` or ``sh -c``, found when the tools are
built; see `_shell`) in ``workdir`` (default: the workspace, else ``base_dir``, else the cwd),
and answers its combined stdout and stderr. ``timeout`` is in milliseconds (default 60000).
``metadata`` always has ``shell`` (the prefix joined by spaces) and ``truncated``. A non-zero
exit is an error ``<output>\nbash: command exited with code <n>`` (``exitCode``); a timeout
(``bash: command timed out after <ms>ms\n<output>``, ``timedOut``/``killedTree``, no
``exitCode``) or the run's cancel signal (``ctx.signal``) stops the command's whole process
group, SIGTERM then SIGKILL (see `_process`), and is an error too. ``description`` is for
humans and is ignored. Output beyond ``max_output_bytes`` is dropped while it is read; the
notice follows what was kept.

**Allowlist** (``builtins={"bash": {"allow": ["git", "pytest"]}}``). Then a command is accepted
only when:

1. it contains none of ``;`` ``&`` ``|`` `````` ``$`` ``<`` ``>`` or a newline — anywhere,
   quoted or not, so nothing can chain, pipe, substitute, expand or redirect;
2. it splits into words by POSIX shell quoting rules (``shlex``), without an unclosed quote;
3. its first word is *exactly* one of the allowed names (``/usr/bin/git`` or ``VAR=1 git``
   do not match ``git``).

The words are then run directly, without a shell: no globbing, ``~`` or variable expansion
happens, every word reaches the program as typed. The program is looked up on the absolute
entries of ``PATH`` only, and runs without the host's ``GIT_*`` variables. ``git`` gets extra
rules so that it cannot run other programs (see `_git`); every other allowed program keeps
its own powers (a ``conftest.py`` under ``pytest``, ``find -exec``), so allow only what you
trust with the machine, or sandbox it. ``"bash": False`` removes the tool.

**Sandbox** (``builtins={"workspace": ..., "bash": {"sandbox": True}}``): every command, with or
without an allowlist, runs under bubblewrap with only the workspace writable, no network and
resource limits (see `_sandbox`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..._types import JSONSchema, Tool, ToolContext, ToolResult
from ._args import number_arg, optional_text_arg, text_arg
from ._confine import Paths
from ._git import check_git_words, git_environment
from ._options import BuiltinOptions
from ._output import BuiltinError, builtin_tool, decode_prefix, truncation_notice
from ._process import Finished, run_process
from ._sandbox import sandbox_argv, sandbox_env

__all__ = ["BASH_SCHEMA", "DEFAULT_TIMEOUT_MS", "FORBIDDEN_WITH_ALLOWLIST", "bash_tool"]

DEFAULT_TIMEOUT_MS = 60_000

FORBIDDEN_WITH_ALLOWLIST = (";", "&", "|", "`", "$", "<", ">", "\n", "\r")
"""Characters refused anywhere in a command when an allowlist is set."""

BASH_SCHEMA: JSONSchema = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "The shell command to run"},
        "workdir": {
            "type": "string",
            "description": "Directory to run it in (default: the current directory)",
        },
        "timeout": {
            "type": "number",
            "description": "Timeout in milliseconds (default 60000)",
        },
        "description": {
            "type": "string",
            "description": "A short description of what the command does, for humans",
        },
    },
    "required": ["command"],
    "additionalProperties": False,
}

_DESCRIPTION = (
    "Run a shell command and return its combined stdout and stderr. A non-zero exit status "
    "is an error. Commands are killed after the timeout (milliseconds, default 60000)."
)


def bash_tool(options: BuiltinOptions) -> Tool:
    """The ``bash`` built-in under ``options`` (allowlist, sandbox, shell, workspace, output
    cap)."""
    paths = options.paths()
    allow = options.bash.allow
    sandbox = options.bash.sandbox
    shell = options.shell
    cap = options.max_output_bytes
    description = _DESCRIPTION
    if allow is not None:
        description += (
            f" Only these programs may run: {', '.join(allow)}. No shell features: pipes, "
            "chaining, redirection, substitution and variables are refused."
        )
    if sandbox is not None:
        description += " Commands run in a sandbox: only the working directory tree is writable" + (
            "." if sandbox.network else ", and there is no network."
        )

    async def run(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        command = text_arg(args, "command")
        timeout_ms = number_arg(args, "timeout", DEFAULT_TIMEOUT_MS)
        if sandbox is not None and sandbox.timeout is not None:
            timeout_ms = min(timeout_ms, sandbox.timeout * 1000)
        workdir = optional_text_arg(args, "workdir")
        if not command.strip():
            raise BuiltinError("command is required")
        argv, env = _command(
            command, allow, options.workspace, shell, sandboxed=sandbox is not None
        )
        cwd = _workdir(paths, workdir)
        if sandbox is not None and options.workspace is not None:
            argv = sandbox_argv(sandbox, options.workspace, cwd, argv)
            env = {**sandbox_env(os.environ), **(env or {})}
        stop = ctx.signal if ctx is not None else None
        if stop is not None and stop.is_set():
            raise BuiltinError("cancelled before the command started")
        try:
            finished = await run_process(
                argv, cwd=cwd, timeout=timeout_ms / 1000, stop=stop, limit=cap, env=env
            )
        except FileNotFoundError:
            raise BuiltinError(f"command not found: {argv[0]}") from None
        except PermissionError:
            raise BuiltinError(f"permission denied: {argv[0]}") from None
        return _result(finished, timeout_ms, cap, "" if allow is not None else " ".join(shell))

    return builtin_tool(
        "bash", description, BASH_SCHEMA, run, max_output_bytes=cap, caps_itself=True
    )


def _command(
    command: str,
    allow: Sequence[str] | None,
    workspace: Path | None,
    shell: Sequence[str],
    *,
    sandboxed: bool,
) -> tuple[list[str], dict[str, str] | None]:
    """The argv to run and its environment (``None``: inherit the process's); without an
    allowlist, the shell prefix and the command."""
    if allow is None:
        return [*shell, command], None
    words = _allowed_words(command, allow)
    if words[0] == "git":
        check_git_words(words)
    if sandboxed:  # looked up inside the sandbox, on its PATH
        return words, git_environment({}, workspace)
    env = git_environment(os.environ, workspace)
    env["PATH"] = ":".join(p for p in env.get("PATH", os.defpath).split(":") if os.path.isabs(p))
    program = shutil.which(words[0], path=env["PATH"])
    if program is None:
        raise BuiltinError(f"command not found: {words[0]}")
    return [program, *words[1:]], env


def _allowed_words(command: str, allow: Sequence[str]) -> list[str]:
    refused = [c for c in FORBIDDEN_WITH_ALLOWLIST if c in command]
    if refused:
        shown = ", ".join(repr(c) for c in refused)
        raise BuiltinError(
            f"shell metacharacters are not allowed here ({shown}); run one allowed program "
            "with plain arguments"
        )
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise BuiltinError(f"cannot parse the command: {exc}") from None
    if not words:
        raise BuiltinError("command must not be empty")
    if words[0] not in allow:
        raise BuiltinError(f"command not allowed: {words[0]!r} (allowed: {', '.join(allow)})")
    return words


def _workdir(paths: Paths, raw: str | None) -> Path | None:
    if raw is None:
        return paths.root if paths.root is not None else paths.base_dir
    with paths.locate(raw) as entry:
        info = entry.lstat()
        if info is None or not stat.S_ISDIR(info.st_mode):
            raise BuiltinError(f"workdir is not a directory: {raw}")
        return entry.path


def _result(finished: Finished, timeout_ms: float, cap: int, shell: str) -> ToolResult:
    truncated = finished.total > cap
    text = decode_prefix(finished.output, complete=not truncated)
    if truncated:
        text += truncation_notice(cap)
    if finished.stopped == "timeout":
        metadata = {"shell": shell, "timedOut": True, "killedTree": True, "truncated": truncated}
        return ToolResult(
            f"bash: command timed out after {int(timeout_ms)}ms\n{text}", True, metadata
        )
    metadata: dict[str, Any] = {
        "shell": shell,
        "exitCode": finished.exit_code,
        "truncated": truncated,
    }
    if finished.stopped == "cancelled":
        head = "bash: command cancelled; its process tree was killed"
        return ToolResult(f"{head}\n{text}" if text else head, True, metadata)
    if finished.exit_code != 0:
        return ToolResult(
            f"{text}\nbash: command exited with code {finished.exit_code}", True, metadata
        )
    return ToolResult(text, False, metadata)
