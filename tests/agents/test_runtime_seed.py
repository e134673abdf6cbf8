"""The three Runtime.Resume examples of the seed, in Python."""

from __future__ import annotations

from typing import Any

from agent_support import check_secret_tool, llm_of

from toolnexus import Answer
from toolnexus.agents import AgentDef, AgentRuntime
from toolnexus.testing import ScriptedModel


def registry(calls: list[Any] | None = None) -> dict[str, AgentDef]:
    return {
        "asker": AgentDef(
            name="asker",
            description="needs approvals",
            model="m-asker",
            tools=[check_secret_tool(calls)],
        )
    }


async def test_a_durable_pending_parks_the_handle_and_resume_finishes_it(
    model: ScriptedModel,
) -> None:
    calls: list[Any] = []
    async with AgentRuntime(registry=registry(calls), llm=llm_of(model)) as rt:
        h = rt.spawn(rt.root, "asker")
        assert not hasattr(h, "error")
        rt.wake(h, "get the secret")
        r = await rt.wait(h)
        assert r.status == "pending"
        assert rt.state_of(h) == "suspended"
        view = rt.inspect(h)
        assert view.pending_kind == "approval"
        assert r.pending is not None
        assert r.pending.data == {"path": ["root", "asker.1"]}
        await rt.resume(Answer(id=r.pending.id, ok=True))
        assert rt.state_of(h) == "idle"
        final = await rt.wait(h)
    assert final.status == "done"
    assert final.text == "approved and done"
    assert [a.ok if a else None for a in calls] == [None, True]
    assert len(model.requests) == 2  # the resume did not ask the model to repeat the call
    assert rt.trace == [
        "root/asker.1: spawned (depth 1, tokens inf)",
        "root/asker.1: idle→running (wake)",
        'root/asker.1: running→suspended DURABLE (pending "approval", path preserved)',
        "root/asker.1: resume with Answer(ok=true) at checkpoint (turns so far: 1)",
        "root/asker.1: suspended→idle (Answer accepted, checkpoint restored)",
        "root/asker.1: idle→running",
        "root/asker.1: running→idle (done, turns=2, tokens=30)",
    ]


async def test_a_declined_answer_still_completes_the_run(model: ScriptedModel) -> None:
    async with AgentRuntime(registry=registry(), llm=llm_of(model)) as rt:
        h = rt.spawn(rt.root, "asker")
        assert not hasattr(h, "error")
        rt.wake(h, "get the secret")
        r = await rt.wait(h)
        assert r.pending is not None
        await rt.resume(Answer(id=r.pending.id, ok=False, reason="declined"))
        final = await rt.wait(h)
    assert final.status == "done"
    assert "declined" in final.text


async def test_inspect_then_resume_from_the_read_only_view(model: ScriptedModel) -> None:
    async with AgentRuntime(registry=registry(), llm=llm_of(model)) as rt:
        h = rt.spawn(rt.root, "asker")
        assert not hasattr(h, "error")
        rt.wake(h, "get the secret")
        await rt.wait(h)
        view = rt.inspect(h)
        assert view.state == "suspended"
        assert view.pending_kind == "approval"
        last = await rt.wait(h)  # the cached pending result, at once
        assert last.pending is not None
        await rt.resume(Answer(id=last.pending.id, ok=True))
        settled = await rt.wait(h)
    assert settled.status == "done"
    assert view.tokens == 15
    assert rt.inspect(h).tokens == 30
