"""An agent's ``run`` metric events are a client's: one builder, the same fields, secrets masked."""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest
from agent_support import llm_of

from toolnexus import create_client
from toolnexus.agents import AgentDef, AgentRuntime, Handle
from toolnexus.errors import CallbackError
from toolnexus.redaction import MASK
from toolnexus.testing import ScriptedModel, text


def registry(**agent: Any) -> dict[str, AgentDef]:
    return {"a": AgentDef(name="a", description="d", model="m-a", **agent)}


async def run_once(rt: AgentRuntime) -> Any:
    h = rt.spawn(rt.root, "a")
    assert isinstance(h, Handle)
    return await rt.run_turn(h, "go")


def runs_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "run"]


async def test_the_api_key_inside_a_failing_agent_runs_error_is_masked_in_its_run_event() -> None:
    key = f"sk-test-{secrets.token_hex(12)}"
    events: list[dict[str, Any]] = []

    def before_llm(info: dict[str, Any]) -> None:
        raise RuntimeError(f"the gateway refused {key}")

    async with ScriptedModel(default=lambda r: text("never")) as model:
        llm = llm_of(model, api_key=key, hooks={"before_llm": before_llm})
        async with AgentRuntime(registry=registry(), llm=llm, on_metric=events.append) as rt:
            result = await run_once(rt)
            metrics = rt.metrics.render()
    assert result.status == "error"
    [run] = runs_of(events)
    assert f"the gateway refused {MASK}" in run["error"]
    assert key not in json.dumps(events)
    assert 'toolnexus_run_errors_total{model="m-a"} 1' in metrics


async def test_a_failing_agent_run_and_a_failing_client_run_give_the_same_error_text() -> None:
    def before_llm(info: dict[str, Any]) -> None:
        raise RuntimeError("the gateway is down")

    agent_events: list[dict[str, Any]] = []
    client_events: list[dict[str, Any]] = []
    async with ScriptedModel(default=lambda r: text("never")) as model:
        llm = llm_of(model, hooks={"before_llm": before_llm})
        async with AgentRuntime(registry=registry(), llm=llm, on_metric=agent_events.append) as rt:
            await run_once(rt)
        async with create_client(
            base_url=model.openai_base_url,
            model="m-a",
            api_key="k",
            hooks={"before_llm": before_llm},
            on_metric=client_events.append,
        ) as client:
            with pytest.raises(CallbackError) as raised:
                await client.run("go")
    [agent_run] = runs_of(agent_events)
    [client_run] = runs_of(client_events)
    assert agent_run["error"] == client_run["error"] == str(raised.value)  # COMPAT §7: str(e)
    assert agent_run.keys() == client_run.keys()


async def test_an_agent_runs_event_names_the_model_it_last_sent() -> None:
    events: list[dict[str, Any]] = []

    def before_llm(info: dict[str, Any]) -> dict[str, Any]:
        return {"model": "m-override"}

    async with ScriptedModel(default=lambda r: text("hi")) as model:
        llm = llm_of(model, hooks={"before_llm": before_llm})
        async with AgentRuntime(registry=registry(), llm=llm, on_metric=events.append) as rt:
            result = await run_once(rt)
    assert result.status == "done"
    assert model.requests[0].body["model"] == "m-override"
    [run] = runs_of(events)
    assert run["model"] == "m-override"  # the last transmitted model, as a client's (COMPAT §7)
