"""Durable resume: run_with_answer / ask_with_answer / stream variants, in one process."""

from __future__ import annotations

import json
import logging
import weakref
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gc_support import collector_off
from toolnexus import (
    Answer,
    AnswerConflict,
    AnswerMismatch,
    RelayResult,
    ResumeError,
    Tool,
    ToolContext,
    ToolResult,
    answer_declined,
    answer_output,
    create_client,
    create_toolkit,
    pending,
    relay_answer,
    relay_tool,
)
from toolnexus.suspension import format_timestamp
from toolnexus.testing import ScriptedModel, call, text, tool_calls

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


class Ledger:
    """Counts executions and what each one saw."""

    def __init__(self) -> None:
        self.runs: Counter[str] = Counter()
        self.answers: list[Answer | None] = []


def gate_tool(ledger: Ledger, name: str = "gate", expires_at: str | None = None) -> Tool:
    async def execute(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        ledger.runs[name] += 1
        answer = ctx.answer if ctx is not None else None
        ledger.answers.append(answer)
        if answer is not None and answer.ok:
            return ToolResult(f"{name} approved with {json.dumps(answer.data)}")
        return pending(kind="approval", prompt=f"approve {name}?", expiresAt=expires_at)

    return Tool(name, f"{name} needs approval", SCHEMA, "native", execute)


def plain_tool(ledger: Ledger, name: str = "add") -> Tool:
    async def execute(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        ledger.runs[name] += 1
        return ToolResult(f"{name} ran")

    return Tool(name, name, SCHEMA, "native", execute)


def tool_results(messages: list[dict[str, Any]]) -> list[str]:
    return [m["tool_call_id"] for m in messages if m.get("role") == "tool"]


def assert_balanced(messages: list[dict[str, Any]]) -> None:
    """Every tool_call of every assistant turn has exactly one tool result, in order."""
    expected: list[str] = []
    for m in messages:
        if m.get("role") == "assistant":
            expected += [c["id"] for c in m.get("tool_calls") or []]
    assert tool_results(messages) == expected


async def test_a_halted_run_resumes_by_re_executing_the_halted_tool_with_the_answer() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    async with ScriptedModel([tool_calls(call("gate", {}, id="c1")), text("done")]) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            halted = await c.run("go", tk)
            assert halted.status == "pending"
            assert halted.pending is not None
            answer = Answer(id=halted.pending.id, ok=True, data={"note": "fine"})
            resumed = await c.run_with_answer(tk, halted.messages, halted.pending, answer)
    assert resumed.status == "done"
    assert resumed.text == "done"
    assert ledger.runs["gate"] == 2
    assert ledger.answers[-1] == answer
    shown = 'gate approved with {"note": "fine"}\napprover\'s note: fine'  # the note, for the model
    assert resumed.tool_calls[-1].output == shown
    assert_balanced(resumed.messages)
    sent = model.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[-1]["content"] == shown


async def test_a_declined_answer_feeds_the_model_the_decline_and_the_run_completes() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    async with ScriptedModel([tool_calls(call("gate", {})), text("understood")]) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            halted = await c.run("go", tk)
            assert halted.pending is not None
            resumed = await c.run_with_answer(
                tk, halted.messages, halted.pending, answer_declined(halted.pending.id)
            )
    assert resumed.status == "done"
    assert ledger.runs["gate"] == 1
    assert model.requests[-1].body["messages"][-1]["content"] == "declined/expired: approve gate?"


async def test_siblings_that_finished_are_spliced_not_executed_again() -> None:
    ledger = Ledger()
    tk = await create_toolkit(
        extra_tools=[plain_tool(ledger, "a"), gate_tool(ledger), plain_tool(ledger, "b")],
        builtins=False,
    )
    script = [tool_calls(call("a", {}), call("gate", {}), call("b", {})), text("ok")]
    async with ScriptedModel(script) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            halted = await c.run("go", tk)
            assert halted.pending is not None
            # first-in-order halt: b's result is not in the transcript the host sees
            assert tool_results(halted.messages) == ["call_1", "call_2"]
            resumed = await c.run_with_answer(
                tk, halted.messages, halted.pending, Answer(halted.pending.id, True)
            )
    assert ledger.runs == Counter({"a": 1, "b": 1, "gate": 2})
    assert [r.output for r in resumed.tool_calls] == ["a ran", "gate approved with null", "b ran"]
    assert_balanced(resumed.messages)


async def test_two_suspensions_in_one_turn_are_answered_one_at_a_time() -> None:
    ledger = Ledger()
    tk = await create_toolkit(
        extra_tools=[gate_tool(ledger, "g1"), gate_tool(ledger, "g2")], builtins=False
    )
    async with ScriptedModel([tool_calls(call("g1", {}), call("g2", {})), text("both")]) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            first = await c.run("go", tk)
            assert first.pending is not None
            assert first.pending.prompt == "approve g1?"
            second = await c.run_with_answer(
                tk, first.messages, first.pending, Answer(first.pending.id, True)
            )
            assert second.status == "pending"
            assert second.pending is not None
            assert second.pending.prompt == "approve g2?"
            assert len(model.requests) == 1  # no model call until every slot is filled
            done = await c.run_with_answer(
                tk, second.messages, second.pending, Answer(second.pending.id, True)
            )
    assert done.status == "done"
    assert ledger.runs == Counter({"g1": 2, "g2": 2})
    assert_balanced(done.messages)
    assert_balanced(model.requests[-1].body["messages"])


async def test_turns_and_usage_continue_across_the_resume() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    async with ScriptedModel([tool_calls(call("gate", {})), text("done")]) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            halted = await c.run("go", tk)
            assert halted.pending is not None
            resumed = await c.run_with_answer(
                tk, halted.messages, halted.pending, Answer(halted.pending.id, True)
            )
    assert halted.turns == 1
    assert resumed.turns == 2
    assert resumed.usage["total_tokens"] == 2 * halted.usage["total_tokens"]


async def test_a_mismatched_answer_is_rejected_before_anything_changes() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    async with ScriptedModel([tool_calls(call("gate", {})), text("done")]) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            halted = await c.run("go", tk)
            assert halted.pending is not None
            with pytest.raises(AnswerMismatch, match="does not echo the pending request id"):
                await c.run_with_answer(tk, halted.messages, halted.pending, Answer("nope", True))
            assert len(model.requests) == 1
            assert ledger.runs["gate"] == 1
            assert [p.request_id for p in await c.list_pending()] == [halted.pending.id]
            resumed = await c.run_with_answer(
                tk, halted.messages, halted.pending, Answer(halted.pending.id, True)
            )
    assert resumed.status == "done"


async def test_a_second_answer_to_the_same_request_is_a_conflict() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    async with ScriptedModel([tool_calls(call("gate", {})), text("done")]) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            halted = await c.run("go", tk)
            assert halted.pending is not None
            answer = Answer(halted.pending.id, True)
            await c.run_with_answer(tk, halted.messages, halted.pending, answer, answered_by="ann")
            with pytest.raises(AnswerConflict, match="already answered by ann") as caught:
                await c.run_with_answer(tk, halted.messages, halted.pending, answer)
            record = await c.run_store.answer_record(halted.pending.id)
    assert caught.value.answered_by == "ann"
    assert ledger.runs["gate"] == 2
    assert len(model.requests) == 2
    assert record is not None
    assert record.answered_by == "ann"
    assert record.answer == answer


async def test_the_answer_record_carries_a_digest_of_the_approved_call() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    async with ScriptedModel([tool_calls(call("gate", {"x": 1})), text("done")]) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            halted = await c.run("go", tk)
            assert halted.pending is not None
            await c.run_with_answer(
                tk, halted.messages, halted.pending, Answer(halted.pending.id, True)
            )
            record = await c.run_store.answer_record(halted.pending.id)
    from toolnexus.stores.runs import call_digest

    assert record is not None
    assert record.digest == call_digest("gate", '{"x": 1}')
    assert record.answered_at > 0


async def test_a_fresh_client_resumes_from_the_json_round_tripped_transcript() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    async with ScriptedModel([tool_calls(call("gate", {})), text("elsewhere")]) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            halted = await c.run("go", tk)
        assert halted.pending is not None
        blob = json.dumps({"messages": halted.messages, "pending": halted.pending.to_dict()})
        saved = json.loads(blob)
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as fresh:
            resumed = await fresh.run_with_answer(
                tk, saved["messages"], saved["pending"], Answer(saved["pending"]["id"], True)
            )
    assert resumed.status == "done"
    assert resumed.text == "elsewhere"
    assert ledger.runs["gate"] == 2
    assert_balanced(resumed.messages)
    assert sum(1 for m in resumed.messages if m.get("role") == "tool") == 1


async def test_resuming_without_a_transcript_or_halted_turn_is_a_clear_error() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    req = {"id": "pnd-x", "kind": "approval", "prompt": "p"}
    async with create_client(base_url="http://127.0.0.1:9", model="m", api_key="k") as c:
        with pytest.raises(ResumeError, match="no transcript supplied"):
            await c.run_with_answer(tk, [], req, Answer("pnd-x", True))
        with pytest.raises(ResumeError, match="no halted assistant turn with tool calls"):
            await c.run_with_answer(
                tk,
                [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
                req,
                Answer("pnd-x", True),
            )
        with pytest.raises(ResumeError, match="needs a conversation id"):
            await c.ask_with_answer(tk, "", req, Answer("pnd-x", True))
    assert ledger.runs["gate"] == 0


async def test_resuming_with_a_toolkit_that_lacks_the_halted_tool_is_an_error() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    other = await create_toolkit(extra_tools=[plain_tool(ledger)], builtins=False)
    async with ScriptedModel([tool_calls(call("gate", {})), text("x")]) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            halted = await c.run("go", tk)
            assert halted.pending is not None
            with pytest.raises(ResumeError, match="lacks the halted tool"):
                await c.run_with_answer(
                    other, halted.messages, halted.pending, Answer(halted.pending.id, True)
                )
            resumed = await c.run_with_answer(
                tk, halted.messages, halted.pending, Answer(halted.pending.id, True)
            )
    assert resumed.status == "done"


async def test_a_changed_tool_set_is_logged_as_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    bigger = await create_toolkit(
        extra_tools=[gate_tool(ledger), plain_tool(ledger)], builtins=False
    )
    async with ScriptedModel([tool_calls(call("gate", {})), text("x")]) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            halted = await c.run("go", tk)
            assert halted.pending is not None
            with caplog.at_level(logging.WARNING, logger="toolnexus"):
                await c.run_with_answer(
                    bigger, halted.messages, halted.pending, Answer(halted.pending.id, True)
                )
    assert "tool set changed" in caplog.text


async def test_an_expired_request_feeds_the_tool_the_expired_decline() -> None:
    ledger = Ledger()
    past = format_timestamp(datetime.now(UTC) - timedelta(seconds=1))
    tk = await create_toolkit(extra_tools=[gate_tool(ledger, expires_at=past)], builtins=False)
    async with ScriptedModel([tool_calls(call("gate", {})), text("too late")]) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            halted = await c.run("go", tk)
            assert halted.pending is not None
            resumed = await c.run_with_answer(
                tk, halted.messages, halted.pending, Answer(halted.pending.id, True)
            )
    assert resumed.expired is True
    assert resumed.status == "done"
    assert ledger.runs["gate"] == 1
    assert model.requests[-1].body["messages"][-1]["content"] == "declined/expired: approve gate?"


async def test_pending_ttl_stamps_a_deadline_on_suspensions() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    async with ScriptedModel([tool_calls(call("gate", {}))]) as model:
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", pending_ttl=60
        ) as c:
            halted = await c.run("go", tk)
    assert halted.pending is not None
    assert halted.pending.expires_at is not None
    left = (halted.pending.expires_at - datetime.now(UTC)).total_seconds()
    assert 50 < left <= 60


async def test_ask_with_answer_saves_the_resumed_transcript_under_the_same_id() -> None:
    lookup = relay_tool("lookup", "look something up")
    tk = await create_toolkit(extra_tools=[lookup], builtins=False)
    async with ScriptedModel([tool_calls(call("lookup", {})), text("stored answer")]) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            halted = await c.ask("go", tk, id="conv-1")
            assert halted.pending is not None
            resumed = await c.ask_with_answer(
                tk, "conv-1", halted.pending, answer_output(halted.pending.id, "stored answer")
            )
            saved = await c.conversation_store.get("conv-1")
    assert resumed.status == "done"
    assert saved is not None
    assert len(saved) == len(resumed.messages)
    assert_balanced(saved)


async def test_relay_calls_of_one_turn_ride_one_request_and_resume_from_results() -> None:
    lookup = relay_tool("lookup", "look something up")
    tk = await create_toolkit(extra_tools=[lookup], builtins=False)
    script = [tool_calls(call("lookup", {"q": "a"}), call("lookup", {"q": "b"})), text("ok")]
    async with ScriptedModel(script) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            halted = await c.run("go", tk)
            assert halted.pending is not None
            calls = halted.pending.data["calls"] if halted.pending.data else []
            assert [x["id"] for x in calls] == ["call_1", "call_2"]
            with pytest.raises(ResumeError, match="no result for relayed call"):
                await c.run_with_answer(
                    tk, halted.messages, halted.pending, answer_output(halted.pending.id, "x")
                )
            answer = relay_answer(
                halted.pending.id, [RelayResult("call_2", "B"), RelayResult("call_1", "A", True)]
            )
            resumed = await c.run_with_answer(tk, halted.messages, halted.pending, answer)
    sent = model.requests[-1].body["messages"]
    assert [(m["tool_call_id"], m["content"]) for m in sent if m["role"] == "tool"] == [
        ("call_1", "A"),
        ("call_2", "B"),
    ]
    assert resumed.tool_calls[0].is_error is True


async def test_a_declined_relay_call_tells_the_model_who_declined() -> None:
    lookup = relay_tool("lookup", "look something up")
    tk = await create_toolkit(extra_tools=[lookup], builtins=False)
    async with ScriptedModel([tool_calls(call("lookup", {})), text("ok")]) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            halted = await c.run("go", tk)
            assert halted.pending is not None
            await c.run_with_answer(
                tk, halted.messages, halted.pending, answer_declined(halted.pending.id, "cancelled")
            )
    assert model.requests[-1].body["messages"][-1]["content"] == (
        "relay declined for lookup: cancelled"
    )


@pytest.mark.parametrize("style", ["openai", "anthropic"])
async def test_stream_with_answer_emits_the_halted_turn_results_then_the_continued_loop(
    style: str,
) -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    async with ScriptedModel([tool_calls(call("gate", {}, id="c1")), text("streamed")]) as model:
        base = model.openai_base_url if style == "openai" else model.anthropic_base_url
        async with create_client(base_url=base, style=style, model="m", api_key="k") as c:  # type: ignore[arg-type]
            halted = await c.run("go", tk)
            assert halted.pending is not None
            events = [
                e
                async for e in c.stream_with_answer(
                    tk, halted.messages, halted.pending, Answer(halted.pending.id, True)
                )
            ]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "tool_result"
    assert events[0]["id"] == "c1"
    assert kinds[-2:] == ["usage", "done"]
    assert "".join(e["delta"] for e in events if e["type"] == "text") == "streamed"
    assert events[-1]["result"].status == "done"


async def test_a_host_held_transcript_carries_the_finished_siblings_so_none_runs_twice() -> None:
    ledger = Ledger()
    tools = [plain_tool(ledger, "a"), gate_tool(ledger), plain_tool(ledger, "b")]
    tk = await create_toolkit(extra_tools=tools, builtins=False)
    script = [tool_calls(call("a", {}), call("gate", {}), call("b", {})), text("ok")]
    async with ScriptedModel(script) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            halted = await c.run("go", tk)
        assert halted.pending is not None
        saved = json.loads(json.dumps({"m": halted.messages, "p": halted.pending.to_dict()}))
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as fresh:
            resumed = await fresh.run_with_answer(
                tk, saved["m"], saved["p"], Answer(saved["p"]["id"], True)
            )
    assert ledger.runs == Counter({"a": 1, "b": 1, "gate": 2})
    assert [r.output for r in resumed.tool_calls] == ["a ran", "gate approved with null", "b ran"]
    assert all("toolnexus_halt" not in m for m in model.requests[-1].body["messages"])


async def test_answering_a_finished_run_again_is_a_conflict_even_without_a_transcript() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    async with ScriptedModel([tool_calls(call("gate", {})), text("done")]) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            halted = await c.run("go", tk)
            assert halted.pending is not None
            answer = Answer(halted.pending.id, True)
            await c.run_with_answer(tk, halted.messages, halted.pending, answer)
            with pytest.raises(AnswerConflict):
                await c.run_with_answer(tk, None, halted.pending, answer)


async def test_a_fresh_client_that_resumed_a_halt_is_freed_without_the_cycle_collector(
    tmp_path: Path,
) -> None:
    # A host that builds a client (and a store) per answer — a webhook, a command-line tool —
    # must not leave each one to the cyclic garbage collector.
    ledger = Ledger()
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    async with ScriptedModel() as model:
        model.add(tool_calls(call("gate", {})), text("done"))
        options: dict[str, Any] = {"base_url": model.openai_base_url, "model": "m", "api_key": "k"}
        async with create_client(**options, store=url) as c:
            halted = await c.run("go", [gate_tool(ledger)])
        assert halted.pending is not None
        with collector_off():
            resumer = create_client(**options, store=url)
            async with resumer:
                done = await resumer.run_with_answer(
                    [gate_tool(ledger)], None, halted.pending, Answer(id=halted.pending.id, ok=True)
                )
            gone = weakref.ref(resumer)
            store = weakref.ref(resumer.run_store)
            del resumer
            assert gone() is None
            assert store() is None
    assert done.status == "done"
    assert done.text == "done"
    assert ledger.runs["gate"] == 2
