"""Hostile and broken input at ``/mcp``, on raw HTTP (aiohttp) and through the mcp SDK client:
malformed JSON-RPC, unknown methods, wrong param types, oversized bodies, missing or wrong bearer
tokens, other paths. None of it reaches a tool, and the server keeps serving."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from serve_support import client, serving

from toolnexus import UsageError, define_tool
from toolnexus.serve import mcp_app

TOKEN = "s3cr3t-bearer-t0ken"
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
calls: list[str] = []


@define_tool
def add(a: float, b: float) -> str:
    """Add two numbers."""
    calls.append("add")
    return str(a + b)


def _headers(method: str | None = None, name: str | None = None, **extra: str) -> dict[str, str]:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if method is not None:
        headers |= {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
        if name is not None:
            headers["Mcp-Name"] = name
    return headers | extra


def _call(name: str, arguments: Any, id: Any = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": META},
    }


async def _post(
    session: aiohttp.ClientSession, url: str, body: Any, headers: dict[str, str]
) -> tuple[int, dict[str, str], str]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with session.post(f"{url}/mcp", data=data, headers=headers) as response:
        return response.status, dict(response.headers), await response.text()


def _rpc(text: str) -> dict[str, Any]:
    for line in text.splitlines():  # an SSE frame or a plain JSON body
        if line.startswith("data: "):
            return json.loads(line[6:])
    return json.loads(text)


@pytest.fixture
async def url():
    calls.clear()
    async with serving(mcp_app([add], max_body_bytes=4096)) as base:
        yield base


async def test_malformed_json_is_a_parse_error_in_both_eras(url):
    async with aiohttp.ClientSession() as s:
        for headers in (_headers(), _headers("tools/call", "add")):
            status, _, text = await _post(s, url, b'{"jsonrpc": "2.0", "id": 1, "meth', headers)
            assert status == 400
            error = _rpc(text)
            assert error["id"] is None
            assert error["error"]["code"] == -32700
        status, _, text = await _post(
            s, url, _call("add", {"a": 1, "b": 2}), _headers("tools/call", "add")
        )
    assert status == 200
    assert _rpc(text)["result"]["content"][0]["text"] == "3.0"


async def test_not_json_rpc_shapes_are_invalid_requests(url):
    async with aiohttp.ClientSession() as s:
        for body in ([_call("add", {"a": 1, "b": 2})], {"jsonrpc": "2.0", "id": {"x": 1}}, 7):
            status, _, text = await _post(s, url, body, _headers("tools/call", "add"))
            assert status == 400, body
            assert _rpc(text)["error"]["code"] == -32600
    assert calls == []


async def test_an_unknown_method_is_method_not_found(url):
    body = {"jsonrpc": "2.0", "id": 5, "method": "tools/explode", "params": {"_meta": META}}
    async with aiohttp.ClientSession() as s:
        status, _, text = await _post(s, url, body, _headers("tools/explode"))
    assert status == 404
    assert _rpc(text)["error"]["code"] == -32601


async def test_an_unknown_method_on_a_session_is_method_not_found(url):
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    async with aiohttp.ClientSession() as s:
        status, headers, text = await _post(s, url, init, _headers())
        assert status == 200
        assert _rpc(text)["result"]["serverInfo"]["name"] == "toolnexus"
        session = _headers(**{"Mcp-Session-Id": headers["mcp-session-id"]})
        session["MCP-Protocol-Version"] = "2025-11-25"
        ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await _post(s, url, ready, session))[0] == 202
        unknown = {"jsonrpc": "2.0", "id": 2, "method": "tools/explode", "params": {}}
        status, _, text = await _post(s, url, unknown, session)
        assert _rpc(text)["error"]["code"] == -32601
        listed = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}
        status, _, text = await _post(s, url, listed, session)
        assert [t["name"] for t in _rpc(text)["result"]["tools"]] == ["add"]


async def test_wrong_param_types_are_invalid_params_and_run_nothing(url):
    async with aiohttp.ClientSession() as s:
        for bad in ([1, 2], "a=1", 3):
            status, _, text = await _post(s, url, _call("add", bad), _headers("tools/call", "add"))
            assert _rpc(text)["error"]["code"] == -32602, (bad, status, text)
        bad_name = _call("add", {"a": 1})
        bad_name["params"]["name"] = 12
        status, _, text = await _post(s, url, bad_name, _headers("tools/call", "12"))
        assert _rpc(text)["error"]["code"] in (-32602, -32020)
        status, _, text = await _post(s, url, _call("nope", {}), _headers("tools/call", "nope"))
        assert _rpc(text)["error"] == {"code": -32602, "message": "Unknown tool: nope"}
    assert calls == []


async def test_an_oversized_body_is_refused_before_parsing(url):
    padded = _call("add", {"a": 1, "b": 2})
    padded["params"]["arguments"]["pad"] = "x" * 5000
    async with aiohttp.ClientSession() as s:
        for headers in (_headers(), _headers("tools/call", "add")):
            status, _, text = await _post(s, url, padded, headers)
            assert status == 413
            assert _rpc(text)["error"]["message"] == "Request body too large (limit 4096 bytes)"
        status, _, _ = await _post(
            s, url, _call("add", {"a": 1, "b": 2}), _headers("tools/call", "add")
        )
    assert status == 200
    assert calls == ["add"]


async def test_a_streamed_oversized_body_without_length_is_refused(url):
    async def chunks():
        yield b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"pad": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}}'

    async with aiohttp.ClientSession() as s:
        async with s.post(f"{url}/mcp", data=chunks(), headers=_headers()) as response:
            assert response.status == 413


async def test_other_paths_are_not_found(url):
    async with aiohttp.ClientSession() as s:
        for method, path in (("GET", "/"), ("POST", "/"), ("POST", "/mcp/x"), ("GET", "/tasks")):
            async with s.request(method, f"{url}{path}") as response:
                assert response.status == 404, path
                assert await response.text() == "not found"


async def test_a_bearer_token_is_required_when_configured():
    calls.clear()
    async with serving(mcp_app([add], auth=TOKEN)) as url, aiohttp.ClientSession() as s:
        body = _call("add", {"a": 1, "b": 2})
        wrong = (None, "Bearer wrong", f"Bearer {TOKEN}x", TOKEN, f"Basic {TOKEN}", "Bearer ")
        for auth in wrong:
            extra = {"Authorization": auth} if auth is not None else {}
            sent = _headers("tools/call", "add", **extra)
            status, headers, text = await _post(s, url, body, sent)
            assert status == 401, auth
            assert _rpc(text)["error"]["message"] == (
                "Unauthorized: a valid bearer token is required"
            )
            assert headers["WWW-Authenticate"].startswith('Bearer realm="toolnexus"')
            assert TOKEN not in text
            assert TOKEN not in headers["WWW-Authenticate"]
        for scheme in ("Bearer", "bearer"):
            good = _headers("tools/call", "add", Authorization=f"{scheme} {TOKEN}")
            status, _, text = await _post(s, url, body, good)
            assert status == 200
            assert _rpc(text)["result"]["content"][0]["text"] == "3.0"
        async with s.get(f"{url}/nowhere") as response:
            assert response.status == 401  # the token guards every path, not only /mcp
    assert calls == ["add", "add"]


@pytest.mark.parametrize("era", ["legacy", MODERN])
async def test_the_sdk_client_with_the_token_is_served_and_without_it_is_not(era):
    async with serving(mcp_app([add], auth=TOKEN)) as url:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
        async with (
            http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=era) as c,
        ):
            result = await c.call_tool("add", {"a": 2, "b": 2})
            assert result.content[0].text == "4.0"  # pyright: ignore[reportAttributeAccessIssue]
        with pytest.raises(Exception):  # noqa: B017, PT011 - the SDK raises its own transport error
            async with client(url, era) as c:
                await c.call_tool("add", {"a": 2, "b": 2})


def test_bad_security_options_are_usage_errors():
    with pytest.raises(UsageError):
        mcp_app([add], auth="")
    with pytest.raises(UsageError):
        mcp_app([add], max_body_bytes=0)
