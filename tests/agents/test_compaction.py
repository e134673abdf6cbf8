"""Context compaction (CONTRACT §7F): estimate_tokens and the compactor before_llm hook."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any, cast

import pytest

from toolnexus import CallbackError, Client
from toolnexus._types import Message
from toolnexus.agents.compaction import (
    FLUSH_REMINDER,
    SUMMARY_PREFIX,
    compactor,
    estimate_tokens,
)
from toolnexus.errors import UsageError
from toolnexus.testing import ScriptedModel, text

ClientFor = Callable[..., Client]

SYSTEM: Message = {"role": "system", "content": "You are terse."}


def user(content: Any) -> Message:
    return {"role": "user", "content": content}


def said(content: str) -> Message:
    return {"role": "assistant", "content": content}


def calls(*ids: str) -> Message:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids
        ],
    }


def result(call_id: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": f"result {call_id}"}


def by_count(messages: Sequence[Message]) -> int:
    """One token per message: makes tail sizes readable in the tests."""
    return len(messages)


class Summaries:
    """A summarize double that records what it was given."""

    def __init__(self, text: str = "S") -> None:
        self.text = text
        self.seen: list[list[Message]] = []

    def __call__(self, older: list[Message]) -> str:
        self.seen.append(older)
        return self.text


def info(messages: list[Message]) -> dict[str, Any]:
    return {"messages": messages, "tools": [], "model": "m-1", "turn": 0}


async def compact(messages: list[Message], **opts: Any) -> list[Message] | None:
    opts.setdefault("summarize", Summaries())
    opts.setdefault("count_tokens", by_count)
    change = await compactor(**opts)(info(messages))
    return None if change is None else change["messages"]


def summary(content: str = "S") -> Message:
    return {"role": "system", "content": SUMMARY_PREFIX + content}


def assert_balanced(messages: list[Message] | None) -> None:
    """Every tool result answers a call made earlier in the same transcript."""
    assert messages is not None
    open_calls: set[str] = set()
    for message in messages:
        for c in cast(list[dict[str, Any]], message.get("tool_calls") or []):
            open_calls.add(c["id"])
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls


# --- estimate_tokens ----------------------------------------------------------------------


def test_estimate_is_the_ceiling_of_a_quarter_of_the_json_length() -> None:
    # json.dumps gives '{"role": "user", "content": "hi"}': 33 characters.
    assert estimate_tokens([user("hi")]) == 9


def test_estimate_rounds_up_each_message_on_its_own() -> None:
    # 2 x ceil(33/4) = 18, where ceil(66/4) would be 17.
    assert estimate_tokens([user("hi"), user("hi")]) == 18


def test_estimate_counts_non_ascii_as_its_json_escape() -> None:
    # '"\\u00e9\\u00e9\\u00e9"' makes the dump 49 characters (34 with ensure_ascii=False).
    assert estimate_tokens([user("ééé")]) == 13


def test_estimate_uses_the_default_spaced_separators() -> None:
    # 134 characters spaced (121 compact): ceil(134/4) = 34, ceil(121/4) would be 31.
    assert estimate_tokens([calls("c1")]) == 34


def test_estimate_of_no_messages_is_zero() -> None:
    assert estimate_tokens([]) == 0


def test_estimate_counts_a_value_json_cannot_encode_as_its_text() -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd"

    # '{"role": "user", "content": "odd"}': 34 characters.
    assert estimate_tokens([user(Odd())]) == 9


# --- no-op --------------------------------------------------------------------------------


async def test_a_transcript_under_the_limit_is_left_alone() -> None:
    summarize = Summaries()

    assert await compact([SYSTEM, user("a"), said("b")], max_tokens=5, summarize=summarize) is None
    assert summarize.seen == []


async def test_a_transcript_exactly_at_the_limit_is_left_alone() -> None:
    assert await compact([SYSTEM, user("a"), said("b"), user("c")], max_tokens=4) is None


async def test_the_default_estimate_decides_when_none_is_given() -> None:
    messages = [user("hi"), said("ok"), user("hi")]  # 9 + 10 + 9 = 28 tokens
    hook = compactor(max_tokens=28, summarize=Summaries())

    assert await hook(info(messages)) is None
    assert await compactor(max_tokens=27, summarize=Summaries())(info(messages)) is not None


# --- the compacted shape ------------------------------------------------------------------


async def test_the_summary_message_carries_the_pinned_prefix() -> None:
    messages = [user("a"), said("b"), user("c")]

    out = await compact(messages, max_tokens=2, keep_tail=1, summarize=Summaries("they met"))

    assert out is not None
    assert out[0] == {"role": "system", "content": "[Summary of earlier conversation]\nthey met"}
    assert SUMMARY_PREFIX == "[Summary of earlier conversation]\n"


async def test_the_leading_system_message_is_kept_verbatim_first() -> None:
    lead: Message = {"role": "system", "content": "  Be   exact.\n", "name": "boss"}
    messages = [lead, user("a"), said("b"), user("c"), said("d")]

    out = await compact(messages, max_tokens=3, keep_tail=2)

    assert out is not None
    assert out == [lead, summary(), user("c"), said("d")]
    assert out[0] is lead


async def test_a_leading_developer_message_is_kept_like_a_system_one() -> None:
    lead: Message = {"role": "developer", "content": "Rules."}

    out = await compact([lead, user("a"), said("b"), user("c")], max_tokens=2, keep_tail=1)

    assert out == [lead, summary(), user("c")]


async def test_without_a_leading_system_message_the_summary_comes_first() -> None:
    out = await compact([user("a"), said("b"), user("c")], max_tokens=2, keep_tail=1)

    assert out == [summary(), user("c")]


async def test_summarize_gets_exactly_the_older_messages_without_the_lead() -> None:
    summarize = Summaries()
    messages = [SYSTEM, user("a"), said("b"), user("c"), said("d")]

    await compact(messages, max_tokens=3, keep_tail=2, summarize=summarize)

    assert summarize.seen == [[user("a"), said("b")]]


async def test_the_tail_is_kept_verbatim() -> None:
    messages = [SYSTEM, user("a"), said("b"), user("c"), calls("c1"), result("c1"), said("d")]

    out = await compact(messages, max_tokens=3, keep_tail=4)

    assert out is not None
    assert all(x is y for x, y in zip(out[2:], messages[3:], strict=True))


async def test_the_input_transcript_is_never_modified() -> None:
    messages = [SYSTEM, user("a"), calls("c1"), result("c1"), said("b"), user("c"), said("d")]
    before = copy.deepcopy(messages)

    await compact(messages, max_tokens=2, keep_tail=2, flush_to_memory=True)

    assert messages == before


async def test_the_flush_reminder_follows_the_summary_when_asked_for() -> None:
    out = await compact(
        [SYSTEM, user("a"), said("b"), user("c")], max_tokens=2, keep_tail=1, flush_to_memory=True
    )

    assert out == [
        SYSTEM,
        summary(),
        {
            "role": "system",
            "content": "Before continuing: if anything from earlier is worth keeping, save it "
            "with the memory tool now — the earlier transcript is about to be summarized.",
        },
        user("c"),
    ]
    assert out is not None
    assert out[2]["content"] == FLUSH_REMINDER


async def test_there_is_no_flush_reminder_by_default() -> None:
    out = await compact([SYSTEM, user("a"), said("b"), user("c")], max_tokens=2, keep_tail=1)

    assert out == [SYSTEM, summary(), user("c")]


# --- choosing the tail --------------------------------------------------------------------


async def test_the_largest_tail_within_keep_tail_is_kept() -> None:
    exchanges = [m for i in range(5) for m in (user(f"q{i}"), said(f"a{i}"))]

    out = await compact([SYSTEM, *exchanges], max_tokens=6, keep_tail=5)

    assert out == [SYSTEM, summary(), *exchanges[-4:]]


async def test_keep_tail_defaults_to_half_of_max_tokens() -> None:
    exchanges = [m for i in range(5) for m in (user(f"q{i}"), said(f"a{i}"))]

    out = await compact(exchanges, max_tokens=5)  # keep_tail 2: the last exchange only

    assert out == [summary(), *exchanges[-2:]]


async def test_the_tail_never_starts_inside_a_tool_exchange() -> None:
    body = [
        user("a"),
        calls("c1"),
        result("c1"),
        said("b"),
        user("c"),
        calls("c2", "c3"),
        result("c2"),
        result("c3"),
        said("d"),
    ]

    out = await compact([SYSTEM, *body], max_tokens=5, keep_tail=4)

    assert out == [SYSTEM, summary(), *body[4:]]
    assert_balanced(out)


async def test_when_no_tail_fits_the_most_recent_boundary_is_used() -> None:
    body = [user("a"), said("b"), user("c"), calls("c1"), result("c1"), calls("c2"), result("c2")]

    out = await compact(body, max_tokens=3, keep_tail=0)

    assert out == [summary(), *body[2:]]
    assert_balanced(out)


async def test_without_a_boundary_everything_is_summarized_and_the_tail_is_empty() -> None:
    summarize = Summaries()
    body = [user("go"), calls("c1"), result("c1"), calls("c2"), result("c2"), said("done")]

    out = await compact([SYSTEM, *body], max_tokens=3, keep_tail=10, summarize=summarize)

    assert out == [SYSTEM, summary()]
    assert summarize.seen == [body]


async def test_a_transcript_of_only_the_system_message_is_left_alone() -> None:
    summarize = Summaries()
    huge: Message = {"role": "system", "content": "x" * 4000}

    assert await compact([huge], max_tokens=10, count_tokens=None, summarize=summarize) is None
    assert summarize.seen == []


async def test_a_user_message_carrying_a_tool_call_id_is_not_a_boundary() -> None:
    odd: Message = {"role": "user", "tool_call_id": "c1", "content": "r"}
    body = [user("a"), said("b"), user("c"), calls("c1"), odd, said("d")]

    out = await compact(body, max_tokens=3, keep_tail=2)

    assert out == [summary(), *body[2:]]


async def test_messages_that_are_not_dicts_are_never_boundaries() -> None:
    body: list[Any] = [user("a"), "garbage", user("c"), None, said("d")]

    out = await compact(body, max_tokens=3, keep_tail=2)

    assert out == [summary(), user("c"), None, said("d")]


async def test_compacting_again_summarizes_the_previous_summary() -> None:
    summarize = Summaries("second")
    first = [SYSTEM, summary("first"), user("c"), said("d"), user("e")]

    out = await compact(first, max_tokens=3, keep_tail=1, summarize=summarize)

    assert summarize.seen == [[summary("first"), user("c"), said("d")]]
    assert out == [SYSTEM, summary("second"), user("e")]


# --- the Anthropic shape ------------------------------------------------------------------


def tool_use(call_id: str) -> Message:
    return {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "checking"},
            {"type": "tool_use", "id": call_id, "name": "f", "input": {}},
        ],
    }


def tool_result(call_id: str) -> Message:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id}]}


async def test_an_anthropic_tool_result_message_is_not_a_boundary() -> None:
    body = [
        user("a"),
        tool_use("t1"),
        tool_result("t1"),
        said("b"),
        user([{"type": "text", "text": "next"}]),
        tool_use("t2"),
        tool_result("t2"),
        said("c"),
    ]

    # A tail of 2 would fit at the last tool_result; the boundary is the "next" turn.
    out = await compact(body, max_tokens=3, keep_tail=2)

    assert out == [summary(), *body[4:]]


async def test_an_anthropic_message_mixing_text_and_tool_results_is_not_a_boundary() -> None:
    mixed: Message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "and also"},
            {"type": "tool_result", "tool_use_id": "t1", "content": "r"},
        ],
    }
    body = [user("a"), said("b"), user("c"), tool_use("t1"), mixed, said("d")]

    out = await compact(body, max_tokens=3, keep_tail=2)

    assert out == [summary(), *body[2:]]


# --- callables ----------------------------------------------------------------------------


async def test_an_async_summarize_is_awaited() -> None:
    seen: list[list[Message]] = []

    async def summarize(older: list[Message]) -> str:
        seen.append(older)
        return "async summary"

    out = await compact([user("a"), said("b"), user("c")], max_tokens=2, summarize=summarize)

    assert out == [summary("async summary"), user("c")]
    assert seen == [[user("a"), said("b")]]


async def test_a_custom_count_tokens_decides_the_threshold() -> None:
    messages = [user("a" * 10_000), said("b"), user("c")]

    def nothing(messages: Sequence[Message]) -> int:
        return 0

    def plenty(messages: Sequence[Message]) -> int:
        return 99

    assert await compact(messages, max_tokens=1, count_tokens=nothing) is None
    assert await compact([user("a"), user("b")], max_tokens=1, count_tokens=plenty) == [
        summary(),
        user("b"),
    ]


async def test_a_custom_count_tokens_sizes_the_tail() -> None:
    def weigh(messages: Sequence[Message]) -> int:
        return sum(100 if m["content"] == "heavy" else 1 for m in messages)

    body = [user("a"), said("b"), user("c"), said("heavy"), user("e"), said("f")]

    out = await compact(body, max_tokens=5, keep_tail=50, count_tokens=weigh)

    assert out == [summary(), user("e"), said("f")]


async def test_an_error_from_summarize_propagates() -> None:
    def summarize(older: list[Message]) -> str:
        raise RuntimeError("model down")

    with pytest.raises(RuntimeError, match="model down"):
        await compact([user("a"), said("b"), user("c")], max_tokens=2, summarize=summarize)


async def test_a_summarize_that_returns_no_text_is_a_usage_error() -> None:
    def mute(older: list[Message]) -> Any:
        return None

    with pytest.raises(UsageError, match="must return a str"):
        await compact([user("a"), said("b"), user("c")], max_tokens=2, summarize=mute)


async def test_info_without_a_message_list_is_a_usage_error() -> None:
    hook = compactor(max_tokens=1, summarize=Summaries())

    with pytest.raises(UsageError):
        await hook({"messages": "hello", "tools": [], "model": "m", "turn": 0})


@pytest.mark.parametrize(
    "opts",
    [
        {"max_tokens": 0},
        {"max_tokens": -5},
        {"max_tokens": True},
        {"max_tokens": 10.5},
        {"max_tokens": 10, "keep_tail": -1},
        {"max_tokens": 10, "keep_tail": 2.5},
        {"max_tokens": 10, "summarize": "not callable"},
        {"max_tokens": 10, "count_tokens": 42},
    ],
)
def test_bad_options_are_refused_up_front(opts: dict[str, Any]) -> None:
    opts.setdefault("summarize", Summaries())

    with pytest.raises(UsageError):
        compactor(**opts)


# --- through a real client ----------------------------------------------------------------


HISTORY = [user("q1"), said("a1"), user("q2"), said("a2")]


async def test_the_compacted_transcript_is_what_the_model_receives(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(text("a3"))
    hook = compactor(max_tokens=3, keep_tail=1, count_tokens=by_count, summarize=Summaries("S"))

    async with client_for(scripted, hooks={"before_llm": hook}) as client:
        await client.run("q3", history=HISTORY)

    assert scripted.requests[0].body["messages"] == [summary("S"), user("q3")]


async def test_under_the_limit_the_model_receives_the_transcript_unchanged(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(text("a3"))
    hook = compactor(max_tokens=5, count_tokens=by_count, summarize=Summaries())

    async with client_for(scripted, hooks={"before_llm": hook}) as client:
        await client.run("q3", history=HISTORY)

    assert scripted.requests[0].body["messages"] == [*HISTORY, user("q3")]


async def test_a_failing_summarize_aborts_the_run_before_the_model_is_called(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    def summarize(older: list[Message]) -> str:
        raise RuntimeError("summarizer down")

    hook = compactor(max_tokens=3, count_tokens=by_count, summarize=summarize)

    async with client_for(scripted, hooks={"before_llm": hook}) as client:
        with pytest.raises(CallbackError) as raised:
            await client.run("q3", history=HISTORY)

    assert isinstance(raised.value.__cause__, RuntimeError)
    assert scripted.requests == []
