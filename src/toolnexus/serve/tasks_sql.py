"""A2A tasks in the same database as the runs: SQLite (``a2a_tasks``, migration 5 of
`toolnexus.stores.sqlite_schema`) and Postgres (``toolnexus_a2a_tasks``, migration 5 of
`toolnexus.stores.postgres_schema`).

Each wraps the store the served client already uses and runs its statements on that store's
own connections (the SQLite store's inline connection and worker; the Postgres pool), so a task
and the run it waits on live in one database: a new serving process finds both.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, cast

from .tasks import TaskStore, _checked, _context, task_state  # pyright: ignore[reportPrivateUsage]

if TYPE_CHECKING:
    import sqlite3

    from ..stores.postgres import PostgresStore
    from ..stores.sqlite import SqliteStore

__all__ = ["PostgresTaskStore", "SqliteTaskStore", "sql_task_store"]


def sql_task_store(store: Any, *, owns: bool = False) -> TaskStore | None:
    """A task store over ``store``'s database when it is a SQLite or Postgres store."""
    from ..stores.sqlite import SqliteStore

    if isinstance(store, SqliteStore):
        return SqliteTaskStore(store, owns=owns)
    from ..stores.postgres import PostgresStore

    if isinstance(store, PostgresStore):
        return PostgresTaskStore(store, owns=owns)
    return None


_S_UPSERT = (
    "INSERT INTO a2a_tasks (task_id, context_id, state, updated_at, body) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (task_id) DO UPDATE SET context_id = excluded.context_id,"
    " state = excluded.state, updated_at = excluded.updated_at, body = excluded.body"
)


class SqliteTaskStore(TaskStore):
    """Tasks in the ``a2a_tasks`` table of a `toolnexus.stores.SqliteStore`'s file."""

    def __init__(self, store: SqliteStore, *, owns: bool = False) -> None:
        self.store = store
        self._owns = owns

    async def get(self, id: str) -> dict[str, Any] | None:
        def job(conn: sqlite3.Connection) -> Any:
            return conn.execute("SELECT body FROM a2a_tasks WHERE task_id = ?", (id,)).fetchone()

        row = await self.store._fast(job)  # pyright: ignore[reportPrivateUsage]
        return cast(dict[str, Any], json.loads(row[0])) if row is not None else None

    async def save(self, task: dict[str, Any]) -> None:
        checked = _checked(task)
        args = (checked["id"], _context(checked), task_state(checked), time.time())
        body = json.dumps(checked)

        def job(conn: sqlite3.Connection) -> None:
            conn.execute(_S_UPSERT, (*args, body))

        await self.store._fast(job)  # pyright: ignore[reportPrivateUsage]

    async def list(
        self, *, context_id: str | None = None, state: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        where: list[str] = []
        args: list[Any] = []
        if context_id is not None:
            where.append("context_id = ?")
            args.append(context_id)
        if state is not None:
            where.append("state = ?")
            args.append(state)
        sql = "SELECT body FROM a2a_tasks"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated_at DESC LIMIT ?"
        args.append(int(limit))

        def job(conn: sqlite3.Connection) -> list[Any]:
            return conn.execute(sql, args).fetchall()

        rows = await self.store._fast(job)  # pyright: ignore[reportPrivateUsage]
        return [cast(dict[str, Any], json.loads(r[0])) for r in rows]

    async def aclose(self) -> None:
        if self._owns:
            await self.store.aclose()


_P_UPSERT = (
    "INSERT INTO toolnexus_a2a_tasks (key, task_id, context_key, state, updated_at, body)"
    " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO UPDATE SET"
    " context_key = excluded.context_key, state = excluded.state,"
    " updated_at = excluded.updated_at, body = excluded.body"
)


class PostgresTaskStore(TaskStore):
    """Tasks in ``toolnexus_a2a_tasks`` of a `toolnexus.stores.PostgresStore`'s database."""

    def __init__(self, store: PostgresStore, *, owns: bool = False) -> None:
        self.store = store
        self._owns = owns

    async def get(self, id: str) -> dict[str, Any] | None:
        from ..stores.postgres_schema import row_key

        async with self.store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
            cur = await conn.execute(
                "SELECT body FROM toolnexus_a2a_tasks WHERE key = %s", (row_key(id),)
            )
            row = await cur.fetchone()
        return cast(dict[str, Any], json.loads(row[0])) if row is not None else None

    async def save(self, task: dict[str, Any]) -> None:
        from ..stores.postgres_schema import row_key, to_bytea

        checked = _checked(task)
        context = _context(checked)
        args = (
            row_key(checked["id"]),
            to_bytea(checked["id"]),
            row_key(context) if context is not None else None,
            task_state(checked),
            time.time(),
            json.dumps(checked),
        )
        async with self.store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
            await conn.execute(_P_UPSERT, args)

    async def list(
        self, *, context_id: str | None = None, state: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        from ..stores.postgres_schema import row_key

        async with self.store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
            cur = await conn.execute(
                "SELECT body FROM toolnexus_a2a_tasks"
                " WHERE (%s::bytea IS NULL OR context_key = %s)"
                " AND (%s::text IS NULL OR state = %s)"
                " ORDER BY updated_at DESC LIMIT %s",
                (
                    row_key(context_id) if context_id is not None else None,
                    row_key(context_id) if context_id is not None else None,
                    state,
                    state,
                    int(limit),
                ),
            )
            rows = await cur.fetchall()
        return [cast(dict[str, Any], json.loads(r[0])) for r in rows]

    async def aclose(self) -> None:
        if self._owns:
            await self.store.aclose()
