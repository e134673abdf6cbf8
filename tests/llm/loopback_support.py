"""What the transport tests share: a real aiohttp server on loopback."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager

from aiohttp import web

__all__ = ["WAIT", "Handler", "serve"]

WAIT = 5.0
"""The longest a test waits for something that should happen at once."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def serve(handler: Handler) -> AsyncGenerator[str]:
    """A real aiohttp server on 127.0.0.1, port 0, answering POST / with ``handler``."""
    app = web.Application()
    app.router.add_post("/", handler)
    # handler_cancellation: the handler is cancelled when the client drops the connection.
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.5)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}/"
    finally:
        await runner.cleanup()
