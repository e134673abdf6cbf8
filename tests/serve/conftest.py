"""Fixtures for the MCP serving tests: a toolkit of small tools and a client per protocol era."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_types import ElicitResult

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "tools" / "mcp"))

ERAS = ("legacy", "2026-07-28")
"""The handshake era (initialize + session) and the 2026-07-28 per-request protocol."""

Elicit = Callable[[Any, Any], Any]


@pytest.fixture(params=ERAS)
def era(request: pytest.FixtureRequest) -> str:
    """Each protocol era in turn (the mcp ``Client(mode=...)`` value)."""
    return request.param


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
