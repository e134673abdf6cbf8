"""Single-turn translation, the pure parts: §11 parity, result data, tool merging."""

from __future__ import annotations

import dataclasses
import doctest
from typing import Any

import pytest

from toolnexus import translate
from toolnexus.errors import UsageError
from toolnexus.llm.anthropic import AnthropicDialect
from toolnexus.llm.base import ModelToolCall, ModelTurn
from toolnexus.llm.openai import OpenAIDialect
from toolnexus.translate import (
    TranslatedToolCall,
    TranslateResult,
    merge_tools,
    openai_messages_to_anthropic,
    to_translate_result,
    with_system,
)

WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
CLOCK = {"type": "function", "function": {"name": "clock", "description": "Time now."}}

ADVERSARIAL_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse."},
    {
        "role": "developer",
        "content": [{"type": "text", "text": "Use "}, {"type": "text", "text": "tools."}],
    },
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Weather in Paris"},
            {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
            {"type": "text", "text": " and the time?"},
        ],
    },
    {
        "role": "assistant",
        "content": [{"type": "text", "text": "Checking both."}],
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "clock", "arguments": {"tz": "CET"}},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "18°C"},
    {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "12:00"}]},
    {"role": "assistant", "content": ""},
    {"role": "user", "content": "Thanks, and tomorrow?"},
]

EXPECTED_ANTHROPIC_BODY: dict[str, Any] = {
    "model": "claude-test",
    "max_tokens": 4096,
    "system": "You are terse.\n\nUse tools.",
    "messages": [
        {"role": "user", "content": "Weather in Paris and the time?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking both."},
                {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "call_2", "name": "clock", "input": {"tz": "CET"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "18°C"},
                {"type": "tool_result", "tool_use_id": "call_2", "content": "12:00"},
                {"type": "text", "text": "Thanks, and tomorrow?"},
            ],
        },
    ],
    "tools": [
        {
            "name": "weather",
            "description": "Weather for a city.",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
        {
            "name": "clock",
            "description": "Time now.",
            "input_schema": {"type": "object", "properties": {}},
        },
    ],
    "tool_choice": {"type": "any"},
}


def test_the_module_docstring_examples_hold() -> None:
    assert doctest.testmod(translate).failed == 0


def test_the_adversarial_openai_input_renders_the_exact_anthropic_body() -> None:
    body = AnthropicDialect().build_body(
        model="claude-test",
        messages=ADVERSARIAL_MESSAGES,
        tools=merge_tools([WEATHER], [CLOCK]),
        stream=False,
        max_tokens=0,
        tool_choice="required",
    )
    assert body == EXPECTED_ANTHROPIC_BODY


def test_the_public_converter_gives_the_same_messages_and_system() -> None:
    messages, system = openai_messages_to_anthropic(ADVERSARIAL_MESSAGES)
    assert messages == EXPECTED_ANTHROPIC_BODY["messages"]
    assert system == EXPECTED_ANTHROPIC_BODY["system"]


def test_an_explicit_system_replaces_hoisted_ones_through_build_body() -> None:
    body = AnthropicDialect().build_body(
        model="m", messages=with_system(ADVERSARIAL_MESSAGES, "Override."), tools=[], stream=False
    )
    assert body["system"] == "Override."


def test_with_system_none_keeps_the_messages() -> None:
    assert with_system(ADVERSARIAL_MESSAGES, None) == ADVERSARIAL_MESSAGES


def test_with_system_puts_one_system_message_first() -> None:
    out = with_system(ADVERSARIAL_MESSAGES, "S")
    assert [m["role"] for m in out].count("system") == 1
    assert "developer" not in [m["role"] for m in out]
    assert out[0] == {"role": "system", "content": "S"}


def test_the_openai_body_keeps_messages_tools_and_tool_choice_verbatim() -> None:
    body = OpenAIDialect().build_body(
        model="gpt-test",
        messages=ADVERSARIAL_MESSAGES[:3],
        tools=merge_tools([WEATHER], [CLOCK]),
        stream=False,
        tool_choice="required",
    )
    assert body == {
        "model": "gpt-test",
        "messages": ADVERSARIAL_MESSAGES[:3],
        "tools": [WEATHER, CLOCK],
        "tool_choice": "required",
    }


# --- results ------------------------------------------------------------------------------


def test_a_turn_becomes_a_translate_result() -> None:
    raw = {"id": "r"}
    turn = ModelTurn(
        text=None,
        tool_calls=[
            ModelToolCall(id="a", name="f", arguments='{"x":1}'),
            ModelToolCall(id="b", name="g", arguments="{}"),
        ],
        usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
        finish_reason="tool_calls",
        raw=raw,
    )
    result = to_translate_result(turn, "m-1")
    assert result == TranslateResult(
        text="",
        tool_calls=[
            TranslatedToolCall(id="a", name="f", arguments='{"x":1}'),
            TranslatedToolCall(id="b", name="g", arguments="{}"),
        ],
        finish_reason="tool_calls",
        usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
        model="m-1",
        raw=raw,
    )


def test_the_result_usage_is_a_copy_of_the_turn_usage() -> None:
    turn = ModelTurn(text="hi")
    result = to_translate_result(turn, "m")
    turn.usage["prompt_tokens"] = 99
    assert result.usage["prompt_tokens"] == 0


def test_results_support_item_access_like_the_other_public_types() -> None:
    result = to_translate_result(
        ModelTurn(text="hi", tool_calls=[ModelToolCall(id="a", name="f", arguments="{}")]), "m"
    )
    assert result["text"] == "hi"
    assert result["tool_calls"][0]["arguments"] == "{}"


def test_results_are_frozen() -> None:
    result = to_translate_result(ModelTurn(text="hi"), "m")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.text = "changed"  # pyright: ignore[reportAttributeAccessIssue]


def test_to_dict_gives_plain_json_data() -> None:
    result = to_translate_result(
        ModelTurn(text="hi", tool_calls=[ModelToolCall(id="a", name="f", arguments="{}")]), "m"
    )
    assert result.to_dict() == {
        "text": "hi",
        "tool_calls": [{"id": "a", "name": "f", "arguments": "{}"}],
        "finish_reason": "stop",
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        "model": "m",
        "raw": {},
    }


# --- merge_tools --------------------------------------------------------------------------


def test_toolkit_declarations_come_before_caller_tools() -> None:
    assert merge_tools([CLOCK], [WEATHER]) == [CLOCK, WEATHER]


def test_no_caller_tools_gives_the_toolkit_tools() -> None:
    assert merge_tools([WEATHER], None) == [WEATHER]


def test_an_identical_duplicate_is_declared_once() -> None:
    assert merge_tools([WEATHER], [dict(WEATHER)]) == [WEATHER]


def test_flat_tool_dicts_are_named_too() -> None:
    flat = {"name": "flat", "parameters": {"type": "object"}}
    assert merge_tools([], [flat]) == [flat]


def test_two_different_tools_with_one_name_are_a_usage_error() -> None:
    other = {"type": "function", "function": {"name": "weather", "description": "Something else."}}
    with pytest.raises(UsageError, match="two different tools are named 'weather'"):
        merge_tools([WEATHER], [other])


NAMELESS: list[tuple[Any, Any, str]] = [
    (["x"], None, r"toolkit\[0\]"),
    ([WEATHER], [{"type": "function", "function": {}}], r"tools\[0\]"),
    ([], [CLOCK, {"function": "f"}], r"tools\[1\]"),
]


@pytest.mark.parametrize(("toolkit", "tools", "complaint"), NAMELESS)
def test_nameless_tools_are_a_usage_error_naming_the_list(
    toolkit: Any, tools: Any, complaint: str
) -> None:
    with pytest.raises(UsageError, match=complaint):
        merge_tools(toolkit, tools)
