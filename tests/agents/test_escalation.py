"""Escalation (nearest wait_for wins, one hop at a time) and the durable resume cascade."""

from __future__ import annotations

from typing import Any

import pytest
from agent_support import approval_brain, check_secret_tool, llm_of

from toolnexus import Answer, AnswerConflict, AnswerMismatch, Request, ResumeError
from toolnexus.agents import AgentDef, AgentRuntime, Handle
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls

leaf_brain = approval_brain("leaf got the secret")


def brain(request: RecordedRequest) -> Reply:
    if request.body["model"] == "m-leaf":
        return leaf_brain(request)
    seen = [m for m in request.body["messages"] if m.get("role") == "tool"]
    if not seen:
        return tool_calls(call("task", {"agent": "approver", "prompt": "fetch it"}, id="t1"))
    return text(f"parent done: {seen[-1]['content']}")


def registry(
    parent_wait_for: Any = None, leaf_calls: list[Any] | None = None
) -> dict[str, AgentDef]:
    return {
        "approverParent": AgentDef(
            name="approverParent",
            description="coordinates",
            model="m-parent",
            task_targets=["approver"],
            wait_for=parent_wait_for,
        ),
        "approver": AgentDef(
            name="approver",
            description="asks for approval",
            model="m-leaf",
            tools=[check_secret_tool(leaf_calls)],
        ),
    }


def traces(rt: AgentRuntime, handle_id: str) -> list[str]:
    prefix = f"{handle_id}: "
    rest = [t[len(prefix) :].split(" ", 1)[0] for t in rt.trace if t.startswith(prefix)]
    return [t for t in rest if "→" in t and " " not in t]


async def start(rt: AgentRuntime) -> Handle:
    h = rt.spawn(rt.root, "approverParent")
    assert isinstance(h, Handle)
    rt.wake(h, "go")
    return h


async def test_the_parents_wait_for_answers_a_childs_suspension_inline() -> None:
    asked: list[Request] = []

    async def wait_for(req: Request) -> Answer:
        asked.append(req)
        return Answer(id=req.id, ok=True)

    async with ScriptedModel(default=brain) as model:
        rt = AgentRuntime(registry=registry(wait_for), llm=llm_of(model))
        await rt.__aenter__()
        parent = await start(rt)
        result = await rt.wait(parent)
        assert result.status == "done"
        assert result.text == "parent done: leaf got the secret"
        assert traces(rt, "root/approverParent.1") == ["idle→running", "running→idle"]
        assert traces(rt, "root/approverParent.1/approver.1") == [
            "idle→running",
            "running→suspended",
            "suspended→running",
            "running→idle",
            "idle→closed",
        ]
        leaf = "root/approverParent.1/approver.1"
        assert [
            t for t in rt.trace if t.startswith(leaf) and ("suspend" in t or "escalate" in t)
        ] == [
            f'{leaf}: running→suspended (pending "approval": approve secret access?)',
            f'{leaf}: escalate → root/approverParent.1 answers ("nearest interpreter")',
            f"{leaf}: suspended→running (Answer ok=true)",
        ]
        await rt.aclose()
    assert len(asked) == 1
    assert asked[0].kind == "approval"
    assert asked[0].data == {"path": ["root", "approverParent.1", "approver.1"]}


async def test_with_no_wait_for_the_root_gets_pending_and_resume_cascades() -> None:
    leaf_calls: list[Any] = []
    async with ScriptedModel(default=brain) as model:
        rt = AgentRuntime(registry=registry(leaf_calls=leaf_calls), llm=llm_of(model))
        parent = await start(rt)
        phase1 = await rt.wait(parent)
        assert phase1.status == "pending"
        assert phase1.pending is not None
        assert phase1.pending.data == {"path": ["root", "approverParent.1"]}
        assert [v.state for v in rt.list()] == ["suspended", "suspended"]
        assert {v.pending_kind for v in rt.list()} == {"approval"}
        requests_before = len(model.requests)
        await rt.resume(Answer(id=phase1.pending.id, ok=True))
        final = await rt.wait(parent)
        assert final.status == "done"
        assert final.text == "parent done: leaf got the secret"
        assert traces(rt, "root/approverParent.1") == [
            "idle→running",
            "running→suspended",
            "suspended→idle",
            "idle→running",
            "running→idle",
        ]
        assert traces(rt, "root/approverParent.1/approver.1") == [
            "idle→running",
            "running→suspended",
            "suspended→idle",
            "idle→running",
            "running→idle",
            "idle→closed",
        ]
        assert (
            "root/approverParent.1: task replay → REATTACH to root/approverParent.1/approver.1 "
            "(state idle)"
        ) in rt.trace
        assert len(rt.handle("root/approverParent.1").children) == 1  # type: ignore[union-attr]
        await rt.aclose()
    # one leaf model call after the answer, one parent call: no call was replayed
    assert len(model.requests) - requests_before == 2
    assert [a.ok if a else None for a in leaf_calls] == [None, True]


async def test_usage_and_turns_grow_across_the_resume_never_reset() -> None:
    async with ScriptedModel(default=brain) as model:
        rt = AgentRuntime(registry=registry(), llm=llm_of(model))
        parent = await start(rt)
        phase1 = await rt.wait(parent)
        assert phase1.pending is not None
        leaf = rt.handle("root/approverParent.1/approver.1")
        assert leaf is not None
        before = (rt.inspect(parent).tokens, rt.inspect(leaf).turns)
        await rt.resume(Answer(id=phase1.pending.id, ok=True))
        after = (rt.inspect(parent).tokens, rt.inspect(leaf).turns)
        await rt.aclose()
    assert before == (30, 1)
    assert after == (60, 2)


async def test_resume_checks_the_answer_id_and_that_something_is_suspended() -> None:
    async with ScriptedModel(default=brain) as model:
        rt = AgentRuntime(registry=registry(), llm=llm_of(model))
        with pytest.raises(ResumeError, match="no suspended handle"):
            await rt.resume(Answer(id="x", ok=True))
        parent = await start(rt)
        phase1 = await rt.wait(parent)
        assert phase1.pending is not None
        with pytest.raises(AnswerMismatch, match="does not echo"):
            await rt.resume(Answer(id="wrong", ok=True))
        assert [v.state for v in rt.list()] == ["suspended", "suspended"]
        await rt.resume(Answer(id=phase1.pending.id, ok=True), answered_by="ana")
        # A second answer to the finished tree: the same error as for a bare run.
        with pytest.raises(AnswerConflict, match="already answered by ana"):
            await rt.resume(Answer(id=phase1.pending.id, ok=True))
        await rt.aclose()


async def test_a_suspended_tree_survives_the_process_and_a_new_one_resumes_it(
    tmp_path: Any,
) -> None:
    import asyncio
    import json
    import sys
    from pathlib import Path

    worker = Path(__file__).parents[1] / "helpers" / "runtime_proc.py"
    store = f"sqlite:///{tmp_path / 'tree.db'}"

    async def run(*args: str) -> dict[str, Any]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(worker),
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), timeout=30)
        assert proc.returncode == 0, err.decode()
        return json.loads(out)

    async with ScriptedModel(default=brain) as model:
        halted = await run("halt", model.openai_base_url, store)
        assert halted["status"] == "pending"
        resumed = await run("resume", model.openai_base_url, store)
    assert resumed["views"] == [
        ["root/approverParent.1", "suspended", "approval"],
        ["root/approverParent.1/approver.1", "suspended", "approval"],
    ]
    assert resumed["status"] == "done"
    assert resumed["text"] == "parent done: leaf got the secret"
    assert resumed["trace"] == [
        "root/approverParent.1/approver.1: resume with Answer(ok=true) at checkpoint "
        "(turns so far: 1)",
        "root/approverParent.1/approver.1: suspended→idle (Answer accepted, checkpoint restored)",
        "root/approverParent.1/approver.1: idle→running",
        "root/approverParent.1/approver.1: running→idle (done, turns=2, tokens=30)",
        "root/approverParent.1: cascade resume (replay reattaches by task key)",
        "root/approverParent.1: suspended→idle (Answer accepted, checkpoint restored)",
        "root/approverParent.1: idle→running",
        "root/approverParent.1: task replay → REATTACH to root/approverParent.1/approver.1 "
        "(state idle)",
        "root/approverParent.1/approver.1: idle→closed (closed)",
        "root/approverParent.1: running→idle (done, turns=2, tokens=60)",
    ]


async def test_an_expired_request_resumes_the_leaf_with_the_expired_decline() -> None:
    from datetime import UTC, datetime, timedelta

    from toolnexus import Tool, ToolContext, ToolResult, pending
    from toolnexus.suspension import format_timestamp

    seen: list[Any] = []

    async def gate(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        if ctx is not None and ctx.answer is not None:
            seen.append(ctx.answer)
            return ToolResult("approved")
        past = format_timestamp(datetime.now(UTC) - timedelta(seconds=1))
        return pending(kind="approval", prompt="approve?", expiresAt=past)

    reg = registry()
    reg["approver"].tools = [Tool("check_secret", "gate", {"type": "object"}, "custom", gate)]
    async with ScriptedModel(default=brain) as model:
        async with AgentRuntime(registry=reg, llm=llm_of(model)) as rt:
            parent = await start(rt)
            phase1 = await rt.wait(parent)
            assert phase1.pending is not None
            await rt.resume(Answer(id=phase1.pending.id, ok=True))
            final = await rt.wait(parent)
    assert seen == []  # a decline never re-runs the tool
    assert final.status == "done"
    leaf_request = next(r for r in model.requests[::-1] if r.body["model"] == "m-leaf")
    assert leaf_request.body["messages"][-1]["content"] == "declined/expired: approve?"


async def test_two_processes_resuming_the_same_restored_tree_resume_it_once(
    tmp_path: Any,
) -> None:
    import asyncio
    import json
    import sys
    from pathlib import Path

    worker = Path(__file__).parents[1] / "helpers" / "runtime_proc.py"
    store = f"sqlite:///{tmp_path / 'tree.db'}"

    async def spawn_worker(*args: str) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            str(worker),
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )

    async with ScriptedModel(default=brain) as model:
        halt = await spawn_worker("halt", model.openai_base_url, store)
        out, err = await asyncio.wait_for(halt.communicate(), 30)
        assert halt.returncode == 0, err.decode()
        rid = json.loads(out)["pending"]["id"]
        racers = [await spawn_worker("resume", model.openai_base_url, store, rid) for _ in range(2)]
        results = [await asyncio.wait_for(p.communicate(), 30) for p in racers]
    codes = sorted(p.returncode or 0 for p in racers)
    assert codes[0] == 0, [r[1].decode()[-300:] for r in results]
    assert codes[1] != 0
    pairs = list(zip(racers, results, strict=True))
    loser = next(err.decode() for p, (_, err) in pairs if p.returncode)
    assert "AnswerConflict" in loser or "no suspended handle" in loser
    winner = next(json.loads(o) for p, (o, _) in pairs if not p.returncode)
    assert winner["status"] == "done"
    leaf_calls_after = [r for r in model.requests if r.body["model"] == "m-leaf"]
    assert len(leaf_calls_after) == 2  # one before the halt, exactly one resumed call
