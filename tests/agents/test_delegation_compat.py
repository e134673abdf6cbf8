"""Delegation and waiting as the contract says: fresh runs for new calls, the host's own waits,
and what the conversation store holds while a tree is parked."""

from __future__ import annotations

from typing import Any

from agent_support import check_secret_tool, llm_of

from toolnexus import Answer
from toolnexus.agents import AgentDef, AgentRuntime, Handle, agent
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls


def counting_team(call_ids: list[str]) -> tuple[Any, list[int]]:
    runs: list[int] = []
    ids = iter(call_ids)

    def brain(request: RecordedRequest) -> Reply:
        messages = request.body["messages"]
        if messages[0]["content"] == "helper":
            runs.append(1)
            return text(f"count {len(runs)}")
        if messages[-1]["role"] == "user":
            return tool_calls(call("task", {"agent": "helper", "prompt": "count"}, id=next(ids)))
        return text(f"lead saw {messages[-1]['content']}")

    return brain, runs


async def run_twice(call_ids: list[str]) -> tuple[list[str], list[int], AgentRuntime, Handle]:
    brain, runs = counting_team(call_ids)
    helper = agent("helper", does="counts", soul="helper")
    lead = agent("lead", does="leads", soul="lead", team=[helper])
    async with ScriptedModel(default=brain) as model:
        async with AgentRuntime(registry=lead.registry(), llm=llm_of(model)) as rt:
            h = rt.spawn(rt.root, "lead")
            assert isinstance(h, Handle)
            first = await rt.run_turn(h, "count once")
            second = await rt.run_turn(h, "count again")
    return [first.text, second.text], runs, rt, h


async def test_a_new_task_call_with_the_same_agent_and_prompt_runs_the_teammate_again() -> None:
    texts, runs, rt, lead = await run_twice(["call-1", "call-2"])
    assert texts == ["lead saw count 1", "lead saw count 2"]
    assert len(runs) == 2
    assert [c.id for c in lead.children] == ["root/lead.1/helper.1", "root/lead.1/helper.2"]
    assert not any("REATTACH" in t for t in rt.trace)


async def test_a_model_that_reuses_a_call_id_in_a_later_turn_still_gets_a_fresh_run() -> None:
    texts, runs, _, lead = await run_twice(["c1", "c1"])
    assert texts == ["lead saw count 1", "lead saw count 2"]
    assert len(runs) == 2
    assert len(lead.children) == 2


def explorer_brain(request: RecordedRequest) -> Reply:
    return text(f"explored: {request.body['messages'][-1]['content']}")


async def test_the_host_may_wait_on_handles_it_spawned_anywhere_in_the_tree() -> None:
    registry = {
        "coordinator": AgentDef("coordinator", task_targets=["explorer"]),
        "explorer": AgentDef("explorer"),
    }
    async with ScriptedModel(default=explorer_brain) as model:
        async with AgentRuntime(registry=registry, llm=llm_of(model)) as rt:
            boss = rt.spawn(rt.root, "coordinator")
            assert isinstance(boss, Handle)
            kids = [rt.spawn(boss, "explorer") for _ in range(2)]
            assert all(isinstance(k, Handle) for k in kids)
            for i, k in enumerate(kids):
                assert isinstance(k, Handle)
                assert rt.wake(k, f"area {i}").ok
            results = [await rt.wait(k) for k in kids if isinstance(k, Handle)]
            third = rt.spawn(kids[0], "explorer")  # a grandchild of the coordinator
            assert isinstance(third, Handle)
            deep = await rt.run_turn(third, "deeper")
    assert [r.text for r in results] == ["explored: area 0", "explored: area 1"]
    assert all(r.status == "done" for r in results)
    assert deep.text == "explored: deeper"


async def test_the_host_may_not_wait_on_a_child_a_task_call_spawned() -> None:
    brain, _ = counting_team(["t1"])
    helper = agent("helper", does="counts", soul="helper")
    lead = agent("lead", does="leads", soul="lead", team=[helper])
    async with ScriptedModel(default=brain) as model:
        async with AgentRuntime(registry=lead.registry(), llm=llm_of(model)) as rt:
            h = rt.spawn(rt.root, "lead")
            assert isinstance(h, Handle)
            await rt.run_turn(h, "go")
            refused = await rt.wait(h.children[0])
    assert (refused.status, refused.text) == (
        "error",
        "only the spawner (root/lead.1) may wait on root/lead.1/helper.1",
    )


async def test_while_parked_the_store_holds_the_pre_turn_transcript_and_transcript_the_halt() -> (
    None
):
    def brain(request: RecordedRequest) -> Reply:
        messages = request.body["messages"]
        if messages[-1]["role"] == "user":
            return tool_calls(call("check_secret", {}, id=f"c{len(messages)}"))
        return text("approved and done")

    registry = {"asker": AgentDef("asker", tools=[check_secret_tool()])}
    async with ScriptedModel(default=brain) as model:
        async with AgentRuntime(registry=registry, llm=llm_of(model)) as rt:
            h = rt.spawn(rt.root, "asker")
            assert isinstance(h, Handle)
            halted = await rt.run_turn(h, "first")
            assert halted.pending is not None
            assert await rt.conversation_store.get(h.id) == []  # parked on its first turn
            live = await rt.transcript(h)
            assert [m["role"] for m in live] == ["user", "assistant"]
            assert live[0]["content"] == "first"
            await rt.resume(Answer(id=halted.pending.id, ok=True))
            finished = await rt.conversation_store.get(h.id)
            assert finished is not None
            assert finished[-1]["content"] == "approved and done"
            assert await rt.transcript(h) == finished

            again = await rt.run_turn(h, "second")
            assert again.status == "pending"
            assert await rt.conversation_store.get(h.id) == finished  # rewound to pre-turn
            live = await rt.transcript(h)
            assert len(live) == len(finished) + 2
            assert live[len(finished)]["content"] == "second"
