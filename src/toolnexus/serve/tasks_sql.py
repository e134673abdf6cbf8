"""A2A tasks in the same database as the runs: SQLite (``a2a_tasks`` and ``a2a_contexts``,
migrations 5 and 8 of `toolnexus.stores.sqlite_schema`) and Postgres (``toolnexus_a2a_tasks``
and ``toolnexus_a2a_contexts``, migrations 6 and 10 of `toolnexus.stores.postgres_schema`).

Each wraps the store the served client already uses and runs its statements on that store's
own connections (the SQLite store's inline connection and worker; the Postgres pool), so a task
and the run it waits on live in one database: a new serving process finds both.

A context's claim is one row of the contexts table. Taking it is one conditional write on that
row — an upsert that replaces the holder only when the row's lease ran out or it is the same
task (SQLite: under its write lock; Postgres: ``INSERT … ON CONFLICT DO UPDATE``, which locks
the row and decides on its latest version, so twenty processes racing for one context see one
winner) — with the new task inserted in the same statement (Postgres) or transaction (SQLite).
Saving a task out of ``submitted`` / ``working`` deletes its claim in the same write.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, cast

from ..stores.sqlite_schema import immediate
from .tasks import ACTIVE, TaskStore, checked, context_of, owner_of, task_state

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
    "INSERT INTO a2a_tasks (task_id, context_id, state, updated_at, body, owner)"
    " VALUES (?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (task_id) DO UPDATE SET context_id = excluded.context_id,"
    " state = excluded.state, updated_at = excluded.updated_at, body = excluded.body,"
    " owner = excluded.owner"
)
_S_RELEASE = "DELETE FROM a2a_contexts WHERE context_id = ? AND task_id = ?"
_S_CLAIM = (
    "INSERT INTO a2a_contexts (context_id, task_id, until) VALUES (?, ?, ?)"
    " ON CONFLICT (context_id) DO UPDATE SET task_id = excluded.task_id, until = excluded.until"
    " WHERE a2a_contexts.until <= ? OR a2a_contexts.task_id = excluded.task_id"
)
_S_HOLD = "UPDATE a2a_contexts SET until = ? WHERE context_id = ? AND task_id = ?"


def _row(task: dict[str, Any]) -> tuple[Any, ...]:
    """The columns of a task's row: id, context, state, updated_at, body, owner."""
    return (
        task["id"],
        context_of(task),
        task_state(task),
        time.time(),
        json.dumps(task),
        owner_of(task),
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
        row = _row(checked(task))
        tid, context, state = row[0], row[1], row[2]

        def job(conn: sqlite3.Connection) -> None:
            if context is None or state in ACTIVE:
                conn.execute(_S_UPSERT, row)
                return
            with immediate(conn):  # the task leaves working: its claim goes with it
                conn.execute(_S_UPSERT, row)
                conn.execute(_S_RELEASE, (context, tid))

        await self.store._fast(job)  # pyright: ignore[reportPrivateUsage]

    async def list(
        self,
        *,
        context_id: str | None = None,
        state: str | None = None,
        limit: int = 100,
        caller: str | None = None,
    ) -> list[dict[str, Any]]:
        where: list[str] = []
        args: list[Any] = []
        if context_id is not None:
            where.append("context_id = ?")
            args.append(context_id)
        if state is not None:
            where.append("state = ?")
            args.append(state)
        if caller is not None:
            where.append("(owner IS NULL OR owner = ?)")
            args.append(caller)
        sql = "SELECT body FROM a2a_tasks"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated_at DESC LIMIT ?"
        args.append(int(limit))

        def job(conn: sqlite3.Connection) -> list[Any]:
            return conn.execute(sql, args).fetchall()

        rows = await self.store._fast(job)  # pyright: ignore[reportPrivateUsage]
        return [cast(dict[str, Any], json.loads(r[0])) for r in rows]

    async def claim_context(
        self,
        context_id: str,
        task_id: str,
        *,
        lease_s: float,
        task: dict[str, Any] | None = None,
    ) -> str | None:
        row = _row(checked(task)) if task is not None else None

        def job(conn: sqlite3.Connection) -> str | None:
            with immediate(conn):
                now = time.time()
                taken = conn.execute(_S_CLAIM, (context_id, task_id, now + lease_s, now))
                if taken.rowcount == 0:
                    held = conn.execute(
                        "SELECT task_id FROM a2a_contexts WHERE context_id = ?", (context_id,)
                    ).fetchone()
                    return str(held[0])
                if row is not None:
                    conn.execute(_S_UPSERT, row)
                return None

        return await self.store._fast(job)  # pyright: ignore[reportPrivateUsage]

    async def hold_context(self, context_id: str, task_id: str, *, lease_s: float) -> bool:
        def job(conn: sqlite3.Connection) -> bool:
            held = conn.execute(_S_HOLD, (time.time() + lease_s, context_id, task_id))
            return held.rowcount > 0

        return await self.store._fast(job)  # pyright: ignore[reportPrivateUsage]

    async def aclose(self) -> None:
        if self._owns:
            await self.store.aclose()


_P_UPSERT = (
    "INSERT INTO toolnexus_a2a_tasks (key, task_id, context_key, state, updated_at, body, owner)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO UPDATE SET"
    " context_key = excluded.context_key, state = excluded.state,"
    " updated_at = excluded.updated_at, body = excluded.body, owner = excluded.owner"
)
_P_RELEASE_AND_UPSERT = (
    "WITH released AS (DELETE FROM toolnexus_a2a_contexts"
    " WHERE context_key = %s AND task_key = %s)"
    " INSERT INTO toolnexus_a2a_tasks (key, task_id, context_key, state, updated_at, body, owner)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO UPDATE SET"
    " context_key = excluded.context_key, state = excluded.state,"
    " updated_at = excluded.updated_at, body = excluded.body, owner = excluded.owner"
)
# The claim's one conditional write: the row is locked and the CASEs read its latest version,
# so the holder is replaced only when its lease ran out or it is the same task. The row is
# returned either way: its holder is the winner.
_P_CLAIM = (
    "INSERT INTO toolnexus_a2a_contexts AS c (context_key, task_key, task_id, until)"
    " VALUES (%(context)s, %(key)s, %(id)s, %(until)s)"
    " ON CONFLICT (context_key) DO UPDATE SET"
    " task_key = CASE WHEN c.until <= %(now)s OR c.task_key = excluded.task_key"
    " THEN excluded.task_key ELSE c.task_key END,"
    " task_id = CASE WHEN c.until <= %(now)s OR c.task_key = excluded.task_key"
    " THEN excluded.task_id ELSE c.task_id END,"
    " until = CASE WHEN c.until <= %(now)s OR c.task_key = excluded.task_key"
    " THEN excluded.until ELSE c.until END"
    " RETURNING c.task_id, c.task_key = %(key)s AS won"
)
# The same, inserting the new task when (and only when) the claim is taken.
_P_CLAIM_AND_INSERT = (
    "WITH claimed AS (" + _P_CLAIM + "),"
    " saved AS (INSERT INTO toolnexus_a2a_tasks"
    " (key, task_id, context_key, state, updated_at, body, owner)"
    " SELECT %(key)s, %(id)s, %(context)s, %(state)s, %(now)s, %(body)s, %(owner)s"
    " FROM claimed WHERE claimed.won"
    " ON CONFLICT (key) DO UPDATE SET"
    " context_key = excluded.context_key, state = excluded.state,"
    " updated_at = excluded.updated_at, body = excluded.body, owner = excluded.owner)"
    " SELECT task_id, won FROM claimed"
)
_P_HOLD = "UPDATE toolnexus_a2a_contexts SET until = %s WHERE context_key = %s AND task_key = %s"


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
        from ..stores.postgres_schema import row_key

        checked(task)
        context = context_of(task)
        args = _p_row(task)
        async with self.store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
            if context is None or task_state(task) in ACTIVE:
                await conn.execute(_P_UPSERT, args)
            else:  # the task leaves working: its claim goes with it, in the same statement
                released = (row_key(context), row_key(task["id"]))
                await conn.execute(_P_RELEASE_AND_UPSERT, (*released, *args))

    async def list(
        self,
        *,
        context_id: str | None = None,
        state: str | None = None,
        limit: int = 100,
        caller: str | None = None,
    ) -> list[dict[str, Any]]:
        from ..stores.postgres_schema import row_key, to_bytea

        async with self.store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
            cur = await conn.execute(
                "SELECT body FROM toolnexus_a2a_tasks"
                " WHERE (%s::bytea IS NULL OR context_key = %s)"
                " AND (%s::text IS NULL OR state = %s)"
                " AND (%s::bytea IS NULL OR owner IS NULL OR owner = %s)"
                " ORDER BY updated_at DESC LIMIT %s",
                (
                    row_key(context_id) if context_id is not None else None,
                    row_key(context_id) if context_id is not None else None,
                    state,
                    state,
                    to_bytea(caller),
                    to_bytea(caller),
                    int(limit),
                ),
            )
            rows = await cur.fetchall()
        return [cast(dict[str, Any], json.loads(r[0])) for r in rows]

    async def claim_context(
        self,
        context_id: str,
        task_id: str,
        *,
        lease_s: float,
        task: dict[str, Any] | None = None,
    ) -> str | None:
        from ..stores.postgres_schema import from_bytea, row_key, to_bytea

        now = time.time()
        args: dict[str, Any] = {
            "context": row_key(context_id),
            "key": row_key(task_id),
            "id": to_bytea(task_id),
            "until": now + lease_s,
            "now": now,
        }
        if task is not None:
            checked(task)
            args |= {
                "state": task_state(task),
                "body": json.dumps(task),
                "owner": to_bytea(owner_of(task)),
            }
        async with self.store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
            cur = await conn.execute(_P_CLAIM if task is None else _P_CLAIM_AND_INSERT, args)
            row = await cur.fetchone()
        assert row is not None  # the upsert returns its row, won or not
        return None if row[1] else str(from_bytea(row[0]))

    async def hold_context(self, context_id: str, task_id: str, *, lease_s: float) -> bool:
        from ..stores.postgres_schema import row_key

        args = (time.time() + lease_s, row_key(context_id), row_key(task_id))
        async with self.store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
            cur = await conn.execute(_P_HOLD, args)
            return cur.rowcount > 0

    async def aclose(self) -> None:
        if self._owns:
            await self.store.aclose()


def _p_row(task: dict[str, Any]) -> tuple[Any, ...]:
    """The upsert's values of a task's row (Postgres)."""
    from ..stores.postgres_schema import row_key, to_bytea

    context = context_of(task)
    return (
        row_key(task["id"]),
        to_bytea(task["id"]),
        row_key(context) if context is not None else None,
        task_state(task),
        time.time(),
        json.dumps(task),
        to_bytea(owner_of(task)),
    )
