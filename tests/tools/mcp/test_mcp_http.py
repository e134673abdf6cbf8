"""Remote servers: streamable HTTP, the SSE fallback, ``${ENV}`` headers, secrets kept secret."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from mcp_servers import SECRET, refused_url, script

from toolnexus.tools.mcp import McpSource, load_mcp

TOKEN_ENV = "TN_TEST_MCP_TOKEN"
HEADERS = {"X-Token": "${" + TOKEN_ENV + "}"}


@pytest.fixture(autouse=True)
def token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKEN_ENV, SECRET)


async def call(source: McpSource, name: str, args: dict[str, Any] | None = None) -> str:
    tool = next(t for t in source.tools if t.name == name)
    return (await tool.execute(args or {}, None)).output


async def test_a_streamable_http_server_connects_and_runs_tools(http_url: str) -> None:
    async with await load_mcp({"web": {"url": http_url}}) as source:
        assert source.status() == {"web": "connected"}
        assert await call(source, "web_echo", {"text": "over http"}) == "over http"


async def test_header_env_references_are_expanded_at_connect_time(http_url: str) -> None:
    async with await load_mcp({"web": {"url": http_url, "headers": HEADERS}}) as source:
        assert await call(source, "web_whoami") == "header ok"


async def test_an_unset_header_variable_expands_to_nothing(
    http_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_ENV)
    async with await load_mcp({"web": {"url": http_url, "headers": HEADERS}}) as source:
        assert await call(source, "web_whoami") == "header missing"


async def test_a_server_without_streamable_http_is_reached_over_sse(sse_url: str) -> None:
    async with await load_mcp({"old": {"url": sse_url}}) as source:
        assert source.status() == {"old": "connected"}
        assert await call(source, "old_echo", {"text": "via sse"}) == "via sse"


async def test_type_sse_connects_over_sse_directly(sse_url: str) -> None:
    async with await load_mcp({"old": {"type": "sse", "url": sse_url}}) as source:
        assert await call(source, "old_echo", {"text": "direct"}) == "direct"


async def test_header_secrets_never_reach_logs_or_errors(
    http_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    config = {
        "web": {"url": http_url, "headers": HEADERS},
        "down": {"url": refused_url(), "headers": HEADERS},
    }
    with caplog.at_level(logging.DEBUG):
        async with await load_mcp(config) as source:
            outputs = [await call(source, "web_whoami"), await call(source, "web_leak")]
            errors = source.errors()
    assert outputs[0] == "header ok"
    assert "rejected token ***" in outputs[1]
    assert "down" in errors
    assert SECRET not in repr(errors)
    assert SECRET not in "".join(outputs)
    assert SECRET not in caplog.text


async def test_environment_secrets_are_redacted_from_failure_reasons(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = {"leaky": script("leaky", env={"LEAK": "${" + TOKEN_ENV + "}"})}
    with caplog.at_level(logging.DEBUG):
        async with await load_mcp(config) as source:
            error = source.errors()["leaky"]
    assert error.startswith("server process exited with code 2: cannot log in with ***")
    assert SECRET not in caplog.text
