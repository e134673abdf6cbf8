"""Bodies nested too deep for the parser or what comes after it: a parse error (-32700), never
an internal error (-32603) and never a traceback in the log."""

from __future__ import annotations

import logging

import httpx
import pytest
from a2a_support import Serve, rpc

from toolnexus.serve.wire import MAX_DEPTH, PARSE_ERROR, RpcError, parse_body
from toolnexus.testing import ScriptedModel

JSON = {"content-type": "application/json"}


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def tracebacks(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def test_a_body_of_100000_brackets_is_a_parse_error_without_a_traceback(
    serve_refunds: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    served = await serve_refunds(mcp={"name": "refunds"})
    body = b"[" * 100_000
    async with httpx.AsyncClient() as http:
        a2a = await http.post(served.url + "/", content=body, headers=JSON)
        mcp = await http.post(
            served.url + "/mcp",
            content=body,
            headers={**JSON, "accept": "application/json, text/event-stream"},
        )
    assert a2a.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": PARSE_ERROR, "message": "Parse error"},
    }
    assert mcp.json()["error"]["code"] == PARSE_ERROR  # the MCP SDK's own parser
    assert tracebacks(caplog) == []


@pytest.mark.parametrize(
    ("method", "role", "headers"),
    [
        ("message/send", {"role": "user", "kind": "message"}, {}),
        ("SendMessage", {"role": "user"}, {}),
        ("SendMessage", {"role": "ROLE_USER"}, {"a2a-version": "1.0"}),
    ],
)
async def test_a_message_nested_past_the_limit_is_a_parse_error_on_every_wire(
    serve_refunds: Serve,
    model: ScriptedModel,
    caplog: pytest.LogCaptureFixture,
    method: str,
    role: dict[str, str],
    headers: dict[str, str],
) -> None:
    served = await serve_refunds()
    message = (
        '{"message": {"messageId": "m-1", "parts": [{"kind": "text", "text": "hi"}], '
        f'"metadata": {{"deep": {nested(500)}}}, "role": "{role["role"]}"}}}}'
    )
    body = f'{{"jsonrpc": "2.0", "id": 3, "method": "{method}", "params": {message}}}'
    async with httpx.AsyncClient() as http:
        r = await http.post(served.url + "/", content=body.encode(), headers={**JSON, **headers})
        listed = await rpc(http, served.url, "tasks/list", {})
    assert r.json()["error"] == {
        "code": PARSE_ERROR,
        "message": f"Parse error: nested deeper than {MAX_DEPTH}",
    }
    assert listed["result"]["tasks"] == []
    assert model.requests == []
    assert tracebacks(caplog) == []


def test_the_limit_is_the_depth_of_arrays_and_objects_together() -> None:
    assert isinstance(parse_body(nested(MAX_DEPTH).encode()), list)
    at_limit = '{"a": ' * (MAX_DEPTH // 2) + nested(MAX_DEPTH // 2) + "}" * (MAX_DEPTH // 2)
    assert isinstance(parse_body(at_limit.encode()), dict)
    past = '{"a": ' * (MAX_DEPTH // 2) + nested(MAX_DEPTH // 2 + 1) + "}" * (MAX_DEPTH // 2)
    with pytest.raises(RpcError) as refused:
        parse_body(past.encode())
    assert refused.value.code == PARSE_ERROR
    assert parse_body(b'"flat"') == "flat"
