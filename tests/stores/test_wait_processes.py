"""store_wait_for across processes: a live run parks here, a real subprocess posts the answer.

SQLite wakes the parked run by polling; Postgres by LISTEN/NOTIFY. In both tests the run is
known to be parked (waiting, with no answer yet) before the other process even starts.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from toolnexus import Tool, ToolContext, ToolResult, create_client, pending
from toolnexus.stores.postgres import PostgresStore
from toolnexus.stores.runs import AnswerRecord
from toolnexus.stores.sqlite import SqliteStore
from toolnexus.testing import ScriptedModel, call, text, tool_calls
from toolnexus.waiting import store_wait_for

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

POSTER = """
import asyncio, sys
from toolnexus import Answer
from toolnexus.stores.url import resolve_store

async def post(url, request_id):
    store = resolve_store(url)
    try:
        await store.post_answer(request_id, Answer(request_id, True), answered_by="webhook")
    finally:
        await store.aclose()

asyncio.run(post(sys.argv[1], sys.argv[2]))
"""
"""The other process: a webhook that records the approval through the store."""


async def refund(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
    if ctx is not None and ctx.answer is not None:
        return ToolResult("refunded" if ctx.answer.ok else "kept")
    return pending(kind="approval", prompt="refund?")


TOOL = Tool("refund", "refund", SCHEMA, "native", refund)


class ParkedSqliteStore(SqliteStore):
    """The real SQLite store, plus an event when a run saves its halt to park."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, poll_interval=0.02)
        self.parked = asyncio.Event()

    async def save_halt(self, checkpoint: Any) -> None:
        await super().save_halt(checkpoint)
        self.parked.set()


class ListeningPostgresStore(PostgresStore):
    """The real Postgres store, plus an event when a waiter LISTENs and found no answer yet."""

    def __init__(self, url: str) -> None:
        super().__init__(url, max_size=4)
        self.listening = asyncio.Event()

    async def answer_record(self, request_id: str) -> AnswerRecord | None:
        record = await super().answer_record(request_id)
        if record is None:
            self.listening.set()
        return record


async def post_from_another_process(store_url: str, request_id: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        POSTER,
        store_url,
        request_id,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()


async def check_resumed(store: Any, run: asyncio.Task[Any], request_id: str) -> None:
    result = await asyncio.wait_for(run, 30)
    assert result.status == "done"
    assert result.tool_calls[0].output == "refunded"
    record = await store.answer_record(request_id)
    assert record is not None
    assert (record.answered_by, record.answer.ok) == ("webhook", True)
    assert await store.list_pending() == []
    assert await store.load_halt(request_id) is None


async def test_a_run_parked_on_sqlite_resumes_with_an_answer_posted_by_another_process(
    tmp_path: Path,
) -> None:
    path = tmp_path / "shared.db"
    async with ParkedSqliteStore(path) as store:
        async with ScriptedModel([tool_calls(call("refund", {})), text("done")]) as model:
            async with create_client(
                base_url=model.openai_base_url,
                model="m",
                api_key="k",
                wait_for=store_wait_for(store),
            ) as client:
                run = asyncio.create_task(client.run("refund it", [TOOL]))
                await asyncio.wait_for(store.parked.wait(), 10)
                # Queued behind the waiter's registration on the store's one worker thread.
                (entry,) = await store.list_pending()
                assert await store.answer_record(entry.request_id) is None
                await post_from_another_process(f"sqlite:///{path}", entry.request_id)
                await check_resumed(store, run, entry.request_id)


async def test_a_run_parked_on_postgres_is_woken_by_notify_from_another_process(
    pg_url: str,
) -> None:
    async with ListeningPostgresStore(pg_url) as store:
        async with ScriptedModel([tool_calls(call("refund", {})), text("done")]) as model:
            async with create_client(
                base_url=model.openai_base_url,
                model="m",
                api_key="k",
                wait_for=store_wait_for(store),
            ) as client:
                run = asyncio.create_task(client.run("refund it", [TOOL]))
                await asyncio.wait_for(store.listening.wait(), 10)
                (entry,) = await store.list_pending()
                assert not run.done()
                await post_from_another_process(pg_url, entry.request_id)
                await check_resumed(store, run, entry.request_id)
