"""The SQLite run store's jobs: each function is one logical operation, run on the worker.

`SqliteStore` hands each of these to its worker thread in one hop (see
`toolnexus.stores.sqlite`); everything here runs on that thread with the store's one
connection. Writes that read before they write run in one ``BEGIN IMMEDIATE`` transaction, so
two processes racing on a request serialise on SQLite's write lock and exactly one wins.

`AnswerWatch` is the SQLite side of `toolnexus.stores.runs.AnswerChannel`: the requests that
parked runs wait on, kept on the worker thread. An answer posted through this store wakes its
waiters at once; an answer posted by another connection (another process) is found by
polling, which the worker does between jobs every ``interval`` seconds while anyone waits. A
poll costs one ``PRAGMA data_version`` read unless another connection committed since the
last poll, so thousands of parked runs cost next to nothing while nothing happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from ..errors import AnswerConflict, UnknownRequest
from ._runrows import HaltRow, stored_digest
from .checks import conflict
from .sqlite_schema import immediate

__all__ = [
    "AnswerRow",
    "AnswerWatch",
    "answer_row",
    "claim",
    "complete",
    "list_pending",
    "load_halt",
    "post_answer",
    "release",
    "save_halt",
]

AnswerRow = tuple[Any, Any, Any, Any]
"""``(answer, answered_at, answered_by, digest)`` as stored."""

_SAVE_HALT = (
    "INSERT INTO halts (request_id, status, checkpoint, kind, tool, conversation_id,"
    " created_at, expires_at, prompt) VALUES (?, 'pending', ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (request_id) DO UPDATE SET checkpoint = excluded.checkpoint,"
    " kind = excluded.kind, tool = excluded.tool, conversation_id = excluded.conversation_id,"
    " created_at = excluded.created_at, expires_at = excluded.expires_at,"
    " prompt = excluded.prompt"
)
# Replacing a stored halt (a resume recording the calls it resolved) is a plain UPDATE: on a
# fresh connection it prepares in a fraction of the upsert's time, and it runs faster too.
_REPLACE_HALT = (
    "UPDATE halts SET checkpoint = ?, kind = ?, tool = ?, conversation_id = ?,"
    " created_at = ?, expires_at = ?, prompt = ? WHERE request_id = ?"
)
_LOAD_HALT = "SELECT checkpoint FROM halts WHERE request_id = ?"
# One statement takes a request: it inserts a row for an unknown request, or updates a row
# that is pending or whose claim's lease ran out; any other row is left alone (0 changes).
_TAKE = (
    "INSERT INTO halts (request_id, status, answer, answered_by, digest, lease_until,"
    " answered_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (request_id) DO UPDATE SET status = excluded.status,"
    " answer = excluded.answer, answered_by = excluded.answered_by,"
    " digest = excluded.digest, lease_until = excluded.lease_until,"
    " answered_at = excluded.answered_at"
    " WHERE halts.status = 'pending' OR (halts.status = 'claimed' AND halts.lease_until <= ?)"
)
# The common claim: a pending row (or one whose lease ran out) becomes claimed. A plain
# UPDATE, cheaper than the upsert above, which only a miss needs.
_CLAIM_PENDING = (
    "UPDATE halts SET status = 'claimed', answer = ?, answered_by = ?, digest = ?,"
    " lease_until = ?, answered_at = NULL WHERE request_id = ?"
    " AND (status = 'pending' OR (status = 'claimed' AND lease_until <= ?))"
)
_HOLDER = "SELECT answered_by, status, lease_until FROM halts WHERE request_id = ?"
_COMPLETE = (
    "UPDATE halts SET status = 'answered', answered_at = coalesce(answered_at, ?),"
    " lease_until = NULL, checkpoint = NULL WHERE request_id = ?"
)
_RELEASE_BARE = (
    "DELETE FROM halts WHERE request_id = ? AND status = 'claimed' AND checkpoint IS NULL"
)
_RELEASE = (
    "UPDATE halts SET status = 'pending', lease_until = NULL, answer = NULL,"
    " answered_by = NULL, digest = '' WHERE request_id = ? AND status = 'claimed'"
)
_ANSWER = (
    "SELECT answer, answered_at, answered_by, digest FROM halts"
    " WHERE request_id = ? AND status = 'answered' AND answer IS NOT NULL"
)
_PENDING = (
    "SELECT request_id, kind, prompt, tool, conversation_id, created_at, expires_at"
    " FROM halts WHERE status = 'pending' AND checkpoint IS NOT NULL"
)
_ANSWERED_AMONG = (
    "SELECT request_id, answer, answered_at, answered_by, digest FROM halts"
    " WHERE status = 'answered' AND answer IS NOT NULL AND request_id IN ({})"
)
_CHUNK = 500  # well under SQLite's bound-parameter limit


def save_halt(row: HaltRow, conn: sqlite3.Connection) -> None:
    if conn.execute(_REPLACE_HALT, (*row[1:], row[0])).rowcount == 0:
        conn.execute(_SAVE_HALT, row)  # new (the upsert: a racing insert is replaced)


def load_halt(request_id: str, conn: sqlite3.Connection) -> object:
    found = conn.execute(_LOAD_HALT, (request_id,)).fetchone()
    return None if found is None else found[0]


def claim(
    request_id: str,
    answer: str,
    answered_by: str | None,
    digest: str,
    now: float,
    lease_s: float,
    conn: sqlite3.Connection,
) -> None:
    # One statement, atomic on its own: the winner's path is a single commit.
    pending = (answer, answered_by, digest, now + lease_s, request_id, now)
    if conn.execute(_CLAIM_PENDING, pending).rowcount == 1:
        return
    values = (request_id, "claimed", answer, answered_by, digest, now + lease_s, None, now)
    # Lost (or no row could be taken): look at the holder and try once more in one
    # transaction, so the conflict names a consistent holder — or the take succeeds after
    # all, if the holder gave the request back in between.
    with immediate(conn):
        if conn.execute(_TAKE, values).rowcount == 0:
            raise _conflict(conn, request_id)


def post_answer(
    watch: AnswerWatch,
    where: str,
    request_id: str,
    answer: str,
    answered_by: str | None,
    digest: str | None,
    now: float,
    conn: sqlite3.Connection,
) -> None:
    with immediate(conn):
        if digest is None:
            digest = stored_digest(load_halt(request_id, conn), request_id, where)
        values = (request_id, "answered", answer, answered_by, digest, None, now, now)
        if conn.execute(_TAKE, values).rowcount == 0:
            raise _conflict(conn, request_id)
    watch.wake(conn, request_id)


def complete(request_id: str, now: float, conn: sqlite3.Connection) -> None:
    """Mark the request answered (its waiters are woken separately, on the worker)."""
    if conn.execute(_COMPLETE, (now, request_id)).rowcount == 0:
        raise UnknownRequest(f'no halted run waits on request "{request_id}"')


def release(request_id: str, conn: sqlite3.Connection) -> None:
    with immediate(conn):
        conn.execute(_RELEASE_BARE, (request_id,))
        conn.execute(_RELEASE, (request_id,))


def answer_row(request_id: str, conn: sqlite3.Connection) -> AnswerRow | None:
    return conn.execute(_ANSWER, (request_id,)).fetchone()


def list_pending(
    kind: str | None,
    tool: str | None,
    conversation_id: str | None,
    older_than: float | None,
    newer_than: float | None,
    limit: int,
    now: float,
    conn: sqlite3.Connection,
) -> list[tuple[Any, ...]]:
    sql = [_PENDING]
    args: list[object] = []
    for column, value in (("kind", kind), ("tool", tool), ("conversation_id", conversation_id)):
        if value is not None:
            sql.append(f" AND {column} = ?")
            args.append(value)
    # The same float arithmetic as the in-memory store, so ages agree to the last bit.
    if older_than is not None:
        sql.append(" AND ? - created_at >= ?")
        args += (now, older_than)
    if newer_than is not None:
        sql.append(" AND ? - created_at <= ?")
        args += (now, newer_than)
    sql.append(" ORDER BY created_at, request_id LIMIT ?")
    args.append(limit)
    return conn.execute("".join(sql), args).fetchall()


def _conflict(conn: sqlite3.Connection, request_id: str) -> AnswerConflict:
    found = conn.execute(_HOLDER, (request_id,)).fetchone()
    if found is None:
        return conflict(request_id, None)
    who, status, lease_until = found
    return conflict(request_id, who if isinstance(who, str) else None, status, lease_until)


Waiter = tuple["asyncio.Future[Any]", asyncio.AbstractEventLoop]


class AnswerWatch:
    """The requests parked runs wait on. Every method but `waiting` runs on the worker thread
    only."""

    __slots__ = ("_next_poll", "_version", "_waiters", "interval")

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._waiters: dict[str, list[Waiter]] = {}
        self._version: int | None = None
        self._next_poll = 0.0

    def add(
        self,
        request_id: str,
        future: asyncio.Future[Any],
        loop: asyncio.AbstractEventLoop,
        conn: sqlite3.Connection,
    ) -> AnswerRow | None:
        """The answer when there is one already; else park ``future`` until it arrives."""
        found = answer_row(request_id, conn)
        if found is not None:
            return found
        if not self._waiters:
            self._next_poll = time.monotonic() + self.interval
        self._waiters.setdefault(request_id, []).append((future, loop))
        return None

    def remove(self, request_id: str, future: asyncio.Future[Any]) -> None:
        waiters = self._waiters.get(request_id)
        if waiters is None:
            return
        waiters[:] = [w for w in waiters if w[0] is not future]
        if not waiters:
            del self._waiters[request_id]

    def renewed(self) -> AnswerWatch:
        """An empty watch with the same polling interval (for a forked child)."""
        return AnswerWatch(self.interval)

    def waiting(self) -> bool:
        """Whether any run is parked (a plain read, safe from any thread)."""
        return bool(self._waiters)

    def due_in(self) -> float | None:
        """Seconds until the next poll is due; ``None`` while nobody waits."""
        if not self._waiters:
            return None
        return self._next_poll - time.monotonic()

    def wake(self, conn: sqlite3.Connection, request_id: str) -> None:
        """Deliver ``request_id``'s answer to its waiters (after a local post/complete)."""
        if request_id in self._waiters:
            found = answer_row(request_id, conn)
            if found is not None:
                self._deliver(request_id, found)

    def poll(self, conn: sqlite3.Connection | None) -> None:
        """Look for answers committed by other connections since the last poll."""
        self._next_poll = time.monotonic() + self.interval
        if conn is None or not self._waiters:
            return
        try:
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            if version == self._version:
                return
            self._version = version
            ids = list(self._waiters)
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                sql = _ANSWERED_AMONG.format(", ".join("?" * len(chunk)))
                for request_id, *found in conn.execute(sql, chunk).fetchall():
                    self._deliver(request_id, (found[0], found[1], found[2], found[3]))
        except sqlite3.Error as exc:
            self.fail(lambda exc=exc: exc)

    def fail(self, error: Callable[[], BaseException]) -> None:
        """Wake every waiter with a fresh ``error()`` (the database failed, the store closed)."""
        waiters, self._waiters = self._waiters, {}
        for parked in waiters.values():
            for future, loop in parked:
                _settle(loop, future.set_exception, future, error())

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
