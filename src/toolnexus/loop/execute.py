"""Running one tool: normalise what it returns, turn a raise into an error result.

This is shared by `Toolkit.execute` (the bring-your-own-loop path) and the engine, so a tool
behaves the same whichever loop drives it.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, cast

from .._types import Tool, ToolContext, ToolResult

__all__ = ["coerce_result", "invoke_tool", "unknown_tool_result"]


def coerce_result(returned: object) -> ToolResult:
    """Normalise a tool's return value into a `ToolResult`.

    Content parts (``ContentPart`` objects or part dicts) become canonical dicts; a result
    whose parts are malformed becomes an error result that says why.
    """
    value = cast(Any, returned)
    if isinstance(value, ToolResult):
        return value if value.parts is None else _with_parts(value, value.parts)
    if isinstance(value, str):
        return ToolResult(value)
    if value is None:
        return ToolResult("")
    if isinstance(value, dict) and "output" in value:
        data = cast(dict[str, Any], value)
        meta = data.get("metadata")
        result = ToolResult(
            str(data["output"]),
            bool(data.get("is_error", data.get("isError", False))),
            meta if isinstance(meta, dict) else None,  # pyright: ignore[reportUnknownArgumentType]
        )
        raw = data.get("parts")
        return result if raw is None else _with_parts(result, raw)
    try:
        return ToolResult(json.dumps(returned))
    except (TypeError, ValueError):
        return ToolResult(str(returned))


def _with_parts(result: ToolResult, raw: Any) -> ToolResult:
    # Size is not checked here: a tool-derived part over the limit is sent as a placeholder.
    from ..parts import ContentPartError, normalize_parts

    try:
        if not isinstance(raw, list | tuple):
            raise ContentPartError(f"parts must be a list, got {type(raw).__name__}")
        parts = normalize_parts(cast("list[Any]", raw), check_size=False)
    except ContentPartError as exc:
        return ToolResult(f"tool returned an invalid content part: {exc}", True, result.metadata)
    return ToolResult(result.output, result.is_error, result.metadata, parts or None)


async def invoke_tool(tool: Tool, args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
    """Execute ``tool`` once; a raise becomes ``is_error`` with the exception named."""
    try:
        value = tool.execute(args, ctx)
        if inspect.isawaitable(value):
            value = await value
    except Exception as exc:
        return ToolResult(f"tool {tool.name} failed: {type(exc).__name__}: {exc}", True)
    return coerce_result(value)


def unknown_tool_result(name: str, available: list[str]) -> ToolResult:
    """The error the model sees when it calls a tool that does not exist."""
    shown = ", ".join(sorted(available)[:50]) or "none"
    return ToolResult(f'unknown tool "{name}" (available: {shown})', True)
