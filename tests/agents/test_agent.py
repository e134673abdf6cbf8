"""The level-1 surface: agent(), Agent.run, Agent.as_tool, registry, the task tool's team."""

from __future__ import annotations

from typing import Any

from agent_support import check_secret_tool, llm_of

from toolnexus import Answer, create_client, create_toolkit
from toolnexus.agents import agent
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls


def lead_brain(request: RecordedRequest) -> Reply:
    body = request.body
    seen = [m for m in body["messages"] if m.get("role") == "tool"]
    if body["model"] == "m-worker":
        return text(f"worker did: {body['messages'][-1]['content']}")
    if not seen:
        return tool_calls(
            call("task", {"agent": "alpha", "prompt": "part A"}),
            call("task", {"agent": "beta", "prompt": "part B"}),
            call("task", {"agent": "gamma", "prompt": "part C"}),
        )
    return text(" | ".join(str(m["content"]) for m in seen))


def team() -> Any:
    alpha = agent("alpha", does="does A", model="m-worker")
    beta = agent("beta", does="does B", model="m-worker")
    return agent("lead", does="leads", team=[beta, alpha], model="m-lead")


async def test_an_agent_delegates_in_parallel_and_gets_one_result_per_call() -> None:
    async with ScriptedModel(default=lead_brain) as model:
        result = await team().run("go", llm=llm_of(model))
    assert result.status == "done"
    assert result.text == (
        "worker did: part A | worker did: part B | "
        'agent "gamma" not in this agent\'s team (alpha, beta)'
    )
    lead_call = next(r for r in model.requests if r.body["model"] == "m-lead")
    task = next(t for t in lead_call.body["tools"] if t["function"]["name"] == "task")
    assert task["function"]["description"].endswith(
        "Available agents — alpha: does A; beta: does B"
    )


async def test_the_registry_is_the_transitive_closure_of_the_team_graph() -> None:
    leaf = agent("leaf", does="leaf")
    mid = agent("mid", does="mid", team=[leaf])
    top = agent("top", does="top", team=[mid, leaf])
    assert list(top.registry()) == ["leaf", "mid", "top"]
    assert list(top.registry()["mid"].task_targets) == ["leaf"]
    assert list(top.registry()["leaf"].task_targets) == []


async def test_a_pending_run_keeps_its_runtime_for_resume() -> None:
    asker = agent("asker", does="asks", uses={"tools": [check_secret_tool()]}, model="m")
    from agent_support import approval_brain

    async with ScriptedModel(default=approval_brain()) as model:
        result = await asker.run("get it", llm=llm_of(model))
        assert result.status == "pending"
        assert result.runtime is not None
        assert result.pending is not None
        rt = result.runtime
        await rt.resume(Answer(id=result.pending.id, ok=True))
        h = rt.handle("root/asker.1")
        assert h is not None
        done = await rt.wait(h)
        await rt.aclose()
    assert done.status == "done"
    assert done.text == "approved and done"


async def test_an_agent_as_a_tool_runs_its_loop_inside_a_client_run() -> None:
    worker = agent("alpha", does="does A", model="m-worker")

    def brain(request: RecordedRequest) -> Reply:
        if request.body["model"] == "m-worker":
            return text("alpha's answer")
        seen = [m for m in request.body["messages"] if m.get("role") == "tool"]
        if not seen:
            return tool_calls(call("alpha", {"prompt": "do it"}))
        return text(f"outer got: {seen[-1]['content']}")

    async with ScriptedModel(default=brain) as model:
        tool = worker.as_tool(llm=llm_of(model))
        tk = await create_toolkit(extra_tools=[tool], builtins=False)
        async with create_client(base_url=model.openai_base_url, model="m-outer", api_key="k") as c:
            result = await c.run("go", tk)
    assert result.text == "outer got: alpha's answer"
    assert result.tool_calls[0].metadata == {"agent": "alpha", "turns": 1, "totalTokens": 15}


async def test_a_suspending_agent_tool_is_answered_by_the_callers_wait_for() -> None:
    from agent_support import approval_brain

    from toolnexus import Request

    asker = agent("asker", does="asks", uses={"tools": [check_secret_tool()]}, model="m-inner")
    inner = approval_brain("inner got the secret")

    def brain(request: RecordedRequest) -> Reply:
        if request.body["model"] == "m-inner":
            return inner(request)
        seen = [m for m in request.body["messages"] if m.get("role") == "tool"]
        if not seen:
            return tool_calls(call("asker", {"prompt": "get it"}))
        return text(f"outer: {seen[-1]['content']}")

    asked: list[Request] = []

    async def approve(request: Request) -> Answer:
        asked.append(request)
        return Answer(id=request.id, ok=True)

    async with ScriptedModel(default=brain) as model:
        tk = await create_toolkit(extra_tools=[asker.as_tool(llm=llm_of(model))], builtins=False)
        async with create_client(
            base_url=model.openai_base_url, model="m-outer", api_key="k", wait_for=approve
        ) as c:
            result = await c.run("go", tk)
    assert result.text == "outer: inner got the secret"
    assert [r.kind for r in asked] == ["approval"]
    assert sum(1 for r in model.requests if r.body["model"] == "m-inner") == 2


def test_unknown_uses_keys_are_refused() -> None:
    import pytest

    from toolnexus import UsageError

    with pytest.raises(UsageError, match="unknown uses key"):
        agent("a", does="x", uses={"tool": []})


async def test_the_runtime_takes_a_client_factory_for_its_agents_model() -> None:
    from toolnexus.agents import AgentDef, AgentRuntime, Handle

    built: list[str] = []

    async with ScriptedModel(default=text("from the factory's model")) as model:

        def factory(definition: AgentDef) -> Any:
            built.append(definition.name)
            return create_client(
                base_url=model.openai_base_url, model=f"m-{definition.name}", api_key="k"
            )

        registry = {"w": AgentDef(name="w", system_prompt="be brief")}
        async with AgentRuntime(registry=registry, llm=factory) as rt:
            h = rt.spawn(rt.root, "w")
            assert isinstance(h, Handle)
            result = await rt.run_turn(h, "hi")
    assert result.text == "from the factory's model"
    assert built == ["w"]
    body = model.requests[0].body
    assert body["model"] == "m-w"
    assert body["messages"][0] == {"role": "system", "content": "be brief"}
