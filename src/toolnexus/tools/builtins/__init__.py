"""The built-in tools (``source="builtin"``) and the ``builtins`` option.

``builtins`` is ``True``/``None`` (all on, the default), ``False``, or a dict: ``disabled: true``
wins, else ``enabled: false`` turns them all off; ``tools`` maps a name to ``False`` (drop) or
``True`` (keep) over the all-on baseline, unknown names ignored.

This build ships ``question``; the other nine (``bash``, ``read``, ``write``, ``edit``,
``grep``, ``glob``, ``webfetch``, ``apply_patch``, ``todowrite``) land in a later release.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias, cast

from ..._types import Tool
from .question import question_tool

__all__ = ["BuiltinsConfig", "builtins_enabled", "create_builtin_tools", "select_builtins"]

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


def create_builtin_tools() -> list[Tool]:
    """Every built-in tool this build ships, in the canonical order."""
    return [question_tool()]


def select_builtins(cfg: BuiltinsConfig) -> list[Tool]:
    """The built-ins the option keeps (global toggle first, then the per-tool map)."""
    if not builtins_enabled(cfg):
        return []
    per_tool: Mapping[str, Any] = {}
    if isinstance(cfg, Mapping):
        raw = cfg.get("tools")
        if isinstance(raw, Mapping):
            per_tool = cast(Mapping[str, Any], raw)
    return [t for t in create_builtin_tools() if per_tool.get(t.name, True) is not False]
