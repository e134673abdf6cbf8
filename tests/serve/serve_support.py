"""Helpers for the MCP serving tests: real uvicorn on 127.0.0.1 port 0 in the test's event loop,
and mcp SDK clients per protocol era."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from mcp import Client
from mcp_types import ElicitResult


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


ERAS = ("legacy", "2026-07-28")
"""The handshake era (initialize + session) and the 2026-07-28 per-request protocol."""

Elicit = Callable[[Any, Any], Any]


def client(url: str, era: str, elicit: Elicit | None = None, **options: Any) -> Client:
    """An mcp SDK client on ``<url>/mcp`` speaking ``era``; ``elicit`` declares elicitation."""
    return Client(f"{url}/mcp", mode=era, elicitation_callback=elicit, **options)


def replying(action: str, content: dict[str, Any] | None = None, seen: list[Any] | None = None):
    """An elicitation callback that records each request's params and answers ``action``."""

    async def callback(ctx: Any, params: Any) -> ElicitResult:
        if seen is not None:
            seen.append(params)
        return ElicitResult(action=action, content=content)  # pyright: ignore[reportArgumentType]

    return callback
