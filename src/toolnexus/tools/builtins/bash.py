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
happens, every word reaches the program as typed. An allowed program keeps its own powers
(``git -c alias...``, a ``conftest.py`` under ``pytest``), so allow only what you trust with
the workspace. ``"bash": False`` removes the tool.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..._types import JSONSchema, Tool, ToolContext, ToolResult
from ._args import number_arg, optional_text_arg, text_arg
from ._confine import Paths
from ._options import BuiltinOptions
from ._output import BuiltinError, builtin_tool, decode_prefix, truncation_notice
from ._process import Finished, run_process

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
    """The ``bash`` built-in under ``options`` (its allowlist, workspace and output cap)."""
    paths = options.paths()
    allow = options.bash.allow
    shell = options.shell
    cap = options.max_output_bytes
    description = _DESCRIPTION
    if allow is not None:
        description += (
            f" Only these programs may run: {', '.join(allow)}. No shell features: pipes, "
            "chaining, redirection, substitution and variables are refused."
        )

    async def run(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        command = text_arg(args, "command")
        timeout_ms = number_arg(args, "timeout", DEFAULT_TIMEOUT_MS)
        workdir = optional_text_arg(args, "workdir")
        if not command.strip():
            raise BuiltinError("command is required")
        argv = _argv(command, allow, options.shell)
        cwd = _workdir(paths, workdir)
        stop = ctx.signal if ctx is not None else None
        if stop is not None and stop.is_set():
            raise BuiltinError("cancelled before the command started")
        try:
            finished = await run_process(
                argv, cwd=cwd, timeout=timeout_ms / 1000, stop=stop, limit=cap
            )
        except FileNotFoundError:
            raise BuiltinError(f"command not found: {argv[0]}") from None
        except PermissionError:
            raise BuiltinError(f"permission denied: {argv[0]}") from None
        return _result(finished, timeout_ms, cap, "" if allow is not None else " ".join(shell))

    return builtin_tool(
        "bash", description, BASH_SCHEMA, run, max_output_bytes=cap, caps_itself=True
    )


def _argv(command: str, allow: Sequence[str] | None, shell: Sequence[str]) -> list[str]:
    if allow is None:
        return [*shell, command]
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
    path = paths.resolve(raw)
    if not path.is_dir():
        raise BuiltinError(f"workdir is not a directory: {raw}")
    return path


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
