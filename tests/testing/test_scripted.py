"""The scripted model server, driven over real loopback HTTP with a bare aiohttp session."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest

import toolnexus.testing as testing
from toolnexus.errors import UsageError
from toolnexus.testing import (
    RecordedRequest,
    Reply,
    ScriptedModel,
    call,
    cut_stream,
    delayed,
    empty_choices,
    empty_reply,
    garbage,
    http_error,
    reset,
    reset_mid_stream,
    stream_error,
    text,
    tool_calls,
)

OPENAI = "/v1/chat/completions"
ANTHROPIC = "/v1/messages"
INCLUDE_USAGE = {"include_usage": True}


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


async def post(
    session: aiohttp.ClientSession, server: ScriptedModel, path: str = OPENAI, **body: Any
) -> tuple[int, str, dict[str, str]]:
    body.setdefault("model", "m-1")
    async with session.post(server.url + path, json=body) as resp:
        return resp.status, await resp.text(), dict(resp.headers)


async def post_json(
    session: aiohttp.ClientSession, server: ScriptedModel, path: str = OPENAI, **body: Any
) -> dict[str, Any]:
    status, raw, headers = await post(session, server, path, **body)
    assert status == 200, raw
    assert headers["Content-Type"].startswith("application/json")
    return json.loads(raw)


def parse_sse(raw: str) -> list[tuple[str | None, str]]:
    """(event name, data) per SSE event; a minimal reader for what the server writes."""
    events: list[tuple[str | None, str]] = []
    for block in raw.split("\n\n"):
        if not block:
            continue
        name = None
        data: list[str] = []
        for line in block.split("\n"):
            key, _, value = line.partition(": ")
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)
        events.append((name, "\n".join(data)))
    return events


async def post_sse(
    session: aiohttp.ClientSession, server: ScriptedModel, path: str = OPENAI, **body: Any
) -> list[tuple[str | None, str]]:
    body["stream"] = True
    status, raw, headers = await post(session, server, path, **body)
    assert status == 200, raw
    assert headers["Content-Type"].startswith("text/event-stream")
    return parse_sse(raw)


def openai_chunks(events: list[tuple[str | None, str]]) -> list[dict[str, Any]]:
    assert events[-1] == (None, "[DONE]")
    return [json.loads(data) for _, data in events[:-1]]


def deltas(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c["choices"][0]["delta"] for c in chunks if c["choices"]]


def anthropic_events(events: list[tuple[str | None, str]]) -> list[dict[str, Any]]:
    parsed = [json.loads(data) for _, data in events]
    assert [name for name, _ in events] == [p["type"] for p in parsed]
    return parsed


# -- lifecycle -----------------------------------------------------------------------------------


async def test_urls_name_the_loopback_port_and_each_styles_base() -> None:
    async with ScriptedModel() as model:
        assert model.url.startswith("http://127.0.0.1:")
        assert int(model.url.rsplit(":", 1)[1]) > 0
        assert model.openai_base_url == model.url + "/v1"
        assert model.anthropic_base_url == model.url


async def test_url_before_start_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="not running"):
        _ = ScriptedModel().url


async def test_start_and_aclose_work_without_async_with(session: aiohttp.ClientSession) -> None:
    model = ScriptedModel([text("hi")])
    await model.start()
    url = model.url
    assert (await post_json(session, model))["choices"][0]["message"]["content"] == "hi"
    await model.aclose()
    await model.aclose()
    with pytest.raises(aiohttp.ClientConnectionError):
        await session.post(url + OPENAI, json={})


async def test_a_given_port_is_bound(session: aiohttp.ClientSession) -> None:
    async with ScriptedModel() as first:
        port = int(first.url.rsplit(":", 1)[1])
    async with ScriptedModel([text("again")], port=port) as model:
        assert model.url == f"http://127.0.0.1:{port}"
        assert (await post_json(session, model))["choices"][0]["message"]["content"] == "again"


def test_import_toolnexus_does_not_import_the_testing_server() -> None:
    code = (
        "import sys, toolnexus; "
        "assert 'toolnexus.testing' not in sys.modules; "
        "assert 'aiohttp.web' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_public_names_are_sorted_and_importable() -> None:
    assert testing.__all__ == sorted(testing.__all__)
    assert all(hasattr(testing, name) for name in testing.__all__)


# -- OpenAI --------------------------------------------------------------------------------------


async def test_openai_text_reply_is_a_chat_completion(session: aiohttp.ClientSession) -> None:
    async with ScriptedModel([text("3")]) as model:
        reply = await post_json(session, model, model="gpt-test")
    assert reply == {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": reply["created"],
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "3"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


async def test_openai_tool_calls_carry_json_arguments(session: aiohttp.ClientSession) -> None:
    script = [tool_calls(call("add", {"a": 1, "b": 2}, id="c1"), call("now"), text="let me")]
    async with ScriptedModel(script) as model:
        choice = (await post_json(session, model))["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "let me"
    first, second = choice["message"]["tool_calls"]
    assert first["id"] == "c1"
    assert first["type"] == "function"
    assert first["function"]["name"] == "add"
    assert json.loads(first["function"]["arguments"]) == {"a": 1, "b": 2}
    assert second["id"] == "call_1"
    assert json.loads(second["function"]["arguments"]) == {}


async def test_tool_calls_without_text_have_null_content(session: aiohttp.ClientSession) -> None:
    async with ScriptedModel([tool_calls(call("add", {"a": 1}))]) as model:
        message = (await post_json(session, model))["choices"][0]["message"]
    assert message["content"] is None


async def test_string_arguments_are_sent_verbatim(session: aiohttp.ClientSession) -> None:
    async with ScriptedModel([tool_calls(call("add", '{"a": 1,'))]) as model:
        message = (await post_json(session, model))["choices"][0]["message"]
    assert message["tool_calls"][0]["function"]["arguments"] == '{"a": 1,'


async def test_auto_call_ids_count_up_per_server(session: aiohttp.ClientSession) -> None:
    async def ids(model: ScriptedModel) -> list[str]:
        message = (await post_json(session, model))["choices"][0]["message"]
        return [c["id"] for c in message["tool_calls"]]

    async with ScriptedModel(default=tool_calls(call("a"), call("b"))) as model:
        assert await ids(model) == ["call_1", "call_2"]
        assert await ids(model) == ["call_3", "call_4"]
    async with ScriptedModel(default=tool_calls(call("a"))) as model:
        assert await ids(model) == ["call_1"]


async def test_the_request_model_is_echoed_for_a_reused_reply(
    session: aiohttp.ClientSession,
) -> None:
    async with ScriptedModel(default=text("x")) as model:
        assert (await post_json(session, model, model="a"))["model"] == "a"
        assert (await post_json(session, model, model='b "quoted"'))["model"] == 'b "quoted"'
        assert (await post_json(session, model, ANTHROPIC, model="c"))["model"] == "c"


async def test_openai_route_without_v1_answers(session: aiohttp.ClientSession) -> None:
    async with ScriptedModel([text("short")]) as model:
        reply = await post_json(session, model, "/chat/completions")
    assert reply["choices"][0]["message"]["content"] == "short"


async def test_usage_and_finish_reason_can_be_overridden(session: aiohttp.ClientSession) -> None:
    reply = text("cut", usage={"prompt_tokens": 7, "completion_tokens": 2}, finish_reason="length")
    async with ScriptedModel([reply, reply]) as model:
        openai = await post_json(session, model)
        anthropic = await post_json(session, model, ANTHROPIC)
    assert openai["usage"] == {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}
    assert openai["choices"][0]["finish_reason"] == "length"
    assert anthropic["usage"] == {"input_tokens": 7, "output_tokens": 2}
    assert anthropic["stop_reason"] == "length"


async def test_empty_reply_has_neither_text_nor_tool_calls(session: aiohttp.ClientSession) -> None:
    async with ScriptedModel([empty_reply(), empty_reply()]) as model:
        openai = await post_json(session, model)
        anthropic = await post_json(session, model, ANTHROPIC)
    assert openai["choices"][0]["message"] == {"role": "assistant", "content": None}
    assert openai["choices"][0]["finish_reason"] == "stop"
    assert anthropic["content"] == []
    assert anthropic["stop_reason"] == "end_turn"


async def test_openai_stream_splits_text_into_several_deltas(
    session: aiohttp.ClientSession,
) -> None:
    async with ScriptedModel([text("héllo wörld 🌍")]) as model:
        chunks = openai_chunks(await post_sse(session, model))
    parts = deltas(chunks)
    assert parts[0] == {"role": "assistant", "content": ""}
    pieces = [d["content"] for d in parts[1:] if d.get("content")]
    assert len(pieces) > 1
    assert "".join(pieces) == "héllo wörld 🌍"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "m-1" for c in chunks)


async def test_openai_stream_tool_call_arguments_reassemble(
    session: aiohttp.ClientSession,
) -> None:
    args = {"a": 1, "b": [2, 3], "note": "ünïcode"}
    script = [tool_calls(call("add", args, id="c1"), call("noop", {}, id="c2"))]
    async with ScriptedModel(script) as model:
        chunks = openai_chunks(await post_sse(session, model))
    calls: dict[int, dict[str, Any]] = {}
    for delta in deltas(chunks):
        for piece in delta.get("tool_calls", []):
            slot = calls.setdefault(piece["index"], {"arguments": "", "chunks": 0})
            slot.update({k: piece[k] for k in ("id", "type") if k in piece})
            if "name" in piece["function"]:
                slot["name"] = piece["function"]["name"]
            slot["arguments"] += piece["function"]["arguments"]
            slot["chunks"] += 1
    assert calls[0]["id"] == "c1"
    assert calls[0]["type"] == "function"
    assert calls[0]["name"] == "add"
    assert calls[0]["chunks"] > 2
    assert json.loads(calls[0]["arguments"]) == args
    assert (calls[1]["id"], calls[1]["name"], json.loads(calls[1]["arguments"])) == (
        "c2",
        "noop",
        {},
    )
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


async def test_openai_stream_has_no_usage_chunk_without_include_usage(
    session: aiohttp.ClientSession,
) -> None:
    async with ScriptedModel(default=text("hi")) as model:
        absent = openai_chunks(await post_sse(session, model))
        off = openai_chunks(await post_sse(session, model, stream_options={"include_usage": False}))
    assert not any("usage" in c for c in absent + off)
    assert absent[-1]["choices"][0]["finish_reason"] == "stop"


async def test_openai_usage_chunk_is_last_before_done(session: aiohttp.ClientSession) -> None:
    async with ScriptedModel([text("hi")]) as model:
        status, raw, _ = await post(session, model, stream=True, stream_options=INCLUDE_USAGE)
    chunks = openai_chunks(parse_sse(raw))
    assert status == 200
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    assert not any("usage" in c for c in chunks[:-1])


# -- Anthropic -----------------------------------------------------------------------------------


async def test_anthropic_reply_is_a_message(session: aiohttp.ClientSession) -> None:
    script = [tool_calls(call("add", {"a": 1, "b": 2}, id="t1"), text="adding")]
    async with ScriptedModel(script) as model:
        reply = await post_json(session, model, ANTHROPIC, model="claude-test")
    assert reply == {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [
            {"type": "text", "text": "adding"},
            {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1, "b": 2}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


async def test_anthropic_route_without_v1_answers(session: aiohttp.ClientSession) -> None:
    async with ScriptedModel([text("hey")]) as model:
        reply = await post_json(session, model, "/messages")
    assert reply["content"] == [{"type": "text", "text": "hey"}]
    assert reply["stop_reason"] == "end_turn"


async def test_anthropic_input_for_string_arguments(session: aiohttp.ClientSession) -> None:
    script = [tool_calls(call("a", '{"x": 1}'), call("b", "{broken"))]
    async with ScriptedModel(script) as model:
        content = (await post_json(session, model, ANTHROPIC))["content"]
    assert content[0]["input"] == {"x": 1}
    assert content[1]["input"] == "{broken"


async def test_anthropic_stream_event_sequence(session: aiohttp.ClientSession) -> None:
    async with ScriptedModel([tool_calls(call("add", {"a": 1}), text="hi")]) as model:
        events = anthropic_events(await post_sse(session, model, ANTHROPIC))
    kinds = [(e["type"], e.get("index")) for e in events]
    assert kinds[0] == ("message_start", None)
    assert kinds[1] == ("content_block_start", 0)
    assert kinds[-3:] == [
        ("content_block_stop", 1),
        ("message_delta", None),
        ("message_stop", None),
    ]
    assert kinds.index(("content_block_stop", 0)) < kinds.index(("content_block_start", 1))


async def test_anthropic_stream_reassembles_text_and_tool_input(
    session: aiohttp.ClientSession,
) -> None:
    args = {"city": "Zürich", "days": [1, 2]}
    script = [
        tool_calls(
            call("weather", args, id="t9"),
            text="checking now",
            usage={"prompt_tokens": 4, "completion_tokens": 3},
        )
    ]
    async with ScriptedModel(script) as model:
        events = anthropic_events(await post_sse(session, model, ANTHROPIC, model="claude-x"))
    start = events[0]["message"]
    assert (start["id"], start["model"], start["usage"]["input_tokens"]) == ("msg_1", "claude-x", 4)
    blocks = {e["index"]: e["content_block"] for e in events if e["type"] == "content_block_start"}
    assert blocks[0] == {"type": "text", "text": ""}
    assert blocks[1] == {"type": "tool_use", "id": "t9", "name": "weather", "input": {}}
    text_deltas = [
        e["delta"]["text"] for e in events if e.get("delta", {}).get("type") == "text_delta"
    ]
    json_deltas = [
        e["delta"]["partial_json"]
        for e in events
        if e.get("delta", {}).get("type") == "input_json_delta"
    ]
    assert len(text_deltas) > 1
    assert "".join(text_deltas) == "checking now"
    assert len(json_deltas) > 1
    assert json.loads("".join(json_deltas)) == args
    delta = next(e for e in events if e["type"] == "message_delta")
    assert delta["delta"]["stop_reason"] == "tool_use"
    assert delta["usage"] == {"output_tokens": 3}


# -- the script ----------------------------------------------------------------------------------


async def test_steps_are_consumed_in_order(session: aiohttp.ClientSession) -> None:
    async with ScriptedModel([text("one"), text("two")]) as model:
        model.add(text("three"))
        assert model.remaining == 3
        answers = [
            (await post_json(session, model))["choices"][0]["message"]["content"] for _ in range(3)
        ]
        assert model.remaining == 0
    assert answers == ["one", "two", "three"]


async def test_exhausted_script_answers_500_naming_the_request(
    session: aiohttp.ClientSession,
) -> None:
    async with ScriptedModel([text("only")]) as model:
        await post(session, model)
        status, body, _ = await post(session, model)
    assert status == 500
    assert body == "scripted model: script exhausted at request 2"


async def test_default_answers_once_the_script_is_exhausted(
    session: aiohttp.ClientSession,
) -> None:
    async with ScriptedModel([text("first")]) as model:
        model.default(text("fallback"))
        contents = [
            (await post_json(session, model))["choices"][0]["message"]["content"] for _ in range(3)
        ]
        model.default(None)
        status, _, _ = await post(session, model)
    assert contents == ["first", "fallback", "fallback"]
    assert status == 500


async def test_when_rule_answers_first_without_consuming_the_script(
    session: aiohttp.ClientSession,
) -> None:
    async with ScriptedModel([text("scripted")]) as model:
        model.when(lambda r: r.style == "anthropic", text("rule"))
        anthropic = await post_json(session, model, ANTHROPIC)
        again = await post_json(session, model, ANTHROPIC)
        openai = await post_json(session, model)
    assert anthropic["content"][0]["text"] == again["content"][0]["text"] == "rule"
    assert openai["choices"][0]["message"]["content"] == "scripted"


async def test_when_rule_stops_firing_after_times(session: aiohttp.ClientSession) -> None:
    async with ScriptedModel(default=text("default")) as model:
        model.when(lambda r: True, text("limited"), times=2)
        contents = [
            (await post_json(session, model))["choices"][0]["message"]["content"] for _ in range(3)
        ]
    assert contents == ["limited", "limited", "default"]


async def test_callable_step_answers_from_the_request(session: aiohttp.ClientSession) -> None:
    def add_up(request: RecordedRequest) -> Reply:
        last = request.body["messages"][-1]
        return text(str(sum(json.loads(last["content"]))))

    async with ScriptedModel([add_up]) as model:
        messages = [{"role": "tool", "tool_call_id": "c1", "content": "[1, 2, 39]"}]
        reply = await post_json(session, model, messages=messages)
    assert reply["choices"][0]["message"]["content"] == "42"


async def test_async_callable_step_is_awaited(session: aiohttp.ClientSession) -> None:
    async def echo_model(request: RecordedRequest) -> Reply:
        await asyncio.sleep(0)
        return text(f"you asked {request.body['model']}")

    async with ScriptedModel([echo_model]) as model:
        reply = await post_json(session, model, ANTHROPIC, model="claude-q")
    assert reply["content"][0]["text"] == "you asked claude-q"


async def test_a_raising_step_answers_500_with_the_error(session: aiohttp.ClientSession) -> None:
    def broken(request: RecordedRequest) -> Reply:
        raise KeyError("messages")

    async with ScriptedModel([broken]) as model:
        status, body, _ = await post(session, model)
    assert status == 500
    assert body == "scripted model: step for request 1 raised KeyError('messages')"


async def test_a_step_returning_no_reply_answers_500(session: aiohttp.ClientSession) -> None:
    async with ScriptedModel([lambda r: "oops"]) as model:  # pyright: ignore[reportArgumentType]
        status, body, _ = await post(session, model)
    assert status == 500
    assert body == "scripted model: step for request 1 returned 'oops', not a reply"


@pytest.mark.parametrize(
    "mistake",
    [
        lambda: ScriptedModel(["text"]),  # pyright: ignore[reportArgumentType]
        lambda: ScriptedModel().add(42),  # pyright: ignore[reportArgumentType]
        lambda: ScriptedModel().when(lambda r: True, text("x"), times=-1),
        lambda: call("f", 42),  # pyright: ignore[reportArgumentType]
        lambda: tool_calls(),
        lambda: text("x", usage={"input_tokens": 3}),
        lambda: http_error(42),
        lambda: cut_stream(http_error(500), after_events=1),  # pyright: ignore[reportArgumentType]
        lambda: reset_mid_stream(text("x"), after_events=-1),
        lambda: stream_error(after_events=2),
        lambda: delayed(text("x"), -1),
        lambda: delayed("x", 1),  # pyright: ignore[reportArgumentType]
    ],
)
def test_script_mistakes_are_usage_errors(mistake: Callable[[], object]) -> None:
    with pytest.raises(UsageError):
        mistake()


# -- recorded requests ---------------------------------------------------------------------------


async def test_requests_are_recorded_with_lowercase_headers_and_parsed_body(
    session: aiohttp.ClientSession,
) -> None:
    async with ScriptedModel([text("a"), text("b")]) as model:
        headers = {"Authorization": "Bearer sk-test", "X-Custom-Thing": "yes"}
        body = {"model": "gpt-r", "messages": [{"role": "user", "content": "hi"}]}
        await session.post(model.url + OPENAI, json=body, headers=headers)
        await session.post(model.url + "/messages", json={"model": "c", "stream": True})
    first, second = model.requests
    assert (first.path, first.style, first.stream, first.body) == (OPENAI, "openai", False, body)
    assert first.headers["authorization"] == "Bearer sk-test"
    assert first.headers["x-custom-thing"] == "yes"
    assert all(name == name.lower() for name in first.headers)
    assert (second.path, second.style, second.stream) == ("/messages", "anthropic", True)


async def test_a_non_json_body_is_refused_and_consumes_no_step(
    session: aiohttp.ClientSession,
) -> None:
    async with ScriptedModel([text("kept")]) as model:
        async with session.post(model.url + OPENAI, data=b"[1, 2") as resp:
            assert resp.status == 400
        async with session.post(model.url + OPENAI, json=[1, 2]) as resp:
            assert resp.status == 400
        assert model.requests == []
        assert model.remaining == 1


async def test_unknown_routes_and_methods_are_refused(session: aiohttp.ClientSession) -> None:
    async with ScriptedModel([text("kept")]) as model:
        async with session.post(model.url + "/v1/embeddings", json={}) as resp:
            assert resp.status == 404
        async with session.get(model.url + OPENAI) as resp:
            assert resp.status == 405
        assert model.remaining == 1


# -- faults --------------------------------------------------------------------------------------


async def test_http_error_sends_status_body_and_headers(session: aiohttp.ClientSession) -> None:
    error = http_error(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "0"})
    async with ScriptedModel([error]) as model:
        status, body, headers = await post(session, model)
    assert status == 429
    assert headers["Retry-After"] == "0"
    assert headers["Content-Type"].startswith("application/json")
    assert json.loads(body) == {"error": {"message": "slow down"}}


async def test_http_error_with_text_body_is_plain_text(session: aiohttp.ClientSession) -> None:
    async with ScriptedModel([http_error(503, "upstream down")]) as model:
        status, body, headers = await post(session, model)
    assert (status, body) == (503, "upstream down")
    assert headers["Content-Type"].startswith("text/plain")


async def test_http_error_default_body_is_the_providers_error_json(
    session: aiohttp.ClientSession,
) -> None:
    async with ScriptedModel([http_error(400), http_error(529)]) as model:
        _, openai, _ = await post(session, model)
        status, anthropic, _ = await post(session, model, ANTHROPIC)
    assert json.loads(openai)["error"]["type"] == "invalid_request_error"
    assert status == 529
    assert json.loads(anthropic) == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "scripted error 529"},
    }


async def test_garbage_is_a_200_with_the_given_body(session: aiohttp.ClientSession) -> None:
    async with ScriptedModel([garbage("{not json"), garbage(b"<html>", "text/html")]) as model:
        first = await post(session, model)
        second = await post(session, model, stream=True)
    assert first[:2] == (200, "{not json")
    assert first[2]["Content-Type"].startswith("application/json")
    assert second[:2] == (200, "<html>")
    assert second[2]["Content-Type"].startswith("text/html")


async def test_empty_choices_as_json(session: aiohttp.ClientSession) -> None:
    async with ScriptedModel([empty_choices(), empty_choices()]) as model:
        openai = await post_json(session, model)
        anthropic = await post_json(session, model, ANTHROPIC)
    assert openai["choices"] == []
    assert anthropic["content"] == []
    assert anthropic["stop_reason"] is None


async def test_empty_choices_streamed(session: aiohttp.ClientSession) -> None:
    async with ScriptedModel([empty_choices(), empty_choices()]) as model:
        chunks = openai_chunks(await post_sse(session, model))
        events = anthropic_events(await post_sse(session, model, ANTHROPIC))
    assert [c["choices"] for c in chunks] == [[]]
    assert [e["type"] for e in events] == ["message_start", "message_stop"]


async def test_reset_drops_the_connection_without_a_response(
    session: aiohttp.ClientSession,
) -> None:
    async with ScriptedModel([reset(), text("still alive")]) as model:
        with pytest.raises(aiohttp.ClientConnectionError):
            await post(session, model)
        reply = await post_json(session, model)
    assert reply["choices"][0]["message"]["content"] == "still alive"
    assert len(model.requests) == 2


@pytest.mark.parametrize("path", [OPENAI, ANTHROPIC])
async def test_cut_stream_ends_cleanly_without_the_terminal_event(
    session: aiohttp.ClientSession, path: str
) -> None:
    async with ScriptedModel([cut_stream(text("hello there"), after_events=3)]) as model:
        events = await post_sse(session, model, path, stream_options=INCLUDE_USAGE)
    assert len(events) == 3
    assert (None, "[DONE]") not in events
    assert "message_stop" not in [name for name, _ in events]


@pytest.mark.parametrize("path", [OPENAI, ANTHROPIC])
async def test_cut_stream_never_sends_the_terminal_event(
    session: aiohttp.ClientSession, path: str
) -> None:
    reply = tool_calls(call("f", {"x": 1}, id="c1"))
    async with (
        ScriptedModel([cut_stream(reply, after_events=1000)]) as cutting,
        ScriptedModel([reply]) as whole,
    ):
        cut = await post_sse(session, cutting, path)
        full = await post_sse(session, whole, path)
    assert cut == full[:-1]


@pytest.mark.parametrize("path", [OPENAI, ANTHROPIC])
async def test_reset_mid_stream_fails_the_client_after_n_events(
    session: aiohttp.ClientSession, path: str
) -> None:
    lines: list[bytes] = []

    async def read_all(resp: aiohttp.ClientResponse) -> None:
        async for line in resp.content:
            lines.append(line)

    fault = reset_mid_stream(text("a longer answer"), after_events=2)
    async with (
        ScriptedModel([fault]) as model,
        session.post(model.url + path, json={"model": "m", "stream": True}) as resp,
    ):
        assert resp.status == 200
        with pytest.raises(aiohttp.ClientError):
            await read_all(resp)
    assert len(parse_sse(b"".join(lines).decode())) == 2


async def test_anthropic_stream_error_event(session: aiohttp.ClientSession) -> None:
    fault = stream_error("overloaded_error", "Overloaded", reply=text("partial"), after_events=1)
    async with ScriptedModel([fault]) as model:
        events = anthropic_events(await post_sse(session, model, ANTHROPIC))
    assert [e["type"] for e in events] == ["message_start", "error"]
    assert events[1]["error"] == {"type": "overloaded_error", "message": "Overloaded"}


async def test_openai_stream_error_event(session: aiohttp.ClientSession) -> None:
    async with ScriptedModel([stream_error("server_error", "boom")]) as model:
        events = await post_sse(session, model)
    assert len(events) == 1
    assert json.loads(events[0][1])["error"]["message"] == "boom"


@pytest.mark.parametrize(
    "fault",
    [
        cut_stream(text("x"), after_events=1),
        reset_mid_stream(text("x"), after_events=1),
        stream_error(),
    ],
)
async def test_stream_faults_refuse_non_streaming_requests(
    session: aiohttp.ClientSession, fault: Reply
) -> None:
    async with ScriptedModel([fault]) as model:
        status, body, _ = await post(session, model)
    assert status == 500
    assert body.startswith("scripted model: ")
    assert body.endswith("needs a streaming request (request 1)")


async def test_delayed_answers_after_the_delay(session: aiohttp.ClientSession) -> None:
    loop = asyncio.get_running_loop()
    async with ScriptedModel([delayed(text("late"), 0.05)]) as model:
        started = loop.time()
        reply = await post_json(session, model)
    assert loop.time() - started >= 0.05
    assert reply["choices"][0]["message"]["content"] == "late"


async def test_client_disconnect_during_a_delay_is_observed_quietly(
    session: aiohttp.ClientSession, caplog: pytest.LogCaptureFixture
) -> None:
    received = asyncio.Event()

    def slow(request: RecordedRequest) -> Reply:
        received.set()
        return delayed(text("too late"), 30)

    caplog.set_level(logging.DEBUG)
    async with ScriptedModel([slow, text("next")]) as model:
        client = asyncio.create_task(post(session, model))
        async with asyncio.timeout(5):
            await received.wait()
        client.cancel()
        await model.wait_for_disconnect(5)
        reply = await post_json(session, model)
    assert model.disconnects == 1
    assert reply["choices"][0]["message"]["content"] == "next"
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_wait_for_disconnect_times_out_without_one() -> None:
    async with ScriptedModel() as model:
        with pytest.raises(TimeoutError):
            await model.wait_for_disconnect(0.01)


async def test_aclose_drops_requests_still_waiting(session: aiohttp.ClientSession) -> None:
    received = asyncio.Event()

    def slow(request: RecordedRequest) -> Reply:
        received.set()
        return delayed(text("never"), 30)

    model = ScriptedModel([slow])
    await model.start()
    client = asyncio.create_task(post(session, model))
    async with asyncio.timeout(5):
        await received.wait()
        await model.aclose()
        with pytest.raises(aiohttp.ClientError):
            await client
    assert model.disconnects == 0
