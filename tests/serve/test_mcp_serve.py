"""Serving a toolkit at ``/mcp``: listing and calling every kind of tool, from the mcp SDK client
on real uvicorn, in both protocol eras."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mcp.shared.exceptions import MCPError
from mcp_servers import demo
from serve_support import client, replying, serving
from starlette.applications import Starlette
from starlette.requests import Request as HttpRequest
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from toolnexus import Tool, ToolContext, ToolResult, create_toolkit, define_tool
from toolnexus.serve import MCPServeConfig, exposed_mcp_tools, mcp_app
from toolnexus.tools.http import http_tool


@define_tool
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return str(a + b)


@define_tool
def explode(reason: str) -> str:
    """Always raises."""
    raise RuntimeError(f"kaboom: {reason}")


def _failing(args: dict[str, Any], ctx: Any = None) -> ToolResult:
    return ToolResult("the backend said no", True, {"secret": "never on the wire"})


REFUSE = Tool(
    name="refuse.v2",
    description="Reports a tool-level error.",
    input_schema={"type": "object", "properties": {}},
    source="custom",
    execute=_failing,
)


async def _hello(request: HttpRequest) -> PlainTextResponse:
    return PlainTextResponse(f"hello {request.path_params['who']}")


pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def upstream_url():
    """A plain HTTP endpoint for the http tool."""
    async with serving(Starlette(routes=[Route("/hello/{who}", _hello)])) as url:
        yield url


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def toolkit(tmp_path_factory: pytest.TempPathFactory, upstream_url: str):
    tmp_path = tmp_path_factory.mktemp("served")
    skills = tmp_path / "skills" / "greeter"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text("---\nname: greeter\ndescription: Greets.\n---\nSay hi.\n")
    greet = http_tool(
        "greet",
        "Greet someone over HTTP.",
        "GET",
        f"{upstream_url}/hello/{{who}}",
        input_schema={"type": "object", "properties": {"who": {"type": "string"}}},
    )
    tk = await create_toolkit(
        {"mcpServers": {"demo": demo()}},
        skills_dir=str(tmp_path / "skills"),
        extra_tools=[add, explode, REFUSE, greet],
        builtins={"tools": {name: name == "read" for name in ("bash", "read", "write")}},
    )
    try:
        yield tk
    finally:
        await tk.close()


def _text(result: Any) -> str:
    return "".join(part.text for part in result.content)


async def test_every_source_is_listed_with_its_schema_and_name_verbatim(toolkit, era):
    async with serving(mcp_app(toolkit)) as url, client(url, era) as c:
        listed = {t.name: t for t in (await c.list_tools()).tools}
    expected = {t.name: t for t in toolkit.tools()}
    assert set(listed) == set(expected)
    assert {"demo_echo", "skill", "read", "add", "refuse.v2", "greet"} <= set(listed)
    for name, tool in expected.items():
        assert listed[name].input_schema == tool.input_schema
        assert listed[name].description == tool.description


async def test_every_source_is_called_through_the_toolkit(toolkit, era):
    async with serving(mcp_app(toolkit)) as url, client(url, era) as c:
        added = await c.call_tool("add", {"a": 2, "b": 3})
        echoed = await c.call_tool("demo_echo", {"text": "hi there"})
        greeted = await c.call_tool("greet", {"who": "ana"})
        skill = await c.call_tool("skill", {"name": "greeter"})
        read = await c.call_tool("read", {"path": str(Path(__file__))})
    assert (_text(added), added.is_error) == ("5.0", False)
    assert _text(echoed) == "hi there"
    assert _text(greeted) == "hello ana"
    assert "Say hi." in _text(skill)
    assert "every source is called" in _text(read)


async def test_tool_errors_raises_and_bad_arguments_are_error_results(toolkit, era):
    async with serving(mcp_app(toolkit)) as url, client(url, era) as c:
        refused = await c.call_tool("refuse.v2", {})
        exploded = await c.call_tool("explode", {"reason": "test"})
        wrong_type = await c.call_tool("add", {"a": "two", "b": 3})
        missing = await c.call_tool("add", {"a": 1})
        still_fine = await c.call_tool("add", {"a": 1, "b": 1})
    assert refused.is_error
    assert _text(refused) == "the backend said no"
    assert "never on the wire" not in refused.model_dump_json()
    assert exploded.is_error
    assert "kaboom: test" in _text(exploded)
    assert wrong_type.is_error
    assert "'two' is not of type 'number'" in _text(wrong_type)
    assert missing.is_error
    assert "'b' is a required property" in _text(missing)
    assert _text(still_fine) == "2.0"


async def test_an_unknown_or_unexposed_tool_is_invalid_params(toolkit, era):
    cfg = MCPServeConfig(tools=["add"])
    async with serving(mcp_app(toolkit, cfg)) as url, client(url, era) as c:
        for name in ("nope", "explode"):
            with pytest.raises(MCPError) as caught:
                await c.call_tool(name, {})
            assert caught.value.error.code == -32602
            assert caught.value.error.message == f"Unknown tool: {name}"
        assert _text(await c.call_tool("add", {"a": 1, "b": 2})) == "3.0"


async def test_the_allowlist_exposes_exactly_the_names_it_lists(toolkit, era):
    cfg = {"name": "calc", "version": "2.1.0", "tools": ["add", "greet", "no-such-tool"]}
    async with serving(mcp_app(toolkit, cfg)) as url, client(url, era) as c:
        names = [t.name for t in (await c.list_tools()).tools]
        info = c.server_info if era == "legacy" else None
    assert names == ["add", "greet"]
    if info is not None:
        assert (info.name, info.version) == ("calc", "2.1.0")
    assert [t.name for t in exposed_mcp_tools(toolkit, {"tools": []})] == []


async def test_the_server_names_itself_from_the_config(toolkit):
    async with serving(mcp_app(toolkit, MCPServeConfig("notes", "9.9.9"))) as url:
        async with client(url, "legacy") as c:
            legacy = c.server_info
        async with client(url, "2026-07-28") as c:
            result = await c.call_tool("add", {"a": 1, "b": 1})
    assert (legacy.name, legacy.version) == ("notes", "9.9.9")
    stamp = (result.meta or {})["io.modelcontextprotocol/serverInfo"]
    assert stamp == {"name": "notes", "version": "9.9.9"}


async def test_on_call_sees_every_call_and_its_failures_are_swallowed(toolkit, era):
    seen: list[dict[str, Any]] = []

    async def on_call(event: dict[str, Any]) -> None:
        seen.append(event)
        if event["name"] == "add":
            raise ValueError("a buggy hook")

    async with serving(mcp_app(toolkit, on_call=on_call)) as url, client(url, era) as c:
        ok = await c.call_tool("add", {"a": 1, "b": 2})
        await c.call_tool("refuse.v2", {})
        await c.call_tool("demo_echo", {"text": "x"})
    assert _text(ok) == "3.0"
    assert [(e["name"], e["source"], e["is_error"], e["pending"]) for e in seen] == [
        ("add", "native", False, False),
        ("refuse.v2", "custom", True, False),
        ("demo_echo", "mcp", False, False),
    ]
    assert all(isinstance(e["ms"], float) and e["ms"] >= 0 for e in seen)
    assert json.dumps(seen)  # plain data


async def test_a_sync_on_call_works_too(toolkit):
    seen: list[str] = []
    app = mcp_app(toolkit, on_call=lambda e: seen.append(e["name"]))
    async with serving(app) as url, client(url, "legacy") as c:
        await c.call_tool("add", {"a": 1, "b": 2})
    assert seen == ["add"]


async def test_a_plain_tool_list_can_be_served(era):
    async with serving(mcp_app([add], {"name": "bare"})) as url, client(url, era) as c:
        assert [t.name for t in (await c.list_tools()).tools] == ["add"]
        assert _text(await c.call_tool("add", {"a": 4, "b": 4})) == "8.0"


async def test_stateless_mode_serves_calls_without_sessions(toolkit):
    cfg = MCPServeConfig(stateless=True)
    async with serving(mcp_app(toolkit, cfg)) as url, client(url, "legacy") as c:
        assert _text(await c.call_tool("add", {"a": 1, "b": 2})) == "3.0"
        assert _text(await c.call_tool("demo_echo", {"text": "y"})) == "y"


async def test_an_upstream_servers_question_is_passed_on_to_our_client(toolkit, era):
    """The served demo_ask_form is an MCP tool whose own server elicits: the toolkit's MCP tool
    suspends (no wait_for), so we ask *our* client, and the answer travels back upstream."""
    seen: list[Any] = []
    reply = replying("accept", {"name": "Ann"}, seen)
    async with serving(mcp_app(toolkit)) as url, client(url, era, reply) as c:
        result = await c.call_tool("demo_ask_form", {})
    assert _text(result) == 'accept:{"name": "Ann"}'
    assert seen[0].message == "Who are you?"
    assert seen[0].requested_schema["required"] == ["name"]


async def test_it_mounts_in_a_host_app_whose_lifespan_enters_it(toolkit, era):
    from starlette.routing import Mount

    mcp = mcp_app(toolkit, {"tools": ["add"]})

    async def health(request: HttpRequest) -> PlainTextResponse:
        return PlainTextResponse("ok")

    host = Starlette(
        routes=[Route("/health", health), Mount("/", app=mcp)],
        lifespan=lambda _app: mcp.lifespan(),
    )
    async with serving(host) as url, client(url, era) as c:
        assert _text(await c.call_tool("add", {"a": 1, "b": 2})) == "3.0"


async def test_a_cancelled_call_sets_the_tools_signal(era):
    signals: list[asyncio.Event] = []
    started = asyncio.Event()

    @define_tool
    async def wait_forever(ctx: ToolContext) -> str:
        """Never finishes on its own."""
        assert ctx.signal is not None
        signals.append(ctx.signal)
        started.set()
        await asyncio.Event().wait()
        return "unreachable"

    async with serving(mcp_app([wait_forever])) as url, client(url, era) as c:
        call = asyncio.ensure_future(c.call_tool("wait_forever", {}))
        await asyncio.wait_for(started.wait(), 10)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await asyncio.wait_for(signals[0].wait(), 10)
