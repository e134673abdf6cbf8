"""Serving an ASGI app on real uvicorn at 127.0.0.1, port 0, inside the test's event loop."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import uvicorn


class _Announcing(uvicorn.Server):
    """A uvicorn server that sets an event once it listens (port 0 picks a free port)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.listening.set()


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """Serve ``app`` until the block ends; yields its base URL (``http://127.0.0.1:<port>``)."""
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    server = _Announcing(config)
    task = asyncio.create_task(server.serve())
    listening = asyncio.ensure_future(server.listening.wait())
    done, _ = await asyncio.wait({task, listening}, timeout=30, return_when="FIRST_COMPLETED")
    if listening not in done:
        listening.cancel()
        if task in done:
            task.result()  # raises what made it fail
        raise RuntimeError("uvicorn did not start within 30 s")
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)
