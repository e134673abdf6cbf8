"""HTTP tools against a real aiohttp server on loopback (CONTRACT §7)."""

import asyncio
import json
import logging
import socket
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from toolnexus._types import Tool, ToolContext, ToolResult
from toolnexus.errors import UsageError
from toolnexus.tools.http import http_tool

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


class Server:
    """A loopback server that records what it received."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.peers: list[Any] = []
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()
        self.runner: web.AppRunner | None = None
        self.base = ""

    async def echo(self, request: web.Request) -> web.Response:
        seen = {
            "method": request.method,
            "path": request.rel_url.raw_path,
            "query": [[k, v] for k, v in request.query.items()],
            "headers": dict(request.headers),
            "body": await request.text(),
        }
        self.requests.append(seen)
        self.peers.append(
            request.transport.get_extra_info("peername") if request.transport else None
        )
        return web.json_response(seen)

    async def status(self, request: web.Request) -> web.Response:
        self.requests.append({"path": request.rel_url.raw_path})
        auth = request.headers.get("Authorization", "")
        return web.Response(status=int(request.match_info["code"]), text=f"nope {auth}".strip())

    async def text(self, request: web.Request) -> web.Response:
        return web.Response(body=request.query.get("body", "").encode(), content_type="text/plain")

    async def slow(self, request: web.Request) -> web.Response:
        self.arrived.set()
        await self.release.wait()
        return web.Response(text="late")

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/echo", self.echo)
        app.router.add_route("*", "/echo/{rest:.*}", self.echo)
        app.router.add_get("/status/{code}", self.status)
        app.router.add_get("/text", self.text)
        app.router.add_get("/slow", self.slow)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = self.runner.addresses[0][1]
        self.base = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        self.release.set()
        if self.runner is not None:
            await self.runner.cleanup()


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    srv = Server()
    await srv.start()
    yield srv
    await srv.stop()


async def call(t: Tool, args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
    result = await t.execute(args, ctx)
    assert isinstance(result, ToolResult)
    return result


def echoed(result: ToolResult) -> dict[str, Any]:
    assert not result.is_error, result.output
    return json.loads(result.output)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- construction --------------------------------------------------------------------------


def test_http_tool_is_a_tool_with_http_source() -> None:
    t = http_tool("get user", "Fetch.", "get", "https://x.test/u/{id}", input_schema=SCHEMA)

    assert (t.name, t.description, t.source) == ("get_user", "Fetch.", "http")
    assert t.input_schema is SCHEMA


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"body": "xml"}, "body must be one of"),
        ({"result_mode": "html"}, "result_mode must be one of"),
        ({"method": "GE T"}, "invalid HTTP method"),
        ({"timeout": 0}, "timeout must be a positive"),
        ({"query": "q"}, "query must be a list"),
    ],
)
def test_bad_configuration_is_a_usage_error(options: dict[str, Any], message: str) -> None:
    kwargs: dict[str, Any] = {"method": "GET", **options}
    method = kwargs.pop("method")

    with pytest.raises(UsageError, match=message):
        http_tool("t", "", method, "https://x.test/", input_schema=SCHEMA, **kwargs)


# --- URL placeholders and the querystring --------------------------------------------------


async def test_placeholders_are_filled_and_removed_from_the_body(server: Server) -> None:
    t = http_tool("t", "", "POST", server.base + "/echo/{kind}/{id}", input_schema=SCHEMA)

    seen = echoed(await call(t, {"kind": "users", "id": 42, "note": "hi"}))

    assert seen["path"] == "/echo/users/42"
    assert json.loads(seen["body"]) == {"note": "hi"}


async def test_placeholder_values_are_encoded_as_one_path_segment(server: Server) -> None:
    t = http_tool("t", "", "GET", server.base + "/echo/{id}", input_schema=SCHEMA)

    seen = echoed(await call(t, {"id": "../admin x?y#z"}))

    assert seen["path"] == "/echo/..%2Fadmin%20x%3Fy%23z"


async def test_missing_placeholder_is_an_error_naming_it(server: Server) -> None:
    t = http_tool("t", "", "GET", server.base + "/echo/{id}", input_schema=SCHEMA)

    result = await call(t, {"other": 1})

    assert result.is_error
    assert result.output == "HTTP tool t: missing argument 'id' for URL placeholder {id}"
    assert server.requests == []


async def test_query_arguments_go_to_the_querystring_not_the_body(server: Server) -> None:
    t = http_tool(
        "t", "", "POST", server.base + "/echo", query=["q", "tag", "gone"], input_schema=SCHEMA
    )

    seen = echoed(await call(t, {"q": "a b&c", "tag": ["x", "y"], "gone": None, "n": 1}))

    assert seen["query"] == [["q", "a b&c"], ["tag", "x"], ["tag", "y"]]
    assert json.loads(seen["body"]) == {"n": 1}


async def test_query_merges_with_a_query_already_in_the_url(server: Server) -> None:
    t = http_tool("t", "", "GET", server.base + "/echo?v=2", query=["q"], input_schema=SCHEMA)

    seen = echoed(await call(t, {"q": True}))

    assert seen["query"] == [["v", "2"], ["q", "true"]]


async def test_get_sends_remaining_arguments_as_query_and_no_body(server: Server) -> None:
    t = http_tool("t", "", "GET", server.base + "/echo", input_schema=SCHEMA)

    seen = echoed(await call(t, {"city": "Oslo", "days": 3}))

    assert seen["query"] == [["city", "Oslo"], ["days", "3"]]
    assert seen["body"] == ""


# --- bodies --------------------------------------------------------------------------------


async def test_json_body_is_the_remaining_arguments(server: Server) -> None:
    t = http_tool("t", "", "POST", server.base + "/echo", input_schema=SCHEMA)

    seen = echoed(await call(t, {"name": "Zoë", "tags": ["a"], "n": None}))

    assert seen["headers"]["Content-Type"] == "application/json"
    assert json.loads(seen["body"]) == {"name": "Zoë", "tags": ["a"], "n": None}


async def test_form_body_is_urlencoded(server: Server) -> None:
    t = http_tool("t", "", "PUT", server.base + "/echo", body="form", input_schema=SCHEMA)

    seen = echoed(await call(t, {"a": "1 2", "b": ["x", "y"], "ok": False}))

    assert seen["headers"]["Content-Type"] == "application/x-www-form-urlencoded"
    assert seen["body"] == "a=1+2&b=x&b=y&ok=false"


async def test_raw_body_sends_the_body_argument_verbatim(server: Server) -> None:
    t = http_tool("t", "", "POST", server.base + "/echo", body="raw", input_schema=SCHEMA)

    seen = echoed(await call(t, {"body": "line 1\nline 2", "lang": "en"}))

    assert seen["body"] == "line 1\nline 2"
    assert seen["headers"]["Content-Type"] == "text/plain; charset=utf-8"
    assert seen["query"] == [["lang", "en"]]


async def test_raw_body_falls_back_to_content_then_to_a_lone_argument(server: Server) -> None:
    t = http_tool("t", "", "POST", server.base + "/echo", body="raw", input_schema=SCHEMA)

    assert echoed(await call(t, {"content": "c"}))["body"] == "c"
    assert echoed(await call(t, {"text": "lone"}))["body"] == "lone"


async def test_a_configured_content_type_wins(server: Server) -> None:
    t = http_tool(
        "t",
        "",
        "POST",
        server.base + "/echo",
        body="raw",
        headers={"content-type": "application/xml"},
        input_schema=SCHEMA,
    )

    seen = echoed(await call(t, {"body": "<a/>"}))

    assert seen["headers"]["Content-Type"] == "application/xml"


# --- headers and secrets -------------------------------------------------------------------


async def test_headers_expand_env_at_call_time(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = http_tool(
        "t",
        "",
        "GET",
        server.base + "/echo",
        headers={"Authorization": "Bearer ${TNX_TEST_TOKEN}", "X-Missing": "[${TNX_UNSET}]"},
        input_schema=SCHEMA,
    )
    monkeypatch.setenv("TNX_TEST_TOKEN", "first-token")
    monkeypatch.delenv("TNX_UNSET", raising=False)
    first = echoed(await call(t, {}))["headers"]
    monkeypatch.setenv("TNX_TEST_TOKEN", "second-token")
    second = echoed(await call(t, {}))["headers"]

    assert first["Authorization"] == "Bearer first-token"
    assert first["X-Missing"] == "[]"
    assert second["Authorization"] == "Bearer second-token"


async def test_secrets_are_blanked_out_of_error_bodies(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TNX_TEST_TOKEN", "very-secret-value")
    t = http_tool(
        "t",
        "",
        "GET",
        server.base + "/status/401",
        headers={"Authorization": "${TNX_TEST_TOKEN}"},
        input_schema=SCHEMA,
    )

    result = await call(t, {})

    assert result.is_error
    assert result.output == "HTTP 401: nope ***"


async def test_secrets_never_reach_logs_or_connection_errors(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TNX_TEST_TOKEN", "very-secret-value")
    caplog.set_level(logging.DEBUG)
    t = http_tool(
        "t",
        "",
        "GET",
        f"http://127.0.0.1:{free_port()}/x",
        headers={"Authorization": "Bearer ${TNX_TEST_TOKEN}"},
        input_schema=SCHEMA,
    )

    result = await call(t, {})

    assert result.is_error
    assert "very-secret-value" not in result.output
    assert "very-secret-value" not in caplog.text


async def test_a_header_injection_from_the_environment_fails_without_leaking(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TNX_TEST_TOKEN", "abcd\r\nX-Evil: 1")
    t = http_tool(
        "t",
        "",
        "GET",
        server.base + "/echo",
        headers={"Authorization": "${TNX_TEST_TOKEN}"},
        input_schema=SCHEMA,
    )

    result = await call(t, {})

    assert result.is_error
    assert result.output.startswith("HTTP tool t request failed:")
    assert "abcd" not in result.output
    assert server.requests == []


# --- responses -----------------------------------------------------------------------------


async def test_success_gives_the_body_and_the_status(server: Server) -> None:
    t = http_tool("t", "", "GET", server.base + "/text", query=["body"], input_schema=SCHEMA)

    result = await call(t, {"body": "hello"})

    assert result == ToolResult("hello", False, {"status": 200})


async def test_non_2xx_is_an_error_with_status_and_body(server: Server) -> None:
    t = http_tool("t", "", "GET", server.base + "/status/404", input_schema=SCHEMA)

    result = await call(t, {})

    assert result == ToolResult("HTTP 404: nope", True, {"status": 404})


async def test_json_mode_reserialises_compactly(server: Server) -> None:
    t = http_tool(
        "t",
        "",
        "GET",
        server.base + "/text",
        query=["body"],
        result_mode="json",
        input_schema=SCHEMA,
    )

    result = await call(t, {"body": '{ "a": 1,\n "b": [1, 2], "c": "é" }'})

    assert result == ToolResult('{"a":1,"b":[1,2],"c":"é"}', False, {"status": 200})


async def test_json_mode_with_invalid_json_is_an_error(server: Server) -> None:
    t = http_tool(
        "t",
        "",
        "GET",
        server.base + "/text",
        query=["body"],
        result_mode="json",
        input_schema=SCHEMA,
    )

    result = await call(t, {"body": "<html>"})

    assert result.is_error
    assert result.output.startswith("HTTP tool t: the response is not valid JSON")
    assert result.metadata == {"status": 200}


async def test_json_mode_with_an_empty_body_is_empty_output(server: Server) -> None:
    t = http_tool(
        "t",
        "",
        "GET",
        server.base + "/text",
        query=["body"],
        result_mode="json",
        input_schema=SCHEMA,
    )

    assert await call(t, {"body": ""}) == ToolResult("", False, {"status": 200})


async def test_status_and_text_mode_puts_the_status_on_the_first_line(server: Server) -> None:
    t = http_tool(
        "t",
        "",
        "GET",
        server.base + "/text",
        query=["body"],
        result_mode="status+text",
        input_schema=SCHEMA,
    )

    assert (await call(t, {"body": "ok"})).output == "200\nok"


async def test_status_and_text_mode_still_reports_errors(server: Server) -> None:
    t = http_tool(
        "t", "", "GET", server.base + "/status/500", result_mode="status+text", input_schema=SCHEMA
    )

    assert (await call(t, {})).output == "HTTP 500: nope"


# --- failures ------------------------------------------------------------------------------


async def test_timeout_is_an_error_naming_the_tool_and_the_limit(server: Server) -> None:
    t = http_tool("slow", "", "GET", server.base + "/slow", timeout_ms=50, input_schema=SCHEMA)

    result = await call(t, {})

    assert result == ToolResult("HTTP tool slow timed out after 50ms", True)


async def test_connection_refused_is_an_error_with_the_reason() -> None:
    port = free_port()
    t = http_tool("t", "", "GET", f"http://127.0.0.1:{port}/x", input_schema=SCHEMA)

    result = await call(t, {})

    assert result.is_error
    assert result.output.startswith(
        f"HTTP tool t request failed: cannot connect to 127.0.0.1:{port}"
    )
    assert "ConnectionRefusedError" in result.output


async def test_a_set_signal_aborts_the_request_in_flight(server: Server) -> None:
    signal = asyncio.Event()
    t = http_tool("slow", "", "GET", server.base + "/slow", input_schema=SCHEMA)
    task = asyncio.create_task(call(t, {}, ToolContext(signal=signal)))
    await asyncio.wait_for(server.arrived.wait(), 5)

    signal.set()
    result = await asyncio.wait_for(task, 5)

    assert result == ToolResult("HTTP tool slow cancelled", True)


async def test_an_already_set_signal_sends_nothing(server: Server) -> None:
    signal = asyncio.Event()
    signal.set()
    t = http_tool("t", "", "GET", server.base + "/echo", input_schema=SCHEMA)

    result = await call(t, {}, ToolContext(signal=signal))

    assert result.is_error
    assert server.requests == []


async def test_cancelling_the_caller_still_raises(server: Server) -> None:
    t = http_tool("slow", "", "GET", server.base + "/slow", input_schema=SCHEMA)
    task = asyncio.create_task(call(t, {}, ToolContext(signal=asyncio.Event())))
    await asyncio.wait_for(server.arrived.wait(), 5)

    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task


# --- sessions ------------------------------------------------------------------------------


async def test_calls_on_one_loop_reuse_a_pooled_connection(server: Server) -> None:
    t = http_tool("t", "", "GET", server.base + "/echo", input_schema=SCHEMA)
    other = http_tool("u", "", "GET", server.base + "/echo", input_schema=SCHEMA)

    await call(t, {})
    await call(other, {})

    assert len(server.peers) == 2
    assert server.peers[0] == server.peers[1]


async def test_an_injected_session_is_used_and_left_open(server: Server) -> None:
    async with aiohttp.ClientSession(headers={"X-From": "injected"}) as session:
        t = http_tool("t", "", "GET", server.base + "/echo", input_schema=SCHEMA, session=session)

        seen = echoed(await call(t, {}))

        assert seen["headers"]["X-From"] == "injected"
        assert not session.closed


async def test_the_pooled_session_closes_when_its_loop_shuts_down() -> None:
    closed = asyncio.Event()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        if await reader.read(1) == b"":  # the client hung up: its session was closed
            closed.set()
        writer.close()

    listener = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    t = http_tool("t", "", "GET", f"http://127.0.0.1:{port}/", input_schema=SCHEMA)
    try:
        # A client on its own loop, run by asyncio.run: the loop shuts down when it returns.
        result = await asyncio.to_thread(asyncio.run, call(t, {}))
        await asyncio.wait_for(closed.wait(), 5)
    finally:
        listener.close()
        await listener.wait_closed()

    assert result.output == "ok"
