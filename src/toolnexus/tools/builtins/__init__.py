"""The ten built-in tools (``source="builtin"``) and the ``builtins`` option.

``builtins`` is ``True``/``None`` (all on, the default), ``False``, or a dict:

- toggles (the contract's): ``disabled: true`` wins, else ``enabled: false`` turns them all
  off; ``tools`` maps a name to ``False`` (drop) or ``True`` (keep) over the all-on baseline,
  unknown names ignored; global-off short-circuits everything else;
- the toolnexus package's ``base_dir``/``baseDir``, ``confine_to_base_dir``/
  ``confineToBaseDir`` and ``shell`` (see `_options`; `builtin_shell` resolves the shell);
- confinement for hosts that run untrusted models (ours, all off by default):
  ``workspace`` (a directory every path-taking built-in is confined to), ``bash`` (``False``:
  no bash tool; ``{"allow": [names]}``: only those programs, no shell; ``{"sandbox": True}``:
  every command under bubblewrap), ``private_network``
  (``False``: webfetch refuses non-public addresses) and ``max_output_bytes`` (the cap on any
  built-in's output, default `DEFAULT_MAX_OUTPUT_BYTES`). See `_options`.

::

    tools = select_builtins({"workspace": "/srv/job-42", "bash": {"allow": ["pytest"]},
                             "private_network": False, "tools": {"webfetch": False}})

The order is fixed: ``bash, read, write, edit, grep, glob, webfetch, question, apply_patch,
todowrite``. Each call builds fresh tools, so each toolkit holds its own ``todowrite`` list.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeAlias, cast

from ..._types import Tool, ToolContext, ToolResult
from ._confine import SKIPPED_DIRS
from ._options import DEFAULT_MAX_OUTPUT_BYTES, BashPolicy, BuiltinOptions, parse_builtin_options
from ._process import KILL_GRACE_MS
from ._shell import NoShellError, no_shell_error
from .todowrite import TodoList, todowrite_tool

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "IGNORE_DIRS",
    "KILL_GRACE_MS",
    "BashPolicy",
    "BuiltinOptions",
    "BuiltinsConfig",
    "NoShellError",
    "TodoList",
    "builtin_shell",
    "builtins_enabled",
    "create_builtin_tools",
    "parse_builtin_options",
    "select_builtins",
]

IGNORE_DIRS = SKIPPED_DIRS
"""Directories ``grep`` and ``glob`` never enter (the toolnexus package's name)."""

_PATH_TAKING = frozenset({"bash", "read", "write", "edit", "grep", "glob", "apply_patch"})

BuiltinsConfig: TypeAlias = bool | Mapping[str, Any] | None


def builtins_enabled(cfg: BuiltinsConfig) -> bool:
    """The global toggle: ``disabled: true`` wins, then ``enabled: false``; default on."""
    if cfg is None or cfg is True:
        return True
    if cfg is False:
        return False
    if cfg.get("disabled") is True:
        return False
    return cfg.get("enabled") is not False


def create_builtin_tools(options: BuiltinOptions | BuiltinsConfig = None) -> list[Tool]:
    """The built-in tools under ``options``, in the canonical order.

    ``options`` is a `BuiltinOptions` or a ``builtins`` value (parsed by
    `parse_builtin_options`); the toggles are not applied here, but ``"bash": False`` leaves
    ``bash`` out. With no options, all ten with the contract's behaviour.

    Raises:
        UsageError: an invalid option (see `parse_builtin_options`).
        NoShellError: ``bash`` is enabled (with no allowlist) but no shell was found.

    Example:
        >>> [t.name for t in create_builtin_tools({"bash": False})][:2]
        ['read', 'write']
    """
    # The tool modules load on first use, keeping them out of ``import toolnexus``.
    from .apply_patch import apply_patch_tool
    from .bash import bash_tool
    from .edit import edit_tool
    from .glob import glob_tool
    from .grep import grep_tool
    from .question import question_tool
    from .read import read_tool
    from .webfetch import webfetch_tool
    from .write import write_tool

    opts = options if isinstance(options, BuiltinOptions) else parse_builtin_options(options)
    if opts.bash.enabled and opts.bash.allow is None and not opts.shell:
        raise no_shell_error()
    tools: list[Tool] = []
    if opts.bash.enabled:
        tools.append(bash_tool(opts))
    tools += [
        read_tool(opts),
        write_tool(opts),
        edit_tool(opts),
        grep_tool(opts),
        glob_tool(opts),
        webfetch_tool(opts),
        question_tool(),
        apply_patch_tool(opts),
        todowrite_tool(opts),
    ]
    if opts.refusal is not None:
        return [_refusing(t, opts.refusal) if t.name in _PATH_TAKING else t for t in tools]
    return tools


def builtin_shell(cfg: BuiltinsConfig = None) -> list[str]:
    """The argv prefix ``bash`` runs commands with under ``cfg`` (its ``shell``, else the one
    found on this machine), e.g. ``["/usr/bin/bash", "-c"]``.

    Raises:
        NoShellError: no ``shell`` given and none found (a `RuntimeError` too).
    """
    shell = parse_builtin_options(cfg).shell
    if not shell:
        raise no_shell_error()
    return list(shell)


def _refusing(tool: Tool, reason: str) -> Tool:
    """``tool`` failing every call with ``reason`` (a confinement that cannot be honoured)."""

    async def execute(args: Any = None, ctx: ToolContext | None = None) -> ToolResult:
        del args, ctx
        return ToolResult(f"{tool.name}: {reason}", is_error=True)

    return dataclasses.replace(tool, execute=execute)


def select_builtins(cfg: BuiltinsConfig) -> list[Tool]:
    """The built-ins the ``builtins`` option keeps: global toggle first (off ⇒ ``[]``, and
    nothing else is looked at), then the options, then the per-tool map.

    Raises:
        UsageError: an unknown key or an invalid option in ``cfg`` (when not globally off).
    """
    if not builtins_enabled(cfg):
        return []
    per_tool: Mapping[str, Any] = {}
    if isinstance(cfg, Mapping):
        raw = cfg.get("tools")
        if isinstance(raw, Mapping):
            per_tool = cast(Mapping[str, Any], raw)
    opts = parse_builtin_options(cfg)
    if per_tool.get("bash", True) is False:  # off by name: no shell needed
        opts = dataclasses.replace(opts, bash=BashPolicy(enabled=False))
    return [t for t in create_builtin_tools(opts) if per_tool.get(t.name, True) is not False]
