"""The runtime's package-compatible surface: fields, constants, totals, sync verbs, texts."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from agent_support import approval_brain, check_secret_tool, llm_of

from toolnexus import Answer, define_tool
from toolnexus.agents import (
    LIMITS,
    TASK_STATUSES,
    AgentDef,
    AgentRuntime,
    Budget,
    Handle,
    InboxItem,
    NoSuspendedHandle,
    StartedAgent,
    TaskResult,
    agent,
    start_agent,
)
from toolnexus.errors import ResumeError
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, garbage, text, tool_calls


def test_the_status_and_limit_vocabularies_are_the_packages_in_order() -> None:
    assert TASK_STATUSES == (
        "done",
        "pending",
        "incomplete",
        "interrupted",
        "closed",
        "timeout",
        "error",
    )
    assert LIMITS == (
        "maxTurns",
        "maxTokens",
        "maxToolCalls",
        "maxWallMs",
        "maxChildren",
        "maxConcurrent",
        "maxDepth",
        "completion",
        "timeout",
    )


def test_task_result_and_agent_def_take_the_packages_positional_order() -> None:
    r = TaskResult("t", True, "error", None, 2, 30, 10, "maxTurns")
    assert (r.text, r.is_error, r.status, r.turns, r.total_tokens, r.own_tokens, r.limit) == (
        "t",
        True,
        "error",
        2,
        30,
        10,
        "maxTurns",
    )
    assert TaskResult.from_json(r.to_json()) == r
    d = AgentDef(
        "a", "does a", "soul", "inherit", Budget(max_turns=2), None, None, None, None, ["b"]
    )
    assert (d.model, d.budget, d.tools, d.task_targets, d.completion) == (
        "inherit",
        Budget(max_turns=2),
        None,
        ["b"],
        None,
    )


def test_an_agent_keeps_every_argument_as_an_attribute() -> None:
    helper = agent("helper", does="helps")
    lead = agent("lead", does="leads", team=[helper], soul="Lead.", model="m")
    assert (lead.uses, lead.guardrails, helper.team, lead.team) == ({}, [], [], [helper])
    registry = lead.registry()
    assert list(registry) == ["helper", "lead"]
    assert registry["lead"].task_targets == ["helper"]
    assert registry["helper"].model == "inherit"
    assert registry["lead"].system_prompt == "Lead."
    acc: dict[str, AgentDef] = {}
    assert lead.registry(acc) is acc
    assert set(acc) == {"helper", "lead"}


def team_brain(request: RecordedRequest) -> Reply:
    messages = request.body["messages"]
    if messages[0]["content"] == "lead":
        if messages[-1]["role"] == "user":
            return tool_calls(call("task", {"agent": "helper", "prompt": "help"}))
        return text("lead done")
    return text("helped")


async def test_results_carry_the_trees_totals_and_the_handles_own_share() -> None:
    metas: list[Any] = []
    helper = agent("helper", does="helps", soul="helper")
    lead = agent(
        "lead",
        does="leads",
        soul="lead",
        team=[helper],
        hooks={"after_tool": lambda e: metas.append(e["result"].metadata)},
    )
    async with ScriptedModel(default=team_brain) as model:
        async with AgentRuntime(registry=lead.registry(), llm=llm_of(model)) as rt:
            h = rt.spawn(rt.root, "lead")
            assert isinstance(h, Handle)
            result = await rt.run_turn(h, "go")
            child = h.children[0]
            assert (h.usage_total, h.own_total, h.turns_total) == (45, 30, 2)
            assert (child.usage_total, child.own_total) == (15, 15)
            assert (result.total_tokens, result.own_tokens, result.turns) == (45, 30, 2)
            again = await rt.run_turn(h, "again")
            assert again.total_tokens >= result.total_tokens + 15  # never shrinks
    assert metas[0] == {"agent": "helper", "turns": 1, "totalTokens": 15}


async def test_a_handle_has_the_packages_fields() -> None:
    async with AgentRuntime(registry={"w": AgentDef("w")}, budget=Budget(max_tokens=100)) as rt:
        h = rt.spawn(rt.root, "w", Budget(max_children=2, max_tool_calls=5))
        assert isinstance(h, Handle)
        assert (h.defn, h.depth, h.conv_id, h.parent) == (rt.registry["w"], 1, h.id, rt.root)
        assert (h.inbox, h.pending_req, h.last_result, h.running_children) == ([], None, None, 0)
        assert (h.pool.tokens, h.pool.tool_calls, h.pool.children) == (100.0, 5.0, 2.0)
        assert math.isinf(rt.root.pool.children)
        assert rt.trace == ["root/w.1: spawned (depth 1, tokens 100)"]


class Valve:
    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def brain(self, request: RecordedRequest) -> Reply:
        self.entered.set()
        await self.release.wait()
        return text("late")


async def test_interrupt_is_synchronous_and_its_future_resolves_once_settled() -> None:
    valve = Valve()
    async with ScriptedModel(default=valve.brain) as model:
        async with AgentRuntime(registry={"w": AgentDef("w")}, llm=llm_of(model)) as rt:
            h = rt.spawn(rt.root, "w")
            assert isinstance(h, Handle)
            rt.post(h, InboxItem("ops", "chat", "first"))
            rt.wake(h, "go")
            waiting = asyncio.ensure_future(rt.wait(h))
            await asyncio.wait_for(valve.entered.wait(), 5)
            settled = rt.interrupt(h)  # no await: it takes effect now
            assert h.state == "idle"
            assert [i.text for i in h.inbox] == ["first"]
            got = await asyncio.wait_for(waiting, 5)
            assert (got.text, got.status, got.is_error) == ("interrupted", "interrupted", True)
            assert await asyncio.wait_for(settled, 5) is None
            assert "root/w.1: interrupt; inbox intact: 1 items" in rt.trace
            assert rt.interrupt(h).done()  # an idle handle: nothing to do
            valve.release.set()


async def test_interrupting_a_suspended_handle_cancels_its_question_at_once() -> None:
    registry = {"asker": AgentDef("asker", tools=[check_secret_tool()])}
    async with ScriptedModel(default=approval_brain()) as model:
        async with AgentRuntime(registry=registry, llm=llm_of(model)) as rt:
            h = rt.spawn(rt.root, "asker")
            assert isinstance(h, Handle)
            halted = await rt.run_turn(h, "go")
            assert halted.status == "pending"
            await rt.interrupt(h)  # the old awaited form still works
            assert (h.state, h.pending) == ("idle", None)
            assert (
                'root/asker.1: suspended→idle (interrupt cancelled pending "approval")' in rt.trace
            )
            with pytest.raises(NoSuspendedHandle, match="no suspended handle") as caught:
                await rt.resume(Answer(id="pnd-x", ok=True))
            assert isinstance(caught.value, RuntimeError)
            assert isinstance(caught.value, ResumeError)


async def test_resume_returns_the_result_of_the_last_turn_it_ran() -> None:
    registry = {"asker": AgentDef("asker", tools=[check_secret_tool()])}
    async with ScriptedModel(default=approval_brain()) as model:
        async with AgentRuntime(registry=registry, llm=llm_of(model)) as rt:
            h = rt.spawn(rt.root, "asker")
            assert isinstance(h, Handle)
            halted = await rt.run_turn(h, "go")
            assert halted.pending is not None
            done = await rt.resume(Answer(id=halted.pending.id, ok=True))
            assert (done.status, done.text, done.turns) == ("done", "approved and done", 2)
            assert done is h.result


async def test_close_puts_the_aborted_turns_items_back_and_returns_them() -> None:
    valve = Valve()
    closed: list[tuple[str, str]] = []
    registry = {"w": AgentDef("w", on_close=lambda h, why: closed.append((h.id, why)))}
    async with ScriptedModel(default=valve.brain) as model:
        async with AgentRuntime(registry=registry, llm=llm_of(model), shutdown_ms=0) as rt:
            h = rt.spawn(rt.root, "w")
            assert isinstance(h, Handle)
            rt.post(h, InboxItem("a", "chat", "one"))
            rt.post(h, InboxItem("b", "chat", "two"))
            rt.wake(h, "go")
            waiting = asyncio.ensure_future(rt.wait(h))
            await asyncio.wait_for(valve.entered.wait(), 5)
            rt.post(h, InboxItem("c", "chat", "three"))
            left = await rt.close(h)
            got = await asyncio.wait_for(waiting, 5)
            valve.release.set()
    assert [i.text for i in left] == ["one", "two", "three"]
    assert [i.text for i in h.inbox] == ["one", "two", "three"]
    assert h.state == "closed"
    assert (got.text, got.is_error, got.status) == ("closed", True, "closed")
    assert closed == [("root/w.1", "interrupted")]
    assert "root/w.1: running→closed (interrupted)" in rt.trace


async def test_a_wait_timeout_names_the_timeout_limit() -> None:
    valve = Valve()
    async with ScriptedModel(default=valve.brain) as model:
        async with AgentRuntime(registry={"w": AgentDef("w")}, llm=llm_of(model)) as rt:
            h = rt.spawn(rt.root, "w")
            assert isinstance(h, Handle)
            rt.wake(h, "go")
            late = await rt.wait(h, timeout_ms=1)
            valve.release.set()
            await rt.wait(h)
    assert (late.status, late.limit) == ("timeout", "timeout")
    assert late.text == "wait timeout after 1ms (child still running)"


async def test_an_in_process_runtime_runs_agents_on_a_host_function() -> None:
    bodies: list[dict[str, Any]] = []

    def generate(body: dict[str, Any]) -> dict[str, Any]:
        bodies.append(body)
        return {"content": "in memory"}

    spec = agent("mem", does="remembers", soul="Soul.")
    result = await spec.run("hi", in_process=generate)
    assert (result.status, result.text) == ("done", "in memory")
    assert bodies[0]["messages"][0] == {"role": "system", "content": "Soul."}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"transport": object()}, "`transport` and `in_process` are mutually exclusive"),
        ({"llm": {"model": "m"}}, "`llm` and `in_process` are mutually exclusive"),
    ],
)
def test_in_process_excludes_transport_and_llm(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AgentRuntime(registry={}, in_process=lambda body: {"content": ""}, **extra)


async def test_run_returns_a_spawn_refusal_as_an_error_result() -> None:
    deep = agent("deep", does="x")
    result = await deep.run(
        "hi", in_process=lambda body: {"content": "never"}, budget=Budget(max_depth=0)
    )
    assert (result.status, result.is_error) == ("error", True)
    assert result.text == "maxDepth 0 exceeded"


async def test_start_agent_is_synchronous_and_still_awaitable() -> None:
    bot = agent("bot", does="x")
    started = start_agent(bot, in_process=lambda body: {"content": "hi"})
    assert isinstance(started, StartedAgent)
    assert started.handle.id == "root/bot.1"
    assert (await started) is started
    await started.stop()
    assert started.handle.state == "closed"


def test_start_agent_needs_a_running_loop() -> None:
    with pytest.raises(RuntimeError):
        start_agent(agent("bot", does="x"), in_process=lambda body: {"content": "hi"})


def test_the_runtime_module_re_exports_the_packages_names() -> None:
    import toolnexus.agents as agents
    import toolnexus.agents.loop as loop
    import toolnexus.agents.runtime as runtime

    assert {"AgentRuntime", "Handle", "TaskResult", "LIMITS", "DEFAULT_MAX_CONCURRENT"} <= set(
        runtime.__all__
    )
    assert all(getattr(runtime, n) is getattr(agents, n) for n in runtime.__all__)
    assert set(loop.__all__) >= {"Completion", "Loop", "Outcome", "RunOptions", "run_gated"}
    assert all(getattr(loop, n) is getattr(agents, n) for n in loop.__all__ if hasattr(agents, n))


async def test_the_trace_names_why_a_turn_ended() -> None:
    @define_tool
    def look(where: str) -> str:
        """Look somewhere."""
        return "nothing"

    def looking(request: RecordedRequest) -> Reply:
        return tool_calls(call("look", {"where": "here"}))

    registry = {
        "w": AgentDef("w", tools=[look], budget=Budget(max_turns=1)),
        "asker": AgentDef("asker", tools=[check_secret_tool()]),
    }
    async with ScriptedModel(default=looking) as model:
        async with AgentRuntime(registry=registry, llm=llm_of(model)) as rt:
            capped = rt.spawn(rt.root, "w")
            assert isinstance(capped, Handle)
            assert (await rt.run_turn(capped, "go")).status == "incomplete"
    async with ScriptedModel(default=approval_brain()) as model:
        async with AgentRuntime(registry=registry, llm=llm_of(model)) as rt2:
            asker = rt2.spawn(rt2.root, "asker")
            assert isinstance(asker, Handle)
            await rt2.run_turn(asker, "go")
    async with ScriptedModel(default=garbage("not json")) as model:
        async with AgentRuntime(registry=registry, llm=llm_of(model, retries=0)) as rt3:
            broken = rt3.spawn(rt3.root, "w")
            assert isinstance(broken, Handle)
            failed = await rt3.run_turn(broken, "go")
    assert "root/w.1: running→idle (INCOMPLETE at maxTurns 1)" in rt.trace
    assert 'root/asker.1: running→suspended DURABLE (pending "approval", path preserved)' in (
        rt2.trace
    )
    assert failed.status == "error"
    assert f"root/w.1: running→idle (error: {failed.text})" in rt3.trace


async def test_a_beat_is_due_from_the_start_agent_call_even_before_the_loop_runs_it() -> None:
    from toolnexus.agents import VirtualClock

    clock = VirtualClock()
    reports: list[str] = []
    started = start_agent(
        agent("bot", does="x"),
        every_ms=60_000,
        on_report=reports.append,
        in_process=lambda body: {"content": "disk at 93%"},
        clock=clock,
    )
    beat = asyncio.ensure_future(started.next_beat())
    await clock.advance(60)  # no await in between: the beat task had not started yet
    assert await asyncio.wait_for(beat, 5) == 1
    await started.stop()
    assert reports == ["disk at 93%"]
