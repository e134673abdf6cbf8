"""The PostgreSQL store's inbox sessions (`toolnexus.stores.sessions.SessionStore`), in
``toolnexus_inbox_sessions`` (migration 11). Each operation is one statement on a pooled
connection; the key column holds the sha256's bytes, the user's name is ``BYTEA`` as every user
string (see `toolnexus.stores.postgres_schema`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, LiteralString

from .postgres_schema import from_bytea
from .sessions import SessionRecord, check_current, check_key, new_record

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PostgresSessions"]

# The insert deletes the expired rows in the same statement (a data-modifying CTE).
_OPEN: LiteralString = (
    "WITH gone AS (DELETE FROM toolnexus_inbox_sessions WHERE expires_at <= %s)"
    " INSERT INTO toolnexus_inbox_sessions (key, user_name, tag, created_at, expires_at)"
    " VALUES (%s, %s, %s, %s, %s)"
)
_FIND: LiteralString = (
    "SELECT user_name, tag, created_at, expires_at FROM toolnexus_inbox_sessions"
    " WHERE key = %s AND expires_at > %s"
)
_END: LiteralString = "DELETE FROM toolnexus_inbox_sessions WHERE key = %s"
_PRUNE: LiteralString = (
    "DELETE FROM toolnexus_inbox_sessions AS s WHERE s.expires_at <= %s OR NOT EXISTS"
    " (SELECT 1 FROM unnest(%s::bytea[], %s::text[]) AS u (user_name, tag)"
    " WHERE u.user_name = s.user_name AND u.tag = s.tag)"
)


class PostgresSessions:
    """`PostgresStore.sessions`.

    Args:
        connection: the store's pooled autocommit connections (``PostgresStore._connection``).
        now: the store's clock.
    """

    __slots__ = ("_connection", "_now")

    def __init__(
        self,
        connection: Callable[[], AbstractAsyncContextManager[AsyncConnection[Any]]],
        now: Callable[[], float],
    ) -> None:
        self._connection = connection
        self._now = now

    async def _run(self, sql: LiteralString, args: tuple[object, ...]) -> int:
        """Run one statement; the rows it changed."""
        async with self._connection() as conn:
            cur = await conn.execute(sql, args)
            return cur.rowcount

    async def open(self, key: str, *, user: str, tag: str, lifetime: float) -> SessionRecord:
        """Record a new session (see `SessionStore.open`)."""
        r = new_record(key, user, tag, self._now(), lifetime)
        row = (bytes.fromhex(r.key), r.user.encode(), r.tag, r.created_at, r.expires_at)
        await self._run(_OPEN, (r.created_at, *row))
        return r

    async def find(self, key: str) -> SessionRecord | None:
        """The live session under ``key`` (see `SessionStore.find`)."""
        checked = check_key(key)
        async with self._connection() as conn:
            cur = await conn.execute(_FIND, (bytes.fromhex(checked), self._now()))
            row = await cur.fetchone()
        if row is None:
            return None
        user, tag, created_at, expires_at = row
        return SessionRecord(
            key=checked,
            user=str(from_bytea(user)),
            tag=str(tag),
            created_at=float(created_at),
            expires_at=float(expires_at),
        )

    async def end(self, key: str) -> bool:
        """End one session (see `SessionStore.end`)."""
        return await self._run(_END, (bytes.fromhex(check_key(key)),)) > 0

    async def prune(self, current: Mapping[str, str]) -> int:
        """End the sessions of unknown users, other tokens, or past their end."""
        tags = check_current(current)
        names = [name.encode() for name in tags]
        return await self._run(_PRUNE, (self._now(), names, list(tags.values())))
