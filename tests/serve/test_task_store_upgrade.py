"""Task stores written before callers and context claims keep working: a SQLite file at schema
version 7 and a Postgres database at version 9 (migration ``a2a_callers``: SQLite 8, Postgres
10), and a task directory written before its context index — their tasks are found by context,
count as made without a caller, and their contexts can be claimed."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from pg_support import pg_connect
from toolnexus.serve import FileTaskStore, TaskStore, resolve_task_store
from toolnexus.stores.sqlite_schema import MIGRATIONS, migrate
from toolnexus.stores.url import resolve_store


def old_task(id: str, state: str, context: str) -> dict[str, Any]:
    return {"id": id, "contextId": context, "kind": "task", "status": {"state": state}}


async def keeps_working(tasks: TaskStore) -> None:
    """What every upgraded store must still do with the tasks saved before."""
    found = await tasks.list(context_id="ctx-old")
    assert [t["id"] for t in found] == ["old-2", "old-1"]
    assert [t["id"] for t in await tasks.list(caller="alice")] == ["old-3", "old-2", "old-1"]
    # a context whose task was left working by an old process has no claim: it is free
    assert await tasks.claim_context("ctx-old", "new", lease_s=300) is None
    assert await tasks.claim_context("ctx-old", "newer", lease_s=300) == "new"


async def test_a_sqlite_file_at_version_7_migrates_and_keeps_its_tasks(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    rows = [
        ("old-1", "ctx-old", "completed", 1.0),
        ("old-2", "ctx-old", "working", 2.0),
        ("old-3", "ctx-other", "completed", 3.0),
    ]
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        assert migrate(conn, MIGRATIONS[:7]) == 7
        for tid, context, state, at in rows:
            body = json.dumps(old_task(tid, state, context))
            conn.execute(
                "INSERT INTO a2a_tasks (task_id, context_id, state, updated_at, body)"
                " VALUES (?, ?, ?, ?, ?)",
                (tid, context, state, at, body),
            )
    async with resolve_store(f"sqlite:///{path}") as backend:
        await keeps_working(resolve_task_store(None, runs=backend)[0])
    with closing(sqlite3.connect(path)) as conn:
        applied = conn.execute("SELECT version FROM schema_migrations WHERE name = 'a2a_callers'")
        assert applied.fetchone() == (8,)
        owners = conn.execute("SELECT DISTINCT owner FROM a2a_tasks WHERE task_id LIKE 'old-%'")
        assert owners.fetchall() == [(None,)]


async def test_a_postgres_database_at_version_9_migrates_and_keeps_its_tasks(
    pg_url: str,
) -> None:
    import psycopg

    from toolnexus.stores.postgres_schema import MIGRATIONS as PG_MIGRATIONS
    from toolnexus.stores.postgres_schema import migrate as pg_migrate

    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        assert await pg_migrate(conn, PG_MIGRATIONS[:9]) == 9
    with pg_connect(pg_url) as conn:
        for tid, context, state, at in [
            ("old-1", "ctx-old", "completed", 1.0),
            ("old-2", "ctx-old", "working", 2.0),
            ("old-3", "ctx-other", "completed", 3.0),
        ]:
            conn.execute(
                "INSERT INTO toolnexus_a2a_tasks"
                " (key, task_id, context_key, state, updated_at, body)"
                " VALUES (%s, %s, %s, %s, %s, %s)",
                (
                    hashlib.sha256(tid.encode()).digest(),
                    tid.encode(),
                    hashlib.sha256(context.encode()).digest(),
                    state,
                    at,
                    json.dumps(old_task(tid, state, context)),
                ),
            )
    async with resolve_store(pg_url) as backend:
        await keeps_working(resolve_task_store(None, runs=backend)[0])
    with pg_connect(pg_url) as conn:
        applied = conn.execute(
            "SELECT version FROM toolnexus_schema_migrations WHERE name = 'a2a_callers'"
        )
        assert applied.fetchone() == (10,)


async def test_a_task_directory_written_before_its_index_is_indexed_once(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "tasks"
    folder.mkdir()
    for tid, context, state in [
        ("old-1", "ctx-old", "completed"),
        ("old-2", "ctx-old", "working"),
        ("old-3", "ctx-other", "completed"),
    ]:
        (folder / f"{tid}.json").write_text(json.dumps(old_task(tid, state, context)))
    tasks = FileTaskStore(folder)
    assert {t["id"] for t in await tasks.list(context_id="ctx-old")} == {"old-1", "old-2"}
    assert (folder / ".contexts" / ".format-1").exists()
    # a task file written by hand now is not in the index: the index is not rebuilt
    (folder / "stray.json").write_text(json.dumps(old_task("stray", "completed", "ctx-old")))
    again = FileTaskStore(folder)
    assert {t["id"] for t in await again.list(context_id="ctx-old")} == {"old-1", "old-2"}
    await again.save(old_task("new", "completed", "ctx-old"))
    assert {t["id"] for t in await again.list(context_id="ctx-old")} == {"old-1", "old-2", "new"}
