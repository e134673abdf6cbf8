"""How a tool suspends a run: the `ToolResult` that carries a `Request`, and the relay tool.

``pending(kind=..., prompt=...)`` is an ordinary `ToolResult` whose ``metadata["pending"]``
is the `Request` (`toolnexus.suspension`); `pending_of` reads it back. A relay tool is
declared to the model but executed by the host: its first call suspends with the calls, the
retry with the host's `Answer` turns the outputs into its results.

These build tools and results, so they sit above the tool types (`toolnexus._types`), which
sit above the suspension's data.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from ._types import Tool, ToolContext, ToolResult
from .errors import UsageError
from .suspension import (
    RELAY_CALLS_KEY,
    RELAY_KIND,
    Answer,
    Request,
    new_request_id,
    relay_output_for,
    with_note,
)

__all__ = [
    "auth_required",
    "pending",
    "pending_of",
    "relay_result_from_answer",
    "relay_tool",
    "suspension_result",
]


def pending(
    *,
    kind: str,
    prompt: str,
    id: str | None = None,
    url: str | None = None,
    data: dict[str, Any] | None = None,
    expiresAt: str | None = None,
) -> ToolResult:
    """Suspend: a `ToolResult` carrying a `Request` in ``metadata["pending"]``.

    The output is the human fallback text: the prompt, plus the url on its own line.

    Raises:
        UsageError: ``kind`` or ``prompt`` is empty (or not a string), or ``expiresAt`` is not
            an ISO 8601 / RFC 3339 timestamp with a timezone (``"2026-01-02T03:04:05Z"``,
            ``"...+02:00"``); ``"tomorrow"`` or a naive time would otherwise count as expired.

    >>> r = pending(kind="approval", prompt="Ship it?")
    >>> pending_of(r).kind
    'approval'
    """
    for name, value in (("kind", kind), ("prompt", prompt)):
        if not isinstance(value, str) or not value.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UsageError(f"pending: {name} must be a non-empty string, got {value!r}")
    if expiresAt is not None:
        _check_expiry(expiresAt)
    request = Request(
        id=id or new_request_id(),
        kind=kind,
        prompt=prompt,
        url=url,
        data=data,
        expiresAt=expiresAt,
    )
    return suspension_result(request)


def _check_expiry(value: object) -> None:
    if not isinstance(value, str):
        raise UsageError(f"pending: expiresAt must be an ISO 8601 string, got {value!r}")
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise UsageError(
            f"pending: expiresAt {value!r} is not an ISO 8601 timestamp "
            '(e.g. "2026-01-02T03:04:05Z")'
        ) from None
    if parsed.tzinfo is None:
        raise UsageError(
            f"pending: expiresAt {value!r} has no timezone; add Z or an offset such as +02:00"
        )


def suspension_result(request: Request) -> ToolResult:
    """The `ToolResult` that carries ``request`` as a suspension."""
    output = request.prompt + (f"\n{request.url}" if request.url else "")
    return ToolResult(output=output, is_error=True, metadata={"pending": request})


def auth_required(url: str, prompt: str = "Authorization required to continue") -> ToolResult:
    """Suspend with ``kind="authorization"``: the human goes to ``url`` to log in."""
    return pending(kind="authorization", prompt=prompt, url=url)


def pending_of(result: ToolResult | None) -> Request | None:
    """The `Request` a result suspends on, or ``None`` for an ordinary result.

    A plain dict in ``metadata["pending"]`` with the wire keys is accepted too.
    """
    if result is None or not result.metadata:
        return None
    value = result.metadata.get("pending")
    if isinstance(value, Request):
        return value
    if isinstance(value, dict):
        try:
            return Request.from_dict(value)  # pyright: ignore[reportUnknownArgumentType]
        except (TypeError, ValueError):
            return None
    return None


def relay_tool(name: str, description: str, schema: dict[str, Any] | None = None) -> Tool:
    """A declaration-only tool: the model calls it, the *host* executes it.

    The first execution suspends with ``kind="tool_call"`` and ``data.calls``; the loop stamps
    each call's ``id``. The retry with an answer turns ``answer.data["output"]`` /
    ``["isError"]`` into the result; ``ok=False`` becomes
    ``relay declined for <name>: <reason>``.
    """
    input_schema: dict[str, Any] = (
        schema if schema is not None else {"type": "object", "properties": {}}
    )

    async def execute(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        answer = ctx.answer if ctx is not None else None
        if answer is None:
            call = {
                "id": (ctx.call_id if ctx is not None else None) or "",
                "name": name,
                "input": args,
                "arguments": json.dumps(args, separators=(",", ":")),
            }
            return pending(
                kind=RELAY_KIND,
                prompt=f"relay tool call {name} to the caller for execution",
                data={RELAY_CALLS_KEY: [call]},
            )
        return relay_result_from_answer(name, answer, ctx.call_id if ctx is not None else None)

    return Tool(
        name=name,
        description=description,
        input_schema=input_schema,
        source="relay",
        execute=execute,
        validate_args=False,
        handles_declines=True,
    )


def relay_result_from_answer(name: str, answer: Answer, call_id: str | None) -> ToolResult:
    """Map a host's answer for one relayed call to the call's result."""
    if not answer.ok:
        return ToolResult(
            with_note(f"relay declined for {name}: {answer.reason or 'declined'}", answer), True
        )
    found = relay_output_for(answer, call_id, first=True)
    if found is None:
        return ToolResult(f"no result supplied on resume for {name}", True)
    return ToolResult(found[0], found[1])
