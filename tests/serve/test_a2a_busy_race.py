"""One message at a time per context, enforced by the task store: twenty messages racing on one
``contextId`` — sent at once to two servers that share the store (in memory, a SQLite file,
Postgres) — start exactly one task; the other nineteen get the busy error, and once that task
has completed the next message on the context starts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a_support import Serve, ref_message, rpc

from toolnexus.serve import InMemoryTaskStore, ServeHandle, TaskStore
from toolnexus.stores.url import resolve_store
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, text

CONTEXT = "ctx-race"


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModel]:
    """A model that answers every turn with a text (no tool call)."""
    async with ScriptedModel(default=lambda request: text("done")) as m:
        yield m


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def two_servers(
    request: pytest.FixtureRequest, serve_refunds: Serve, tmp_path: Path
) -> AsyncIterator[tuple[list[ServeHandle], TaskStore]]:
    """Two servers sharing one task store, and that store (to count the context's tasks)."""
    if request.param == "memory":
        shared = InMemoryTaskStore()
        a2a = {"name": "refunds", "store": shared}
        yield [await serve_refunds(a2a=a2a), await serve_refunds(a2a=a2a)], shared
        return
    from toolnexus.serve import resolve_task_store

    url = (
        f"sqlite:///{tmp_path / 'state.db'}"
        if request.param == "sqlite"
        else request.getfixturevalue("pg_url")
    )
    servers = [await serve_refunds(url), await serve_refunds(url)]
    async with resolve_store(url) as backend:
        yield servers, resolve_task_store(None, runs=backend)[0]


async def settled(http: httpx.AsyncClient, url: str, tid: str) -> None:
    """Follow the task until it settles (the resubscribe stream ends then)."""
    body = {"jsonrpc": "2.0", "id": 9, "method": "tasks/resubscribe", "params": {"id": tid}}
    async with http.stream("POST", url + "/", json=body) as r:
        _ = [line async for line in r.aiter_lines()]


async def test_twenty_racing_messages_on_one_context_start_one_task(
    two_servers: tuple[list[ServeHandle], TaskStore], model: ScriptedModel
) -> None:
    servers, tasks = two_servers
    started: list[RecordedRequest] = []
    reached = asyncio.Event()
    release = asyncio.Event()

    async def slow(request: RecordedRequest) -> Reply:
        started.append(request)
        reached.set()
        await release.wait()
        return text("slow done")

    model.when(lambda r: "slowly" in str(r.body["messages"][-1]), slow)
    message = ref_message("slowly", context_id=CONTEXT, blocking=False)
    async with httpx.AsyncClient(timeout=30) as http:
        replies: list[dict[str, Any]] = await asyncio.gather(
            *(rpc(http, servers[i % 2].url, "SendMessage", message, id=i) for i in range(20))
        )
        winners = [(i, r["result"]) for i, r in enumerate(replies) if "result" in r]
        assert len(winners) == 1, replies
        at, winner = servers[winners[0][0] % 2], winners[0][1]["id"]
        refused = [r["error"] for r in replies if "error" in r]
        assert len(refused) == 19
        for error in refused:
            assert error["code"] == -32602
            assert error["data"] == {"reason": "busy", "taskId": winner}
        await reached.wait()
        assert [t["id"] for t in await tasks.list(context_id=CONTEXT)] == [winner]
        release.set()
        await settled(http, at.url, winner)
        after = ref_message("next", context_id=CONTEXT)
        later = await rpc(http, servers[1].url, "SendMessage", after)
    assert len(started) == 1  # the model was asked once: one run started
    assert later["result"]["status"]["state"] == "completed"
    assert later["result"]["contextId"] == CONTEXT
    assert len(await tasks.list(context_id=CONTEXT)) == 2
