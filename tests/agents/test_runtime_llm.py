"""The runtime's agents get their clients from create_client's validated constructor.

``llm=`` takes every `create_client` option and keeps it; a client factory's options (hooks,
on_metric, request_params, max_turns) are kept too, unless the agent or the runtime sets its own.
"""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import UrllibTransport, UsageError, create_client
from toolnexus.agents import AgentDef, AgentRuntime, Handle
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls


def looping(request: RecordedRequest) -> Reply:
    """A model that never stops calling a tool."""
    return tool_calls(call("noop", {}, id=f"c{len(request.body['messages'])}"))


async def run_once(rt: AgentRuntime, agent: str = "a") -> Any:
    h = rt.spawn(rt.root, agent)
    assert isinstance(h, Handle)
    return await rt.run_turn(h, "go")


def registry(**agent: Any) -> dict[str, AgentDef]:
    return {"a": AgentDef(name="a", description="d", model="m-a", **agent)}


@pytest.fixture
def no_key_anywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


class Gateway:
    """A host's own wire (a blocking ``post``) to the model behind it, whatever the URL."""

    def __init__(self, model: ScriptedModel) -> None:
        self.inner = UrllibTransport()
        self.target = model.openai_base_url + "/chat/completions"
        self.urls: list[str] = []

    def post(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        self.urls.append(url)
        return self.inner.post(self.target, headers, payload, timeout)


@pytest.mark.usefixtures("no_key_anywhere")
async def test_a_missing_api_key_for_a_network_model_is_the_create_client_error() -> None:
    rt = AgentRuntime(registry=registry(), llm={"base_url": "https://models.example.com/v1"})
    result = await run_once(rt)
    await rt.aclose()
    assert result.status == "error"
    assert "no API key" in result.text


@pytest.mark.usefixtures("no_key_anywhere")
async def test_agents_on_an_injected_transport_start_without_a_key() -> None:
    async with ScriptedModel(default=lambda r: text("hi")) as model:
        gateway = Gateway(model)
        rt = AgentRuntime(
            registry=registry(),
            transport=gateway,
            llm={"base_url": "https://models.example.com/v1"},
        )
        result = await run_once(rt)
        await rt.aclose()
    assert (result.status, result.text) == ("done", "hi")
    assert gateway.urls == ["https://models.example.com/v1/chat/completions"]
    assert "authorization" not in model.requests[0].headers


@pytest.mark.usefixtures("no_key_anywhere")
async def test_agents_on_a_loopback_model_start_without_a_key() -> None:
    async with ScriptedModel(default=lambda r: text("hi")) as model:
        rt = AgentRuntime(registry=registry(), llm={"base_url": model.openai_base_url})
        result = await run_once(rt)
        await rt.aclose()
    assert (result.status, result.text) == ("done", "hi")
    assert "authorization" not in model.requests[0].headers


async def test_a_bad_option_is_refused_as_create_client_refuses_it() -> None:
    async with ScriptedModel(default=lambda r: text("hi")) as model:
        rt = AgentRuntime(
            registry=registry(),
            llm={"base_url": model.openai_base_url, "api_key": "k", "retries": -1},
        )
        result = await run_once(rt)
        await rt.aclose()
    assert result.status == "error"
    assert "retries" in result.text


async def test_llm_settings_take_request_params_hooks_on_metric_and_max_turns() -> None:
    seen: list[int] = []
    events: list[str] = []

    def before_llm(info: dict[str, Any]) -> None:
        seen.append(info["turn"])

    async with ScriptedModel(default=looping) as model:
        rt = AgentRuntime(
            registry=registry(),
            llm={
                "base_url": model.openai_base_url,
                "api_key": "k",
                "request_params": {"temperature": 0.125},
                "hooks": {"before_llm": before_llm},
                "on_metric": lambda e: events.append(e["event"]),
                "max_turns": 2,
            },
        )
        result = await run_once(rt)
        await rt.aclose()
    assert result.status == "incomplete"
    assert len(model.requests) == 2  # the per-wake cap from llm.max_turns
    assert all(r.body["temperature"] == 0.125 for r in model.requests)
    assert seen == [0, 1]
    assert "llm" in events


async def test_a_client_factorys_hooks_and_on_metric_are_kept() -> None:
    seen: list[str] = []
    events: list[str] = []
    async with ScriptedModel(default=lambda r: text("hi")) as model:

        def factory(agent: AgentDef) -> Any:
            return create_client(
                base_url=model.openai_base_url,
                model="m-factory",
                api_key="k",
                hooks={"before_llm": lambda info: seen.append(info["model"])},
                on_metric=lambda e: events.append(e["event"]),
                request_params={"seed": 7},
            )

        rt = AgentRuntime(registry=registry(), llm=factory)
        result = await run_once(rt)
        await rt.aclose()
    assert result.status == "done"
    assert seen == ["m-factory"]
    assert "llm" in events
    assert model.requests[0].body["seed"] == 7


async def test_the_agents_own_hooks_win_over_the_clients() -> None:
    mine: list[int] = []
    theirs: list[int] = []
    async with ScriptedModel(default=lambda r: text("hi")) as model:
        rt = AgentRuntime(
            registry=registry(hooks={"before_llm": lambda info: mine.append(1)}),
            llm={
                "base_url": model.openai_base_url,
                "api_key": "k",
                "hooks": {"before_llm": lambda info: theirs.append(1)},
            },
        )
        await run_once(rt)
        await rt.aclose()
    assert (mine, theirs) == ([1], [])


def test_an_unknown_llm_option_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown llm option"):
        AgentRuntime(registry=registry(), llm={"base_url": "http://x", "temprature": 1})
