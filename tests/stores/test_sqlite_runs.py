"""SqliteStore's run store on real files: schema, locks, polling, hand-edited rows, lifecycle."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Generator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from toolnexus._types import empty_usage
from toolnexus.errors import StoreError, UsageError
from toolnexus.loop.checkpoint import Checkpoint, Outstanding
from toolnexus.stores.sqlite import SqliteStore
from toolnexus.stores.sqlite_schema import MIGRATIONS
from toolnexus.suspension import Answer, Request


def checkpoint(rid: str = "r1", kind: str = "approval") -> Checkpoint:
    request = Request(id=rid, kind=kind, prompt="ok?")
    return Checkpoint(
        model="m-1",
        style="openai",
        messages=[{"role": "user", "content": "go"}],
        turn=1,
        usage=empty_usage(),
        tool_calls=[],
        outstanding=[
            Outstanding(
                call_id="c1", name="deploy", arguments="{}", state="suspended", request=request
            )
        ],
        pending=request,
    )


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(db_path, poll_interval=0.02, busy_timeout_ms=50) as opened:
        yield opened


@contextmanager
def raw(path: Path) -> Generator[sqlite3.Connection]:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        yield conn


# -- schema -------------------------------------------------------------------------------


async def test_a_version_1_file_is_upgraded_and_keeps_its_conversations(db_path: Path) -> None:
    with raw(db_path) as conn:
        conn.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
            " applied_at REAL NOT NULL)"
        )
        conn.execute(MIGRATIONS[0].statements[0])
        conn.execute("INSERT INTO schema_migrations VALUES (1, 'conversations', 0)")
        conn.execute("INSERT INTO conversations VALUES ('c1', '[]', 0)")
    async with SqliteStore(db_path) as store:
        assert await store.get("c1") == []
        await store.save_halt(checkpoint())
        assert [e.request_id for e in await store.list_pending()] == ["r1"]
    with raw(db_path) as conn:
        assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone() == (
            len(MIGRATIONS),
        )


@pytest.mark.parametrize(
    "filters",
    [{}, {"kind": "approval"}, {"tool": "deploy"}, {"conversation_id": "c1"}],
    ids=repr,
)
async def test_list_pending_reads_only_its_covering_partial_index(
    store: SqliteStore, filters: dict[str, str]
) -> None:
    from toolnexus.stores import sqlite_runs

    await store.save_halt(checkpoint())
    calls: list[str] = []

    def traced(conn: sqlite3.Connection) -> list[tuple[int, int, int, str]]:
        conn.set_trace_callback(calls.append)
        try:
            values = (filters.get("kind"), filters.get("tool"), filters.get("conversation_id"))
            sqlite_runs.list_pending(*values, None, None, 10, 0.0, conn)
        finally:
            conn.set_trace_callback(None)
        [sql] = calls
        return conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall()

    plan = await store._call(traced)  # pyright: ignore[reportPrivateUsage]
    assert [row[3] for row in plan] == ["SCAN halts USING INDEX halts_pending"]


async def test_a_status_outside_the_vocabulary_cannot_be_written(
    store: SqliteStore, db_path: Path
) -> None:
    await store.save_halt(checkpoint())
    with raw(db_path) as conn, pytest.raises(sqlite3.IntegrityError):
        conn.execute("UPDATE halts SET status = 'maybe'")


# -- failures -----------------------------------------------------------------------------


async def test_a_claim_while_another_connection_holds_the_lock_is_a_store_error(
    store: SqliteStore, db_path: Path
) -> None:
    await store.save_halt(checkpoint())
    with raw(db_path) as conn:
        conn.execute("BEGIN IMMEDIATE")
        with pytest.raises(StoreError, match="locked"):
            await store.claim("r1", Answer("r1", True), answered_by="ana")
        conn.execute("ROLLBACK")
    assert [e.request_id for e in await store.list_pending()] == ["r1"]
    await store.claim("r1", Answer("r1", True), answered_by="ana")


async def test_a_hand_edited_answer_is_a_store_error_and_the_row_is_untouched(
    store: SqliteStore, db_path: Path
) -> None:
    await store.post_answer("r1", Answer("r1", True), answered_by="ana")
    with raw(db_path) as conn:
        conn.execute("UPDATE halts SET answer = '{\"ok\": true}'")
    with pytest.raises(StoreError, match="answer recorded for request 'r1'"):
        await store.answer_record("r1")
    with raw(db_path) as conn:
        assert conn.execute("SELECT answer FROM halts").fetchone() == ('{"ok": true}',)


async def test_a_poll_interval_that_is_not_positive_is_a_usage_error(db_path: Path) -> None:
    with pytest.raises(UsageError, match="poll_interval"):
        SqliteStore(db_path, poll_interval=0)


# -- polling ------------------------------------------------------------------------------


async def test_an_answer_committed_by_another_connection_is_found_by_polling(
    store: SqliteStore, db_path: Path
) -> None:
    await store.save_halt(checkpoint())
    parked = asyncio.create_task(store.wait_for_answer("r1", timeout=30))
    assert await store.wait_for_answer("r1", timeout=0.05) is None
    with raw(db_path) as conn:
        conn.execute(
            "UPDATE halts SET status = 'answered', answer = ?, answered_by = 'sql',"
            " answered_at = 7",
            (json.dumps({"id": "r1", "ok": False, "reason": "declined"}),),
        )
    record = await asyncio.wait_for(parked, timeout=30)
    assert record is not None
    assert (record.answer, record.answered_by, record.answered_at) == (
        Answer("r1", False, reason="declined"),
        "sql",
        7.0,
    )


async def test_many_parked_runs_each_get_their_own_answer(
    store: SqliteStore, db_path: Path
) -> None:
    ids = [f"r{i}" for i in range(1200)]  # more than one polling chunk
    parked = [asyncio.create_task(store.wait_for_answer(rid, timeout=30)) for rid in ids]
    assert await store.wait_for_answer("other", timeout=0.05) is None
    with raw(db_path) as conn, conn:
        conn.executemany(
            "INSERT INTO halts (request_id, status, answer, answered_by, answered_at)"
            " VALUES (?, 'answered', ?, ?, 1)",
            [(rid, json.dumps({"id": rid, "ok": True}), rid) for rid in ids],
        )
    records = await asyncio.wait_for(asyncio.gather(*parked), timeout=30)
    assert [r.answered_by if r else None for r in records] == ids


async def test_closing_the_store_ends_parked_waits_with_a_store_error(db_path: Path) -> None:
    store = SqliteStore(db_path, poll_interval=0.02)
    parked = asyncio.create_task(store.wait_for_answer("r1", timeout=30))
    assert await store.wait_for_answer("r1", timeout=0.05) is None
    await store.aclose()
    with pytest.raises(StoreError, match="closed"):
        await asyncio.wait_for(parked, timeout=30)


async def test_a_timed_out_waiter_is_forgotten_by_the_worker(store: SqliteStore) -> None:
    assert await store.wait_for_answer("r1", timeout=0.01) is None
    waiting = await store._call(lambda _conn: store._db.watch.due_in())  # pyright: ignore[reportPrivateUsage]
    assert waiting is None
