"""What the judging tests share: a scripted systemone endpoint on loopback, and recorded
decisions.

The classifier endpoint is outside our code, so a real HTTP server that answers from a script
stands in for it: each request takes the next reply (a status, a body, headers), or waits on an
event that is only released when the server stops (a stalled endpoint).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

__all__ = [
    "STALL",
    "Reply",
    "Seen",
    "SystemOneServer",
    "choice_wire",
    "noul_wire",
    "ok",
    "risk_wire",
    "serve_systemone",
]


@dataclass(frozen=True)
class Reply:
    """One scripted reply."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=lambda: {})


STALL = Reply(status=0)
"""Never answer (until the server stops): the client's timeout must fire."""


def ok(answers: dict[str, Any], **extra: Any) -> Reply:
    """A 200 systemone response with these answers."""
    return Reply(200, json.dumps({"model": "jev-test", "answers": answers, **extra}).encode())


@dataclass(frozen=True)
class Seen:
    """One request the endpoint received."""

    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> dict[str, Any]:
        return json.loads(self.body)


class SystemOneServer:
    """A started endpoint: ``base_url`` is what ``create_classifier(base_url=...)`` takes."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.seen: list[Seen] = []
        self.base_url = ""
        self._release = asyncio.Event()

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append(Seen(request.path, dict(request.headers), await request.read()))
        reply = self.replies.pop(0) if self.replies else Reply(500, b"script exhausted")
        if reply is STALL:
            await self._release.wait()
            return web.Response(status=503)
        return web.Response(status=reply.status, body=reply.body, headers=reply.headers)

    def release(self) -> None:
        self._release.set()


@asynccontextmanager
async def serve_systemone(*replies: Reply) -> AsyncGenerator[SystemOneServer]:
    """A real aiohttp server on 127.0.0.1 answering ``POST /v1/systemone`` from ``replies``."""
    server = SystemOneServer(list(replies))
    app = web.Application()
    app.router.add_post("/v1/systemone", server.handle)
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.5)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    server.base_url = f"http://{host}:{port}/v1"
    try:
        yield server
    finally:
        server.release()
        await runner.cleanup()


def noul_wire(p: float) -> dict[str, Any]:
    """A noul answer's wire body."""
    return {"type": "noul", "noul": p}


def choice_wire(pick: str, confidence: float, probabilities: dict[str, float]) -> dict[str, Any]:
    """A choice answer's wire body."""
    return {
        "type": "choice",
        "choice": pick,
        "confidence": confidence,
        "probabilities": probabilities,
    }


def risk_wire(level: float, confidence: float = 0.9) -> dict[str, Any]:
    """The tool guard's ``risk`` answer (a four-level score) at ``level``."""
    return {
        "risk": {
            "type": "score",
            "score": level,
            "confidence": confidence,
            "legend": {"0": "a", "1": "b", "2": "c", "3": "d"},
            "probabilities": {"0": 0.1, "1": 0.2, "2": 0.3, "3": 0.4},
        }
    }
