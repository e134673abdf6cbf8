"""The OpenAI chat-completions dialect: bodies, replies and streamed chunks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolnexus._types import Tool
from toolnexus.errors import BadResponse, ProviderError, UsageError
from toolnexus.llm.base import Dialect, ModelToolCall, SSEEvent, StreamAssembler
from toolnexus.llm.openai import OpenAIDialect, OpenAIStream, OpenAITranscript
from toolnexus.llm.sse import SSEParser

D = OpenAIDialect()
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]


def reply(message: dict[str, Any], finish: str | None = "stop", **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish}], **extra}


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> SSEEvent:
    body: dict[str, Any] = {"id": "chatcmpl-1", "model": "m", **extra}
    if "choices" not in extra:
        body["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    return SSEEvent(data=json.dumps(body))


DONE = SSEEvent(data="[DONE]")


def run(*events: SSEEvent) -> tuple[OpenAIStream, list[str | None]]:
    stream = D.new_stream()
    return stream, [stream.feed(e) for e in events]


def test_the_dialect_and_its_stream_satisfy_the_protocols() -> None:
    dialect: Dialect = D
    assembler: StreamAssembler = D.new_stream()
    assert dialect.style == "openai"
    assert not assembler.complete


# --- endpoint, headers, tools -------------------------------------------------------------


@pytest.mark.parametrize("base", ["https://api.example/v1", "https://api.example/v1/"])
def test_the_endpoint_is_chat_completions_under_the_base(base: str) -> None:
    assert D.endpoint(base) == "https://api.example/v1/chat/completions"


def test_a_key_becomes_a_bearer_authorization_header() -> None:
    assert D.auth_headers("sk-1") == {"Authorization": "Bearer sk-1"}


@pytest.mark.parametrize("key", [None, ""])
def test_no_key_sends_no_authorization_header(key: str | None) -> None:
    assert D.auth_headers(key) == {}


def test_tools_render_as_function_declarations() -> None:
    async def execute(args: dict[str, Any], ctx: Any = None) -> Any:
        return None

    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    tool = Tool(
        name="search", description="Find.", input_schema=schema, source="native", execute=execute
    )
    assert D.render_tools([tool]) == [
        {
            "type": "function",
            "function": {"name": "search", "description": "Find.", "parameters": schema},
        }
    ]


# --- build_body ---------------------------------------------------------------------------


def test_a_minimal_body_has_only_model_and_messages() -> None:
    messages = [{"role": "user", "content": "hi"}]
    assert D.build_body(model="Org/Model:Tag", messages=messages, tools=[], stream=False) == {
        "model": "Org/Model:Tag",
        "messages": messages,
    }


def test_tool_choice_is_omitted_when_there_are_no_tools() -> None:
    body = D.build_body(model="m", messages=[], tools=[], stream=False, tool_choice="required")
    assert "tools" not in body
    assert "tool_choice" not in body


def test_tools_and_tool_choice_are_sent_verbatim_with_tools() -> None:
    choice = {"type": "function", "function": {"name": "f"}}
    body = D.build_body(model="m", messages=[], tools=TOOLS, stream=False, tool_choice=choice)
    assert body["tools"] == TOOLS
    assert body["tool_choice"] == choice


def test_no_tool_choice_is_sent_when_none_was_given() -> None:
    assert "tool_choice" not in D.build_body(model="m", messages=[], tools=TOOLS, stream=False)


def test_streaming_asks_for_usage_in_the_stream() -> None:
    body = D.build_body(model="m", messages=[], tools=[], stream=True)
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize(("given", "sent"), [(None, None), (0, None), (256, 256)])
def test_max_tokens_is_sent_only_when_positive(given: int | None, sent: int | None) -> None:
    body = D.build_body(model="m", messages=[], tools=[], stream=False, max_tokens=given)
    assert body.get("max_tokens") == sent


def test_a_negative_max_tokens_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="max_tokens"):
        D.build_body(model="m", messages=[], tools=[], stream=False, max_tokens=-1)


def test_the_private_is_error_marker_is_stripped_and_the_rest_kept() -> None:
    tool_message = {
        "role": "tool",
        "tool_call_id": "c",
        "content": "boom",
        "is_error": True,
        "name": "f",
    }
    body = D.build_body(model="m", messages=[tool_message], tools=[], stream=False)
    assert body["messages"] == [
        {"role": "tool", "tool_call_id": "c", "content": "boom", "name": "f"}
    ]
    assert tool_message["is_error"] is True


def test_messages_without_private_keys_are_sent_without_copying() -> None:
    message = {"role": "user", "content": "hi"}
    body = D.build_body(model="m", messages=[message], tools=[], stream=False)
    assert body["messages"][0] is message


def test_object_form_tool_arguments_are_serialised_compactly() -> None:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}},
            {"id": "b", "type": "function", "function": {"name": "g", "arguments": '{"y": 2}'}},
            {"id": "c", "type": "function", "function": {"name": "h", "arguments": None}},
        ],
    }
    body = D.build_body(model="m", messages=[message], tools=[], stream=False)
    arguments = [c["function"]["arguments"] for c in body["messages"][0]["tool_calls"]]
    assert arguments == ['{"x":1}', '{"y": 2}', "{}"]
    assert message["tool_calls"][0]["function"]["arguments"] == {"x": 1}


# --- new_transcript: one run's bodies ------------------------------------------------------

TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "system", "content": "S"},
    {"role": "user", "content": "q"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}
        ],
    },
    {"role": "tool", "tool_call_id": "a", "content": "boom", "is_error": True},
    {"role": "assistant", "content": "done"},
]


@pytest.mark.parametrize("stream", [False, True])
def test_a_transcript_builds_the_bodies_build_body_builds_turn_after_turn(stream: bool) -> None:
    bodies = D.new_transcript()
    assert isinstance(bodies, OpenAITranscript)
    for end in range(len(TRANSCRIPT) + 1):
        built = bodies.build_body(model="m", messages=TRANSCRIPT[:end], tools=TOOLS, stream=stream)
        assert built == D.build_body(
            model="m", messages=TRANSCRIPT[:end], tools=TOOLS, stream=stream
        )


def test_a_transcript_gives_every_body_its_own_lists() -> None:
    bodies = D.new_transcript()
    first = bodies.build_body(model="m", messages=TRANSCRIPT[:2], tools=TOOLS, stream=False)
    first["messages"].append({"role": "user", "content": "edited"})
    first["tools"].clear()
    second = bodies.build_body(model="m", messages=TRANSCRIPT[:3], tools=TOOLS, stream=False)
    assert second == D.build_body(model="m", messages=TRANSCRIPT[:3], tools=TOOLS, stream=False)


def test_a_transcript_that_is_not_an_extension_is_prepared_afresh() -> None:
    bodies = D.new_transcript()
    bodies.build_body(model="m", messages=TRANSCRIPT[:4], tools=[], stream=False)
    other = [TRANSCRIPT[0], {"role": "user", "content": "another question"}]
    built = bodies.build_body(model="m", messages=other, tools=[], stream=False)
    assert built["messages"] == other


# --- parse_reply --------------------------------------------------------------------------


def test_a_text_reply_parses_text_usage_and_raw() -> None:
    payload = reply(
        {"role": "assistant", "content": "hello"},
        usage={"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    )
    turn = D.parse_reply(payload)
    assert (turn.text, turn.tool_calls, turn.finish_reason) == ("hello", [], "stop")
    assert turn.usage == {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    assert turn.raw is payload


def test_tool_calls_parse_in_order_with_string_and_object_arguments() -> None:
    turn = D.parse_reply(
        reply(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "a",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"q": 1}'},
                    },
                    {
                        "id": "b",
                        "type": "function",
                        "function": {"name": "g", "arguments": {"é": [1]}},
                    },
                ],
            },
            finish="stop",
        )
    )
    assert turn.tool_calls == [
        ModelToolCall(id="a", name="f", arguments='{"q": 1}'),
        ModelToolCall(id="b", name="g", arguments='{"é":[1]}'),
    ]
    assert turn.finish_reason == "tool_calls"
    assert turn.text == ""


def test_a_tool_call_without_an_id_gets_a_generated_one() -> None:
    turn = D.parse_reply(
        reply({"tool_calls": [{"function": {"name": "f"}}, {"function": {"name": "f"}}]})
    )
    ids = [c.id for c in turn.tool_calls]
    assert all(i.startswith("call_") for i in ids)
    assert ids[0] != ids[1]
    assert turn.tool_calls[0].arguments == "{}"


@pytest.mark.parametrize(
    ("finish", "expected"),
    [
        ("length", "length"),
        ("content_filter", "content_filter"),
        ("stop", "stop"),
        (None, "stop"),
        ("odd", "stop"),
    ],
)
def test_finish_reasons_are_normalised(finish: str | None, expected: str) -> None:
    assert D.parse_reply(reply({"content": "x"}, finish=finish)).finish_reason == expected


def test_an_empty_reply_is_empty_text_not_an_error() -> None:
    turn = D.parse_reply(reply({"role": "assistant", "content": None}))
    assert (turn.text, turn.tool_calls) == ("", [])


def test_parts_array_content_from_compatible_servers_is_flattened() -> None:
    turn = D.parse_reply(
        reply({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})
    )
    assert turn.text == "ab"


def test_missing_usage_counts_zero() -> None:
    turn = D.parse_reply(reply({"content": "x"}, usage=None))
    assert turn.usage == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def test_an_error_object_in_a_2xx_body_is_a_provider_error() -> None:
    with pytest.raises(ProviderError, match="quota exceeded") as info:
        D.parse_reply({"error": {"message": "quota exceeded", "type": "insufficient_quota"}})
    assert not isinstance(info.value, BadResponse)
    assert "insufficient_quota" in info.value.body


@pytest.mark.parametrize(
    ("payload", "complaint"),
    [
        ([], "not a JSON object"),
        ({}, "no choices"),
        ({"choices": []}, "no choices"),
        ({"choices": "x"}, "no choices"),
        ({"choices": ["x"]}, r"choices\[0\] is not an object"),
        ({"choices": [{"finish_reason": "stop"}]}, r"choices\[0\] has no message"),
        (reply({"content": 7}), "content is not text"),
        (reply({"tool_calls": {"id": "a"}}), "tool_calls is not a list"),
        (reply({"tool_calls": ["x"]}), r"tool_calls\[0\] has no function object"),
        (reply({"tool_calls": [{"id": "a", "function": {"arguments": "{}"}}]}), "no function name"),
        (reply({"tool_calls": [{"id": "a", "function": {"name": ""}}]}), "no function name"),
    ],
)
def test_garbage_replies_raise_bad_response_saying_what_is_wrong(
    payload: Any, complaint: str
) -> None:
    with pytest.raises(BadResponse, match=complaint):
        D.parse_reply(payload)


# --- streaming ----------------------------------------------------------------------------


def test_text_deltas_are_returned_and_assembled() -> None:
    stream, deltas = run(
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Hel"}),
        chunk({"content": "lo"}),
        chunk({}, finish="stop"),
        chunk(choices=[], usage={"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}),
        DONE,
    )
    assert deltas == [None, "Hel", "lo", None, None, None]
    turn = stream.finish()
    assert (turn.text, turn.finish_reason) == ("Hello", "stop")
    assert turn.usage == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    assert turn.raw["choices"][0]["message"] == {"role": "assistant", "content": "Hello"}
    assert turn.raw["model"] == "m"


def test_tool_calls_are_assembled_by_index_even_when_interleaved() -> None:
    def tc(index: int, **fields: Any) -> dict[str, Any]:
        return {"tool_calls": [{"index": index, **fields}]}

    stream, _ = run(
        chunk(tc(0, id="a", type="function", function={"name": "f", "arguments": ""})),
        chunk(tc(1, id="b", type="function", function={"name": "g", "arguments": '{"y"'})),
        chunk(tc(0, function={"arguments": '{"x":'})),
        chunk(tc(1, function={"arguments": ":2}"})),
        chunk(tc(0, function={"arguments": "1}"})),
        chunk({}, finish="tool_calls"),
        DONE,
    )
    turn = stream.finish()
    assert turn.tool_calls == [
        ModelToolCall(id="a", name="f", arguments='{"x":1}'),
        ModelToolCall(id="b", name="g", arguments='{"y":2}'),
    ]
    assert turn.finish_reason == "tool_calls"
    assert len(turn.raw["choices"][0]["message"]["tool_calls"]) == 2


def test_a_repeated_name_in_later_deltas_is_not_concatenated() -> None:
    stream, _ = run(
        chunk(
            {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{"}}]}
        ),
        chunk(
            {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "}"}}]}
        ),
        DONE,
    )
    assert stream.finish().tool_calls == [ModelToolCall(id="a", name="f", arguments="{}")]


def test_tool_call_deltas_without_index_are_grouped_by_id() -> None:
    stream, _ = run(
        chunk({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{"}}]}),
        chunk({"tool_calls": [{"function": {"arguments": "}"}}]}),
        DONE,
    )
    assert stream.finish().tool_calls == [
        ModelToolCall(id="a", name="f", arguments="{}"),
        ModelToolCall(id="b", name="g", arguments="{}"),
    ]


def test_a_streamed_call_without_argument_text_gets_an_empty_object() -> None:
    stream, _ = run(
        chunk(
            {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": ""}}]}
        ),
        DONE,
    )
    assert stream.finish().tool_calls[0].arguments == "{}"


def test_object_form_arguments_in_a_stream_are_serialised() -> None:
    stream, _ = run(
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "a", "function": {"name": "f", "arguments": {"k": 1}}}
                ]
            }
        ),
        DONE,
    )
    assert stream.finish().tool_calls[0].arguments == '{"k":1}'


def test_a_stream_parsed_from_raw_bytes_assembles_the_reply() -> None:
    raw = (
        b'data: {"choices":[{"index":0,"delta":{"content":"h\xc3\xa9"}}]}\n\n'
        b": keep-alive\n\n"
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    parser, stream = SSEParser(), D.new_stream()
    for i in range(0, len(raw), 5):
        for event in parser.feed(raw[i : i + 5]):
            stream.feed(event)
    turn = stream.finish()
    assert (turn.text, turn.finish_reason) == ("hé", "length")


def test_the_stream_is_complete_only_after_done() -> None:
    stream, _ = run(chunk({"content": "x"}, finish="stop"))
    assert not stream.complete
    stream.feed(DONE)
    assert stream.complete


def test_events_after_done_are_ignored() -> None:
    stream, deltas = run(
        chunk({"role": "assistant"}), DONE, chunk({"content": "late"}), SSEEvent(data="{broken")
    )
    assert deltas == [None, None, None, None]
    assert stream.finish().text == ""


def test_a_stream_cut_before_done_raises_bad_response() -> None:
    stream, _ = run(chunk({"content": "x"}, finish="stop"))
    with pytest.raises(BadResponse, match=r"stream ended before \[DONE\]"):
        stream.finish()


def test_a_streamed_tool_call_without_a_name_raises_bad_response() -> None:
    stream, _ = run(
        chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"arguments": "{}"}}]}), DONE
    )
    with pytest.raises(BadResponse, match="index 0 has no function name"):
        stream.finish()


def test_an_error_chunk_raises_provider_error() -> None:
    stream = D.new_stream()
    with pytest.raises(ProviderError, match="overloaded"):
        stream.feed(SSEEvent(data='{"error": {"message": "overloaded"}}'))


def test_blank_data_events_are_ignored() -> None:
    _, deltas = run(SSEEvent(data=""), SSEEvent(data="  "))
    assert deltas == [None, None]


@pytest.mark.parametrize(
    ("data", "complaint"),
    [
        ("{not json", "malformed stream chunk"),
        ("[1, 2]", "not an object"),
        ('{"choices": "x"}', r"choices\[0\] is not an object"),
        ('{"choices": [7]}', r"choices\[0\] is not an object"),
        ('{"choices": [{"delta": "x"}]}', "delta is not an object"),
        ('{"choices": [{"delta": {"content": 5}}]}', "content is not text"),
        ('{"choices": [{"delta": {"tool_calls": {}}}]}', "tool_calls is not a list"),
        ('{"choices": [{"delta": {"tool_calls": [3]}}]}', "tool call delta is not an object"),
        (
            '{"choices": [{"delta": {"tool_calls": [{"index": 0, "function": 1}]}}]}',
            "function is not",
        ),
    ],
)
def test_malformed_chunks_raise_bad_response(data: str, complaint: str) -> None:
    stream = D.new_stream()
    with pytest.raises(BadResponse, match=complaint):
        stream.feed(SSEEvent(data=data))


def test_a_choice_without_delta_still_records_the_finish_reason() -> None:
    stream, _ = run(chunk(choices=[{"index": 0, "finish_reason": "length"}]), DONE)
    assert stream.finish().finish_reason == "length"


def test_a_tool_delta_carrying_only_the_id_opens_the_call() -> None:
    stream, _ = run(
        chunk({"tool_calls": [{"index": 0, "id": "a"}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{}"}}]}),
        DONE,
    )
    assert stream.finish().tool_calls == [ModelToolCall(id="a", name="f", arguments="{}")]
