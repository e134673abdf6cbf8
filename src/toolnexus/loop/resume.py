"""Resuming a halted run: the guards, and a checkpoint rebuilt from a host-held transcript.

Everything here is pure. The client loads the checkpoint that the halt stored (so sibling
results are never executed twice); when the host kept only ``RunResult.messages`` and
``pending`` and no store holds the checkpoint, `checkpoint_from_transcript` rebuilds one from
the transcript: the last assistant turn with tool calls, its recorded results, the placeholder
of the halted call (replaced, never duplicated) and the calls that never ran.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from .._types import Message, Tool, ToolResult, empty_usage
from ..errors import AnswerMismatch, CheckpointError, ResumeError
from ..llm.convert import normalize_history
from ..suspension import Answer, Request, is_relay_request, relay_calls_of, relay_output_for
from .checkpoint import Checkpoint, Outstanding

__all__ = [
    "as_answer",
    "as_request",
    "check_echo",
    "check_relay_payload",
    "check_tools",
    "checkpoint_from_transcript",
]


def as_request(value: Request | Mapping[str, Any]) -> Request:
    """Accept a `Request` or its wire dict."""
    if isinstance(value, Request):
        return value
    try:
        return Request.from_dict(value)
    except (TypeError, ValueError) as exc:
        raise ResumeError(
            f"toolnexus: cannot resume — the pending request is malformed: {exc}"
        ) from exc


def as_answer(value: Answer | Mapping[str, Any]) -> Answer:
    """Accept an `Answer` or its wire dict."""
    if isinstance(value, Answer):
        return value
    try:
        return Answer.from_dict(value)
    except (TypeError, ValueError) as exc:
        raise ResumeError(f"toolnexus: cannot resume — the answer is malformed: {exc}") from exc


def check_echo(pending: Request, answer: Answer) -> None:
    """The Answer must echo the pending Request's id."""
    if answer.id != pending.id:
        raise AnswerMismatch(
            f'toolnexus: cannot resume — answer id "{answer.id}" does not echo the pending '
            f'request id "{pending.id}"'
        )


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


def check_tools(checkpoint: Checkpoint, tools: Mapping[str, Tool]) -> None:
    """Every call that must still run has to exist in the toolkit used to resume."""
    missing = sorted(
        {o.name for o in checkpoint.outstanding if o.state != "done" and o.name not in tools}
    )
    if missing:
        raise ResumeError(
            "toolnexus: cannot resume — the toolkit lacks the halted tool(s): " + ", ".join(missing)
        )


def check_relay_payload(checkpoint: Checkpoint, answer: Answer, tools: Mapping[str, Tool]) -> None:
    """An ``ok`` answer to relayed calls must carry an output for every one of them."""
    if not answer.ok:
        return
    targets = [
        o
        for o in checkpoint.outstanding
        if o.state == "suspended" and o.request is not None and o.request.id == answer.id
    ]
    relayed = [o for o in targets if (t := tools.get(o.name)) is not None and t.source == "relay"]
    for position, slot in enumerate(relayed):
        if relay_output_for(answer, slot.call_id, first=position == 0) is None:
            raise ResumeError(
                f"toolnexus: cannot resume — the answer carries no result for relayed call "
                f'{slot.name} ("{slot.call_id}"): supply data.results[] with its id, or '
                "data.output for a single call (use answer_output / relay_answer)"
            )
