"""What a built-in returns: the error-safe wrapper and the output cap.

Every built-in is a plain ``run(args, ctx) -> ToolResult`` coroutine wrapped by `builtin_tool`,
which guarantees the contract's rule that a failure is an ``is_error`` result, never an
exception: a `BuiltinError` raised anywhere inside becomes ``"<tool>: <message>"``, and any
other exception becomes ``"<tool>: <ExceptionType>: <message>"``.

The wrapper also caps the output at ``max_output_bytes`` UTF-8 bytes, cut on a character
boundary, followed by the notice ``\\n[truncated: output exceeded N bytes]``. ``bash`` caps its
own output while reading (so a runaway command costs no memory) and sets ``caps_itself``.
"""

from __future__ import annotations

import codecs
from collections.abc import Awaitable, Callable
from typing import Any

from ..._types import JSONSchema, Tool, ToolContext, ToolResult

__all__ = [
    "BuiltinError",
    "Run",
    "builtin_tool",
    "cap_text",
    "decode_prefix",
    "truncation_notice",
]

Run = Callable[[dict[str, Any], ToolContext | None], Awaitable[ToolResult]]


class BuiltinError(Exception):
    """A failure the model should read: the wrapper turns it into ``is_error``."""


def truncation_notice(limit: int) -> str:
    """The line appended to an output cut at ``limit`` bytes."""
    return f"\n[truncated: output exceeded {limit} bytes]"


def decode_prefix(data: bytes, *, complete: bool) -> str:
    """``data`` decoded as UTF-8, invalid bytes as U+FFFD. When ``data`` is only the start of
    a longer output (``complete=False``) a character cut at the end is dropped whole."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return decoder.decode(data, final=complete)


def cap_text(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` UTF-8 bytes plus the notice, and whether it was cut."""
    if len(text) * 4 <= limit:  # cannot exceed: skip the encode on the common small case
        return text, False
    data = text.encode("utf-8", errors="replace")
    if len(data) <= limit:
        return text, False
    return decode_prefix(data[:limit], complete=False) + truncation_notice(limit), True


def builtin_tool(
    name: str,
    description: str,
    schema: JSONSchema,
    run: Run,
    *,
    max_output_bytes: int,
    caps_itself: bool = False,
) -> Tool:
    """A ``source="builtin"`` `Tool` whose ``execute`` never raises and caps its output."""

    async def execute(
        args: dict[str, Any] | None = None, ctx: ToolContext | None = None
    ) -> ToolResult:
        try:
            result = await run(args if isinstance(args, dict) else {}, ctx)
        except BuiltinError as exc:
            return ToolResult(f"{name}: {exc}", is_error=True)
        except Exception as exc:  # the contract: a failure is a result, never a raise
            detail = str(exc)
            text = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
            return ToolResult(f"{name}: {text}", is_error=True)
        if not caps_itself:
            result.output, cut = cap_text(result.output, max_output_bytes)
            if cut:
                result.metadata = {**(result.metadata or {}), "truncated": True}
        return result

    return Tool(
        name=name,
        description=description,
        input_schema=schema,
        source="builtin",
        execute=execute,
    )
