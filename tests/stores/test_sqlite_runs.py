"""SqliteStore's run store on real files: schema, locks, polling, hand-edited rows, lifecycle."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from collections.abc import AsyncIterator, Generator
from contextlib import closing, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from toolnexus._types import empty_usage
from toolnexus.errors import AnswerConflict, StoreError, UsageError
from toolnexus.loop.checkpoint import Checkpoint, Outstanding
from toolnexus.stores.sqlite import SqliteStore
from toolnexus.stores.sqlite_schema import MIGRATIONS, migrate
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
    await store.save_halt(checkpoint())
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


# -- migration 4: the request states ------------------------------------------------------


def old_row(rid: str, status: str, **columns: object) -> dict[str, object]:
    """A ``halts`` row as versions 2 and 3 wrote it."""
    return {"request_id": rid, "status": status, "kind": "approval", "tool": "deploy", **columns}


async def test_a_version_3_file_keeps_its_requests_with_finished_ones_settled(
    db_path: Path,
) -> None:
    cp = checkpoint("waiting").dumps()
    rows = [
        old_row("waiting", "pending", checkpoint=cp, created_at=1.0, prompt="ok?"),
        old_row(
            "held",
            "claimed",
            checkpoint=checkpoint("held").dumps(),
            answer=json.dumps({"id": "held", "ok": True}),
            answered_by="host",
            lease_until=4_000_000_000.0,
        ),
        old_row(
            "finished",
            "answered",
            answer=json.dumps({"id": "finished", "ok": True}),
            answered_by="ana",
            answered_at=5.0,
            digest="d1",
        ),
        old_row(
            "timed-out",
            "answered",
            answer=json.dumps({"id": "timed-out", "ok": False, "reason": "expired"}),
            answered_by="toolnexus:expired",
            answered_at=6.0,
        ),
    ]
    with raw(db_path) as conn:
        migrate(conn, MIGRATIONS[:3])
        for row in rows:
            names = ", ".join(row)
            marks = ", ".join("?" * len(row))
            conn.execute(f"INSERT INTO halts ({names}) VALUES ({marks})", list(row.values()))
    async with SqliteStore(db_path) as store:
        assert [e.request_id for e in await store.list_pending()] == ["waiting"]
        finished = await store.answer_record("finished")
        assert finished is not None
        assert (finished.status, finished.settled_at, finished.answered_by, finished.digest) == (
            "done",
            5.0,
            "ana",
            "d1",
        )
        timed_out = await store.answer_record("timed-out")
        assert timed_out is not None
        assert (timed_out.status, timed_out.settled_at) == ("expired", 6.0)
        with pytest.raises(AnswerConflict, match="being answered right now by host"):
            await store.claim("held", Answer("held", True))
        with pytest.raises(AnswerConflict, match="already answered by ana"):
            await store.post_answer("finished", Answer("finished", True))
        assert await store.purge(older_than=0) == 2
        record = await store.post_answer("waiting", Answer("waiting", True), answered_by="bob")
        assert record.status == "answered"
    with raw(db_path) as conn:
        latest = (MIGRATIONS[-1].version,)
        assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone() == latest
        indexes = {
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'halts'"
                " AND sql IS NOT NULL"
            )
        }
        assert indexes == {
            "halts_pending",
            "halts_queue",
            "halts_settled",
            "halts_unannounced",
            "halts_history",
            "halts_answerer",
            "halts_runs",
        }


STATUSES = ("pending", "answered", "claimed", "done", "expired", "cancelled")


@pytest.mark.parametrize("status", STATUSES)
async def test_every_status_of_the_state_machine_can_be_written(
    store: SqliteStore, db_path: Path, status: str
) -> None:
    await store.save_halt(checkpoint())
    with raw(db_path) as conn:
        conn.execute("UPDATE halts SET status = ?", (status,))


# -- the queries stay on their indexes -----------------------------------------------------


def fill_halts(path: Path, count: int) -> None:
    """``count`` rows in every status, queue and lease, written straight into the table."""
    rows: list[tuple[object, ...]] = []
    for n in range(count):
        status = STATUSES[n % len(STATUSES)]
        settled = float(n) if status in ("done", "expired", "cancelled") else None
        rows.append(
            (
                f"r{n:06}",
                status,
                None if settled is not None else "{}",
                ("approval", "input")[n % 2],
                ("deploy", "refund", "form")[n % 3],
                f"c{n % 50}",
                float(n),
                json.dumps({"id": f"r{n:06}", "ok": True}),
                float(n),
                float(n % 3),  # some leases run out, some do not
                n % 4 == 0 or status in ("answered", "cancelled"),
                settled,
                ("", "agents/rt")[n % 2],
            )
        )
    with raw(path) as conn:
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO halts (request_id, status, checkpoint, kind, tool, conversation_id,"
            " created_at, answer, answered_at, lease_until, recorded, settled_at, queue)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.execute("COMMIT")


async def plans_of(store: SqliteStore, job: Any) -> dict[str, list[str]]:
    """Every statement ``job(conn)`` runs, with its query plan (on the worker's connection)."""

    def traced(conn: sqlite3.Connection) -> dict[str, list[str]]:
        calls: list[str] = []
        conn.set_trace_callback(calls.append)
        try:
            job(conn)
        finally:
            conn.set_trace_callback(None)
        return {
            sql: [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall()]
            for sql in calls
            if not sql.startswith(("BEGIN", "COMMIT", "ROLLBACK"))
        }

    return await store._call(traced)  # pyright: ignore[reportPrivateUsage]


def assert_indexed(plans: dict[str, list[str]], index: str) -> None:
    assert plans
    for sql, plan in plans.items():
        assert plan, sql
        for step in plan:
            assert "USING" in step or step.startswith("SCALAR SUBQUERY"), (sql, plan)
    assert any(index in step for plan in plans.values() for step in plan), plans


async def test_the_inbox_the_worker_queues_and_purge_stay_on_their_indexes_at_100_000_rows(
    store: SqliteStore, db_path: Path
) -> None:
    from toolnexus.stores import sqlite_runs

    await store.list_pending()  # created and migrated
    fill_halts(db_path, 100_000)
    for kind, tool, conversation in [
        (None, None, None),
        ("approval", None, None),
        (None, "deploy", "c6"),
    ]:
        job = partial(sqlite_runs.list_pending, kind, tool, conversation, 60.0, None, 100, 1.5)
        assert_indexed(await plans_of(store, job), "halts_pending")
    for queue in ("", "agents/rt"):
        job = partial(sqlite_runs.take_next, str(db_path), queue, 1.5, 30.0)
        assert_indexed(await plans_of(store, job), "halts_queue")
    assert_indexed(await plans_of(store, partial(sqlite_runs.purge, 500.0)), "halts_settled")
    listed = await store.list_pending(tool="deploy", conversation_id="c6", limit=5)
    assert [e.created_at for e in listed] == sorted(e.created_at for e in listed)
    assert len(listed) == 5
    first, second = await store.take(), await store.take(queue="agents/rt")
    assert first is not None
    assert second is not None
    assert (first.request_id, second.request_id) == ("r000008", "r000001")  # oldest answers


# -- polling finds every move away from pending --------------------------------------------


@pytest.mark.parametrize(
    ("status", "recorded"),
    [("answered", 1), ("claimed", 1), ("done", 0), ("expired", 0), ("cancelled", 1)],
)
async def test_a_move_away_from_pending_by_another_connection_wakes_the_parked_run(
    store: SqliteStore, db_path: Path, status: str, recorded: int
) -> None:
    await store.save_halt(checkpoint())
    parked = asyncio.create_task(store.wait_for_answer("r1", timeout=30))
    assert await store.wait_for_answer("r1", timeout=0.05) is None
    with raw(db_path) as conn:
        conn.execute(
            "UPDATE halts SET status = ?, recorded = ?, answer = ?, answered_by = 'sql',"
            " answered_at = 7, lease_until = 4000000000, settled_at = 8",
            (status, recorded, json.dumps({"id": "r1", "ok": False})),
        )
    record = await asyncio.wait_for(parked, timeout=30)
    assert record is not None
    assert (record.status, record.answered_by) == (status, "sql")


async def test_a_claim_with_its_own_answer_elsewhere_leaves_the_parked_run_waiting(
    store: SqliteStore, db_path: Path
) -> None:
    await store.save_halt(checkpoint())
    async with SqliteStore(db_path) as other:
        parked = asyncio.create_task(store.wait_for_answer("r1", timeout=30))
        assert await store.wait_for_answer("r1", timeout=0.05) is None
        claim = await other.claim("r1", Answer("r1", True), answered_by="host")
        assert await store.wait_for_answer("r1", timeout=0.1) is None  # polls ran meanwhile
        assert not parked.done()
        await other.complete("r1", claim)
    record = await asyncio.wait_for(parked, timeout=30)
    assert record is not None
    assert (record.status, record.answered_by) == ("done", "host")


async def test_a_cancel_by_another_process_store_wakes_the_parked_run(
    store: SqliteStore, db_path: Path
) -> None:
    await store.save_halt(checkpoint())
    parked = asyncio.create_task(store.wait_for_answer("r1", timeout=30))
    assert await store.wait_for_answer("r1", timeout=0.05) is None
    async with SqliteStore(db_path) as other:
        await other.cancel("r1", reason="not needed", answered_by="ops")
    record = await asyncio.wait_for(parked, timeout=30)
    assert record is not None
    assert (record.status, record.answered_by) == ("cancelled", "ops")


async def settle_queue_watch(store: SqliteStore) -> None:
    """Let the worker's first poll take note of the file's data version (that first poll
    may return a queue wait spuriously: it has seen no version yet)."""
    await store.wait_for_queued(timeout=0.1)


async def test_a_worker_waiting_for_the_queue_wakes_on_an_answer_posted_elsewhere(
    store: SqliteStore, db_path: Path
) -> None:
    await store.save_halt(checkpoint())
    await settle_queue_watch(store)
    waiting = asyncio.create_task(store.wait_for_queued(timeout=30))
    await asyncio.sleep(0.1)
    assert not waiting.done()  # nothing was committed: the polls found nothing
    async with SqliteStore(db_path) as other:
        await other.post_answer("r1", Answer("r1", True))
    await asyncio.wait_for(waiting, timeout=30)
    claim = await store.take()
    assert claim is not None
    assert claim.request_id == "r1"


async def test_a_take_given_back_here_wakes_the_worker_at_once(db_path: Path) -> None:
    async with SqliteStore(db_path, poll_interval=60) as store:
        await store.save_halt(checkpoint())
        await store.post_answer("r1", Answer("r1", True))
        claim = await store.take("r1")
        assert claim is not None
        waiting = asyncio.create_task(store.wait_for_queued(timeout=30))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        await store.release("r1", claim)
        await asyncio.wait_for(waiting, timeout=5)  # not the 60 s poll


async def test_closing_the_store_ends_a_queue_wait_with_a_store_error(db_path: Path) -> None:
    store = SqliteStore(db_path, poll_interval=60)
    waiting = asyncio.create_task(store.wait_for_queued(timeout=30))
    await asyncio.sleep(0.05)
    await store.aclose()
    with pytest.raises(StoreError, match="closed"):
        await asyncio.wait_for(waiting, timeout=30)


# -- hand-edited rows ----------------------------------------------------------------------


async def test_taking_a_hand_edited_answer_is_a_store_error_and_takes_nothing(
    store: SqliteStore, db_path: Path
) -> None:
    await store.save_halt(checkpoint())
    await store.post_answer("r1", Answer("r1", True))
    with raw(db_path) as conn:
        conn.execute("UPDATE halts SET answer = 'not json'")
    with pytest.raises(StoreError, match="answer recorded for request 'r1'"):
        await store.take()
    with raw(db_path) as conn:
        assert conn.execute("SELECT status, token FROM halts").fetchone() == ("answered", 1)


async def test_a_hand_edited_outcome_is_a_store_error(store: SqliteStore, db_path: Path) -> None:
    await store.save_halt(checkpoint())
    claim = await store.claim("r1", Answer("r1", True))
    await store.complete("r1", claim, outcome={"status": "done"})
    with raw(db_path) as conn:
        conn.execute("UPDATE halts SET outcome = '[1, 2]'")
    with pytest.raises(StoreError, match="outcome recorded for request 'r1'"):
        await store.answer_record("r1")


# -- takes across processes ----------------------------------------------------------------

TAKER = """
import asyncio, sys
from toolnexus.stores.sqlite import SqliteStore

async def main():
    async with SqliteStore(sys.argv[1], busy_timeout_ms=30000) as store:
        await store.list_pending(limit=1)  # open and migrated before the race
        print("ready", flush=True)
        sys.stdin.readline()
        while (claim := await store.take(lease_s=300)) is not None:
            print(claim.request_id, claim.token, flush=True)
    print("drained", flush=True)

asyncio.run(main())
"""


async def test_two_processes_draining_the_queue_never_take_the_same_request(
    store: SqliteStore, db_path: Path
) -> None:
    ids = [f"q{n:03}" for n in range(60)]
    for rid in ids:
        await store.save_halt(checkpoint(rid))
        await store.post_answer(rid, Answer(rid, True))
    takers = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            TAKER,
            str(db_path),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for _ in range(2)
    ]
    try:
        for taker in takers:
            assert taker.stdout is not None
            line = await asyncio.wait_for(taker.stdout.readline(), timeout=30)
            assert line == b"ready\n"
        outputs = await asyncio.wait_for(
            asyncio.gather(*(t.communicate(b"go\n") for t in takers)), timeout=60
        )
    finally:
        for taker in takers:
            if taker.returncode is None:
                taker.kill()
                await taker.communicate()
    taken: list[list[str]] = []
    for (out, err), taker in zip(outputs, takers, strict=True):
        assert taker.returncode == 0, err.decode()
        lines = out.decode().split()
        assert lines[-1] == "drained"
        taken.append(lines[:-1:2])
    assert sorted(taken[0] + taken[1]) == ids  # each taken once, none twice
    for rid in ids:
        record = await store.answer_record(rid)
        assert record is not None
        assert record.status == "claimed"
