"""The ``webfetch`` built-in against a real aiohttp server on loopback (CONTRACT §4A, DESIGN §7)."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from aiohttp.typedefs import Handler
from builtin_support import Builtin

from toolnexus._types import ToolContext
from toolnexus.tools.builtins import parse_builtin_options
from toolnexus.tools.builtins.webfetch import webfetch_tool

PAGE = """<!doctype html><html><head><title>T</title><style>p{}</style></head>
<body><h1>Title</h1><p>Some <b>bold</b> text and a <a href="/next">link</a>.</p>
<script>alert(1)</script><ul><li>one</li><li>two</li></ul></body></html>"""


class Server:
    """A loopback server with the pages the tests fetch; it records each request path."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()
        self.runner: web.AppRunner | None = None
        self.port = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        app = web.Application(middlewares=[self.record])
        app.router.add_get("/html", self.html)
        app.router.add_get("/plain", self.plain)
        app.router.add_get("/status/{code}", self.status)
        app.router.add_get("/redirect", self.redirect)
        app.router.add_get("/loop", self.loop)
        app.router.add_get("/slow", self.slow)
        app.router.add_get("/big", self.big)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = self.runner.addresses[0][1]

    async def stop(self) -> None:
        self.release.set()
        if self.runner is not None:
            await self.runner.cleanup()

    @web.middleware
    async def record(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self.paths.append(request.path_qs)
        return await handler(request)

    async def html(self, request: web.Request) -> web.Response:
        return web.Response(text=PAGE, content_type="text/html")

    async def plain(self, request: web.Request) -> web.Response:
        return web.Response(text="<b>not html</b>", content_type="text/plain")

    async def status(self, request: web.Request) -> web.Response:
        return web.Response(status=int(request.match_info["code"]), text="body")

    async def redirect(self, request: web.Request) -> web.Response:
        raise web.HTTPFound(request.query["to"])

    async def loop(self, request: web.Request) -> web.Response:
        raise web.HTTPFound("/loop")

    async def slow(self, request: web.Request) -> web.Response:
        self.arrived.set()
        await self.release.wait()
        return web.Response(text="late")

    async def big(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        chunk = b"x" * 65536
        for _ in range(100):  # 6.25 MiB, no Content-Length
            await response.write(chunk)
        await response.write_eof()
        return response


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    srv = Server()
    await srv.start()
    yield srv
    await srv.stop()


# --- formats -------------------------------------------------------------------------------


async def test_html_becomes_markdown_by_default(builtin: Builtin, server: Server) -> None:
    result = await builtin("webfetch").execute({"url": server.base + "/html"})

    assert not result.is_error
    assert result.output == ("# Title\n\nSome **bold** text and a [link](/next).\n\n- one\n- two")
    assert result.metadata is not None
    assert result.metadata["status"] == 200


async def test_text_format_keeps_only_the_visible_text(builtin: Builtin, server: Server) -> None:
    result = await builtin("webfetch").execute({"url": server.base + "/html", "format": "text"})

    assert result.output == "Title\n\nSome bold text and a link.\n\n- one\n- two"


async def test_html_format_returns_the_body_untouched(builtin: Builtin, server: Server) -> None:
    result = await builtin("webfetch").execute({"url": server.base + "/html", "format": "html"})

    assert result.output == PAGE


async def test_a_non_html_body_is_returned_as_is(builtin: Builtin, server: Server) -> None:
    result = await builtin("webfetch").execute({"url": server.base + "/plain"})

    assert result.output == "<b>not html</b>"


async def test_an_unknown_format_is_an_error(builtin: Builtin, server: Server) -> None:
    result = await builtin("webfetch").execute({"url": server.base + "/html", "format": "pdf"})

    assert result.is_error
    assert "format must be one of" in result.output
    assert server.paths == []


# --- statuses, redirects, failures ---------------------------------------------------------


async def test_a_non_2xx_status_is_an_error(builtin: Builtin, server: Server) -> None:
    result = await builtin("webfetch").execute({"url": server.base + "/status/404"})

    assert result.is_error
    assert result.output == "HTTP 404"
    assert result.metadata is not None
    assert result.metadata["status"] == 404


async def test_redirects_are_followed(builtin: Builtin, server: Server) -> None:
    url = f"{server.base}/redirect?to=/plain"

    result = await builtin("webfetch").execute({"url": url})

    assert result.output == "<b>not html</b>"
    assert server.paths == ["/redirect?to=/plain", "/plain"]


async def test_a_redirect_loop_is_an_error(builtin: Builtin, server: Server) -> None:
    result = await builtin("webfetch").execute({"url": server.base + "/loop"})

    assert result.is_error
    assert result.output == "webfetch: too many redirects (more than 10)"
    assert len(server.paths) == 11


async def test_a_timeout_is_an_error(builtin: Builtin, server: Server) -> None:
    result = await builtin("webfetch").execute({"url": server.base + "/slow", "timeout": 0.2})

    assert result.is_error
    assert result.output.startswith("webfetch: timed out after 0.2s")


async def test_the_cancel_signal_aborts_the_request(builtin: Builtin, server: Server) -> None:
    signal = asyncio.Event()
    call = asyncio.ensure_future(
        builtin("webfetch").execute({"url": server.base + "/slow"}, ToolContext(signal=signal))
    )
    await server.arrived.wait()

    signal.set()
    result = await call

    assert result.is_error
    assert result.output == "webfetch: cancelled"


async def test_a_connection_failure_is_an_error(builtin: Builtin, server: Server) -> None:
    await server.stop()

    result = await builtin("webfetch").execute({"url": server.base + "/html"})

    assert result.is_error
    assert result.output.startswith("webfetch: request failed:")


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/x", "not a url"])
async def test_only_http_urls_are_fetched(builtin: Builtin, url: str) -> None:
    result = await builtin("webfetch").execute({"url": url})

    assert result.is_error
    assert "only http and https URLs" in result.output


async def test_a_body_over_the_limit_is_refused(builtin: Builtin, server: Server) -> None:
    result = await builtin("webfetch").execute({"url": server.base + "/big"})

    assert result.is_error
    assert "response too large" in result.output


async def test_the_output_is_capped(builtin: Builtin, server: Server) -> None:
    fetch = builtin("webfetch", max_output_bytes=10)

    result = await fetch.execute({"url": server.base + "/html"})

    assert result.output == "# Title\n\nS\n[truncated: output exceeded 10 bytes]"


# --- private_network: False ----------------------------------------------------------------


async def test_loopback_is_reachable_by_default(builtin: Builtin, server: Server) -> None:
    result = await builtin("webfetch").execute({"url": server.base + "/plain"})

    assert not result.is_error


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "localhost", "[::1]", "[::ffff:127.0.0.1]", "10.0.0.1", "169.254.169.254"],
)
async def test_private_addresses_are_refused_when_private_network_is_off(
    builtin: Builtin, server: Server, host: str
) -> None:
    fetch = builtin("webfetch", private_network=False)

    result = await fetch.execute({"url": f"http://{host}:{server.port}/plain", "timeout": 5})

    assert result.is_error
    assert result.output.startswith("webfetch: refused:")
    assert server.paths == []


async def test_a_redirect_to_a_refused_address_is_not_followed(server: Server) -> None:
    loopback_one = ipaddress.ip_address("127.0.0.1")
    options = parse_builtin_options({"private_network": False})
    fetch = webfetch_tool(options, policy=lambda ip: ip == loopback_one)
    url = f"{server.base}/redirect?to=http://127.0.0.2:{server.port}/plain"

    result = await fetch.execute({"url": url})

    assert result.is_error
    assert "refused: 127.0.0.2 is not a public address" in result.output
    assert server.paths == [f"/redirect?to=http://127.0.0.2:{server.port}/plain"]
