"""`AnswerWatch`: the SQLite side of `toolnexus.stores.requests.AnswerChannel`.

The runs parked on a SQLite store, kept on its worker thread: those waiting for one request
to leave ``pending`` (`SqliteStore.wait_for_answer`), and workers waiting for an answer to be
queued (`SqliteStore.wait_for_queued`). A move made through this store wakes them at once;
one committed by another connection (another process) is found by polling, which the worker
does between jobs every ``interval`` seconds while anyone waits. A poll costs one
``PRAGMA data_version`` read unless another connection committed since the last poll, so
thousands of parked runs cost next to nothing while nothing happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Callable
from typing import Any

__all__ = ["HAS_RECORD", "RECORD_COLUMNS", "AnswerRow", "AnswerWatch", "answer_row"]

RECORD_COLUMNS = (
    "answer, answered_at, answered_by, digest, status, recorded, lease_until, settled_at, outcome,"
    " original, problem, flagged_at, holder"
)
"""The columns an `AnswerRecord` is built from, in `AnswerRow` order."""

HAS_RECORD = "answer IS NOT NULL AND status <> 'pending' AND (status <> 'claimed' OR recorded = 1)"
"""A row that has left ``pending``: answered, taken, settled. A claim made with its own
answer (T4) is not: that answer is recorded only when the run completes. No clock in it, so
a parked run is woken by a write, never by time passing."""

AnswerRow = tuple[Any, Any, Any, Any, Any, Any, Any, Any, Any, Any, Any, Any, Any]
"""``(answer, answered_at, answered_by, digest, status, recorded, lease_until, settled_at,
outcome, original, problem, flagged_at, holder)`` as stored."""

_ANSWER = f"SELECT {RECORD_COLUMNS} FROM halts WHERE request_id = ? AND {HAS_RECORD}"
_ANSWERED_AMONG = (
    f"SELECT request_id, {RECORD_COLUMNS} FROM halts WHERE {HAS_RECORD} AND request_id IN ({{}})"
)
_CHUNK = 500  # well under SQLite's bound-parameter limit

Waiter = tuple["asyncio.Future[Any]", asyncio.AbstractEventLoop]


def answer_row(request_id: str, conn: sqlite3.Connection) -> AnswerRow | None:
    """The record columns of ``request_id`` once it has left ``pending``, else ``None``."""
    return conn.execute(_ANSWER, (request_id,)).fetchone()


class AnswerWatch:
    """The parked runs and workers. Every method but `waiting` runs on the worker thread only."""

    __slots__ = ("_next_poll", "_queue", "_version", "_waiters", "interval")

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._waiters: dict[str, list[Waiter]] = {}
        self._queue: list[Waiter] = []
        self._version: int | None = None
        self._next_poll = 0.0

    def add(
        self,
        request_id: str,
        future: asyncio.Future[Any],
        loop: asyncio.AbstractEventLoop,
        conn: sqlite3.Connection,
    ) -> AnswerRow | None:
        """The row when it has left ``pending`` already; else park ``future`` until it does."""
        found = answer_row(request_id, conn)
        if found is not None:
            return found
        self._start_polling()
        self._waiters.setdefault(request_id, []).append((future, loop))
        return None

    def add_queued(self, future: asyncio.Future[Any], loop: asyncio.AbstractEventLoop) -> None:
        """Park ``future`` until an answer may have been queued (resolved with ``None``)."""
        self._start_polling()
        self._queue.append((future, loop))

    def remove(self, request_id: str, future: asyncio.Future[Any]) -> None:
        waiters = self._waiters.get(request_id)
        if waiters is None:
            return
        waiters[:] = [w for w in waiters if w[0] is not future]
        if not waiters:
            del self._waiters[request_id]

    def remove_queued(self, future: asyncio.Future[Any]) -> None:
        self._queue[:] = [w for w in self._queue if w[0] is not future]

    def renewed(self) -> AnswerWatch:
        """An empty watch with the same polling interval (for a forked child)."""
        return AnswerWatch(self.interval)

    def waiting(self) -> bool:
        """Whether anyone is parked (a plain read, safe from any thread)."""
        return bool(self._waiters or self._queue)

    def due_in(self) -> float | None:
        """Seconds until the next poll is due; ``None`` while nobody waits."""
        if not self.waiting():
            return None
        return self._next_poll - time.monotonic()

    def wake(self, conn: sqlite3.Connection, request_id: str) -> None:
        """Deliver ``request_id``'s row to its waiters (after a move made through this store)."""
        if request_id in self._waiters:
            found = answer_row(request_id, conn)
            if found is not None:
                self._deliver(request_id, found)

    def wake_queued(self) -> None:
        """Resolve every worker waiting for the queue (an answer was queued here)."""
        queue, self._queue = self._queue, []
        for future, loop in queue:
            _settle(loop, future.set_result, future, None)

    def poll(self, conn: sqlite3.Connection | None) -> None:
        """Look for moves committed by other connections since the last poll.

        Any commit by another connection resolves the workers waiting for the queue (a
        spurious return is harmless: they look with ``take``); the runs parked on a request
        get its row once it has left ``pending``.
        """
        self._next_poll = time.monotonic() + self.interval
        if conn is None or not self.waiting():
            return
        try:
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            if version == self._version:
                return
            self._version = version
            self.wake_queued()
            ids = list(self._waiters)
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                sql = _ANSWERED_AMONG.format(", ".join("?" * len(chunk)))
                for row in conn.execute(sql, chunk).fetchall():
                    self._deliver(row[0], row[1:])
        except sqlite3.Error as exc:
            self.fail(lambda exc=exc: exc)

    def fail(self, error: Callable[[], BaseException]) -> None:
        """Wake everyone with a fresh ``error()`` (the database failed, the store closed)."""
        waiters, self._waiters = self._waiters, {}
        queue, self._queue = self._queue, []
        for parked in (*waiters.values(), queue):
            for future, loop in parked:
                _settle(loop, future.set_exception, future, error())

    def _start_polling(self) -> None:
        if not self.waiting():
            self._next_poll = time.monotonic() + self.interval

    def _deliver(self, request_id: str, found: AnswerRow) -> None:
        for future, loop in self._waiters.pop(request_id, ()):
            _settle(loop, future.set_result, future, found)


def _settle(
    loop: asyncio.AbstractEventLoop,
    setter: Callable[[Any], None],
    future: asyncio.Future[Any],
    value: object,
) -> None:
    def settle() -> None:
        if not future.done():
            setter(value)

    with contextlib.suppress(RuntimeError):  # that loop is closed: nobody is waiting
        loop.call_soon_threadsafe(settle)
