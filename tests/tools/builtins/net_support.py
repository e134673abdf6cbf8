"""A loopback HTTP server that counts who reached it (imported as ``net_support``).

::

    async with HitCounter() as server:
        ...  # something that must (not) reach server.url
        assert server.hits == 0
"""

from __future__ import annotations

from types import TracebackType

from aiohttp import web


class HitCounter:
    """A real aiohttp server on ``127.0.0.1`` answering ``hit`` to any GET and counting it."""

    def __init__(self) -> None:
        self.hits = 0
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/probe"

    async def _hit(self, request: web.Request) -> web.Response:
        self.hits += 1
        return web.Response(text="hit")

    async def __aenter__(self) -> HitCounter:
        app = web.Application()
        app.router.add_get("/{tail:.*}", self._hit)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
