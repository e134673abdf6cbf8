"""`SqliteStore`: conversations, halted runs and agent handle tables in one SQLite file.

The file is opened lazily, in WAL mode with ``synchronous=NORMAL``, a ``busy_timeout`` and
foreign keys on, and brought up to date by the migrations in
`toolnexus.stores.sqlite_schema`.

Two connections, one rule: **the event loop never waits for a lock or a disk flush**.

* The hot operations of a halt and a resume (a transcript read or write, ``save_halt``,
  ``load_halt``, ``claim``, ``take``, ``renew``, ``save_progress``, ``complete``,
  ``release``, ``answer_record``, the agent runtime's handle rows) run *inline*, on a
  connection owned by the event loop's thread, opened with a busy timeout of zero. Each is one
  indexed statement or one short ``BEGIN IMMEDIATE`` transaction: ≈ 5-30 µs of SQL, against
  ≈ 60-170 µs for a hop to a thread and back (measured here). Under WAL with
  ``synchronous=NORMAL`` a commit appends to the WAL without ``fsync``, and this connection
  never checkpoints itself (``wal_autocheckpoint = 0``): the checkpoints — the only flushes —
  are handed to the worker thread once the inline commits wrote about `CHECKPOINT_PAGES`
  pages to the WAL (SQLite's own default threshold, kept off the event loop).
* When the inline attempt meets a lock held by anyone else (``SQLITE_BUSY``: another process,
  or this store's own worker mid-write), nothing was changed, and the same operation is handed
  to the worker, which waits for the lock up to ``busy_timeout_ms``. Everything else — the
  first open and the migrations, ``list_pending``, ``purge``, ``post_answer``, ``expire``,
  ``cancel``, the parked waits and their polling — always runs on the worker: one dedicated
  thread per store, owning its own connection, serialising its jobs, reusing sqlite3's cache
  of prepared statements. A multi-statement operation is one job (see `SqliteStore._call`),
  never a chain of awaits. The worker is a bare thread and queue rather than a
  ``ThreadPoolExecutor``, which measured ≈ 20 % slower per hop.
* **Calls take effect in the order they are made.** While a job handed to the worker has not
  run, every further call queues behind it on the worker instead of running inline: a write
  that met a lock and went to the worker is never overtaken (and then overwritten by its own
  older value) by a later inline write, and a read never misses a write made before it — the
  agent runtime's fire-and-forget handle saves rely on it.

``inline=False`` sends every operation to the worker (for a database on a network file
system, where even an uncontended statement may stall); ``":memory:"`` always does, since a
second connection would open a second, empty database.

The run store (`toolnexus.stores.requests.RunStore` and `AnswerChannel`, the request state
machine T1–T12) lives in the ``halts`` table; its methods are in
`toolnexus.stores.sqlite_runstore`, its jobs in `toolnexus.stores.sqlite_runs`, and the parked
waits in `toolnexus.stores.sqlite_watch`. The agent runtime's handle table
(`toolnexus.agents.RuntimeStore`) lives in ``runtime_handles``, one row per handle: a save
upserts the rows it is given in one transaction, so its cost follows what changed. Parked
runs waiting for a move made by another process are found by polling on the worker thread
between jobs, never by a timer loop on the event loop.

Every sqlite3 failure surfaces as a `StoreError` that names the file and says what happened
(locked, corrupt, cannot open, read-only, …); a failed operation changes nothing. A call that
is cancelled while its job runs still completes on the worker (SQLite cannot be interrupted
safely mid-statement); its result is discarded.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from functools import partial
from queue import Empty, SimpleQueue
from types import TracebackType
from typing import Any, Self, TypeVar

from .._types import Message
from ..errors import StoreError, UsageError
from ._codec import check_id, decode_messages, encode_messages
from ._handlerows import check_runtime_id, decode_handle_row, encode_handle_rows
from .checks import check_seconds
from .sqlite_inbox import SqliteInboxIndex
from .sqlite_runstore import SqliteRunStore
from .sqlite_schema import MIGRATIONS, immediate, migrate, wal_pages
from .sqlite_sessions import SqliteSessions
from .sqlite_watch import AnswerWatch

__all__ = ["CHECKPOINT_PAGES", "INLINE_PAGES_MAX", "SqliteStore"]

CHECKPOINT_PAGES = 1000
"""WAL pages written by inline commits (per database file, in this process, estimated from
what each commit wrote) between two checkpoints, which the worker thread runs
(see `_checkpoint`) so that the event loop never flushes. SQLite's own
``wal_autocheckpoint`` default is the same 1000 pages."""

INLINE_PAGES_MAX = 128
"""A write estimated larger than this many pages (512 KiB: a very long transcript) goes to
the worker thread even when it could run inline: copying it into the WAL would hold the event
loop for a noticeable time."""
_inline_pages: dict[str, int] = {}

# Every open store, so that a forked child can drop what it inherited (see `_after_fork`).
_open_stores: weakref.WeakSet[SqliteStore] = weakref.WeakSet()
# What a forked child inherited (connections, parked waiters): never used again, never
# closed (closing a connection could take the parent's locks or checkpoint its WAL from under
# it), just kept.
_inherited: list[object] = []

T = TypeVar("T")

_Job = tuple[Callable[[], Any], "asyncio.Future[Any] | None", "asyncio.AbstractEventLoop | None"]

_SELECT_CONVERSATION = "SELECT messages FROM conversations WHERE id = ?"
_UPSERT_CONVERSATION = (
    "INSERT INTO conversations (id, messages, updated_at) VALUES (?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET messages = excluded.messages, updated_at = excluded.updated_at"
)
_DELETE_CONVERSATION = "DELETE FROM conversations WHERE id = ?"
_UPSERT_HANDLE = (
    "INSERT INTO runtime_handles (runtime_id, handle_id, data, updated_at) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (runtime_id, handle_id) DO UPDATE SET data = excluded.data,"
    " updated_at = excluded.updated_at"
)
_LOAD_HANDLES = (
    "SELECT handle_id, data FROM runtime_handles WHERE runtime_id = ? ORDER BY handle_id"
)
_DELETE_HANDLES = "DELETE FROM runtime_handles WHERE runtime_id = ?"
# What `_open_inline` checks before it uses a connection: the WAL and the current schema, as
# stamped in the file's header by `migrate` (reading it touches no table: a fresh connection
# reads one page less than with the ledger's ``max(version)``). Two plain statements: the one
# query over ``pragma_journal_mode`` they replaced cost more than both.
_JOURNAL = "PRAGMA journal_mode"
_SCHEMA_VERSION = "PRAGMA user_version"

# Primary result codes (the low byte of an extended code).
_PERM, _BUSY, _LOCKED, _READONLY, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 3, 5, 6, 8, 11, 13, 14, 26


class SqliteStore(SqliteRunStore, SqliteInboxIndex):
    """A `ConversationStore`, `RunStore`, `AnswerChannel` and `RuntimeStore` in one SQLite file.

    The durable default. Any number of processes may open the same file: claims are
    exactly-once across them (SQLite's write lock), and a run parked with
    `wait_for_answer` sees an answer posted by any of them within ``poll_interval``.

    Example:
        >>> import asyncio
        >>> async def demo():
        ...     async with SqliteStore(":memory:") as store:
        ...         await store.save("c1", [{"role": "user", "content": "hi"}])
        ...         return await store.get("c1")
        >>> asyncio.run(demo())
        [{'role': 'user', 'content': 'hi'}]

    Args:
        path: the database file (created if missing; its directory must exist), or
            ``":memory:"`` for a private in-memory database.
        busy_timeout_ms: how long a write waits for another connection's lock before
            failing with `StoreError`.
        clock: the time source for leases, ``answered_at`` and ages (default `time.time`).
        poll_interval: how often, in seconds, parked runs look for answers committed by
            other connections.
        inline: run the short, hot operations on the event loop's thread, handing them to
            the worker only when they meet a lock (the default; see the module docs).
            ``False`` runs every operation on the worker thread.

    Raises:
        UsageError: ``busy_timeout_ms`` is not a non-negative int, or ``poll_interval`` is
            not a positive number.
    """

    __slots__ = (
        "__weakref__",
        "_busy_timeout_ms",
        "_closed",
        "_db",
        "_detach_finalizer",
        "_inline",
        "_inline_ok",
        "_inline_thread",
        "_now",
        "_path",
        "_worker",
    )

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout_ms: int = 5000,
        clock: Callable[[], float] | None = None,
        poll_interval: float = 0.2,
        inline: bool = True,
    ) -> None:
        if (
            isinstance(busy_timeout_ms, bool)
            or not isinstance(busy_timeout_ms, int)  # pyright: ignore[reportUnnecessaryIsInstance]
            or busy_timeout_ms < 0
        ):
            raise UsageError(f"busy_timeout_ms must be an int >= 0, got {busy_timeout_ms!r}")
        interval = check_seconds(poll_interval, "poll_interval", positive=True)
        self._path = os.fspath(path)
        self._busy_timeout_ms = busy_timeout_ms
        self._now = clock or time.time
        self._db = _Database(self._path, self._busy_timeout_ms, AnswerWatch(interval))
        self._worker: _Worker | None = None
        self._detach_finalizer: Callable[[], object] | None = None
        self._closed = False
        self._inline: sqlite3.Connection | None = None
        self._inline_thread = 0
        # False: every operation goes to the worker (asked for, ":memory:", or the inline
        # connection could not be opened on a database the worker opened fine).
        self._inline_ok = bool(inline) and self._path != ":memory:"
        _open_stores.add(self)

    @property
    def path(self) -> str:
        """The database path as given."""
        return self._path

    @property
    def sessions(self) -> SqliteSessions:
        """The approvals inbox's sessions (`toolnexus.stores.sessions`)."""
        return SqliteSessions(self._fast, self._call, self._now)

    def __repr__(self) -> str:
        return f"SqliteStore({self._path!r})"

    async def get(self, id: str) -> list[Message] | None:
        """The transcript stored under ``id``, or ``None``.

        Raises:
            StoreError: the database failed, or the stored row is not a JSON array of
                message objects (it is left as it is).
        """
        key = check_id(id)
        text = await self._fast(partial(_select, key))
        return None if text is None else decode_messages(text, key, self._path)

    async def save(self, id: str, messages: list[Message]) -> None:
        """Store ``messages`` under ``id``, replacing any previous transcript.

        Raises:
            UsageError: ``messages`` is not a list of JSON-serialisable dicts.
            StoreError: the database failed (e.g. locked); the previous transcript stays.
        """
        key = check_id(id)
        text = encode_messages(messages)
        await self._fast(partial(_upsert, key, text), wal_pages(text))

    async def delete(self, id: str) -> bool:
        """Forget ``id``; True when a transcript was deleted."""
        return await self._fast(partial(_delete, check_id(id)))

    # -- the runtime store (handle tables) ------------------------------------------------

    async def save_handles(self, runtime_id: str, rows: list[dict[str, Any]]) -> None:
        """Insert or replace these handle rows of ``runtime_id`` (keyed by ``row["id"]``).

        One hop and one transaction, writing only ``rows``: the cost of a save does not grow
        with the rest of the table. A handle given twice keeps its last row.

        Raises:
            UsageError: ``rows`` is not a list of JSON-serialisable dicts with string ids.
            StoreError: the database failed; nothing changed.
        """
        rid = check_runtime_id(runtime_id)
        encoded = encode_handle_rows(rows)
        if encoded:
            pages = sum(wal_pages(data) for _, data in encoded)
            await self._fast(partial(_save_handles, rid, encoded, self._now()), pages)

    async def load_handles(self, runtime_id: str) -> list[dict[str, Any]]:
        """Every stored handle row of ``runtime_id``, in handle-id order.

        Raises:
            StoreError: the database failed, or a stored row is not a handle's JSON object
                (it is left as it is).
        """
        rid = check_runtime_id(runtime_id)
        found = await self._fast(partial(_load_handles, rid))
        return [decode_handle_row(rid, handle_id, data, self._path) for handle_id, data in found]

    async def delete_handles(self, runtime_id: str) -> bool:
        """Forget the whole handle table of ``runtime_id``; True when rows were deleted."""
        return await self._fast(partial(_delete_handles, check_runtime_id(runtime_id)))

    # -- the hooks of the run store half (`SqliteRunStore`) -------------------------------

    def _watch(self) -> AnswerWatch:
        return self._db.watch

    def _post(self, job: Callable[[sqlite3.Connection], object]) -> None:
        worker = self._worker
        if worker is not None:
            worker.post(partial(self._db.run_if_open, job))

    def _error(self, exc: sqlite3.Error) -> StoreError:
        return _translate(exc, self._path, self._busy_timeout_ms)

    async def aclose(self) -> None:
        """Close the connection and stop the worker thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        inline, self._inline = self._inline, None
        if inline is not None:
            inline.close()
        worker, self._worker = self._worker, None
        if worker is None:
            return
        if self._detach_finalizer is not None:
            self._detach_finalizer()
        try:
            await worker.submit(self._db.close)
        except sqlite3.Error as exc:
            raise _translate(exc, self._path, self._busy_timeout_ms) from exc
        finally:
            worker.stop()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _fast(self, job: Callable[[sqlite3.Connection], T], pages: int = 2) -> T:
        """Run a short ``job(connection)`` inline when possible, else on the worker.

        Inline means on the event loop thread's own connection, which never waits for a lock:
        a job that meets one fails with ``SQLITE_BUSY`` having changed nothing, and is run
        again on the worker, which waits up to ``busy_timeout_ms``. ``pages`` estimates what
        a commit by ``job`` writes to the WAL (for the checkpoint schedule); past
        `INLINE_PAGES_MAX` the job goes to the worker.

        Raises:
            StoreError: the store is closed, or SQLite failed (translated, with the path).
        """
        if self._closed:
            raise StoreError(f"the SQLite store {self._path} is closed")
        worker = self._worker
        if worker is not None and worker.busy:
            # A job handed to the worker before this one (it met a lock, was too large, or
            # is worker-only) has not run yet: run inline, this one could overtake it — a
            # later write landing first and being overwritten, a read missing a write made
            # before it. Calls take effect in the order they were made: queue behind it.
            return await self._call(job)
        conn = self._inline
        if conn is None or self._inline_thread != threading.get_ident():
            conn = await self._open_inline() if self._inline_ok else None
        if pages > INLINE_PAGES_MAX:
            conn = None
        if conn is not None:
            before = conn.total_changes
            try:
                result = job(conn)
            except sqlite3.Error as exc:
                if not _is_busy(exc):
                    raise _translate(exc, self._path, self._busy_timeout_ms) from exc
            else:
                if conn.total_changes != before:
                    self._committed(pages)
                return result
        return await self._call(job)

    async def _open_inline(self) -> sqlite3.Connection | None:
        """This thread's inline connection, opened now if need be; ``None`` to use the worker.

        The inline connection is opened only on a database whose schema is current: the
        first open and the migrations (which wait for locks) are the worker's.
        """
        if self._inline is not None:  # it belongs to another thread
            return None
        conn = _open_inline(self._path)
        if conn is None:
            await self._call(_ready)  # open + migrate on the worker (or raise why it cannot)
            if self._inline is not None or self._closed:
                return None
            conn = _open_inline(self._path)
            if conn is None:
                self._inline_ok = False
                return None
        self._inline, self._inline_thread = conn, threading.get_ident()
        return conn

    def _committed(self, pages: int) -> None:
        """Count an inline commit's WAL pages; past `CHECKPOINT_PAGES`, checkpoint on the worker."""
        count = _inline_pages.get(self._path, 0) + pages
        if count < CHECKPOINT_PAGES:
            _inline_pages[self._path] = count
            return
        _inline_pages[self._path] = 0
        self._ensure_worker().post(partial(self._db.run, _checkpoint))

    def _forget_after_fork(self) -> None:
        """In a forked child: drop the parent's connections and worker thread (which did
        not survive the fork); the next call opens the child's own."""
        _inherited.extend((self._inline, self._db))
        self._inline = None
        self._db = _Database(self._path, self._busy_timeout_ms, self._db.watch.renewed())
        if self._detach_finalizer is not None:
            self._detach_finalizer()
            self._detach_finalizer = None
        self._worker = None

    def _ensure_worker(self) -> _Worker:
        worker = self._worker
        if worker is None:
            worker = self._worker = _Worker(self._db)
            # An abandoned store releases its thread when collected; at interpreter exit the
            # daemon thread simply dies (WAL keeps the file consistent).
            finalizer = weakref.finalize(self, worker.shutdown)
            finalizer.atexit = False
            self._detach_finalizer = finalizer.detach
        return worker

    async def _call(self, job: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``job(connection)`` on the worker thread and return its result.

        The connection is opened (and migrated) on first use. ``job`` should do all the
        statements of one logical operation (wrap writes that belong together in
        `toolnexus.stores.sqlite_schema.immediate`), so that each operation costs one hop.

        Raises:
            StoreError: the store is closed, or SQLite failed (translated, with the path).
        """
        if self._closed:
            raise StoreError(f"the SQLite store {self._path} is closed")
        worker = self._ensure_worker()
        try:
            return await worker.submit(partial(self._db.run, job))
        except sqlite3.Error as exc:
            raise _translate(exc, self._path, self._busy_timeout_ms) from exc


def _select(id: str, conn: sqlite3.Connection) -> object:
    row = conn.execute(_SELECT_CONVERSATION, (id,)).fetchone()
    return None if row is None else row[0]


def _upsert(id: str, text: str, conn: sqlite3.Connection) -> None:
    conn.execute(_UPSERT_CONVERSATION, (id, text, time.time()))


def _delete(id: str, conn: sqlite3.Connection) -> bool:
    return conn.execute(_DELETE_CONVERSATION, (id,)).rowcount > 0


def _save_handles(
    runtime_id: str, rows: list[tuple[str, str]], now: float, conn: sqlite3.Connection
) -> None:
    with immediate(conn):
        conn.executemany(_UPSERT_HANDLE, [(runtime_id, hid, data, now) for hid, data in rows])


def _load_handles(runtime_id: str, conn: sqlite3.Connection) -> list[tuple[Any, Any]]:
    return conn.execute(_LOAD_HANDLES, (runtime_id,)).fetchall()


def _delete_handles(runtime_id: str, conn: sqlite3.Connection) -> bool:
    return conn.execute(_DELETE_HANDLES, (runtime_id,)).rowcount > 0


def _ready(conn: sqlite3.Connection) -> None:
    """A job that does nothing: running it opens (and migrates) the worker's connection."""


def _checkpoint(conn: sqlite3.Connection) -> None:
    """Checkpoint the WAL (on the worker), so that it starts over instead of growing.

    PASSIVE first: it copies what it can without blocking anyone, so inline commits go on at
    full speed meanwhile. The WAL starts over only once a checkpoint has copied *every*
    frame, and commits made while one runs are not in its count; so a second, short pass
    copies those. When that still leaves frames behind, or the WAL has plainly not started
    over since the last checkpoint (a steady stream of commits lands during every pass), a
    RESTART finishes the job: it holds the write lock while it copies the last frames
    (inline writers get ``SQLITE_BUSY`` meanwhile and queue here behind it), then lets the
    WAL start over.
    """
    try:
        busy, frames, copied = _wal_checkpoint(conn, "PASSIVE")
        if not busy and frames and copied == frames:
            busy, frames, copied = _wal_checkpoint(conn, "PASSIVE")
        if busy or copied < frames or frames >= 2 * CHECKPOINT_PAGES:
            _wal_checkpoint(conn, "RESTART")
    except sqlite3.Error:  # failing now: the next one catches up
        return


def _wal_checkpoint(conn: sqlite3.Connection, mode: str) -> tuple[bool, int, int]:
    """``(busy, frames in the WAL, frames copied)``, as ``PRAGMA wal_checkpoint`` says."""
    rows = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchall()
    busy, frames, copied = rows[0] if rows else (1, 0, 0)
    return bool(busy), int(frames), int(copied)


def _open_inline(path: str) -> sqlite3.Connection | None:
    """A connection for the event loop's thread, or ``None`` when the database is not ready
    for one (missing, not yet in WAL mode or migrated, locked, unreadable): the worker opens
    it first (and reports what is wrong)."""
    try:
        conn = sqlite3.connect(
            path, timeout=0, isolation_level=None, cached_statements=256, check_same_thread=False
        )
    except sqlite3.Error:
        return None
    try:  # (``timeout=0`` is the busy timeout)
        if conn.execute(_JOURNAL).fetchall() != [("wal",)] or conn.execute(
            _SCHEMA_VERSION
        ).fetchall() != [(len(MIGRATIONS),)]:
            conn.close()
            return None
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA wal_autocheckpoint = 0")
    except sqlite3.Error:
        conn.close()
        return None
    return conn


def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and (code & 0xFF) in (_BUSY, _LOCKED)


def _after_fork() -> None:
    for store in list(_open_stores):
        store._forget_after_fork()  # pyright: ignore[reportPrivateUsage]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


class _Database:
    """The store's one connection and its parked waiters. Methods run on the worker only."""

    __slots__ = ("busy_timeout_ms", "conn", "path", "watch")

    def __init__(self, path: str, busy_timeout_ms: int, watch: AnswerWatch) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self.watch = watch
        self.conn: sqlite3.Connection | None = None

    def run(self, job: Callable[[sqlite3.Connection], T]) -> T:
        conn = self.conn
        if conn is None:
            conn = self.conn = self._open()
        return job(conn)

    def run_if_open(self, job: Callable[[sqlite3.Connection], object]) -> None:
        """Run ``job`` unless the connection is closed (a wake-up posted as the store
        closes needs no new connection: nobody waits any more)."""
        if self.conn is not None:
            job(self.conn)

    def _open(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path,
            timeout=self.busy_timeout_ms / 1000,
            isolation_level=None,
            cached_statements=256,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {self.busy_timeout_ms}")
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            migrate(conn, MIGRATIONS, where=self.path)
        except BaseException:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        path = self.path
        self.watch.fail(lambda: StoreError(f"the SQLite store {path} was closed during the wait"))
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.close()


class _Worker:
    """One daemon thread running submitted jobs in order and resolving asyncio futures."""

    __slots__ = ("_db", "_jobs", "finished", "submitted")

    def __init__(self, db: _Database) -> None:
        self._db = db
        self._jobs: SimpleQueue[_Job | None] = SimpleQueue()
        self.submitted = 0
        """Jobs submitted with `submit` (counted on the event loop's thread only)."""
        self.finished = 0
        """Of those, the ones that have run (counted on the worker's thread only)."""
        # Daemon: an unclosed store must not keep the interpreter alive at exit (WAL makes an
        # abandoned connection safe); `shutdown` runs when the store is garbage-collected.
        threading.Thread(
            target=_serve, args=(self, self._jobs, db), name="toolnexus-sqlite", daemon=True
        ).start()

    @property
    def busy(self) -> bool:
        """A submitted job has not run yet (or is running): an inline job now could overtake
        it. (Each counter has one writer, so no lock is needed; a job that finished a moment
        ago may still read as busy, which only costs one hop.)"""
        return self.submitted != self.finished

    def submit(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self.submitted += 1
        self._jobs.put((fn, future, loop))
        return future

    def post(self, fn: Callable[[], object]) -> None:
        """Run ``fn`` on the worker without waiting for it (its errors are dropped)."""
        self._jobs.put((fn, None, None))

    def stop(self) -> None:
        self._jobs.put(None)

    def shutdown(self) -> None:
        """Close the connection on its own thread, then stop (for an unclosed store)."""
        self._jobs.put((self._db.close, None, None))
        self.stop()


def _serve(worker: _Worker, jobs: SimpleQueue[_Job | None], db: _Database) -> None:
    while True:
        # While runs are parked, the wait for the next job doubles as the poll timer.
        wait = db.watch.due_in()
        if wait is not None and wait <= 0:
            try:
                db.watch.poll(db.conn)
            except Exception as exc:  # never let a poll kill the worker
                db.watch.fail(lambda exc=exc: exc)
            continue
        try:
            item = jobs.get(True, wait)
        except Empty:
            continue
        if item is None:
            break
        fn, future, loop = item
        try:
            result = fn()
        except BaseException as exc:
            if future is not None and loop is not None:
                worker.finished += 1
                _deliver(loop, _reject, future, exc)
        else:
            if future is not None and loop is not None:
                worker.finished += 1
                _deliver(loop, _resolve, future, result)


def _deliver(
    loop: asyncio.AbstractEventLoop,
    settle: Callable[[asyncio.Future[Any], Any], None],
    future: asyncio.Future[Any],
    value: Any,
) -> None:
    with contextlib.suppress(RuntimeError):  # the caller's loop closed: nobody is waiting
        loop.call_soon_threadsafe(settle, future, value)


def _resolve(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():
        future.set_result(result)


def _reject(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


def _translate(exc: sqlite3.Error, path: str, busy_timeout_ms: int) -> StoreError:
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    where = f"the SQLite database {path}"
    if primary in (_BUSY, _LOCKED):
        text = (
            f"{where} is locked by another connection (waited {busy_timeout_ms} ms); "
            "nothing was changed"
        )
    elif primary in (_CORRUPT, _NOTADB):
        text = f"{path} is not a SQLite database or is corrupt ({exc}); it was left as it is"
    elif primary == _CANTOPEN:
        text = f"cannot open {where} ({exc}); check that its directory exists and is writable"
    elif primary in (_READONLY, _PERM):
        text = f"{where} cannot be written ({exc}); check its permissions"
    elif primary == _FULL:
        text = f"{where} cannot grow: the disk is full ({exc})"
    else:
        text = f"{where} failed: {exc}"
    return StoreError(text)
