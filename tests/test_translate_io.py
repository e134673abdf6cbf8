"""``client.translate``: one provider call, nothing executed (CONTRACT §11), over loopback."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from toolnexus import (
    Client,
    RunCancelled,
    Tool,
    ToolContext,
    TranslatedToolCall,
    TranslateResult,
    UsageError,
    create_toolkit,
)
from toolnexus.testing import ScriptedModel, call, http_error, text, tool_calls

ClientFor = Callable[..., Client]

WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "Weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
USER = [{"role": "user", "content": "Weather in Oslo, and 1+2?"}]


def adder(runs: list[dict[str, Any]]) -> Tool:
    def execute(args: dict[str, Any], ctx: ToolContext | None) -> str:
        runs.append(args)
        return "3"

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


def tool_names(body: dict[str, Any], style: str) -> list[str]:
    return [t["function"]["name"] if style == "openai" else t["name"] for t in body["tools"]]


async def test_translate_makes_one_call_and_executes_nothing(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    runs: list[dict[str, Any]] = []
    toolkit = await create_toolkit(extra_tools=[adder(runs)], builtins=False)
    scripted.add(
        tool_calls(
            call("weather", {"city": "Oslo"}, id="w1"), call("add", {"a": 1, "b": 2}, id="a1")
        ),
        text("never"),
    )
    async with client_for(scripted, style) as client:
        result = await client.translate(USER, tools=[WEATHER], toolkit=toolkit)
    assert runs == []
    assert len(scripted.requests) == 1
    assert result.tool_calls == [
        TranslatedToolCall(id="w1", name="weather", arguments='{"city":"Oslo"}'),
        TranslatedToolCall(id="a1", name="add", arguments='{"a":1,"b":2}'),
    ]
    assert result.finish_reason == "tool_calls"


async def test_toolkit_declarations_come_before_the_callers_tools(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    toolkit = await create_toolkit(extra_tools=[adder([])], builtins=False)
    scripted.add(text("ok"))
    async with client_for(scripted, style) as client:
        await client.translate(USER, tools=[WEATHER], toolkit=toolkit)
    assert tool_names(scripted.requests[0].body, style) == ["add", "weather"]


async def test_translate_result_carries_every_pinned_field(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(text("Sunny.", usage={"prompt_tokens": 9, "completion_tokens": 4}))
    async with client_for(scripted, style, model="trans-1") as client:
        result = await client.translate(USER)
    assert isinstance(result, TranslateResult)
    assert (result.text, result.tool_calls, result.finish_reason, result.model) == (
        "Sunny.",
        [],
        "stop",
        "trans-1",
    )
    assert result.usage == {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}
    assert result.raw["id"] == ("chatcmpl-1" if style == "openai" else "msg_1")
    assert result.to_dict()["tool_calls"] == []


async def test_tool_call_arguments_come_back_as_a_json_string(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(tool_calls(call("weather", {"city": "Zürich", "days": 2}, id="w")))
    async with client_for(scripted, style) as client:
        result = await client.translate(USER, tools=[WEATHER])
    arguments = result.tool_calls[0].arguments
    assert isinstance(arguments, str)
    assert arguments == '{"city":"Zürich","days":2}'


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("stop", "stop"),
        ("end_turn", "stop"),
        ("length", "length"),
        ("max_tokens", "length"),
        ("content_filter", "content_filter"),
        ("refusal", "content_filter"),
        ("something_new", "stop"),
    ],
)
async def test_the_finish_reason_is_mapped_onto_the_four_pinned_values(
    scripted: ScriptedModel, client_for: ClientFor, style: str, raw: str, expected: str
) -> None:
    scripted.add(text("partial", finish_reason=raw))
    async with client_for(scripted, style) as client:
        result = await client.translate(USER)
    assert result.finish_reason == expected


async def test_any_tool_call_makes_the_finish_reason_tool_calls(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(tool_calls(call("weather", {"city": "Oslo"}), finish_reason="max_tokens"))
    async with client_for(scripted, style) as client:
        result = await client.translate(USER, tools=[WEATHER])
    assert result.finish_reason == "tool_calls"


async def test_llm_hooks_fire_once_and_tool_hooks_never(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    fired: list[str] = []
    hooks = {
        name: (lambda info, name=name: fired.append(name))
        for name in ("before_llm", "after_llm", "before_tool", "after_tool")
    }
    toolkit = await create_toolkit(extra_tools=[adder([])], builtins=False)
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2})))
    async with client_for(scripted, style, hooks=hooks) as client:
        await client.translate(USER, toolkit=toolkit)
    assert fired == ["before_llm", "after_llm"]


async def test_before_llm_can_rewrite_what_is_translated(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    def before_llm(info: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": "rewritten"}], "tools": []}

    scripted.add(text("ok"))
    async with client_for(scripted, hooks={"before_llm": before_llm}) as client:
        await client.translate(USER, tools=[WEATHER], tool_choice="required")
    body = scripted.requests[0].body
    assert body["messages"] == [{"role": "user", "content": "rewritten"}]
    assert "tools" not in body
    assert "tool_choice" not in body


async def test_an_explicit_system_replaces_the_system_messages(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    messages = [{"role": "system", "content": "old"}, *USER]
    scripted.add(text("ok"))
    async with client_for(scripted, style) as client:
        await client.translate(messages, system="new")
    body = scripted.requests[0].body
    if style == "openai":
        assert body["messages"] == [{"role": "system", "content": "new"}, *USER]
    else:
        assert (body["system"], body["messages"]) == ("new", USER)


@pytest.mark.parametrize(("max_tokens", "openai", "anthropic"), [(0, None, 4096), (123, 123, 123)])
async def test_max_tokens_zero_means_the_provider_default(
    scripted: ScriptedModel,
    client_for: ClientFor,
    style: str,
    max_tokens: int,
    openai: int | None,
    anthropic: int,
) -> None:
    scripted.add(text("ok"))
    async with client_for(scripted, style) as client:
        await client.translate(USER, max_tokens=max_tokens)
    body = scripted.requests[0].body
    assert body.get("max_tokens") == (openai if style == "openai" else anthropic)


async def test_tool_choice_is_sent_in_each_dialects_terms(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(text("ok"))
    async with client_for(scripted, style) as client:
        await client.translate(USER, tools=[WEATHER], tool_choice="required")
    expected = "required" if style == "openai" else {"type": "any"}
    assert scripted.requests[0].body["tool_choice"] == expected


async def test_an_openai_history_is_rendered_for_anthropic_with_merged_tool_results(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    history = [
        {"role": "developer", "content": "Be brief."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Weather "}, {"type": "text", "text": "and sum?"}],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "w",
                    "type": "function",
                    "function": {"name": "weather", "arguments": {"city": "Oslo"}},
                },
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a":1,"b":2}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "w", "content": "Rain"},
        {"role": "tool", "tool_call_id": "a", "content": "3"},
    ]
    scripted.add(text("Rain and 3."))
    async with client_for(scripted, "anthropic") as client:
        await client.translate(history)
    body = scripted.requests[0].body
    assert body["system"] == "Be brief."
    assert body["messages"] == [
        {"role": "user", "content": "Weather and sum?"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "w", "name": "weather", "input": {"city": "Oslo"}},
                {"type": "tool_use", "id": "a", "name": "add", "input": {"a": 1, "b": 2}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "w", "content": "Rain"},
                {"type": "tool_result", "tool_use_id": "a", "content": "3"},
            ],
        },
    ]


async def test_translate_shares_retries_request_params_and_the_llm_metric(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    events: list[dict[str, Any]] = []
    scripted.add(http_error(503), text("ok"))
    async with client_for(
        scripted, retry_base_ms=1, request_params={"temperature": 0}, on_metric=events.append
    ) as client:
        result = await client.translate(USER)
    assert result.text == "ok"
    assert len(scripted.requests) == 2
    assert scripted.requests[1].body["temperature"] == 0
    assert [(e["event"], e["status"]) for e in events] == [("llm", "ok")]


async def test_two_different_tools_under_one_name_are_a_usage_error(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    other = {"type": "function", "function": {"name": "weather", "parameters": {}}}
    async with client_for(scripted) as client:
        with pytest.raises(UsageError, match="two different tools are named 'weather'"):
            await client.translate(USER, tools=[WEATHER, other])
    assert scripted.requests == []


async def test_a_cancel_set_before_translate_sends_nothing(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    cancel = asyncio.Event()
    cancel.set()
    async with client_for(scripted) as client:
        with pytest.raises(RunCancelled):
            await client.translate(USER, cancel=cancel)
    assert scripted.requests == []
