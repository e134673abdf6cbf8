"""``client.stream`` and ``ask(on_text=)``: the event order of CONTRACT §3.9, both dialects."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from toolnexus import Client, RunCancelled, RunResult, define_tool
from toolnexus.testing import ScriptedModel, call, text, tool_calls

ClientFor = Callable[..., Client]


@define_tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


def without_result(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events with the ``done`` event's RunResult left out (checked separately)."""
    return [{k: v for k, v in e.items() if k != "result"} for e in events]


def deltas(text_value: str) -> list[dict[str, Any]]:
    """The text events the scripted model streams for ``text_value`` (three pieces)."""
    size = -(-len(text_value) // 3)
    return [
        {"type": "text", "delta": text_value[i : i + size]} for i in range(0, len(text_value), size)
    ]


async def test_a_tool_turn_then_a_text_turn_stream_in_the_pinned_order(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(
        tool_calls(
            call("add", {"a": 1, "b": 2}, id="c1"),
            call("add", {"a": 3, "b": 4}, id="c2"),
            text="Adding",
        ),
        text("It is 3 and 7"),
    )
    async with client_for(scripted, style) as client:
        events = [e async for e in client.stream("sums", [add])]
    assert without_result(events) == [
        *deltas("Adding"),
        {"type": "tool_call", "id": "c1", "name": "add", "args": {"a": 1, "b": 2}},
        {"type": "tool_call", "id": "c2", "name": "add", "args": {"a": 3, "b": 4}},
        {"type": "tool_result", "id": "c1", "name": "add", "output": "3", "is_error": False},
        {"type": "tool_result", "id": "c2", "name": "add", "output": "7", "is_error": False},
        *deltas("It is 3 and 7"),
        {
            "type": "usage",
            "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30},
        },
        {"type": "done"},
    ]


async def test_a_text_only_stream_is_deltas_then_usage_then_done(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(text("Hello, world"))
    async with client_for(scripted, style) as client:
        events = [e async for e in client.stream("hi")]
    assert without_result(events) == [
        *deltas("Hello, world"),
        {
            "type": "usage",
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        },
        {"type": "done"},
    ]


async def test_the_done_event_carries_the_same_run_result_as_run(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2}, id="c1")), text("3"))
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2}, id="c1")), text("3"))
    async with client_for(scripted, style) as client:
        events = [e async for e in client.stream("1+2", [add])]
        ran = await client.run("1+2", [add])
    streamed = events[-1]["result"]
    assert isinstance(streamed, RunResult)
    assert (streamed.text, streamed.status, streamed.turns, streamed.messages) == (
        ran.text,
        ran.status,
        ran.turns,
        ran.messages,
    )
    assert streamed.tool_calls == ran.tool_calls
    assert streamed.usage == ran.usage


async def test_stream_requests_ask_for_sse_and_openai_asks_for_usage(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(text("ok"))
    async with client_for(scripted, style) as client:
        [e async for e in client.stream("hi")]
    body = scripted.requests[0].body
    assert body["stream"] is True
    if style == "openai":
        assert body["stream_options"] == {"include_usage": True}
    else:
        assert "stream_options" not in body


async def test_an_exhausted_stream_ends_with_done_incomplete(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2}, id="c1")))
    async with client_for(scripted, max_turns=1) as client:
        events = [e async for e in client.stream("1+2", [add])]
    assert [e["type"] for e in events] == ["tool_call", "tool_result", "done"]
    result = events[-1]["result"]
    assert (result.status, result.limit) == ("incomplete", "maxTurns")


async def test_stream_with_an_id_saves_the_transcript_on_done(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    scripted.add(text("Hi Cy."))
    async with client_for(scripted, style) as client:
        events = [e async for e in client.stream("I am Cy.", id="s-1")]
        stored = await client.conversation_store.get("s-1")
    assert stored == events[-1]["result"].messages
    assert stored == [
        {"role": "user", "content": "I am Cy."},
        {"role": "assistant", "content": "Hi Cy."},
    ]


async def test_stream_with_an_id_continues_the_stored_transcript(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(text("Hi Cy."), text("Cy."))
    async with client_for(scripted) as client:
        await client.ask("I am Cy.", id="s-2")
        [e async for e in client.stream("Name?", id="s-2")]
    assert [m["content"] for m in scripted.requests[1].body["messages"]] == [
        "I am Cy.",
        "Hi Cy.",
        "Name?",
    ]


async def test_a_stream_abandoned_before_done_saves_nothing(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(text("a long answer"))
    async with client_for(scripted) as client:
        stream = client.stream("hi", id="s-3")
        first = await anext(stream)
        await stream.aclose()
        assert first["type"] == "text"
        assert await client.conversation_store.get("s-3") is None


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_ask_with_on_text_gets_the_deltas_and_returns_a_run_result(
    scripted: ScriptedModel, client_for: ClientFor, style: str, kind: str
) -> None:
    received: list[str] = []

    def on_text(delta: str) -> None:
        received.append(delta)

    async def on_text_async(delta: str) -> None:
        received.append(delta)

    scripted.add(tool_calls(call("add", {"a": 1, "b": 2}), text="Let me add."), text("It is 3."))
    async with client_for(scripted, style) as client:
        result = await client.ask(
            "1+2", [add], on_text=on_text if kind == "sync" else on_text_async
        )
    assert isinstance(result, RunResult)
    assert result.text == "It is 3."
    assert "".join(received) == "Let me add.It is 3."
    assert len(received) == 6
    assert all(r.stream for r in scripted.requests)


async def test_ask_with_on_text_and_an_id_saves_the_transcript(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    scripted.add(text("Hi."))
    async with client_for(scripted) as client:
        result = await client.ask("hello", id="a-1", on_text=lambda d: None)
        assert await client.conversation_store.get("a-1") == result.messages


async def test_a_cancel_set_between_stream_events_stops_the_stream(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    cancel = asyncio.Event()
    seen: list[str] = []

    async def consume() -> None:
        async for event in client.stream("hi", cancel=cancel):
            seen.append(event["type"])
            cancel.set()

    scripted.add(text("one two three four"))
    async with client_for(scripted, style) as client:
        with pytest.raises(RunCancelled):
            await consume()
    assert seen == ["text"]


async def test_a_legacy_streaming_transport_closes_its_stream_once_and_quietly() -> None:
    import gc
    import json as _json
    import urllib.request

    from toolnexus import create_client
    from toolnexus.testing import ScriptedModel, text

    class Legacy:
        """The existing package's transport shape: blocking post() and open()."""

        def _request(self, url: str, headers: dict[str, str], payload: dict[str, Any]) -> Any:
            data = _json.dumps(payload).encode()
            hdrs = {**headers, "content-type": "application/json"}
            return urllib.request.Request(url, data=data, headers=hdrs)

        def post(
            self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: Any
        ) -> Any:
            with urllib.request.urlopen(self._request(url, headers, payload)) as r:
                return _json.loads(r.read())

        def open(
            self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: Any
        ) -> Any:
            return urllib.request.urlopen(self._request(url, headers, payload))

    problems: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: problems.append(context))
    try:
        async with ScriptedModel([text("hello there")]) as model:
            async with create_client(
                base_url=model.openai_base_url, model="m", api_key="k", http_transport=Legacy()
            ) as client:
                events = [e async for e in client.stream("hi")]
        gc.collect()
        for _ in range(5):
            await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(None)
    assert "".join(e["delta"] for e in events if e["type"] == "text") == "hello there"
    assert problems == []
