"""`Agent.loop`: one agent's soul, model, budget and gates on a plain client."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import define_tool
from toolnexus.agents import Budget, Completion, Loop, Outcome, RunOptions, Verdict, agent
from toolnexus.errors import ProviderError
from toolnexus.testing import (
    RecordedRequest,
    Reply,
    ScriptedModel,
    call,
    http_error,
    text,
    tool_calls,
)


@define_tool
def note(what: str) -> str:
    """Write a note."""
    return f"noted {what}"


def brain(request: RecordedRequest) -> Reply:
    messages = request.body["messages"]
    if messages[-1]["role"] == "user":
        return tool_calls(call("note", {"what": "x"}))
    return text(f"answer #{sum(1 for m in messages if m['role'] == 'user')}")


def options(scripted: ScriptedModel, /, **extra: Any) -> dict[str, Any]:
    return {"base_url": scripted.openai_base_url, "api_key": "k", "model": "client-model"} | extra


async def test_a_loop_runs_the_soul_through_the_gate_and_keeps_its_history() -> None:
    checks: list[int] = []

    def verify(result: Any) -> Verdict:
        checks.append(len(result.tool_calls))
        return Verdict(len(checks) % 2 == 0, "one more")

    spec = agent("coder", does="codes", soul="You code.", completion=Completion(verify, 3))
    async with ScriptedModel(default=brain) as model:
        loop = spec.loop(options(model), [note])
        assert isinstance(loop, Loop)
        assert loop.status == "idle"
        first = await loop.run("task one")
        assert loop.status == "idle"
        second = await loop.run("task two")
    assert first == Outcome("answer #2", "done", "", 2, 4, first.result)
    assert (second.text, second.attempts, loop.turns) == ("answer #4", 2, 8)
    assert model.requests[0].body["messages"][0] == {"role": "system", "content": "You code."}
    # the second run continued the first one's conversation
    assert len(model.requests[4].body["messages"]) > len(model.requests[3].body["messages"])
    assert checks == [1, 2, 1, 2]


async def test_the_specs_model_applies_only_when_the_caller_names_none() -> None:
    async with ScriptedModel(default=brain) as model:
        spec = agent("a", does="x", model="spec-model")
        await spec.loop(options(model, model="inherit"), [note]).run("q")
        await spec.loop(options(model), [note]).run("q")
        await agent("b", does="x", model="inherit").loop(options(model), [note]).run("q")
        await spec.loop(options(model), [note]).run("q", model="per-call")
    models = [r.body["model"] for r in model.requests[::2]]
    assert models == ["spec-model", "client-model", "client-model", "per-call"]
    assert RunOptions().model == ""


async def test_a_stop_that_is_not_done_names_what_stopped_it() -> None:
    spec = agent("a", does="x", budget=Budget(max_turns=1))
    async with ScriptedModel(default=brain) as model:
        loop = spec.loop(options(model), [note])
        capped = await loop.run("q")
    assert (capped.status, capped.stopped_by, loop.status) == (
        "incomplete",
        "run reported incomplete",
        "incomplete",
    )
    never = agent("a", does="x", completion=Completion(lambda r: Verdict(False, "red"), 2))
    async with ScriptedModel(default=brain) as model:
        gated = await never.loop(options(model), [note]).run("q")
    assert (gated.status, gated.attempts) == ("incomplete", 2)
    assert gated.stopped_by == gated.text == "completion.verify failed 2x: red"


async def test_a_loop_whose_client_fails_is_in_error_and_raises() -> None:
    spec = agent("a", does="x")
    async with ScriptedModel(default=http_error(400, "bad")) as model:
        loop = spec.loop(options(model, retries=0), [note])
        with pytest.raises(ProviderError):
            await loop.run("q")
    assert loop.status == "error"


async def test_guardrails_apply_inside_a_loop() -> None:
    spec = agent("a", does="x", guardrails=[lambda e: "not now"])
    async with ScriptedModel(default=brain) as model:
        out = await spec.loop(options(model), [note]).run("q")
    assert out.result is not None
    assert out.result.tool_calls[0].output == "denied: not now"


async def test_an_in_process_generate_drives_a_loop() -> None:
    seen: list[Any] = []

    def generate(body: dict[str, Any]) -> dict[str, Any]:
        seen.append(body["model"])
        return {"content": "from memory"}

    out = await agent("a", does="x", model="mem").loop({"in_process": generate}).run("q")
    assert (out.text, seen) == ("from memory", ["mem"])


def test_loop_options_must_be_a_mapping() -> None:
    with pytest.raises(ValueError, match="mapping"):
        agent("a", does="x").loop(["not", "options"])  # type: ignore[arg-type]
