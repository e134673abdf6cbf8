"""Running one tool: normalise what it returns, turn a raise into an error result.

This is shared by `Toolkit.execute` (the bring-your-own-loop path) and the engine, so a tool
behaves the same whichever loop drives it; tool sources that turn a raise into a result
themselves (`toolnexus.tools.native`) log it here too. It belongs to the tools, below the loop.
"""

from __future__ import annotations

import contextvars
import inspect
import json
import logging
import traceback
from typing import TYPE_CHECKING, Any, cast

from .._types import Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from ..redaction import Redactor

__all__ = ["coerce_result", "invoke_tool", "log_tool_failure", "unknown_tool_result"]

log = logging.getLogger("toolnexus")

_ACTIVE: contextvars.ContextVar[Redactor | None] = contextvars.ContextVar(
    "toolnexus_tool_redactor", default=None
)
"""The redactor of the tool call in progress (a tool that catches its own raise logs with it)."""


def log_tool_failure(name: str, exc: BaseException) -> None:
    """Log the traceback of a tool's raise at DEBUG, masked with the call's redactor.

    Never shown to the model: the model gets ``<Type>: <message>``; the traceback is for the
    host's logs only. Tool sources that turn a raise into a result themselves call this too.
    """
    if not log.isEnabledFor(logging.DEBUG):
        return
    trace = "".join(traceback.format_exception(exc))
    redactor = _ACTIVE.get()
    if redactor is not None:
        trace = redactor.text(trace)
    log.debug("toolnexus: tool %s raised:\n%s", name, trace)


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


async def invoke_tool(
    tool: Tool,
    args: dict[str, Any],
    ctx: ToolContext | None,
    redactor: Redactor | None = None,
) -> ToolResult:
    """Execute ``tool`` once; a raise becomes ``is_error`` with the exception named.

    The traceback of a raise is logged at DEBUG (``toolnexus`` logger), never shown to the
    model. With a ``redactor``, the result — and that log line — have every secret masked:
    this is the boundary where a tool's text enters the run.
    """
    token = _ACTIVE.set(redactor)
    try:
        value = tool.execute(args, ctx)
        if inspect.isawaitable(value):
            value = await value
    except Exception as exc:
        log_tool_failure(tool.name, exc)
        result = ToolResult(f"tool {tool.name} failed: {type(exc).__name__}: {exc}", True)
    else:
        result = coerce_result(value)
    finally:
        _ACTIVE.reset(token)
    return redactor.result(result) if redactor is not None else result


def unknown_tool_result(name: str, available: list[str]) -> ToolResult:
    """The error the model sees when it calls a tool that does not exist."""
    shown = ", ".join(sorted(available)[:50]) or "none"
    return ToolResult(f'unknown tool "{name}" (available: {shown})', True)
