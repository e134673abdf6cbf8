"""The Anthropic messages dialect: bodies, replies and streamed events."""

from __future__ import annotations

import doctest
import json
from typing import Any

import pytest

from toolnexus._types import Tool
from toolnexus.errors import BadResponse, ProviderError, UsageError
from toolnexus.llm import anthropic
from toolnexus.llm.anthropic import (
    AnthropicDialect,
    AnthropicStream,
    AnthropicTranscript,
    map_tool_choice,
    tools_from_openai,
)
from toolnexus.llm.base import Dialect, ModelToolCall, SSEEvent, StreamAssembler
from toolnexus.llm.sse import SSEParser

D = AnthropicDialect()
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}
ANTHROPIC_TOOL = {"name": "f", "description": "F.", "input_schema": SCHEMA}


def ev(kind: str, **fields: Any) -> SSEEvent:
    return SSEEvent(data=json.dumps({"type": kind, **fields}), event=kind)


def run(*events: SSEEvent) -> tuple[AnthropicStream, list[str | None]]:
    stream = D.new_stream()
    return stream, [stream.feed(e) for e in events]


START = ev(
    "message_start",
    message={
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [],
        "usage": {"input_tokens": 10, "output_tokens": 1},
    },
)
STOP = ev("message_stop")


def test_the_module_docstring_examples_hold() -> None:
    assert doctest.testmod(anthropic).failed == 0


def test_the_dialect_and_its_stream_satisfy_the_protocols() -> None:
    dialect: Dialect = D
    assembler: StreamAssembler = D.new_stream()
    assert dialect.style == "anthropic"
    assert not assembler.complete


# --- endpoint, headers, tools -------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("https://api.anthropic.com", "https://api.anthropic.com/v1/messages"),
        ("https://api.anthropic.com/", "https://api.anthropic.com/v1/messages"),
        ("https://proxy/v1", "https://proxy/v1/messages"),
        ("https://proxy/v1/", "https://proxy/v1/messages"),
        ("https://proxy/anthropic", "https://proxy/anthropic/v1/messages"),
    ],
)
def test_the_endpoint_appends_v1_only_when_absent(base: str, url: str) -> None:
    assert D.endpoint(base) == url


def test_headers_carry_the_key_and_the_pinned_version() -> None:
    assert D.auth_headers("k") == {"x-api-key": "k", "anthropic-version": "2023-06-01"}


def test_without_a_key_only_the_version_header_is_sent() -> None:
    assert D.auth_headers(None) == {"anthropic-version": "2023-06-01"}


def test_tools_render_with_input_schema() -> None:
    async def execute(args: dict[str, Any], ctx: Any = None) -> Any:
        return None

    tool = Tool(name="f", description="F.", input_schema=SCHEMA, source="native", execute=execute)
    assert D.render_tools([tool]) == [ANTHROPIC_TOOL]


def test_openai_tools_map_parameters_to_input_schema() -> None:
    openai_tool = {
        "type": "function",
        "function": {"name": "f", "description": "F.", "parameters": SCHEMA},
    }
    assert tools_from_openai([openai_tool]) == [ANTHROPIC_TOOL]


def test_openai_tools_without_parameters_get_an_empty_object_schema() -> None:
    assert tools_from_openai([{"type": "function", "function": {"name": "f"}}, {"name": "g"}]) == [
        {"name": "f", "input_schema": {"type": "object", "properties": {}}},
        {"name": "g", "input_schema": {"type": "object", "properties": {}}},
    ]


def test_anthropic_and_provider_side_tools_pass_through() -> None:
    server_tool = {"type": "web_search_20250305", "name": "web_search"}
    assert tools_from_openai([ANTHROPIC_TOOL, server_tool]) == [ANTHROPIC_TOOL, server_tool]


@pytest.mark.parametrize(
    ("tool", "complaint"),
    [
        ("f", r"tools\[0\] must be a dict"),
        ({"type": "function", "function": {}}, "has no name"),
        ({"type": "function", "function": "f"}, "has no name"),
    ],
)
def test_unreadable_tools_raise_usage_error(tool: Any, complaint: str) -> None:
    with pytest.raises(UsageError, match=complaint):
        tools_from_openai([tool])


@pytest.mark.parametrize(
    ("choice", "mapped"),
    [
        ("required", {"type": "any"}),
        ("any", {"type": "any"}),
        ("none", {"type": "none"}),
        ({"function": {"name": "f"}}, {"type": "tool", "name": "f"}),
        ({"type": "function", "function": {"name": "f"}}, {"type": "tool", "name": "f"}),
        ({"type": "tool", "name": "f"}, {"type": "tool", "name": "f"}),
        ({"type": "any"}, {"type": "any"}),
        ("auto", None),
        ({"type": "auto"}, None),
        ("bogus", None),
        (None, None),
        (7, None),
        ({"type": "function", "function": {}}, None),
        ({"type": "tool"}, None),
    ],
)
def test_tool_choice_maps_to_anthropic_terms(choice: Any, mapped: Any) -> None:
    assert map_tool_choice(choice) == mapped


# --- new_transcript: one run's bodies ------------------------------------------------------

TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "system", "content": "S"},
    {"role": "user", "content": "q"},
    {
        "role": "assistant",
        "content": "t",
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "a", "content": "one"},
    {"role": "tool", "tool_call_id": "b", "content": "two", "is_error": True},
    {"role": "assistant", "content": "done"},
]


@pytest.mark.parametrize("stream", [False, True])
def test_a_transcript_builds_the_bodies_build_body_builds_turn_after_turn(stream: bool) -> None:
    bodies = D.new_transcript()
    assert isinstance(bodies, AnthropicTranscript)
    tools = [ANTHROPIC_TOOL]
    for end in range(len(TRANSCRIPT) + 1):
        built = bodies.build_body(model="m", messages=TRANSCRIPT[:end], tools=tools, stream=stream)
        assert built == D.build_body(
            model="m", messages=TRANSCRIPT[:end], tools=tools, stream=stream
        )


# --- build_body ---------------------------------------------------------------------------


def test_a_minimal_body_defaults_max_tokens_to_4096_and_sends_an_empty_system() -> None:
    body = D.build_body(
        model="claude-x", messages=[{"role": "user", "content": "hi"}], tools=[], stream=False
    )
    assert body == {
        "model": "claude-x",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": "hi"}],
        "system": "",  # COMPAT §7: always present
    }


@pytest.mark.parametrize(("given", "sent"), [(None, 4096), (0, 4096), (100, 100)])
def test_max_tokens_falls_back_to_the_default(given: int | None, sent: int) -> None:
    assert (
        D.build_body(model="m", messages=[], tools=[], stream=False, max_tokens=given)["max_tokens"]
        == sent
    )


def test_a_negative_max_tokens_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="max_tokens"):
        D.build_body(model="m", messages=[], tools=[], stream=False, max_tokens=-5)


def test_the_system_prompt_is_top_level() -> None:
    body = D.build_body(
        model="m",
        messages=[{"role": "system", "content": "S"}, {"role": "user", "content": "q"}],
        tools=[],
        stream=False,
    )
    assert body["system"] == "S"
    assert body["messages"] == [{"role": "user", "content": "q"}]


def test_no_tools_means_no_tools_and_no_tool_choice() -> None:
    body = D.build_body(model="m", messages=[], tools=[], stream=False, tool_choice="required")
    assert "tools" not in body
    assert "tool_choice" not in body


def test_tools_and_a_mapped_tool_choice_are_sent_together() -> None:
    body = D.build_body(
        model="m", messages=[], tools=[ANTHROPIC_TOOL], stream=False, tool_choice="required"
    )
    assert body["tools"] == [ANTHROPIC_TOOL]
    assert body["tool_choice"] == {"type": "any"}


def test_auto_tool_choice_is_omitted() -> None:
    body = D.build_body(
        model="m", messages=[], tools=[ANTHROPIC_TOOL], stream=False, tool_choice="auto"
    )
    assert "tool_choice" not in body


def test_streaming_sets_stream_true() -> None:
    assert D.build_body(model="m", messages=[], tools=[], stream=True)["stream"] is True


# --- parse_reply --------------------------------------------------------------------------


def test_a_reply_joins_text_and_reads_tool_use_with_compact_arguments() -> None:
    payload = {
        "type": "message",
        "content": [
            {"type": "text", "text": "Let me "},
            {"type": "thinking", "thinking": "ignored"},
            {"type": "text", "text": "check."},
            {"type": "tool_use", "id": "t1", "name": "f", "input": {"q": "é", "n": [1, 2]}},
            {"type": "tool_use", "id": "t2", "name": "g"},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 11, "output_tokens": 4},
    }
    turn = D.parse_reply(payload)
    assert turn.text == "Let me check."
    assert turn.tool_calls == [
        ModelToolCall(id="t1", name="f", arguments='{"q":"é","n":[1,2]}'),
        ModelToolCall(id="t2", name="g", arguments="{}"),
    ]
    assert turn.finish_reason == "tool_calls"
    assert turn.usage == {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15}
    assert turn.raw is payload


@pytest.mark.parametrize(
    ("stop", "expected"),
    [
        ("end_turn", "stop"),
        ("max_tokens", "length"),
        ("refusal", "content_filter"),
        ("stop_sequence", "stop"),
        (None, "stop"),
    ],
)
def test_stop_reasons_are_normalised(stop: str | None, expected: str) -> None:
    payload = {"content": [{"type": "text", "text": "x"}], "stop_reason": stop}
    assert D.parse_reply(payload).finish_reason == expected


def test_an_empty_content_list_is_empty_text_not_an_error() -> None:
    turn = D.parse_reply({"content": [], "stop_reason": "end_turn"})
    assert (turn.text, turn.tool_calls) == ("", [])


def test_an_error_body_is_a_provider_error() -> None:
    with pytest.raises(ProviderError, match="overloaded_error: Overloaded") as info:
        D.parse_reply(
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        )
    assert not isinstance(info.value, BadResponse)


@pytest.mark.parametrize(
    ("payload", "complaint"),
    [
        ("text", "not a JSON object"),
        ({}, "no content list"),
        ({"content": "hi"}, "no content list"),
        ({"content": [3]}, r"content\[0\] is not an object"),
        ({"content": [{"type": "text"}]}, "text block without text"),
        ({"content": [{"type": "tool_use", "name": "f"}]}, "tool_use block without id"),
        ({"content": [{"type": "tool_use", "id": "t", "name": ""}]}, "tool_use block without name"),
    ],
)
def test_garbage_replies_raise_bad_response(payload: Any, complaint: str) -> None:
    with pytest.raises(BadResponse, match=complaint):
        D.parse_reply(payload)


# --- streaming ----------------------------------------------------------------------------


def test_a_text_stream_returns_deltas_and_assembles_the_turn() -> None:
    stream, deltas = run(
        START,
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        ev("ping"),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "Hel"}),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "lo"}),
        ev("content_block_stop", index=0),
        ev("message_delta", delta={"stop_reason": "max_tokens"}, usage={"output_tokens": 7}),
        STOP,
    )
    assert deltas == [None, None, None, "Hel", "lo", None, None, None]
    turn = stream.finish()
    assert (turn.text, turn.finish_reason) == ("Hello", "length")
    assert turn.usage == {"prompt_tokens": 10, "completion_tokens": 7, "total_tokens": 17}
    assert turn.raw["model"] == "claude-x"
    assert turn.raw["content"] == [{"type": "text", "text": "Hello"}]


def test_tool_use_arguments_are_assembled_from_json_fragments() -> None:
    stream, _ = run(
        START,
        ev("content_block_start", index=0, content_block={"type": "text", "text": "Hi"}),
        ev("content_block_stop", index=0),
        ev(
            "content_block_start",
            index=1,
            content_block={"type": "tool_use", "id": "t1", "name": "f", "input": {}},
        ),
        ev(
            "content_block_delta",
            index=1,
            delta={"type": "input_json_delta", "partial_json": '{"q": "Zü'},
        ),
        ev(
            "content_block_delta",
            index=1,
            delta={"type": "input_json_delta", "partial_json": 'rich"}'},
        ),
        ev("content_block_stop", index=1),
        ev(
            "content_block_start",
            index=2,
            content_block={"type": "tool_use", "id": "t2", "name": "g", "input": {}},
        ),
        ev("content_block_stop", index=2),
        ev("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 9}),
        STOP,
    )
    turn = stream.finish()
    assert turn.text == "Hi"
    assert turn.tool_calls == [
        ModelToolCall(id="t1", name="f", arguments='{"q":"Zürich"}'),
        ModelToolCall(id="t2", name="g", arguments="{}"),
    ]
    assert turn.finish_reason == "tool_calls"
    assert turn.raw["content"][1] == {
        "type": "tool_use",
        "id": "t1",
        "name": "f",
        "input": {"q": "Zürich"},
    }


def test_streamed_arguments_that_do_not_parse_are_kept_as_received() -> None:
    stream, _ = run(
        ev(
            "content_block_start",
            index=0,
            content_block={"type": "tool_use", "id": "t", "name": "f"},
        ),
        ev(
            "content_block_delta",
            index=0,
            delta={"type": "input_json_delta", "partial_json": '{"q": '},
        ),
        STOP,
    )
    assert stream.finish().tool_calls[0].arguments == '{"q": '


def test_thinking_blocks_and_unknown_events_are_ignored() -> None:
    stream, deltas = run(
        ev("content_block_start", index=0, content_block={"type": "thinking", "thinking": ""}),
        ev("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": "hmm"}),
        ev("content_block_delta", index=0, delta={"type": "signature_delta", "signature": "x"}),
        ev("some_future_event", detail=1),
        STOP,
    )
    assert deltas == [None] * 5
    assert stream.finish().text == ""


def test_a_stream_parsed_from_raw_bytes_assembles_the_reply() -> None:
    raw = "".join(
        f"event: {e.event}\r\ndata: {e.data}\r\n\r\n"
        for e in (
            START,
            ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "¡olé!"}),
            STOP,
        )
    ).encode()
    parser, stream = SSEParser(), D.new_stream()
    for i in range(0, len(raw), 3):
        for event in parser.feed(raw[i : i + 3]):
            stream.feed(event)
    assert stream.finish().text == "¡olé!"


def test_the_stream_is_complete_only_after_message_stop() -> None:
    stream, _ = run(START, ev("message_delta", delta={"stop_reason": "end_turn"}))
    assert not stream.complete
    stream.feed(STOP)
    assert stream.complete


def test_a_stream_cut_before_message_stop_raises_bad_response() -> None:
    stream, _ = run(START)
    with pytest.raises(BadResponse, match="stream ended before message_stop"):
        stream.finish()


def test_an_error_event_raises_provider_error() -> None:
    stream = D.new_stream()
    with pytest.raises(ProviderError, match="overloaded_error: Overloaded"):
        stream.feed(ev("error", error={"type": "overloaded_error", "message": "Overloaded"}))


def test_a_streamed_tool_use_without_a_name_raises_bad_response() -> None:
    stream, _ = run(
        ev("content_block_start", index=0, content_block={"type": "tool_use", "id": "t"}), STOP
    )
    with pytest.raises(BadResponse, match="block 0 has no id or name"):
        stream.finish()


@pytest.mark.parametrize(
    ("data", "complaint"),
    [
        ("{nope", "malformed stream event"),
        ('"str"', "not an object"),
        ('{"type": "message_start"}', "no message object"),
        ('{"type": "content_block_start", "content_block": {"type": "text"}}', "no integer index"),
        ('{"type": "content_block_start", "index": 0}', "no content_block object"),
        ('{"type": "content_block_delta", "index": 4, "delta": {}}', "block 4 that never started"),
        ('{"type": "content_block_delta", "index": true, "delta": {}}', "no integer index"),
    ],
)
def test_malformed_events_raise_bad_response(data: str, complaint: str) -> None:
    stream = D.new_stream()
    with pytest.raises(BadResponse, match=complaint):
        stream.feed(SSEEvent(data=data))


def test_a_delta_without_a_delta_object_raises_bad_response() -> None:
    stream, _ = run(ev("content_block_start", index=0, content_block={"type": "text", "text": ""}))
    with pytest.raises(BadResponse, match="no delta object"):
        stream.feed(ev("content_block_delta", index=0, delta="x"))


def test_events_after_message_stop_and_blank_events_are_ignored() -> None:
    stream, deltas = run(SSEEvent(data=""), STOP, SSEEvent(data="{broken"))
    assert deltas == [None, None, None]
    assert stream.finish().text == ""
