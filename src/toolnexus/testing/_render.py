"""Rendering replies on the OpenAI and Anthropic wire: pure functions over reply data.

A reply is rendered once per variant (style, JSON or SSE, with or without the OpenAI usage
chunk) into a `Template` (`toolnexus.testing._template`): the finished wire text, split around
the few values that change per request (the echoed ``model``, the message id and
server-numbered tool-call ids). Answering a request is then a string join, so the server stays
cheap under benchmark load.
"""

from __future__ import annotations

import json
from typing import Any

from ..llm.base import Style
from ._replies import Call, Completion, EmptyChoices, TokenCounts
from ._template import Template, slot

__all__ = ["error_body", "split_events", "stream_error_event", "template"]

CREATED = 1_700_000_000
"""The fixed ``created`` timestamp of OpenAI replies (deterministic output)."""

_MODEL = slot("model")
_ID = slot("id")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _pieces(value: str, n: int = 3) -> list[str]:
    """Split ``value`` into up to ``n`` non-empty pieces, as a provider's deltas would."""
    if not value:
        return []
    size = -(-len(value) // n)
    return [value[i : i + size] for i in range(0, len(value), size)]


def _call_ids(calls: tuple[Call, ...]) -> tuple[list[str], int]:
    ids: list[str] = []
    auto = 0
    for c in calls:
        if c.id is None:
            ids.append(slot(f"c{auto}"))
            auto += 1
        else:
            ids.append(c.id)
    return ids, auto


def _finish(reply: Completion, style: Style) -> str:
    if reply.finish_reason is not None:
        return reply.finish_reason
    if style == "openai":
        return "tool_calls" if reply.calls else "stop"
    return "tool_use" if reply.calls else "end_turn"


def _openai_usage(u: TokenCounts) -> dict[str, int]:
    return {"prompt_tokens": u.prompt, "completion_tokens": u.completion, "total_tokens": u.total}


def _openai_json(reply: Completion | EmptyChoices, ids: list[str]) -> str:
    choices: list[dict[str, Any]] = []
    if isinstance(reply, Completion):
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.calls:
            message["tool_calls"] = [
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c, cid in zip(reply.calls, ids, strict=True)
            ]
        choices.append({"index": 0, "message": message, "finish_reason": _finish(reply, "openai")})
    return _dumps(
        {
            "id": _ID,
            "object": "chat.completion",
            "created": CREATED,
            "model": _MODEL,
            "choices": choices,
            "usage": _openai_usage(reply.usage),
        }
    )


def _openai_sse(reply: Completion | EmptyChoices, ids: list[str], include_usage: bool) -> str:
    head: dict[str, Any] = {
        "id": _ID,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": _MODEL,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return f"data: {_dumps({**head, 'choices': [choice]})}\n\n"

    events: list[str] = []
    if isinstance(reply, Completion):
        events.append(chunk({"role": "assistant", "content": None if reply.text is None else ""}))
        events.extend(chunk({"content": piece}) for piece in _pieces(reply.text or ""))
        for index, (c, cid) in enumerate(zip(reply.calls, ids, strict=True)):
            function = {"name": c.name, "arguments": ""}
            first = {"index": index, "id": cid, "type": "function", "function": function}
            events.append(chunk({"tool_calls": [first]}))
            events.extend(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                for piece in _pieces(c.arguments)
            )
        events.append(chunk({}, _finish(reply, "openai")))
    else:
        events.append(f"data: {_dumps({**head, 'choices': []})}\n\n")
    if include_usage:
        usage: dict[str, Any] = {**head, "choices": [], "usage": _openai_usage(reply.usage)}
        events.append(f"data: {_dumps(usage)}\n\n")
    events.append("data: [DONE]\n\n")
    return "".join(events)


def _anthropic_content(reply: Completion, ids: list[str]) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if reply.text is not None:
        content.append({"type": "text", "text": reply.text})
    content.extend(
        {"type": "tool_use", "id": cid, "name": c.name, "input": c.input}
        for c, cid in zip(reply.calls, ids, strict=True)
    )
    return content


def _anthropic_json(reply: Completion | EmptyChoices, ids: list[str]) -> str:
    is_completion = isinstance(reply, Completion)
    return _dumps(
        {
            "id": _ID,
            "type": "message",
            "role": "assistant",
            "model": _MODEL,
            "content": _anthropic_content(reply, ids) if is_completion else [],
            "stop_reason": _finish(reply, "anthropic") if is_completion else None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": reply.usage.prompt,
                "output_tokens": reply.usage.completion,
                **_anthropic_cache(reply.usage),
            },
        }
    )


def _anthropic_cache(u: TokenCounts) -> dict[str, int]:
    """The prompt-cache counts Anthropic reports beside ``input_tokens``, when there are any."""
    out: dict[str, int] = {}
    if u.cache_read:
        out["cache_read_input_tokens"] = u.cache_read
    if u.cache_creation:
        out["cache_creation_input_tokens"] = u.cache_creation
    return out


def _event(data: dict[str, Any]) -> str:
    return f"event: {data['type']}\ndata: {_dumps(data)}\n\n"


def _anthropic_sse(reply: Completion | EmptyChoices, ids: list[str]) -> str:
    u = reply.usage
    start: dict[str, Any] = {
        "id": _ID,
        "type": "message",
        "role": "assistant",
        "model": _MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        # As the real API does: output_tokens here is a placeholder; message_delta has the count.
        "usage": {
            "input_tokens": u.prompt,
            "output_tokens": min(1, u.completion),
            **_anthropic_cache(u),
        },
    }
    events = [_event({"type": "message_start", "message": start})]
    if isinstance(reply, Completion):
        blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        if reply.text is not None:
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(reply.text)]
            blocks.append(({"type": "text", "text": ""}, deltas))
        for c, cid in zip(reply.calls, ids, strict=True):
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(c.arguments)]
            blocks.append(({"type": "tool_use", "id": cid, "name": c.name, "input": {}}, deltas))
        for index, (block, deltas) in enumerate(blocks):
            events.append(
                _event({"type": "content_block_start", "index": index, "content_block": block})
            )
            events.extend(
                _event({"type": "content_block_delta", "index": index, "delta": d}) for d in deltas
            )
            events.append(_event({"type": "content_block_stop", "index": index}))
        delta = {"stop_reason": _finish(reply, "anthropic"), "stop_sequence": None}
        usage = {"output_tokens": u.completion}
        events.append(_event({"type": "message_delta", "delta": delta, "usage": usage}))
    events.append(_event({"type": "message_stop"}))
    return "".join(events)


def template(
    reply: Completion | EmptyChoices, style: Style, stream: bool, include_usage: bool
) -> Template:
    """The compiled wire template of ``reply`` for one variant, compiled on first use."""
    key = (style, stream, include_usage and stream and style == "openai")
    compiled = reply.templates.get(key)
    if compiled is None:
        ids, auto = _call_ids(reply.calls) if isinstance(reply, Completion) else ([], 0)
        if style == "openai":
            text = _openai_sse(reply, ids, key[2]) if stream else _openai_json(reply, ids)
        else:
            text = _anthropic_sse(reply, ids) if stream else _anthropic_json(reply, ids)
        compiled = reply.templates[key] = Template.compile(text, auto)
    return compiled


def split_events(sse: str) -> list[str]:
    """The events of an SSE text, each with its ``\\n\\n`` terminator."""
    return [event + "\n\n" for event in sse.split("\n\n")[:-1]]


def stream_error_event(style: Style, type: str, message: str) -> str:
    """The in-stream error event of a style."""
    if style == "anthropic":
        return _event({"type": "error", "error": {"type": type, "message": message}})
    error = {"message": message, "type": type, "param": None, "code": None}
    return f"data: {_dumps({'error': error})}\n\n"


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_body(style: Style, status: int) -> bytes:
    """The provider-style error JSON for an `http_error` without an explicit body."""
    kind = _ERROR_TYPES.get(status, "api_error")
    message = f"scripted error {status}"
    if style == "anthropic":
        payload: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        payload = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return _dumps(payload).encode()
