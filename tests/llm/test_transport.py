"""Transports against real loopback aiohttp servers, and the legacy adapter."""

from __future__ import annotations

import asyncio
import email.message
import json
import socket
import subprocess
import sys
import threading
import urllib.error
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from loopback_support import WAIT, serve

from toolnexus.errors import BadResponse, ProviderError, TransportError, UsageError
from toolnexus.llm.base import SSEEvent, Transport
from toolnexus.llm.transport import AiohttpTransport, LegacyTransport, as_transport


@pytest.fixture
async def transport() -> AsyncGenerator[AiohttpTransport]:
    owned = AiohttpTransport()
    yield owned
    await owned.aclose()


def peer_port(request: web.Request) -> int:
    assert request.transport is not None
    return request.transport.get_extra_info("peername")[1]


async def sse(request: web.Request, *events: bytes) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for event in events:
        await response.write(event)
    return response


async def collect(events: AsyncIterator[SSEEvent]) -> list[SSEEvent]:
    return [event async for event in events]


# --- post -------------------------------------------------------------------------------------


async def test_post_returns_the_parsed_json_object(transport: AiohttpTransport) -> None:
    seen: dict[str, Any] = {}

    async def handler(request: web.Request) -> web.Response:
        seen["body"] = await request.json()
        seen["content_type"] = request.headers["Content-Type"]
        seen["auth"] = request.headers["Authorization"]
        return web.json_response({"choices": [{"message": {"content": "hé"}}]})

    async with serve(handler) as url:
        reply = await transport.post(
            url, {"Authorization": "Bearer k"}, {"model": "m", "x": "é"}, timeout=None
        )
    assert reply == {"choices": [{"message": {"content": "hé"}}]}
    assert seen == {
        "body": {"model": "m", "x": "é"},
        "content_type": "application/json",
        "auth": "Bearer k",
    }


async def test_a_callers_content_type_is_not_duplicated(transport: AiohttpTransport) -> None:
    seen: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        seen.extend(request.headers.getall("Content-Type"))
        return web.json_response({})

    async with serve(handler) as url:
        await transport.post(
            url, {"content-type": "application/json; charset=utf-8"}, {}, timeout=None
        )
    assert seen == ["application/json; charset=utf-8"]


async def test_each_request_sends_the_headers_it_was_given(transport: AiohttpTransport) -> None:
    seen: list[tuple[str | None, str | None]] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append((request.headers.get("Authorization"), request.headers.get("Content-Type")))
        return web.json_response({})

    headers = {"Authorization": "Bearer one"}
    async with serve(handler) as url:
        await transport.post(url, headers, {}, timeout=None)
        headers["Authorization"] = "Bearer two"
        await transport.post(url, headers, {}, timeout=None)
        await transport.post(url, {"Content-Type": "text/plain"}, {}, timeout=None)
        await transport.post(url, {}, {}, timeout=None)
    assert seen == [
        ("Bearer one", "application/json"),
        ("Bearer two", "application/json"),
        (None, "text/plain"),
        (None, "application/json"),
    ]


async def test_a_400_is_a_provider_error_with_status_and_body(
    transport: AiohttpTransport,
) -> None:
    body = '{"error":{"message":"bad tool schema"}}'

    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=400, text=body, content_type="application/json")

    async with serve(handler) as url:
        with pytest.raises(ProviderError) as caught:
            await transport.post(url, {}, {}, timeout=None)
    error = caught.value
    assert type(error) is ProviderError
    assert (error.status, error.body, error.retry_after) == (400, body, None)
    assert str(error) == f"HTTP 400: {body}"


async def test_a_429_carries_the_parsed_retry_after(transport: AiohttpTransport) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=429, text="slow down", headers={"retry-after": "3"})

    async with serve(handler) as url:
        with pytest.raises(ProviderError) as caught:
            await transport.post(url, {}, {}, timeout=None)
    assert (caught.value.status, caught.value.retry_after) == (429, 3.0)


async def test_an_http_date_retry_after_is_ignored(transport: AiohttpTransport) -> None:
    async def handler(request: web.Request) -> web.Response:
        date = "Wed, 21 Oct 2015 07:28:00 GMT"
        return web.Response(status=503, text="down", headers={"Retry-After": date})

    async with serve(handler) as url:
        with pytest.raises(ProviderError) as caught:
            await transport.post(url, {}, {}, timeout=None)
    assert (caught.value.status, caught.value.retry_after) == (503, None)


@pytest.mark.parametrize(
    ("status", "text"),
    [(200, "{not json"), (200, "[1, 2]"), (200, '"text"'), (204, ""), (200, "[" * 100_000)],
)
async def test_a_2xx_that_is_not_a_json_object_is_a_bad_response(
    transport: AiohttpTransport, status: int, text: str
) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=status, text=text or None)

    async with serve(handler) as url:
        with pytest.raises(BadResponse):
            await transport.post(url, {}, {}, timeout=None)


async def test_a_refused_connection_is_a_transport_error(transport: AiohttpTransport) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(TransportError) as caught:
        await transport.post(f"http://127.0.0.1:{port}/", {}, {}, timeout=None)
    assert isinstance(caught.value.__cause__, OSError)


async def test_a_reset_connection_is_a_transport_error(transport: AiohttpTransport) -> None:
    async def handler(request: web.Request) -> web.Response:
        assert request.transport is not None
        request.transport.abort()
        return web.Response(text="never sent")

    async with serve(handler) as url:
        with pytest.raises(TransportError):
            await transport.post(url, {}, {}, timeout=None)


async def test_a_per_request_timeout_is_a_transport_error(transport: AiohttpTransport) -> None:
    gone = asyncio.Event()

    async def handler(request: web.Request) -> web.Response:
        try:
            await asyncio.Event().wait()
        finally:
            gone.set()
        raise AssertionError("unreachable")

    async with serve(handler) as url:
        with pytest.raises(TransportError, match="timed out"):
            await transport.post(url, {}, {}, timeout=0.05)
        await asyncio.wait_for(gone.wait(), WAIT)


async def test_a_redirect_is_not_followed(transport: AiohttpTransport) -> None:
    paths: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        paths.append(request.path)
        return web.Response(status=307, text="moved", headers={"Location": "/elsewhere"})

    async with serve(handler) as url:
        with pytest.raises(ProviderError) as caught:
            await transport.post(url, {"Authorization": "Bearer k"}, {}, timeout=None)
    assert caught.value.status == 307
    assert paths == ["/"]


@pytest.mark.parametrize("url", ["not a url", "http://[::1", "ftp://example.com/"])
async def test_a_malformed_url_is_a_usage_error(transport: AiohttpTransport, url: str) -> None:
    with pytest.raises(UsageError, match="invalid URL"):
        await transport.post(url, {}, {}, timeout=None)


def _circular() -> dict[str, Any]:
    loop: dict[str, Any] = {"model": "m"}
    loop["params"] = {"again": [loop]}
    return loop


@pytest.mark.parametrize("body", [{"x": object()}, {"x": float("nan")}, _circular()])
async def test_an_unserialisable_body_is_a_usage_error(
    transport: AiohttpTransport, body: dict[str, Any]
) -> None:
    with pytest.raises(UsageError, match="JSON"):
        await transport.post("http://127.0.0.1:9/", {}, body, timeout=None)


async def test_calls_share_one_pooled_connection(transport: AiohttpTransport) -> None:
    ports: list[int] = []

    async def handler(request: web.Request) -> web.Response:
        ports.append(peer_port(request))
        return web.json_response({"n": len(ports)})

    async with serve(handler) as url:
        for _ in range(4):
            await transport.post(url, {}, {}, timeout=None)
    assert len(ports) == 4
    assert len(set(ports)) == 1


async def test_error_replies_keep_the_connection_for_the_next_call(
    transport: AiohttpTransport,
) -> None:
    ports: list[int] = []

    async def handler(request: web.Request) -> web.Response:
        ports.append(peer_port(request))
        return web.Response(status=503, text="busy")

    async with serve(handler) as url:
        for _ in range(3):
            with pytest.raises(ProviderError):
                await transport.post(url, {}, {}, timeout=None)
    assert len(set(ports)) == 1


# --- stream -----------------------------------------------------------------------------------


async def test_sse_events_arrive_incrementally(transport: AiohttpTransport) -> None:
    proceed = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        response = await sse(request, b'event: a\ndata: {"n":1}\n\n')
        await asyncio.wait_for(proceed.wait(), WAIT)
        await response.write(b'data: {"n":2}\r\n\r\ndata: [DONE]\n\n')
        return response

    received: list[SSEEvent] = []
    async with serve(handler) as url:
        async with asyncio.timeout(WAIT):
            async for event in transport.stream(url, {}, {"stream": True}, timeout=None):
                received.append(event)
                # The second event exists only once the first was seen.
                proceed.set()
    assert received == [
        SSEEvent(data='{"n":1}', event="a"),
        SSEEvent(data='{"n":2}'),
        SSEEvent(data="[DONE]"),
    ]


async def test_a_last_event_without_a_blank_line_is_still_delivered(
    transport: AiohttpTransport,
) -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        return await sse(request, b": keep-alive\n\ndata: one\n\ndata: [DONE]")

    async with serve(handler) as url:
        events = await collect(transport.stream(url, {}, {}, timeout=None))
    assert [event.data for event in events] == ["one", "[DONE]"]


async def test_a_non_2xx_stream_is_a_provider_error_with_the_body(
    transport: AiohttpTransport,
) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=429, text="quota", headers={"Retry-After": "0"})

    async with serve(handler) as url:
        with pytest.raises(ProviderError) as caught:
            await collect(transport.stream(url, {}, {}, timeout=None))
    assert (caught.value.status, caught.value.body, caught.value.retry_after) == (429, "quota", 0.0)


async def test_a_reset_mid_stream_is_a_transport_error_after_the_first_events(
    transport: AiohttpTransport,
) -> None:
    proceed = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        response = await sse(request, b"data: one\n\ndata: two\n\n")
        await asyncio.wait_for(proceed.wait(), WAIT)
        assert request.transport is not None
        request.transport.abort()
        return response

    received: list[str] = []

    async def consume(url: str) -> None:
        async for event in transport.stream(url, {}, {}, timeout=None):
            received.append(event.data)
            if len(received) == 2:
                proceed.set()

    async with serve(handler) as url:
        with pytest.raises(TransportError):
            await consume(url)
    assert received == ["one", "two"]


async def test_closing_a_stream_early_releases_the_connection(
    transport: AiohttpTransport,
) -> None:
    gone = asyncio.Event()

    async def handler(request: web.Request) -> web.StreamResponse:
        response = await sse(request, b"data: one\n\n")
        try:
            await asyncio.Event().wait()
        finally:
            gone.set()
        return response

    async with serve(handler) as url:
        events = transport.stream(url, {}, {}, timeout=None)
        first = await anext(events)
        await events.aclose()
        await asyncio.wait_for(gone.wait(), WAIT)
    assert first.data == "one"


async def test_a_finished_stream_returns_its_connection_to_the_pool(
    transport: AiohttpTransport,
) -> None:
    ports: list[int] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        ports.append(peer_port(request))
        if request.headers.get("X-Kind") == "stream":
            return await sse(request, b"data: [DONE]\n\n")
        return web.json_response({})

    async with serve(handler) as url:
        await collect(transport.stream(url, {"X-Kind": "stream"}, {}, timeout=None))
        await transport.post(url, {}, {}, timeout=None)
    assert len(ports) == 2
    assert len(set(ports)) == 1


# --- session ownership ------------------------------------------------------------------------


async def test_aclose_closes_the_pool_and_a_later_call_opens_a_new_one() -> None:
    ports: list[int] = []

    async def handler(request: web.Request) -> web.Response:
        ports.append(peer_port(request))
        return web.json_response({})

    owned = AiohttpTransport()
    async with serve(handler) as url:
        await owned.post(url, {}, {}, timeout=None)
        await owned.aclose()
        await owned.post(url, {}, {}, timeout=None)
        await owned.aclose()
    assert len(set(ports)) == 2


async def test_aclose_never_closes_a_session_the_host_passed_in() -> None:
    async with aiohttp.ClientSession() as session:
        shared = AiohttpTransport(session)
        await shared.aclose()
        assert not session.closed


async def test_a_host_session_is_used_for_the_calls() -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.json_response({"ua": request.headers["User-Agent"]})

    async with serve(handler) as url, aiohttp.ClientSession(headers={"User-Agent": "host"}) as s:
        reply = await AiohttpTransport(s).post(url, {}, {}, timeout=None)
    assert reply == {"ua": "host"}


async def test_a_closed_host_session_is_a_usage_error() -> None:
    session = aiohttp.ClientSession()
    await session.close()
    with pytest.raises(UsageError, match="closed"):
        await AiohttpTransport(session).post("http://127.0.0.1:9/", {}, {}, timeout=None)


def test_the_transport_survives_a_new_event_loop_per_call() -> None:
    owned = AiohttpTransport()

    async def one_call() -> dict[str, Any]:
        async def handler(request: web.Request) -> web.Response:
            response = web.json_response({"ok": True})
            response.force_close()
            return response

        async with serve(handler) as url:
            return await owned.post(url, {}, {}, timeout=None)

    assert asyncio.run(one_call()) == {"ok": True}
    assert asyncio.run(one_call()) == {"ok": True}
    asyncio.run(owned.aclose())


@pytest.mark.parametrize("limit", [-1, True, 1.5])
def test_a_bad_connector_limit_is_a_usage_error(limit: Any) -> None:
    with pytest.raises(UsageError):
        AiohttpTransport(connector_limit=limit)


# --- LegacyTransport --------------------------------------------------------------------------


class SyncTransport:
    """The existing package's transport shape: a blocking ``post``."""

    def __init__(self, reply: Any = None, error: Exception | None = None) -> None:
        self.reply = {"ok": True} if reply is None else reply
        self.error = error
        self.calls: list[tuple[Any, ...]] = []
        self.threads: list[int] = []

    def post(self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: Any) -> Any:
        self.threads.append(threading.get_ident())
        self.calls.append((url, headers, payload, timeout))
        if self.error is not None:
            raise self.error
        return self.reply


async def test_legacy_post_runs_in_another_thread_with_positional_arguments() -> None:
    legacy = SyncTransport()
    reply = await LegacyTransport(legacy).post("u", {"h": "1"}, {"b": 2}, timeout=7.5)
    assert reply == {"ok": True}
    # COMPAT §2: the full header set, Content-Type included, as the existing package sends it.
    assert legacy.calls == [("u", {"Content-Type": "application/json", "h": "1"}, {"b": 2}, 7.5)]
    assert legacy.threads != [threading.get_ident()]


async def test_legacy_post_does_not_block_the_event_loop() -> None:
    started, release = threading.Event(), threading.Event()

    class Blocking:
        def post(self, url: str, headers: Any, payload: Any, timeout: Any) -> dict[str, Any]:
            started.set()
            if not release.wait(WAIT):
                raise AssertionError("the loop never released the blocking call")
            return {"done": True}

    call = asyncio.ensure_future(LegacyTransport(Blocking()).post("u", {}, {}, timeout=None))
    assert await asyncio.to_thread(started.wait, WAIT)
    release.set()  # only reachable while the blocking call holds a worker thread, not the loop
    assert await call == {"done": True}


async def test_a_legacy_provider_error_passes_through_unchanged() -> None:
    error = ProviderError("HTTP 500: x", status=500)
    with pytest.raises(ProviderError) as caught:
        await LegacyTransport(SyncTransport(error=error)).post("u", {}, {}, timeout=None)
    assert caught.value is error


async def test_a_legacy_error_with_a_status_becomes_a_provider_error() -> None:
    class LegacyHttpError(Exception):
        def __init__(self) -> None:
            super().__init__("LLM 429: slow")
            self.status = 429
            self.text = "slow"
            self.retry_after = 2

    original = LegacyHttpError()
    with pytest.raises(ProviderError) as caught:
        await LegacyTransport(SyncTransport(error=original)).post("u", {}, {}, timeout=None)
    error = caught.value
    assert (error.status, error.body, error.retry_after) == (429, "slow", 2.0)
    assert str(error) == "HTTP 429: slow"
    assert error.__cause__ is original


async def test_a_urllib_http_error_maps_its_code_and_retry_after_header() -> None:
    headers = email.message.Message()
    headers["retry-after"] = "4"
    original = urllib.error.HTTPError("http://x/", 503, "Service Unavailable", headers, None)
    with pytest.raises(ProviderError) as caught:
        await LegacyTransport(SyncTransport(error=original)).post("u", {}, {}, timeout=None)
    assert (caught.value.status, caught.value.retry_after) == (503, 4.0)
    original.close()


class BoolStatus(Exception):
    status = True


@pytest.mark.parametrize(
    "original", [OSError("connection reset"), RuntimeError("boom"), BoolStatus("odd")]
)
async def test_any_other_legacy_error_becomes_a_chained_transport_error(
    original: Exception,
) -> None:
    with pytest.raises(TransportError) as caught:
        await LegacyTransport(SyncTransport(error=original)).post("u", {}, {}, timeout=None)
    assert caught.value.__cause__ is original


async def test_legacy_invalid_json_is_a_bad_response() -> None:
    decode_error = json.JSONDecodeError("Expecting property name", "{oops", 1)
    with pytest.raises(BadResponse):
        await LegacyTransport(SyncTransport(error=decode_error)).post("u", {}, {}, timeout=None)


@pytest.mark.parametrize("reply", [[1], "text", 3])
async def test_a_legacy_reply_that_is_not_a_dict_is_a_bad_response(reply: Any) -> None:
    with pytest.raises(BadResponse):
        await LegacyTransport(SyncTransport(reply=reply)).post("u", {}, {}, timeout=None)


async def test_a_legacy_post_returning_a_coroutine_is_a_usage_error() -> None:
    class Confused:
        def post(self, *args: Any) -> Any:
            async def reply() -> dict[str, Any]:
                return {}

            return reply()

    with pytest.raises(UsageError, match="awaitable"):
        await LegacyTransport(Confused()).post("u", {}, {}, timeout=None)


async def test_a_legacy_object_without_open_cannot_stream() -> None:
    adapter = LegacyTransport(SyncTransport())
    assert adapter.supports_stream is False
    with pytest.raises(UsageError, match="non-streaming"):
        await collect(adapter.stream("u", {}, {}, timeout=None))


async def test_a_legacy_object_with_open_streams_off_the_loop() -> None:
    threads: list[int] = []

    class Response:
        def __init__(self) -> None:
            self.chunks = [b"data: o", b"ne\r", b"\n\r\ndata: [DONE]\n\n", b""]
            self.closed = False

        def read1(self) -> bytes:
            threads.append(threading.get_ident())
            return self.chunks.pop(0)

        def close(self) -> None:
            self.closed = True

    response = Response()

    class Streaming(SyncTransport):
        def open(self, url: str, headers: Any, payload: Any, timeout: Any) -> Response:
            return response

    adapter = LegacyTransport(Streaming())
    assert adapter.supports_stream is True
    events = await collect(adapter.stream("u", {}, {"stream": True}, timeout=None))
    assert [event.data for event in events] == ["one", "[DONE]"]
    assert response.closed
    assert threading.get_ident() not in threads


async def test_a_legacy_stream_that_breaks_is_a_transport_error() -> None:
    class Response:
        def readline(self) -> bytes:
            raise ConnectionResetError("reset")

    class Streaming(SyncTransport):
        def open(self, url: str, headers: Any, payload: Any, timeout: Any) -> Response:
            return Response()

    with pytest.raises(TransportError):
        await collect(LegacyTransport(Streaming()).stream("u", {}, {}, timeout=None))


# --- as_transport -----------------------------------------------------------------------------


async def test_as_transport_of_none_is_a_fresh_aiohttp_transport() -> None:
    made = as_transport(None)
    assert isinstance(made, AiohttpTransport)
    await made.aclose()


async def test_as_transport_keeps_an_async_transport_as_is(transport: AiohttpTransport) -> None:
    assert as_transport(transport) is transport


def test_as_transport_wraps_a_sync_post_in_the_legacy_adapter() -> None:
    assert isinstance(as_transport(SyncTransport()), LegacyTransport)


async def test_as_transport_sends_through_a_host_session() -> None:
    async with aiohttp.ClientSession() as session:
        made = as_transport(session)
        assert isinstance(made, AiohttpTransport)
        await made.aclose()
        assert not session.closed


@pytest.mark.parametrize("obj", [object(), "http://x", type("P", (), {"post": 3})()])
def test_as_transport_rejects_an_object_without_post(obj: object) -> None:
    with pytest.raises(UsageError, match=r"post\(\)"):
        as_transport(obj)


def test_as_transport_names_what_an_async_transport_lacks() -> None:
    class Half:
        async def post(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return {}

    with pytest.raises(UsageError, match=r"stream\(\) and aclose\(\)"):
        as_transport(Half())


def test_the_aiohttp_transport_satisfies_the_protocol() -> None:
    checked: Transport = AiohttpTransport()
    assert callable(checked.stream)


def test_importing_the_transport_does_not_import_aiohttp() -> None:
    probe = "import sys, toolnexus.llm.transport; print('aiohttp' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False", "aiohttp must load on first use (import budget)"
