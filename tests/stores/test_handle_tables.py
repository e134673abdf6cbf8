"""The native handle tables: what a save costs, and how older handle documents are moved in."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from pg_support import pg_connect
from toolnexus._types import Message
from toolnexus.agents.persistence import RuntimeStore, as_runtime_store
from toolnexus.stores._handlerows import LEGACY_PREFIX
from toolnexus.stores.sqlite import SqliteStore
from toolnexus.stores.sqlite_schema import MIGRATIONS, migrate


def row(handle_id: str, state: str = "suspended") -> dict[str, Any]:
    """A handle row about the size of a suspended handle's, checkpoint included."""
    checkpoint = {"version": 1, "messages": [{"role": "user", "content": "x" * 400}]}
    return {"id": handle_id, "state": state, "checkpoint": checkpoint}


class ConversationsOnly:
    """A host store that offers only the conversation Protocol (so gets the document table)."""

    def __init__(self, store: SqliteStore) -> None:
        self._store = store

    async def get(self, id: str) -> list[Message] | None:
        return await self._store.get(id)

    async def save(self, id: str, messages: list[Message]) -> None:
        await self._store.save(id, messages)

    async def delete(self, id: str) -> bool:
        return await self._store.delete(id)


async def frames_written_by_one_save(path: Path, tree: RuntimeStore, size: int) -> int:
    """Fill a table with ``size`` rows, then count the WAL frames (pages) one save writes."""
    await tree.save_handles("rt", [row(f"h{n:04}") for n in range(size)])
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        # The store may be checkpointing the big first save on its worker thread right now.
        for _ in range(200):
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if not busy:
                break
            await asyncio.sleep(0.01)
        assert busy == 0
        await tree.save_handles("rt", [row("h0001", state="idle")])
        busy, frames, _ = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        assert busy == 0
    return frames


async def test_the_pages_one_save_writes_do_not_grow_with_the_table(tmp_path: Path) -> None:
    written: list[int] = []
    for size in (10, 1000):
        path = tmp_path / f"native-{size}.db"
        async with SqliteStore(path) as store:
            written.append(await frames_written_by_one_save(path, as_runtime_store(store), size))
    assert written[0] == written[1]
    assert written[1] <= 2


async def test_the_document_table_of_a_host_store_rewrites_everything_it_holds(
    tmp_path: Path,
) -> None:
    # The contrast that the test above guards: a host store that keeps the table as one
    # document writes pages in proportion to the table on every save.
    written: list[int] = []
    for size in (10, 1000):
        path = tmp_path / f"document-{size}.db"
        async with SqliteStore(path) as store:
            tree = as_runtime_store(ConversationsOnly(store))
            written.append(await frames_written_by_one_save(path, tree, size))
    assert written[1] > 50 * written[0]


# -- moving handle documents written by earlier versions -------------------------------------


def legacy_document(rows: object) -> str:
    return json.dumps(rows, separators=(",", ":"))


LEGACY_ROWS = [{"id": "root", "children": ["root/w.1"]}, {"id": "root/w.1", "state": "suspended"}]


def sqlite_at_version_2(path: Path, documents: dict[str, str]) -> None:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        migrate(conn, MIGRATIONS[:2])
        for id, text in documents.items():
            conn.execute("INSERT INTO conversations VALUES (?, ?, 5.0)", (id, text))


async def test_sqlite_moves_a_runtime_document_into_the_handle_table(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    sqlite_at_version_2(
        path,
        {
            LEGACY_PREFIX + "rt": legacy_document(LEGACY_ROWS),
            LEGACY_PREFIX + "other ü": legacy_document([{"id": "root"}]),
            "c1": '[{"role":"user","content":"hi"}]',
        },
    )
    async with SqliteStore(path) as store:
        assert await store.load_handles("rt") == LEGACY_ROWS
        assert await store.load_handles("other ü") == [{"id": "root"}]
        assert await store.get(LEGACY_PREFIX + "rt") is None
        assert await store.get("c1") == [{"role": "user", "content": "hi"}]
    with closing(sqlite3.connect(path)) as conn:
        stamps = conn.execute("SELECT DISTINCT updated_at FROM runtime_handles").fetchall()
    assert stamps == [(5.0,)]


async def test_sqlite_leaves_an_unreadable_runtime_document_where_it_is(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    broken = {
        LEGACY_PREFIX + "garbage": "{not json",
        LEGACY_PREFIX + "object": '{"id": "root"}',
        LEGACY_PREFIX + "no-id": legacy_document([{"id": "root"}, {"state": "idle"}]),
    }
    sqlite_at_version_2(path, broken)
    async with SqliteStore(path) as store:
        for id in broken:
            assert await store.load_handles(id[len(LEGACY_PREFIX) :]) == []
    with closing(sqlite3.connect(path)) as conn:
        kept = dict(conn.execute("SELECT id, messages FROM conversations").fetchall())
        version = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
    assert kept == broken
    assert version == (len(MIGRATIONS),)


async def test_postgres_moves_a_runtime_document_into_the_handle_table(pg_url: str) -> None:
    import psycopg

    from toolnexus.stores.postgres import PostgresStore
    from toolnexus.stores.postgres_schema import MIGRATIONS as PG_MIGRATIONS
    from toolnexus.stores.postgres_schema import migrate as pg_migrate

    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await pg_migrate(conn, PG_MIGRATIONS[:2])
    documents = {
        LEGACY_PREFIX + "rt": legacy_document(LEGACY_ROWS),
        LEGACY_PREFIX + "équipe": legacy_document([{"id": "root/ü"}]),
        LEGACY_PREFIX + "garbage": "{not json",
        LEGACY_PREFIX + "no-id": legacy_document([{"id": "root"}, {"state": "idle"}]),
        "c1": '[{"role":"user","content":"hi"}]',
    }
    with pg_connect(pg_url) as conn:
        for id, text in documents.items():
            conn.execute(
                "INSERT INTO toolnexus_conversations VALUES (%s, %s, %s, 5.0)",
                (hashlib.sha256(id.encode()).digest(), id.encode(), text),
            )
    async with PostgresStore(pg_url) as store:
        assert await store.load_handles("rt") == LEGACY_ROWS
        assert await store.load_handles("équipe") == [{"id": "root/ü"}]
        assert await store.load_handles("garbage") == []
        assert await store.load_handles("no-id") == []
        await store.save_handles("rt", [{"id": "root/w.1", "state": "idle"}])
        assert (await store.load_handles("rt"))[1] == {"id": "root/w.1", "state": "idle"}
    with pg_connect(pg_url) as conn:
        left = conn.execute("SELECT id FROM toolnexus_conversations ORDER BY id").fetchall()
    assert sorted(bytes(r[0]).decode() for r in left) == sorted(
        ["c1", LEGACY_PREFIX + "garbage", LEGACY_PREFIX + "no-id"]
    )
