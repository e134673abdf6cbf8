"""Fixtures of the serve tests: a served refund toolkit over a real SQLite file or Postgres
(A2A), and each MCP protocol era in turn (MCP inbound)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "tools" / "mcp"))
sys.path.insert(0, str(Path(__file__).parents[1] / "inbox"))  # browser_support

from a2a_support import Serve, brain, refund_tool
from serve_support import ERAS

from toolnexus import create_client, create_toolkit
from toolnexus.serve import ServeHandle
from toolnexus.testing import ScriptedModel


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModel]:
    """A scripted model that calls refund once, then reports."""
    async with ScriptedModel(default=brain) as m:
        yield m


@pytest.fixture
async def serve_refunds(model: ScriptedModel, tmp_path: Path) -> AsyncIterator[Serve]:
    """``await serve_refunds(store=..., **serve_options)`` → a running `ServeHandle`."""
    async with AsyncExitStack() as stack:

        async def start(
            store: Any = None,
            *,
            kind: str = "approval",
            schema: bool = False,
            addr: str = "127.0.0.1:0",
            **options: Any,
        ) -> ServeHandle:
            tk = await create_toolkit(
                extra_tools=[refund_tool(tmp_path / "ledger.jsonl", kind=kind, schema=schema)],
                builtins=False,
            )
            client = create_client(
                base_url=model.openai_base_url, model="m", api_key="k", store=store
            )
            stack.push_async_callback(client.aclose)
            options.setdefault("a2a", {"name": "refunds", "description": "refunds orders"})
            served = await tk.serve(addr, client=client, **options)
            stack.push_async_callback(served.stop)
            return served

        yield start


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    return tmp_path / "ledger.jsonl"


@pytest.fixture(params=["sqlite", "postgres"])
def durable_store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL: a SQLite file, or a private Postgres schema."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture(params=ERAS)
def era(request: pytest.FixtureRequest) -> str:
    """Each protocol era in turn (the mcp ``Client(mode=...)`` value)."""
    return request.param
