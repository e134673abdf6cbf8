"""SqliteStore's inline fast path: hot operations on the event loop's own connection, never
waiting for a lock there, handing off to the worker thread when they meet one."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
import time
from collections.abc import Generator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, contextmanager
from pathlib import Path

import pytest
from halt_support import checkpoint

from toolnexus import Answer
from toolnexus.errors import AnswerConflict, StoreError
from toolnexus.loop.checkpoint import Checkpoint
from toolnexus.stores import sqlite as sqlite_module
from toolnexus.stores.requests import Claim
from toolnexus.stores.sqlite import SqliteStore, _ready  # pyright: ignore[reportPrivateUsage]

HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


@contextmanager
def raw(path: Path) -> Generator[sqlite3.Connection]:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        yield conn


def worker_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "toolnexus-sqlite"}


def halted(request_id: str) -> Checkpoint:
    return checkpoint(request_id, tool="refund", prompt="Refund $20?")


async def migrated(path: Path) -> None:
    """A database file that exists and is up to date (its opener has gone)."""
    async with SqliteStore(path) as store:
        await store.get("warm-up")


async def test_a_halt_and_a_resume_on_a_current_database_never_start_a_thread(
    db_path: Path,
) -> None:
    await migrated(db_path)
    before = worker_threads()
    async with SqliteStore(db_path) as store:
        await store.save("c1", HELLO)
        assert await store.get("c1") == HELLO
        await store.save_halt(halted("r1"))
        loaded = await store.load_halt("r1")
        assert loaded is not None
        assert loaded.pending.id == "r1"
        await store.claim("r1", Answer("r1", True), answered_by="ana")
        await store.complete("r1")
        record = await store.answer_record("r1")
        assert record is not None
        assert record.answered_by == "ana"
        assert worker_threads() - before == set()


async def test_taking_renewing_and_settling_a_recorded_answer_never_start_a_thread(
    db_path: Path,
) -> None:
    async with SqliteStore(db_path) as webhook:  # answers are recorded on the worker
        for rid in ("r1", "r2"):
            await webhook.save_halt(halted(rid))
            await webhook.post_answer(rid, Answer(rid, True), answered_by="ana")
    before = worker_threads()
    async with SqliteStore(db_path) as store:
        claim = await store.take("r1", lease_s=30)
        assert claim is not None
        claim = await store.renew(claim, lease_s=60)
        await store.save_progress(halted("r1"), claim)
        await store.complete("r1", claim, outcome={"status": "done", "text": "refunded"})
        second = await store.take()
        assert second is not None
        assert second.request_id == "r2"
        await store.release("r2", second)
        record = await store.answer_record("r1")
        assert record is not None
        assert (record.status, record.outcome) == ("done", {"status": "done", "text": "refunded"})
        assert worker_threads() - before == set()


async def test_the_first_open_migrates_on_the_worker_then_goes_inline(db_path: Path) -> None:
    async with SqliteStore(db_path) as store:
        await store.save("c1", HELLO)  # creates and migrates the file on the worker thread
        inline = store._inline  # pyright: ignore[reportPrivateUsage]
        assert inline is not None
        assert await store.get("c1") == HELLO
        pragmas = [
            inline.execute(f"PRAGMA {name}").fetchone()[0]
            for name in ("busy_timeout", "synchronous", "foreign_keys", "wal_autocheckpoint")
        ]
        assert pragmas == [0, 1, 1, 0]
        assert inline.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_a_write_that_meets_a_lock_waits_on_the_worker_and_the_loop_keeps_running(
    db_path: Path,
) -> None:
    await migrated(db_path)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    async with SqliteStore(db_path, busy_timeout_ms=5000) as store:
        await store.get("c1")  # the inline connection is open
        with raw(db_path) as holder:
            holder.execute("BEGIN IMMEDIATE")
            holder.execute("INSERT INTO conversations (id, messages) VALUES ('x', '[]')")
            loop = asyncio.get_running_loop()
            loop.call_later(0.3, holder.execute, "COMMIT")
            tick_task = asyncio.create_task(ticker())
            started = time.monotonic()
            await store.save("c1", HELLO)  # busy inline -> handed to the worker, which waits
            waited = time.monotonic() - started
            tick_task.cancel()
        assert waited >= 0.25
        assert ticks >= 10  # the event loop ran while the write waited for the lock
        assert await store.get("c1") == HELLO
        assert await store.get("x") == []


async def test_a_claim_that_meets_a_lock_is_still_exactly_once(db_path: Path) -> None:
    await migrated(db_path)
    async with SqliteStore(db_path) as first, SqliteStore(db_path) as second:
        await first.save_halt(halted("r1"))
        with raw(db_path) as holder:
            holder.execute("BEGIN IMMEDIATE")
            asyncio.get_running_loop().call_later(0.1, holder.execute, "COMMIT")
            outcomes = await asyncio.gather(
                first.claim("r1", Answer("r1", True), answered_by="first"),
                second.claim("r1", Answer("r1", False), answered_by="second"),
                return_exceptions=True,
            )
        conflicts = [o for o in outcomes if isinstance(o, AnswerConflict)]
        assert sum(isinstance(o, Claim) for o in outcomes) == 1
        assert len(conflicts) == 1
        assert "is being answered right now" in str(conflicts[0])


async def test_a_lock_held_past_the_busy_timeout_is_a_store_error_and_changes_nothing(
    db_path: Path,
) -> None:
    await migrated(db_path)
    async with SqliteStore(db_path, busy_timeout_ms=50) as store:
        await store.save_halt(halted("r1"))
        with raw(db_path) as holder:
            holder.execute("BEGIN IMMEDIATE")
            with pytest.raises(StoreError, match="is locked by another connection"):
                await store.claim("r1", Answer("r1", True))
            holder.execute("ROLLBACK")
        pending = await store.list_pending()
        assert [p.request_id for p in pending] == ["r1"]
        await store.claim("r1", Answer("r1", True))  # the lock is gone: claimable as before


async def test_inline_false_runs_everything_on_the_worker(db_path: Path) -> None:
    await migrated(db_path)
    before = worker_threads()
    async with SqliteStore(db_path, inline=False) as store:
        await store.save("c1", HELLO)
        assert store._inline is None  # pyright: ignore[reportPrivateUsage]
        assert len(worker_threads() - before) == 1
        assert await store.get("c1") == HELLO


async def test_an_in_memory_database_is_one_connection_on_the_worker() -> None:
    async with SqliteStore(":memory:") as store:
        await store.save("c1", HELLO)
        await store.save_halt(halted("r1"))
        assert store._inline is None  # pyright: ignore[reportPrivateUsage]
        assert await store.get("c1") == HELLO
        loaded = await store.load_halt("r1")
        assert loaded is not None


async def test_another_thread_uses_the_worker_not_the_loop_threads_connection(
    db_path: Path,
) -> None:
    await migrated(db_path)
    async with SqliteStore(db_path) as store:
        await store.save("c1", HELLO)
        owner = store._inline  # pyright: ignore[reportPrivateUsage]
        assert owner is not None

        def elsewhere() -> object:
            async def work() -> object:
                await store.save("c2", [{"role": "user", "content": "from a thread"}])
                return await store.get("c1")

            return asyncio.run(work())

        assert await asyncio.to_thread(elsewhere) == HELLO
        assert store._inline is owner  # pyright: ignore[reportPrivateUsage]
        assert await store.get("c2") == [{"role": "user", "content": "from a thread"}]


async def test_a_newer_schema_is_refused_before_anything_goes_inline(db_path: Path) -> None:
    await migrated(db_path)
    with raw(db_path) as conn:  # what a newer toolnexus's migration leaves: its row, its stamp
        conn.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)"
        )
        conn.execute("PRAGMA user_version = 99")
    async with SqliteStore(db_path) as store:
        with pytest.raises(StoreError, match="newer than the newest this toolnexus knows"):
            await store.get("c1")
        assert store._inline is None  # pyright: ignore[reportPrivateUsage]


async def test_a_file_without_the_schema_stamp_goes_to_the_worker_which_stamps_it(
    db_path: Path,
) -> None:
    # The readiness check reads the version stamped in the header, not the ledger: a current
    # file migrated before the stamp existed is opened by the worker first, which stamps it.
    await migrated(db_path)
    with raw(db_path) as conn:
        conn.execute("PRAGMA user_version = 0")
    assert sqlite_module._open_inline(str(db_path)) is None  # pyright: ignore[reportPrivateUsage]
    before = worker_threads()
    async with SqliteStore(db_path) as store:
        assert await store.get("c1") is None
        assert worker_threads() - before  # the first look went to the worker
        await store.save("c1", HELLO)
        assert store._inline is not None  # pyright: ignore[reportPrivateUsage]
    reopened = sqlite_module._open_inline(str(db_path))  # pyright: ignore[reportPrivateUsage]
    assert reopened is not None
    reopened.close()


async def test_a_database_switched_out_of_wal_goes_to_the_worker_which_puts_it_back(
    db_path: Path,
) -> None:
    # The inline connection never waits for a lock, which only WAL makes safe: a migrated
    # file in another journal mode is opened by the worker first (it switches WAL back on).
    await migrated(db_path)
    with raw(db_path) as conn:
        assert conn.execute("PRAGMA journal_mode = DELETE").fetchone() == ("delete",)
    assert sqlite_module._open_inline(str(db_path)) is None  # pyright: ignore[reportPrivateUsage]
    before = worker_threads()
    async with SqliteStore(db_path) as store:
        assert await store.get("c1") is None
        assert worker_threads() - before  # the first look went to the worker
        with raw(db_path) as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        await store.save("c1", HELLO)
        assert store._inline is not None  # pyright: ignore[reportPrivateUsage]
        assert await store.get("c1") == HELLO


def wal_bytes(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


async def fill(path: Path, commits: int) -> int:
    """``commits`` inline writes of a ~16 KiB transcript; the WAL's size after them."""
    big = [{"role": "user", "content": "x" * 16_000}]
    async with SqliteStore(path) as store:
        for i in range(commits):
            await store.save(f"c{i}", big)
            if i % 8 == 7:
                await asyncio.sleep(0.005)  # let a checkpoint handed to the worker run
        size = wal_bytes(path)
        await store.get("c0")
        return size


async def test_inline_commits_are_checkpointed_on_the_worker_so_the_wal_stays_small(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The inline connection never checkpoints (wal_autocheckpoint = 0): without the
    # checkpoints handed to the worker, 1200 commits of ~7 pages grow the WAL past 30 MB; with
    # them it stays within a few thresholds (~4 MiB each), however steady the writes.
    never, often = tmp_path / "never.db", tmp_path / "often.db"
    for path in (never, often):
        await migrated(path)
    with raw(never) as keep_open, raw(often) as keep_open_too:  # no close-time checkpoint
        keep_open.execute("SELECT 1").fetchall()
        keep_open_too.execute("SELECT 1").fetchall()
        monkeypatch.setattr(sqlite_module, "CHECKPOINT_PAGES", 10**9)
        grown = await fill(never, 1200)
        monkeypatch.undo()  # the default: a checkpoint per ~1000 pages (~4 MiB) written
        bounded = await fill(often, 1200)
    assert grown > 30_000_000
    assert bounded < grown / 2


FORK_CHILD_OK = b"ok"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
async def test_a_forked_child_opens_its_own_connections_and_the_parent_is_untouched(
    db_path: Path,
) -> None:
    async with SqliteStore(db_path) as store:
        await store.save("c1", HELLO)
        await store._call(_ready)  # pyright: ignore[reportPrivateUsage]  # a worker too
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: the inherited connections and thread are dropped
            status = 1
            try:
                os.close(read)

                def child() -> bytes:
                    async def work() -> bytes:
                        assert store._inline is None  # pyright: ignore[reportPrivateUsage]
                        await store.save("from-child", [{"role": "user", "content": "hi"}])
                        assert await store.get("c1") == HELLO
                        await store.aclose()
                        return FORK_CHILD_OK

                    return asyncio.run(work())

                with ThreadPoolExecutor(1) as pool:  # a fresh thread: no running loop there
                    os.write(write, pool.submit(child).result(timeout=20))
                status = 0
            finally:
                os._exit(status)
        os.close(write)
        _, status = await asyncio.to_thread(os.waitpid, pid, 0)
        with os.fdopen(read, "rb") as pipe:
            said = pipe.read()
        assert os.waitstatus_to_exitcode(status) == 0
        assert said == FORK_CHILD_OK
        # the parent's connections still work, and see the child's write
        assert await store.get("from-child") == [{"role": "user", "content": "hi"}]
        await store.save("c1", [{"role": "user", "content": "after"}])
        assert await store.get("c1") == [{"role": "user", "content": "after"}]


async def test_a_very_large_write_goes_to_the_worker_and_reads_back_inline(
    db_path: Path,
) -> None:
    await migrated(db_path)
    huge = [{"role": "user", "content": "y" * (sqlite_module.INLINE_PAGES_MAX * 4096 + 1)}]
    async with SqliteStore(db_path) as store:
        await store.save("small", HELLO)
        before = worker_threads()
        assert store._worker is None  # pyright: ignore[reportPrivateUsage]
        await store.save("huge", huge)
        assert store._worker is not None  # pyright: ignore[reportPrivateUsage]
        assert len(worker_threads() - before) == 1
        assert await store.get("huge") == huge


# -- calls take effect in the order they are made ---------------------------------------------


async def _held_write(
    store: SqliteStore, key: str, value: list[dict[str, str]]
) -> tuple[asyncio.Task[None], threading.Event]:
    """A write of ``value`` under ``key`` that is on the worker and has not run: the worker is
    held by a job of ours until the returned event is set (what a write that met a lock, or a
    large one, looks like to the next call)."""
    gate = threading.Event()

    def job(conn: sqlite3.Connection) -> None:
        gate.wait(10)
        sqlite_module._upsert(key, json.dumps(value), conn)  # pyright: ignore[reportPrivateUsage]

    task = asyncio.ensure_future(store._call(job))  # pyright: ignore[reportPrivateUsage]
    await asyncio.sleep(0)  # its first step ran: the job is queued on the worker
    assert not task.done()
    return task, gate


async def test_a_later_write_never_overtakes_one_still_on_the_worker(db_path: Path) -> None:
    """The agent runtime saves a handle's row fire-and-forget, then again when it suspends:
    the second save must not land first and be overwritten by the older row."""
    await migrated(db_path)
    older = [{"role": "user", "content": "older"}]
    newer = [{"role": "user", "content": "newer"}]
    async with SqliteStore(db_path) as store:
        await store.save("c1", HELLO)  # inline
        first, gate = await _held_write(store, "c1", older)
        second = asyncio.ensure_future(store.save("c1", newer))
        await asyncio.sleep(0)
        gate.set()
        await asyncio.gather(first, second)
        assert await store.get("c1") == newer
    with raw(db_path) as conn:
        (text,) = conn.execute("SELECT messages FROM conversations WHERE id = 'c1'").fetchone()
    assert json.loads(text) == newer


async def test_a_read_sees_a_write_made_before_it_that_is_still_on_the_worker(
    db_path: Path,
) -> None:
    await migrated(db_path)
    written = [{"role": "user", "content": "written"}]
    async with SqliteStore(db_path) as store:
        await store.save("c1", HELLO)
        first, gate = await _held_write(store, "c1", written)
        read = asyncio.ensure_future(store.get("c1"))
        await asyncio.sleep(0)
        gate.set()
        await first
        assert await read == written


async def test_calls_go_inline_again_once_the_worker_has_caught_up(db_path: Path) -> None:
    await migrated(db_path)
    async with SqliteStore(db_path) as store:
        await store.save("c1", HELLO)
        first, gate = await _held_write(store, "c1", HELLO)
        gate.set()
        await first
        worker = store._worker  # pyright: ignore[reportPrivateUsage]
        assert worker is not None
        submitted = worker.submitted
        await store.save("c1", HELLO)
        assert await store.get("c1") == HELLO
        assert worker.submitted == submitted  # both ran inline
