"""COMPAT §12 (last row): ``http_tool(timeout=)`` in seconds, ``input_schema`` optional, every
argument by keyword — against a real loopback HTTP server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

import toolnexus as tn
from toolnexus.http import DEFAULT_TIMEOUT, http_tool


class Slow:
    """Answers ``/slow`` only when released, ``/echo`` at once."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.arrived = asyncio.Event()
        self.base = ""

    async def slow(self, request: web.Request) -> web.Response:
        del request
        self.arrived.set()
        await self.release.wait()
        return web.Response(text="finally")

    async def echo(self, request: web.Request) -> web.Response:
        return web.Response(text=f"q={request.query.get('q', '')}")


@pytest.fixture
async def server() -> AsyncIterator[Slow]:
    slow = Slow()
    app = web.Application()
    app.router.add_get("/slow", slow.slow)
    app.router.add_get("/echo", slow.echo)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    slow.base = f"http://127.0.0.1:{port}"
    try:
        yield slow
    finally:
        slow.release.set()
        await runner.cleanup()


def test_the_default_timeout_is_thirty_seconds() -> None:
    assert DEFAULT_TIMEOUT == 30.0


async def test_every_argument_by_keyword_and_no_input_schema(server: Slow) -> None:
    echo = http_tool(
        name="echo", description="Echo q.", method="GET", url=server.base + "/echo", query=["q"]
    )
    assert echo.input_schema == {"type": "object", "properties": {}}
    assert await echo.execute({"q": "hi"}, None) == tn.ToolResult("q=hi", False, {"status": 200})


async def test_timeout_is_in_seconds(server: Slow) -> None:
    tool = http_tool("slow", "", "GET", server.base + "/slow", timeout=0.2)
    result = await tool.execute({}, None)
    assert result == tn.ToolResult("HTTP tool slow timed out after 200ms", True)


async def test_a_timeout_of_a_thousand_or_more_is_still_seconds_with_a_warning(
    server: Slow, capsys: pytest.CaptureFixture[str]
) -> None:
    tool = http_tool("slow_big", "", "GET", server.base + "/slow", timeout=1000)
    err = capsys.readouterr().err
    assert "[toolnexus] http_tool 'slow_big': timeout=1000 is in seconds" in err
    call = asyncio.ensure_future(tool.execute({}, None))
    await asyncio.wait_for(server.arrived.wait(), 10)
    # Past one second (what 1000 would mean in milliseconds) the call is still waiting.
    await asyncio.sleep(1.3)
    assert not call.done()
    server.release.set()
    assert (await asyncio.wait_for(call, 10)).output == "finally"


async def test_timeout_ms_wins_over_timeout(server: Slow) -> None:
    tool = http_tool("slow_ms", "", "GET", server.base + "/slow", timeout=30, timeout_ms=150)
    assert (await tool.execute({}, None)).output == "HTTP tool slow_ms timed out after 150ms"


@pytest.mark.parametrize("bad", [0, -1, "10", True, float("nan")])
def test_a_bad_timeout_is_refused(bad: object) -> None:
    with pytest.raises(tn.UsageError, match="must be a positive number"):
        http_tool("t", "", "GET", "http://127.0.0.1:9/", timeout=bad)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
