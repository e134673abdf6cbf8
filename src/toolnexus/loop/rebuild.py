"""A halted turn rebuilt from a transcript the host kept, when no store holds its checkpoint.

Pure: the last assistant turn with tool calls, its recorded results, the placeholder of the
halted call (replaced, never duplicated) and the calls that never ran. A transcript that still
carries the halt note (``toolnexus_halt``) is read from the note, which is exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from .._types import Message, ToolResult, empty_usage
from ..errors import CheckpointError, ResumeError
from ..llm.convert import normalize_history
from ..suspension import Request, is_relay_request, relay_calls_of
from .checkpoint import Checkpoint, Outstanding

__all__ = ["checkpoint_from_transcript"]


def _content(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:  # pyright: ignore[reportUnknownVariableType]
            if isinstance(part, dict) and isinstance(part.get("text"), str):  # pyright: ignore[reportUnknownMemberType]
                parts.append(part["text"])  # pyright: ignore[reportUnknownArgumentType]
        return "".join(parts)
    return ""


def checkpoint_from_transcript(
    history: Sequence[Message], pending: Request, *, model: str, style: str
) -> Checkpoint:
    """Rebuild the halted turn from a transcript the host kept.

    Raises:
        ResumeError: the transcript is empty or has no assistant turn with tool calls.
    """
    if not history:
        raise ResumeError("toolnexus: cannot resume — no transcript supplied")
    messages = normalize_history(list(history))
    at = -1
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.get("role") == "assistant" and m.get("tool_calls"):
            at = i
            break
    if at < 0:
        raise ResumeError(
            "toolnexus: cannot resume — the transcript has no halted assistant turn with tool calls"
        )
    for m in messages[at + 1 :]:
        note = m.get("toolnexus_halt")
        if m.get("role") == "tool" and isinstance(note, dict):
            try:
                noted = Checkpoint.from_note(note, messages[: at + 1])
            except CheckpointError:
                break  # a damaged note: fall back to reading the transcript
            if any(o.request is not None and o.request.id == pending.id for o in noted.outstanding):
                return noted
            break
    calls: list[Any] = messages[at]["tool_calls"]
    results: dict[str, Message] = {}
    order: list[str] = []
    for m in messages[at + 1 :]:
        if m.get("role") == "tool" and isinstance(m.get("tool_call_id"), str):
            results[m["tool_call_id"]] = m
            order.append(m["tool_call_id"])
    halted: set[str] = set()
    if is_relay_request(pending):
        halted = {c.id for c in relay_calls_of(pending) if c.id}
    placeholder = pending.prompt + (f"\n{pending.url}" if pending.url else "")
    if not halted and order and _content(results[order[-1]]) in (pending.prompt, placeholder):
        halted = {order[-1]}
    if not halted:
        unanswered = [_call_id(c) for c in calls if _call_id(c) not in results]
        halted = set(unanswered[:1])
    outstanding: list[Outstanding] = []
    for raw in calls:
        call: dict[str, Any] = raw if isinstance(raw, dict) else {}  # pyright: ignore[reportUnknownVariableType]
        fn: dict[str, Any] = call.get("function") or {}
        cid = str(call.get("id") or "")
        name = str(fn.get("name") or "")
        arguments = fn.get("arguments")
        arguments = arguments if isinstance(arguments, str) else "{}"
        if cid in halted:
            outstanding.append(Outstanding(cid, name, arguments, "suspended", request=pending))
        elif cid in results:
            message = results[cid]
            result = ToolResult(_content(message), bool(message.get("is_error")))
            outstanding.append(Outstanding(cid, name, arguments, "done", result=result))
        else:
            outstanding.append(Outstanding(cid, name, arguments, "not_run"))
    if not outstanding:
        raise ResumeError(
            "toolnexus: cannot resume — the transcript has no halted assistant turn with tool calls"
        )
    turns = sum(1 for m in messages if m.get("role") == "assistant")
    return Checkpoint(
        model=model,
        style=style,
        messages=messages[: at + 1],
        turn=turns,
        usage=empty_usage(),
        tool_calls=[],
        outstanding=outstanding,
        pending=pending,
    )


def _call_id(call: Any) -> str:
    if not isinstance(call, dict):
        return ""
    return str(cast(dict[str, Any], call).get("id") or "")
