"""The runtime gates every turn with the agent's completion check — durably."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_support import llm_of

from toolnexus import Answer, ToolContext, ToolResult, define_tool, pending
from toolnexus.agents import AgentRuntime, Budget, Completion, Handle, Verdict, agent
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls

RETRY = "Your work did not verify: "
deploys: list[Any] = []


@define_tool
def note(what: str) -> str:
    """Write a note."""
    return f"noted {what}"


@define_tool
def deploy(ctx: ToolContext) -> str | ToolResult:
    """Deploy (needs approval)."""
    deploys.append(ctx.answer)
    if ctx.answer is None:
        return pending(kind="approval", prompt="Deploy to production?")
    return "deployed" if ctx.answer.ok else "not deployed"


def coder_brain(request: RecordedRequest) -> Reply:
    """Attempt 1 notes and claims done; a retry deploys, then reports the deploy's result."""
    messages = request.body["messages"]
    last = messages[-1]
    if last["role"] == "user":
        if str(last["content"]).startswith(RETRY):
            return tool_calls(call("deploy", {}, id=f"d{len(messages)}"))
        if str(last["content"]).startswith("Delegated:") or messages[0]["content"] != "lead":
            return tool_calls(call("note", {"what": "x"}, id=f"n{len(messages)}"))
    if messages[0]["content"] == "lead":
        if last["role"] == "user":
            return tool_calls(call("task", {"agent": "coder", "prompt": "Delegated: ship it"}))
        return text(f"lead got: {last['content']}")
    return text(f"finished after {last['content']}")


def deployed(result: Any) -> Verdict:
    names = [c.name for c in result.tool_calls]
    return Verdict("deploy" in names, f"not deployed yet (calls: {', '.join(names)})")


def coder(**opts: Any) -> Any:
    return agent(
        "coder",
        does="ships changes",
        soul="coder",
        uses={"tools": [note, deploy]},
        completion=Completion(deployed, max_attempts=3),
        **opts,
    )


def spawn(rt: AgentRuntime, name: str) -> Handle:
    h = rt.spawn(rt.root, name)
    assert isinstance(h, Handle), h
    return h


async def test_a_failed_check_loops_the_agent_with_the_verdicts_feedback() -> None:
    events: list[dict[str, Any]] = []
    verdicts: list[list[str]] = []

    def recording(result: Any) -> Verdict:
        verdicts.append([c.name for c in result.tool_calls])
        return deployed(result)

    gated = agent(
        "coder",
        does="ships",
        soul="coder",
        uses={"tools": [note, deploy]},
        completion=Completion(recording, max_attempts=3),
        wait_for=lambda r: Answer(id=r.id, ok=True),
    )
    async with ScriptedModel(default=coder_brain) as model:
        result = await gated.run("ship it", llm=llm_of(model), on_metric=events.append)
    assert (result.status, result.text) == ("done", "finished after deployed")
    assert verdicts == [["note"], ["note", "deploy"]]
    retry = model.requests[2].body["messages"][-1]["content"]
    assert retry == ("Your work did not verify: not deployed yet (calls: note). Fix it and finish.")
    assert result.turns == 4
    runs = [e for e in events if e["event"] == "run"]
    assert len(runs) == 2  # one run event per ask, as the client's
    assert {e["event"] for e in events} == {"llm", "tool", "run"}
    assert sum(1 for e in events if e["event"] == "llm") == 4


def noting_brain(request: RecordedRequest) -> Reply:
    if request.body["messages"][-1]["role"] == "user":
        return tool_calls(call("note", {"what": "x"}))
    return text("done")


async def test_the_turn_budget_caps_the_attempts_and_the_result_says_what_was_verifying() -> None:
    capped = agent(
        "coder",
        does="x",
        soul="coder",
        uses={"tools": [note]},
        budget=Budget(max_turns=3),
        completion=Completion(lambda r: Verdict(False, "still red"), max_attempts=5),
    )
    async with ScriptedModel(default=noting_brain) as model:
        result = await capped.run("go", llm=llm_of(model))
    assert (result.status, result.limit) == ("incomplete", "maxTurns")
    assert result.text.endswith("[while verifying: attempt 2 last failed: still red]")
    assert len(model.requests) == 3


async def test_a_check_that_never_passes_stops_at_the_completion_limit() -> None:
    never = agent(
        "coder",
        does="x",
        soul="coder",
        uses={"tools": [note]},
        completion=Completion(lambda r: Verdict(False, "no"), max_attempts=2),
    )

    async with ScriptedModel(default=noting_brain) as model:
        result = await never.run("go", llm=llm_of(model))
    assert (result.status, result.limit, result.is_error) == ("incomplete", "completion", False)
    assert result.text == "hit completion without a final answer"
    assert len(model.requests) == 4


async def test_a_delegated_child_is_gated_too() -> None:
    lead = agent(
        "lead", does="leads", soul="lead", team=[coder(wait_for=lambda r: Answer(id=r.id, ok=True))]
    )
    async with ScriptedModel(default=coder_brain) as model:
        result = await lead.run("go", llm=llm_of(model))
    assert result.status == "done"
    assert result.text == "lead got: finished after deployed"
    prompts = [r.body["messages"][-1]["content"] for r in model.requests]
    assert any(str(p).startswith(RETRY) for p in prompts)


async def test_a_run_that_suspends_inside_the_gate_resumes_in_a_new_runtime_and_finishes_once(
    tmp_path: Path,
) -> None:
    deploys.clear()
    store = f"sqlite:///{tmp_path / 'tree.db'}"
    spec = coder()
    verdicts: list[list[str]] = []
    original = spec.completion
    assert original is not None
    assert original.verify is not None

    def recording(result: Any) -> Verdict:
        verdicts.append([c.name for c in result.tool_calls])
        return deployed(result)

    spec.completion = Completion(recording, max_attempts=3)
    async with ScriptedModel(default=coder_brain) as model:
        first = AgentRuntime(registry=spec.registry(), llm=llm_of(model), store=store)
        h = spawn(first, "coder")
        halted = await first.run_turn(h, "ship it")
        assert halted.status == "pending"
        assert halted.pending is not None
        assert halted.pending.prompt == "Deploy to production?"
        assert h.gate is not None
        assert h.gate["attempt"] == 2
        await first.aclose()
        assert verdicts == [["note"]]

        second = await AgentRuntime.restore(
            registry=spec.registry(), store=store, llm=llm_of(model)
        )
        async with second:
            parked = second.handle("root/coder.1")
            assert parked is not None
            assert parked.state == "suspended"
            assert parked.gate is not None
            assert parked.gate["attempt"] == 2
            done = await second.resume(Answer(id=halted.pending.id, ok=True))
            assert (done.status, done.text) == ("done", "finished after deployed")
            assert parked.gate is None
            stored = await second.conversation_store.get("root/coder.1")
            assert stored is not None
            assert any(str(m.get("content", "")).startswith(RETRY) for m in stored)
            again = await second.wait(parked)
            assert again is parked.result
        requests = len(model.requests)
    assert [a.ok if a else None for a in deploys] == [None, True]  # approved and run once
    assert verdicts == [["note"], ["note", "deploy"]]
    assert requests == 4  # note, done-claim, deploy (halted), final: none repeated


async def test_a_guardrail_on_an_agent_denies_its_tool_in_the_runtime() -> None:
    deploys.clear()
    careful = agent(
        "coder",
        does="x",
        soul="coder",
        uses={"tools": [deploy]},
        guardrails=[lambda e: "deploys are frozen" if e["name"] == "deploy" else ""],
    )
    script = [tool_calls(call("deploy", {})), text("gave up")]
    async with ScriptedModel(script) as model:
        result = await careful.run("ship", llm=llm_of(model))
    assert result.text == "gave up"
    assert deploys == []
    tool_msg = [m for m in model.requests[1].body["messages"] if m["role"] == "tool"]
    assert tool_msg[0]["content"] == "denied: deploys are frozen"
