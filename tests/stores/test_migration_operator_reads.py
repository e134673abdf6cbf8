"""Migration ``operator_reads`` (SQLite 10, PostgreSQL 12): a database at the previous version,
with a request queued and one held, migrates; both are listed as runs in flight (the held one
with its lease and no holder: it was claimed before holders were recorded), found by a prefix,
and a new take records its holder."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from halt_support import T0, checkpoint
from run_backends import Clock
from test_migration_audit_and_flags import as_bytes, pg_key

from pg_support import pg_connect
from toolnexus.stores.requests import holder_name
from toolnexus.stores.sqlite import SqliteStore
from toolnexus.stores.sqlite_schema import MIGRATIONS, migrate


def rows(*, key: Any, text: Any) -> list[dict[str, Any]]:
    def row(rid: str, status: str, **columns: Any) -> dict[str, Any]:
        return {
            **key(rid),
            "status": status,
            "checkpoint": checkpoint(rid).dumps(),
            "kind": text("approval"),
            "tool": text("deploy"),
            "prompt": text(f"Deploy {rid}?"),
            "created_at": T0 - (100 if rid == "run-queued" else 90),
            "answer": json.dumps({"id": rid, "ok": True}),
            "answered_by": text("ana"),
            "answered_at": T0 - 50,
            "recorded": True,
            "token": 1,
            **columns,
        }

    return [row("run-queued", "answered"), row("run-held", "claimed", lease_until=T0 + 300)]


async def keeps_working(store: Any, clock: Clock) -> None:
    queued, held = await store.list_runs()
    assert (queued.request_id, queued.status, queued.holder) == ("run-queued", "answered", None)
    assert (held.request_id, held.status, held.holder, held.lease_until) == (
        "run-held",
        "claimed",
        None,
        T0 + 300,
    )
    assert await store.find_request_ids("run-") == ["run-held", "run-queued"]
    claim = await store.take("run-queued")
    assert claim is not None
    record = await store.answer_record("run-queued")
    assert (record.status, record.holder) == ("claimed", holder_name())


async def test_a_sqlite_file_at_version_9_migrates_and_lists_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "v9.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        assert migrate(conn, MIGRATIONS[:9]) == 9
        for row in rows(key=lambda rid: {"request_id": rid}, text=str):
            names, marks = ", ".join(row), ", ".join("?" * len(row))
            conn.execute(f"INSERT INTO halts ({names}) VALUES ({marks})", list(row.values()))
    clock = Clock()
    async with SqliteStore(path, clock=clock) as store:
        await keeps_working(store, clock)


async def test_a_postgres_database_at_version_11_migrates_and_lists_its_runs(pg_url: str) -> None:
    import psycopg

    from toolnexus.stores.postgres import PostgresStore
    from toolnexus.stores.postgres_schema import MIGRATIONS as PG_MIGRATIONS
    from toolnexus.stores.postgres_schema import migrate as pg_migrate

    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        assert await pg_migrate(conn, PG_MIGRATIONS[:11]) == 11
    with pg_connect(pg_url) as conn:
        for row in rows(key=pg_key, text=as_bytes):
            names = ", ".join(row)
            marks = ", ".join(f"%({name})s" for name in row)
            conn.execute(f"INSERT INTO toolnexus_halts ({names}) VALUES ({marks})", row)
    clock = Clock()
    async with PostgresStore(pg_url, clock=clock) as store:
        await keeps_working(store, clock)
