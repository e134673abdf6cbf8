"""The four loop hooks: forms, info shapes, rewrites, short-circuits and failures (CONTRACT §8)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from toolnexus import (
    CallbackError,
    Client,
    Hooks,
    Tool,
    ToolContext,
    ToolResult,
    UsageError,
    create_client,
)
from toolnexus.testing import ScriptedModel, call, text, tool_calls

ClientFor = Callable[..., Client]
HOOK_NAMES = ("before_llm", "after_llm", "before_tool", "after_tool")


def adder(runs: list[dict[str, Any]]) -> Tool:
    """``add`` that records the arguments of every execution in ``runs``."""

    def execute(args: dict[str, Any], ctx: ToolContext | None) -> str:
        runs.append(dict(args))
        return str(args["a"] + args["b"])

    return Tool(
        name="add",
        description="Add two numbers.",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
        source="native",
        execute=execute,
    )


def echo() -> Tool:
    return Tool(
        name="echo",
        description="Echo.",
        input_schema={"type": "object", "properties": {}},
        source="native",
        execute=lambda args, ctx: "echoed",
    )


class Recorder:
    """Logs every hook call as ``(hook name, info)``."""

    def __init__(self) -> None:
        self.log: list[tuple[str, dict[str, Any]]] = []

    def record(self, name: str, info: dict[str, Any]) -> None:
        self.log.append((name, dict(info)))


class SyncRecorder(Recorder):
    """Every hook as a plain method."""

    def before_llm(self, info: dict[str, Any]) -> None:
        self.record("before_llm", info)

    def after_llm(self, info: dict[str, Any]) -> None:
        self.record("after_llm", info)

    def before_tool(self, info: dict[str, Any]) -> None:
        self.record("before_tool", info)

    def after_tool(self, info: dict[str, Any]) -> None:
        self.record("after_tool", info)


class AsyncRecorder(Recorder):
    """Every hook as a coroutine method."""

    async def before_llm(self, info: dict[str, Any]) -> None:
        self.record("before_llm", info)

    async def after_llm(self, info: dict[str, Any]) -> None:
        self.record("after_llm", info)

    async def before_tool(self, info: dict[str, Any]) -> None:
        self.record("before_tool", info)

    async def after_tool(self, info: dict[str, Any]) -> None:
        self.record("after_tool", info)


def as_form(recorder: Recorder, form: str) -> Any:
    if form == "object":
        return recorder
    hooks = {name: getattr(recorder, name) for name in HOOK_NAMES}
    return hooks if form == "mapping" else Hooks(**hooks)


@pytest.mark.parametrize("form", ["object", "mapping", "Hooks"])
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_every_hook_fires_in_loop_order_with_its_pinned_info_keys(
    scripted: ScriptedModel, client_for: ClientFor, form: str, kind: str
) -> None:
    recorder: Recorder = SyncRecorder() if kind == "sync" else AsyncRecorder()
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2}, id="c1")), text("3"))
    async with client_for(scripted, hooks=as_form(recorder, form)) as client:
        await client.run("1+2", [adder([])])
    assert [(name, sorted(info)) for name, info in recorder.log] == [
        ("before_llm", ["messages", "model", "tools", "turn"]),
        ("after_llm", ["model", "response", "turn"]),
        ("before_tool", ["args", "id", "name", "turn"]),
        ("after_tool", ["args", "id", "name", "result", "turn"]),
        ("before_llm", ["messages", "model", "tools", "turn"]),
        ("after_llm", ["model", "response", "turn"]),
    ]
    before_tool, after_tool = recorder.log[2][1], recorder.log[3][1]
    assert (before_tool["name"], before_tool["args"], before_tool["id"]) == (
        "add",
        {"a": 1, "b": 2},
        "c1",
    )
    assert after_tool["result"].output == "3"
    assert all(info["model"] == "m-1" for name, info in recorder.log if "llm" in name)


async def test_after_llm_receives_the_raw_provider_payload(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    recorder = SyncRecorder()
    scripted.add(text("hi"))
    async with client_for(scripted, style, hooks=recorder) as client:
        await client.run("hello")
    response = recorder.log[1][1]["response"]
    if style == "openai":
        assert response["object"] == "chat.completion"
        assert response["choices"][0]["message"]["content"] == "hi"
    else:
        assert response["type"] == "message"
        assert response["content"] == [{"type": "text", "text": "hi"}]


async def test_before_llm_messages_replace_the_transcript_for_the_rest_of_the_run(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    def before_llm(info: dict[str, Any]) -> dict[str, Any] | None:
        if info["messages"][0]["role"] == "system":
            return None
        return {"messages": [{"role": "system", "content": "injected"}, *info["messages"]]}

    scripted.add(tool_calls(call("add", {"a": 1, "b": 2})), text("3"))
    async with client_for(scripted, style, hooks={"before_llm": before_llm}) as client:
        result = await client.run("1+2", [adder([])])
    assert result.messages[0] == {"role": "system", "content": "injected"}
    for request in scripted.requests:
        if style == "openai":
            assert request.body["messages"][0] == {"role": "system", "content": "injected"}
        else:
            assert request.body["system"] == "injected"


async def test_before_llm_tools_replace_what_is_declared_on_the_wire(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    def before_llm(info: dict[str, Any]) -> dict[str, Any]:
        return {"tools": info["tools"][1:]}

    scripted.add(text("ok"))
    async with client_for(scripted, style, hooks={"before_llm": before_llm}) as client:
        await client.run("hi", [adder([]), echo()])
    tools = scripted.requests[0].body["tools"]
    names = [t["function"]["name"] if style == "openai" else t["name"] for t in tools]
    assert names == ["echo"]


async def test_before_llm_returning_no_tools_sends_no_tools_key(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(text("ok"))
    async with client_for(scripted, style, hooks={"before_llm": lambda i: {"tools": []}}) as client:
        await client.run("hi", [adder([])])
    assert "tools" not in scripted.requests[0].body


@pytest.mark.parametrize(
    "short",
    [ToolResult("cached: 3"), {"output": "cached: 3", "is_error": False}, "cached: 3"],
    ids=["ToolResult", "dict", "str"],
)
async def test_before_tool_result_short_circuits_and_the_tool_never_runs(
    scripted: ScriptedModel, client_for: ClientFor, short: Any
) -> None:
    runs: list[dict[str, Any]] = []
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2}, id="c1")), text("3"))
    async with client_for(scripted, hooks={"before_tool": lambda i: {"result": short}}) as client:
        result = await client.run("1+2", [adder(runs)])
    assert runs == []
    assert (result.tool_calls[0].output, result.tool_calls[0].is_error) == ("cached: 3", False)
    assert result.messages[2]["content"] == "cached: 3"


async def test_before_tool_args_rewrite_the_call(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    runs: list[dict[str, Any]] = []
    seen_after: list[dict[str, Any]] = []
    hooks = {
        "before_tool": lambda info: {"args": {**info["args"], "b": 40}},
        "after_tool": lambda info: seen_after.append(info["args"]),
    }
    scripted.add(tool_calls(call("add", {"a": 2, "b": 2}, id="c1")), text("42"))
    async with client_for(scripted, hooks=hooks) as client:
        result = await client.run("2+2", [adder(runs)])
    assert runs == [{"a": 2, "b": 40}]
    assert result.tool_calls[0].args == {"a": 2, "b": 40}
    assert result.tool_calls[0].output == "42"
    assert seen_after == [{"a": 2, "b": 40}]


async def test_rewritten_args_are_validated_against_the_schema(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    runs: list[dict[str, Any]] = []
    scripted.add(tool_calls(call("add", {"a": 2, "b": 2})), text("no"))
    async with client_for(scripted, hooks={"before_tool": lambda i: {"args": {"a": 2}}}) as client:
        result = await client.run("2+2", [adder(runs)])
    assert runs == []
    assert result.tool_calls[0].is_error is True
    assert "'b' is a required property" in result.tool_calls[0].output


async def test_after_tool_result_replaces_what_the_model_sees(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    def after_tool(info: dict[str, Any]) -> dict[str, Any]:
        return {"result": ToolResult(f"[redacted {len(info['result'].output)} chars]", False)}

    scripted.add(tool_calls(call("add", {"a": 50, "b": 50}, id="c1")), text("ok"))
    async with client_for(scripted, style, hooks={"after_tool": after_tool}) as client:
        result = await client.run("sum", [adder([])])
    assert result.tool_calls[0].output == "[redacted 3 chars]"
    last = scripted.requests[1].body["messages"][-1]
    if style == "openai":
        assert last["content"] == "[redacted 3 chars]"
    else:
        assert last["content"][0]["content"] == "[redacted 3 chars]"


async def test_an_after_tool_returning_nothing_keeps_the_result(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2})), text("3"))
    async with client_for(scripted, hooks={"after_tool": lambda info: None}) as client:
        result = await client.run("1+2", [adder([])])
    assert result.tool_calls[0].output == "3"


@pytest.mark.parametrize("hook", HOOK_NAMES)
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_raising_hook_aborts_the_run_with_a_callback_error(
    scripted: ScriptedModel, client_for: ClientFor, hook: str, kind: str
) -> None:
    def fail(info: dict[str, Any]) -> None:
        raise LookupError(f"{hook} says no")

    async def fail_async(info: dict[str, Any]) -> None:
        raise LookupError(f"{hook} says no")

    runs: list[dict[str, Any]] = []
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2})), text("3"))
    hooks = {hook: fail if kind == "sync" else fail_async}
    async with client_for(scripted, hooks=hooks) as client:
        with pytest.raises(CallbackError, match=f"{hook} hook raised LookupError") as caught:
            await client.run("1+2", [adder(runs)])
    assert isinstance(caught.value.__cause__, LookupError)
    assert len(scripted.requests) == (0 if hook == "before_llm" else 1)
    assert runs == (
        [] if hook in ("before_llm", "after_llm", "before_tool") else [{"a": 1, "b": 2}]
    )


async def test_hooks_fire_the_same_way_on_the_stream_path(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    recorder = AsyncRecorder()
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2})), text("3"))
    async with client_for(scripted, style, hooks=recorder) as client:
        [e async for e in client.stream("1+2", [adder([])])]
    assert [name for name, _ in recorder.log] == [
        "before_llm",
        "after_llm",
        "before_tool",
        "after_tool",
        "before_llm",
        "after_llm",
    ]


def test_a_hook_that_is_not_callable_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="before_llm"):
        create_client(
            base_url="http://127.0.0.1:9", model="m", api_key="k", hooks={"before_llm": 42}
        )
