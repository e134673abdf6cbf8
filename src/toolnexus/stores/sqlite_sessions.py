"""The SQLite store's inbox sessions (`toolnexus.stores.sessions.SessionStore`), in the
``inbox_sessions`` table (migration 9).

Each is one short statement or transaction, run inline like the store's other hot operations
(``SqliteStore._fast``: every request of a signed-in person looks its session up).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from .sessions import SessionRecord, check_current, check_key, new_record
from .sqlite_schema import immediate

__all__ = ["SqliteSessions"]

T = TypeVar("T")
Run = Callable[[Callable[[sqlite3.Connection], Any]], Awaitable[Any]]

_INSERT = (
    "INSERT INTO inbox_sessions (key, user_name, tag, created_at, expires_at)"
    " VALUES (?, ?, ?, ?, ?)"
)
_EXPIRED = "DELETE FROM inbox_sessions WHERE expires_at <= ?"
_FIND = (
    "SELECT user_name, tag, created_at, expires_at FROM inbox_sessions"
    " WHERE key = ? AND expires_at > ?"
)
_END = "DELETE FROM inbox_sessions WHERE key = ?"


def _open(record: SessionRecord, conn: sqlite3.Connection) -> None:
    with immediate(conn):
        conn.execute(_EXPIRED, (record.created_at,))
        conn.execute(
            _INSERT,
            (record.key, record.user, record.tag, record.created_at, record.expires_at),
        )


def _find(key: str, now: float, conn: sqlite3.Connection) -> tuple[Any, ...] | None:
    return conn.execute(_FIND, (key, now)).fetchone()


def _end(key: str, conn: sqlite3.Connection) -> bool:
    return conn.execute(_END, (key,)).rowcount > 0


def _prune(current: dict[str, str], now: float, conn: sqlite3.Connection) -> int:
    with immediate(conn):
        gone = conn.execute(_EXPIRED, (now,)).rowcount
        rows = conn.execute("SELECT key, user_name, tag FROM inbox_sessions").fetchall()
        stale = [(key,) for key, user, tag in rows if current.get(user) != tag]
        conn.executemany(_END, stale)
    return gone + len(stale)


class SqliteSessions:
    """`SqliteStore.sessions`: the jobs above, run by the store.

    Args:
        fast: the store's inline runner (``SqliteStore._fast``).
        call: the store's worker runner (``SqliteStore._call``).
        now: the store's clock.
    """

    __slots__ = ("_call", "_fast", "_now")

    def __init__(self, fast: Run, call: Run, now: Callable[[], float]) -> None:
        self._fast = fast
        self._call = call
        self._now = now

    async def open(self, key: str, *, user: str, tag: str, lifetime: float) -> SessionRecord:
        """Record a new session (see `SessionStore.open`)."""
        record = new_record(key, user, tag, self._now(), lifetime)
        await self._fast(lambda conn: _open(record, conn))
        return record

    async def find(self, key: str) -> SessionRecord | None:
        """The live session under ``key`` (see `SessionStore.find`)."""
        checked, now = check_key(key), self._now()
        row = await self._fast(lambda conn: _find(checked, now, conn))
        if row is None:
            return None
        user, tag, created_at, expires_at = row
        return SessionRecord(
            key=checked,
            user=str(user),
            tag=str(tag),
            created_at=float(created_at),
            expires_at=float(expires_at),
        )

    async def end(self, key: str) -> bool:
        """End one session (see `SessionStore.end`)."""
        checked = check_key(key)
        return bool(await self._fast(lambda conn: _end(checked, conn)))

    async def prune(self, current: Mapping[str, str]) -> int:
        """End the sessions of unknown users, other tokens, or past their end."""
        tags, now = check_current(current), self._now()
        return int(await self._call(lambda conn: _prune(tags, now, conn)))
