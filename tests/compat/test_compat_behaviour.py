"""COMPAT §7 and the contract behaviours of issue 11 item 6 that are the client's: per-turn
model overrides, ``tool_choice``, metric fields, toolkit-less calls, ``pending`` in streams,
Anthropic prompt-cache usage, the suspension helpers, the record and result shims (§12).

Real loopback model servers (`ScriptedModel`) for both wire styles.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn
from toolnexus.testing import ScriptedModel, call, text, tool_calls

KEY = "sk-compat"


def base_url(model: ScriptedModel, style: str) -> str:
    return model.openai_base_url if style == "openai" else model.anthropic_base_url


def client(model: ScriptedModel, style: str, **options: Any) -> tn.Client:
    return tn.Client(
        base_url=base_url(model, style), style=style, model="m-config", api_key=KEY, **options
    )


@tn.define_tool
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return str(a + b)


class Gate:
    """A tool that suspends for approval, then ships."""

    def __init__(self) -> None:
        @tn.define_tool
        def ship() -> Any:
            """Ship the order."""
            return tn.pending(id="ship-1", kind="approval", prompt="Ship it?")

        self.tool = ship


# -- before_llm may pick the model for one turn --------------------------------------------------


async def test_a_before_llm_model_applies_to_that_turn_only(
    scripted: ScriptedModel, style: str
) -> None:
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2})), text("3"))
    seen: list[tuple[str, int]] = []
    after: list[str] = []
    events: list[dict[str, Any]] = []

    def before_llm(info: dict[str, Any]) -> dict[str, Any] | None:
        seen.append((info["model"], info["turn"]))
        return {"model": "m-turn0"} if info["turn"] == 0 else {"model": ""}

    def after_llm(info: dict[str, Any]) -> None:
        after.append(info["model"])

    hooks = {"before_llm": before_llm, "after_llm": after_llm}
    async with client(scripted, style, hooks=hooks, on_metric=events.append) as c:
        result = await c.run("1+2", [add])
    # the hook always sees the configured model, never the previous override
    assert seen == [("m-config", 0), ("m-config", 1)]
    assert [r.body["model"] for r in scripted.requests] == ["m-turn0", "m-config"]
    assert after == ["m-turn0", "m-config"]
    assert [(e["event"], e["model"]) for e in events] == [
        ("llm", "m-turn0"),
        ("tool", "m-turn0"),
        ("llm", "m-config"),
        ("run", "m-config"),
    ]
    assert result.model == "m-config"  # the last transmitted


async def test_the_run_reports_the_last_transmitted_model_when_it_fails_later(
    scripted: ScriptedModel, style: str
) -> None:
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2})), text("never"))
    events: list[dict[str, Any]] = []

    def before_llm(info: dict[str, Any]) -> dict[str, Any]:
        if info["turn"] == 1:
            raise RuntimeError("hook broke")
        return {"model": "m-override"}

    async with client(
        scripted, style, hooks={"before_llm": before_llm}, on_metric=events.append
    ) as c:
        with pytest.raises(tn.CallbackError) as caught:
            await c.run("go", [add])
    assert isinstance(caught.value.__cause__, RuntimeError)
    run = events[-1]
    assert (run["event"], run["model"]) == ("run", "m-override")
    assert "hook broke" in run["error"]


@pytest.mark.parametrize("bad", [42, None, ["m"], {"name": "m"}])
async def test_a_model_that_is_not_a_non_empty_string_is_ignored(
    scripted: ScriptedModel, bad: Any
) -> None:
    scripted.add(text("ok"))
    async with client(scripted, "openai", hooks={"before_llm": lambda i: {"model": bad}}) as c:
        result = await c.run("hi")
    assert scripted.requests[0].body["model"] == "m-config"
    assert result.model == "m-config"


# -- the wire ------------------------------------------------------------------------------------


async def test_openai_sends_tool_choice_auto_only_with_tools(scripted: ScriptedModel) -> None:
    scripted.add(text("a"), text("b"), text("c"))
    async with client(scripted, "openai") as c:
        await c.run("with", [add])
        await c.run("without")
        await c.run("again", [add])
    with_tools, without, _ = (r.body for r in scripted.requests)
    assert with_tools["tool_choice"] == "auto"
    assert len(with_tools["tools"]) == 1
    assert "tool_choice" not in without
    assert "tools" not in without


async def test_a_before_llm_that_empties_the_tools_drops_tool_choice_too(
    scripted: ScriptedModel,
) -> None:
    scripted.add(text("a"))

    def strip(info: dict[str, Any]) -> dict[str, Any]:
        return {"tools": []}

    async with client(scripted, "openai", hooks={"before_llm": strip}) as c:
        await c.run("hi", [add])
    body = scripted.requests[0].body
    assert "tools" not in body
    assert "tool_choice" not in body


async def test_a_streamed_openai_turn_sends_tool_choice_too(scripted: ScriptedModel) -> None:
    scripted.add(text("streamed"))
    async with client(scripted, "openai") as c:
        [e async for e in c.stream("hi", [add])]
    assert scripted.requests[0].body["tool_choice"] == "auto"


async def test_anthropic_sends_no_tool_choice_and_always_a_system(scripted: ScriptedModel) -> None:
    scripted.add(text("a"), text("b"))
    async with client(scripted, "anthropic") as c:
        await c.run("no system", [add])
    async with client(scripted, "anthropic", system_prompt="be kind") as c:
        await c.run("with system", [add])
    bare, kind = (r.body for r in scripted.requests)
    assert "tool_choice" not in bare
    assert (bare["system"], bare["max_tokens"]) == ("", 4096)
    assert kind["system"] == "be kind"


# -- metric events -------------------------------------------------------------------------------


async def test_metric_events_carry_the_compat_fields(scripted: ScriptedModel, style: str) -> None:
    scripted.add(
        tool_calls(
            call("add", {"a": 1, "b": 1}), usage={"prompt_tokens": 7, "completion_tokens": 2}
        ),
        text("2", usage={"prompt_tokens": 9, "completion_tokens": 1}),
    )
    events: list[dict[str, Any]] = []
    async with client(scripted, style, on_metric=events.append) as c:
        await c.run("1+1", [add])
    llm, tool, _, run = events
    assert set(llm) == {"event", "model", "status", "ms", "prompt_tokens", "completion_tokens"}
    assert (llm["status"], llm["prompt_tokens"], llm["completion_tokens"]) == ("ok", 7, 2)
    assert set(tool) == {"event", "tool", "source", "is_error", "ms", "model"}
    assert (tool["tool"], tool["source"], tool["is_error"], tool["model"]) == (
        "add",
        "native",
        False,
        "m-config",
    )
    assert set(run) == {"event", "model", "turns", "tool_calls", "total_tokens", "ms"}
    assert (run["turns"], run["tool_calls"], run["total_tokens"]) == (2, 1, 19)


async def test_a_suspension_is_a_pending_tool_event_and_the_halt_a_run_event(
    scripted: ScriptedModel, style: str
) -> None:
    scripted.add(tool_calls(call("ship", {})))
    events: list[dict[str, Any]] = []
    async with client(scripted, style, on_metric=events.append) as c:
        result = await c.run("ship", [Gate().tool])
    assert result.status == "pending"
    tool = next(e for e in events if e["event"] == "tool")
    assert (tool["is_error"], tool["pending"]) == (False, True)
    assert [e["event"] for e in events][-1] == "run"


# -- toolkit-less runs ---------------------------------------------------------------------------


async def test_a_call_in_a_run_without_tools_is_unknown_and_emits_no_tool_event(
    scripted: ScriptedModel, style: str
) -> None:
    scripted.add(tool_calls(call("rm_rf", {"path": "/"})), text("sorry"))
    events: list[dict[str, Any]] = []
    async with client(scripted, style, on_metric=events.append) as c:
        result = await c.run("hi")
    assert result.text == "sorry"
    (record,) = result.tool_calls
    assert (record.name, record.output, record.is_error) == ("rm_rf", "unknown tool: rm_rf", True)
    assert [e["event"] for e in events] == ["llm", "llm", "run"]


async def test_with_a_toolkit_an_unknown_name_still_gets_a_tool_event(
    scripted: ScriptedModel,
) -> None:
    scripted.add(tool_calls(call("nope", {})), text("ok"))
    events: list[dict[str, Any]] = []
    async with client(scripted, "openai", on_metric=events.append) as c:
        result = await c.run("hi", [add])
    assert result.tool_calls[0].is_error
    assert "nope" in result.tool_calls[0].output
    assert [e["event"] for e in events] == ["llm", "tool", "llm", "run"]
    assert events[1]["source"] == "custom"


# -- stream(): pending before done without a wait_for --------------------------------------------


async def test_a_stream_without_wait_for_emits_pending_before_done(
    scripted: ScriptedModel, style: str
) -> None:
    scripted.add(tool_calls(call("add", {"a": 1, "b": 1}, id="c1"), call("ship", {}, id="c2")))
    async with client(scripted, style) as c:
        events = [e async for e in c.stream("go", [add, Gate().tool])]
    kinds = [e["type"] for e in events]
    assert kinds[-2:] == ["pending", "done"]
    assert kinds.count("pending") == 1
    pending, done = events[-2:]
    assert pending["request"].id == "ship-1"
    assert done["result"].status == "pending"
    assert done["result"].pending is pending["request"]


async def test_a_stream_with_wait_for_emits_pending_once_per_suspension(
    scripted: ScriptedModel, style: str
) -> None:
    scripted.add(tool_calls(call("ship", {}, id="c1")), text("shipped"))

    def answer(request: tn.Request) -> tn.Answer:
        return tn.Answer(id=request.id, ok=True)

    async with client(scripted, style, wait_for=answer) as c:
        events = [e async for e in c.stream("go", [Gate().tool])]
    assert [e["type"] for e in events].count("pending") == 1
    assert events[-1]["result"].status == "done"


# -- Anthropic prompt-cache usage ----------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True])
async def test_anthropic_cache_tokens_count_into_the_prompt(
    scripted: ScriptedModel, streamed: bool
) -> None:
    usage = {
        "prompt_tokens": 1,
        "completion_tokens": 4,
        "cache_read_input_tokens": 30,
        "cache_creation_input_tokens": 3,
    }
    scripted.add(text("cached", usage=usage))
    events: list[dict[str, Any]] = []
    async with client(scripted, "anthropic", on_metric=events.append) as c:
        if streamed:
            result = [e async for e in c.stream("hi")][-1]["result"]
        else:
            result = await c.run("hi")
    assert result.usage == {"prompt_tokens": 34, "completion_tokens": 4, "total_tokens": 38}
    assert events[0]["prompt_tokens"] == 34


async def test_anthropic_usage_without_cache_fields_is_unchanged(scripted: ScriptedModel) -> None:
    scripted.add(text("plain", usage={"prompt_tokens": 12, "completion_tokens": 3}))
    async with client(scripted, "anthropic") as c:
        result = await c.run("hi")
    assert result.usage == {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}


# -- results, records and helpers ----------------------------------------------------------------


async def test_tool_call_records_read_as_the_package_dicts(
    scripted: ScriptedModel, style: str
) -> None:
    scripted.add(tool_calls(call("add", {"a": 2, "b": 3}, id="c9")), text("5"))
    async with client(scripted, style) as c:
        result = await c.run("2+3", [add])
    (rec,) = result.tool_calls
    expected = {"name": "add", "args": {"a": 2.0, "b": 3.0}, "output": "5.0", "is_error": False}
    expected["metadata"] = rec.metadata
    assert rec == expected
    assert expected == rec
    assert dict(rec) == expected
    assert (rec["name"], rec.get("output"), rec.get("missing", "dflt")) == ("add", "5.0", "dflt")
    assert sorted(rec.keys()) == ["args", "is_error", "metadata", "name", "output"]
    assert len(rec) == 5
    assert "id" not in rec
    assert rec.id == "c9"
    with pytest.raises(KeyError):
        rec["id"]
    assert rec != {**expected, "output": "6.0"}


def test_run_result_fields_after_messages_have_defaults() -> None:
    result = tn.RunResult("hi", [])
    assert (result.tool_calls, result.tool_call_count, result.turns, result.model) == ([], 0, 0, "")
    assert result.usage == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    assert (result.status, result.limit, result.pending) == ("done", None, None)


async def test_is_pending_narrows_a_halted_result(scripted: ScriptedModel, style: str) -> None:
    scripted.add(tool_calls(call("ship", {})), text("ok"))
    async with client(scripted, style) as c:
        halted = await c.run("ship", [Gate().tool])
        done = await c.run("hi")
    assert tn.is_pending(halted)
    assert halted.pending.id == "ship-1"  # typed as Request, not Request | None
    assert not tn.is_pending(done)
    assert not tn.is_pending(tn.RunResult("x", [], status="pending"))  # no request: not pending


def test_answer_output_checks_its_output_and_adds_is_error_only_when_true() -> None:
    assert tn.answer_output("r1", "fine").data == {"output": "fine"}
    assert tn.answer_output("r1", "bad", is_error=True).data == {"output": "bad", "isError": True}
    for wrong in (42, None, b"bytes", ["x"]):
        with pytest.raises(TypeError) as caught:
            tn.answer_output("r1", wrong)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
        assert isinstance(caught.value, tn.UsageError)
        assert str(caught.value) == (
            f"toolnexus: Answer output must be a str, got {type(wrong).__name__}"
        )


def test_answer_declined_checks_the_reason() -> None:
    for reason in ("declined", "cancelled", "expired"):
        assert tn.answer_declined("r1", reason).reason == reason
    for wrong in ("nope", "", "DECLINED"):
        with pytest.raises(ValueError, match="must be") as caught:
            tn.answer_declined("r1", wrong)
        assert str(caught.value) == (
            f'toolnexus: Answer reason must be "declined", "cancelled" or "expired", got {wrong!r}'
        )


async def test_an_is_error_answer_output_reaches_a_relay_call_as_an_error(
    scripted: ScriptedModel,
) -> None:
    scripted.add(tool_calls(call("lookup", {"q": "x"}, id="c1")), text("noted"))
    relay = tn.relay_tool("lookup", "Look a thing up.")
    async with client(scripted, "openai") as c:
        halted = await c.run("look", [relay])
        assert tn.is_pending(halted)
        answer = tn.answer_output(halted.pending.id, "no such thing", True)
        resumed = await c.resume([relay], answer)
    assert resumed.text == "noted"
    assert resumed.tool_calls[-1].is_error
    assert resumed.tool_calls[-1].output == "no such thing"


def test_translate_result_defaults_and_tool_calls_json() -> None:
    empty = tn.TranslateResult()
    assert (empty.text, empty.tool_calls, empty.finish_reason, empty.model, empty.raw) == (
        "",
        [],
        "stop",
        "",
        None,
    )
    assert empty.usage == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    calls = [
        tn.TranslatedToolCall(id="a", name="add", arguments='{"a":1}'),
        tn.TranslatedToolCall(id="b", name="mul", arguments="{}"),
    ]
    assert tn.TranslateResult(tool_calls=calls, finish_reason="tool_calls").tool_calls_json() == [
        {"id": "a", "type": "function", "function": {"name": "add", "arguments": '{"a":1}'}},
        {"id": "b", "type": "function", "function": {"name": "mul", "arguments": "{}"}},
    ]


async def test_translate_honours_a_before_llm_model(scripted: ScriptedModel, style: str) -> None:
    scripted.add(text("translated"))
    hooks = {"before_llm": lambda info: {"model": "m-translate"}}
    async with client(scripted, style, hooks=hooks) as c:
        result = await c.translate([{"role": "user", "content": "hi"}])
    assert scripted.requests[0].body["model"] == "m-translate"
    assert result.model == "m-translate"


def test_a_type_checker_narrows_pending_through_is_pending(tmp_path: Path) -> None:
    source = tmp_path / "uses_pending.py"
    source.write_text(
        "from toolnexus import Request, RunResult, is_pending\n"
        "\n"
        "def narrowed(result: RunResult) -> str:\n"
        "    if is_pending(result):\n"
        "        request: Request = result.pending\n"
        "        return request.id\n"
        "    return result.text\n"
        "\n"
        "def unnarrowed(result: RunResult) -> str:\n"
        "    request: Request = result.pending\n"
        "    return request.id\n"
    )
    pyright = Path(sys.executable).with_name("pyright")
    done = subprocess.run(
        [str(pyright), "--outputjson", "--pythonpath", sys.executable, str(source)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        cwd=tmp_path,
    )
    report = json.loads(done.stdout)
    lines = sorted(d["range"]["start"]["line"] + 1 for d in report["generalDiagnostics"])
    assert lines == [10]  # only the un-narrowed read is an error
