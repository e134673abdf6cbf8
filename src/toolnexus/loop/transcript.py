"""Pure transcript rules: messages, records, usage, relay folding, halted-turn balancing.

No I/O and no engine state: plain functions over the run's data, testable on their own.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

from .._types import Message, RunResult, ToolCallRecord, ToolResult, Usage
from ..errors import CallbackError, UsageError
from ..llm.base import ModelToolCall
from ..parts import normalize_parts
from ..suspension import (
    RELAY_CALLS_KEY,
    Answer,
    Request,
    answer_problem,
    is_relay_request,
    relay_output_for,
    with_note,
)
from ..tools.validation import parse_arguments
from .state import RunState, Slot

log = logging.getLogger("toolnexus")

Event = dict[str, Any]


async def aclose(events: AsyncIterator[Any]) -> None:
    closer = getattr(events, "aclose", None)
    if closer is not None:
        try:
            await closer()
        except Exception:
            log.debug("toolnexus: closing a stream failed", exc_info=True)


def parse(slot: Slot) -> tuple[dict[str, Any], str | None]:
    args, problem = parse_arguments(slot.arguments)
    if problem is not None:
        return {}, f"tool {slot.name}: {problem}"
    return args, None


def peek(slot: Slot) -> dict[str, Any]:
    args, _ = parse_arguments(slot.arguments)
    return args


def source(state: RunState, name: str) -> str:
    tool = state.by_name.get(name)
    return tool.source if tool is not None else "custom"


def as_answer(value: Any) -> Answer:
    """What a ``wait_for`` returned, as a well-typed `Answer` (the same rule as everywhere).

    Raises:
        CallbackError: not an Answer or its wire dict, or a field of the wrong type.
    """
    if isinstance(value, Mapping):
        try:
            value = Answer.from_dict(value)  # pyright: ignore[reportUnknownArgumentType]
        except (TypeError, ValueError) as exc:
            raise CallbackError(f"wait_for returned an invalid Answer: {exc}") from exc
    if not isinstance(value, Answer):
        raise CallbackError(f"wait_for must return an Answer, got {type(value).__name__}")
    problem = answer_problem(value)
    if problem:
        raise CallbackError(f"wait_for returned an invalid Answer: {problem}")
    return value


def add_usage(total: Usage, part: Usage) -> None:
    p = part.get("prompt_tokens", 0)
    c = part.get("completion_tokens", 0)
    total["prompt_tokens"] += p
    total["completion_tokens"] += c
    total["total_tokens"] += part.get("total_tokens", p + c) or (p + c)


def unique_calls(calls: list[ModelToolCall], turn: int) -> list[ModelToolCall]:
    seen: set[str] = set()
    out: list[ModelToolCall] = []
    for i, c in enumerate(calls):
        cid = c.id or f"call_{turn}_{i}"
        if cid in seen:
            cid = f"{cid}_{i}"
        seen.add(cid)
        out.append(c if cid == c.id else ModelToolCall(cid, c.name, c.arguments))
    return out


def assistant_message(text: str | None, calls: list[ModelToolCall]) -> Message:
    message: Message = {"role": "assistant", "content": text if text else None}
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    return message


def user_message(prompt: str | Sequence[Any]) -> Message:
    """The user turn of a prompt: a string as it is, a list as canonical content parts
    (`ContentPart`\\s, part dicts and bare strings, validated, order kept).

    Raises:
        ContentPartError: a list item is not a part, or a part is malformed or too big.
        UsageError: ``prompt`` is neither a string nor a list.
    """
    if isinstance(prompt, str):
        return {"role": "user", "content": prompt}
    if not isinstance(prompt, list | tuple):
        raise UsageError(
            f"prompt must be a string or a list of content parts, got {type(prompt).__name__}"
        )
    # The size is checked when the request is built, against the client's own ceiling.
    parts = normalize_parts(cast("Sequence[Any]", prompt), check_size=False)
    return {"role": "user", "content": parts}


def tool_message(call_id: str, result: ToolResult, name: str | None = None) -> Message:
    """The canonical tool message; a result with parts also keeps them and the tool's name
    (COMPAT §6: ``parts``/``name`` only with parts)."""
    message: Message = {"role": "tool", "tool_call_id": call_id, "content": result.output}
    if result.is_error:
        message["is_error"] = True
    if result.parts:
        message["parts"] = result.parts
        message["name"] = name
    return message


def record(slot: Slot, result: ToolResult) -> ToolCallRecord:
    return ToolCallRecord(
        name=slot.name,
        args=slot.args,
        output=result.output,
        is_error=result.is_error,
        metadata=result.metadata,
        id=slot.id,
    )


def done_event(result: RunResult) -> Event:
    return {"type": "done", "result": result}


def result_event(slot: Slot) -> Event:
    assert slot.result is not None
    return {
        "type": "tool_result",
        "id": slot.id,
        "name": slot.name,
        "output": slot.result.output,
        "is_error": slot.result.is_error,
    }


def last_text(messages: list[Message]) -> str:
    for m in reversed(messages):
        if m.get("role") == "assistant":
            content = m.get("content")
            return content if isinstance(content, str) else ""
    return ""


NOT_RUN = "not run: the run halted before this call"
MAX_FOLLOW_UPS = 8  # new questions one call may ask after its first answer


def same_question(a: Request, b: Request) -> bool:
    return a.id == b.id or (a.kind, a.prompt, a.url) == (b.kind, b.prompt, b.url)


HALT_KEY = "toolnexus_halt"


def balance_last_turn(messages: list[Message]) -> None:
    """Give every call of a halted last turn a result, in place, before a new user turn.

    A transcript saved at a halt ends with the calls before the halted one, the halted call's
    placeholder, and nothing for the calls after it. A *new* turn on it (a replay, not a
    resume) must still send the provider one result per call, so the missing ones are filled
    with an explicit "not run" error.
    """
    at = len(messages) - 1
    while at >= 0 and messages[at].get("role") == "tool":
        at -= 1
    if at < 0 or messages[at].get("role") != "assistant" or not messages[at].get("tool_calls"):
        return
    answered = {m.get("tool_call_id") for m in messages[at + 1 :]}
    calls: list[Any] = messages[at]["tool_calls"]
    for call in calls:
        cid: object = cast(dict[str, Any], call).get("id") if isinstance(call, dict) else None
        if isinstance(cid, str) and cid not in answered:
            messages.append(
                {"role": "tool", "tool_call_id": cid, "content": NOT_RUN, "is_error": True}
            )


def relay_splice(name: str, call_id: str, answer: Answer, *, first: bool) -> ToolResult:
    """The result of a relayed call from the host's answer (durable path)."""
    if not answer.ok:
        return ToolResult(
            with_note(f"relay declined for {name}: {answer.reason or 'declined'}", answer), True
        )
    found = relay_output_for(answer, call_id, first=first)
    if found is None:
        return ToolResult(f"no result supplied on resume for {name}", True)
    return ToolResult(found[0], found[1])


def fold_relay(slots: list[Slot]) -> None:
    """Fold every relay suspension of the turn into the first one's ``data.calls``."""
    relays = [s for s in slots if s.request is not None and is_relay_request(s.request)]
    if len(relays) < 2:
        return
    head = relays[0]
    assert head.request is not None
    calls: list[Any] = []
    for s in relays:
        assert s.request is not None
        calls.extend((s.request.data or {}).get(RELAY_CALLS_KEY) or [])
    merged = replace(head.request, data={**(head.request.data or {}), RELAY_CALLS_KEY: calls})
    for s in relays:
        s.suspend(merged)
