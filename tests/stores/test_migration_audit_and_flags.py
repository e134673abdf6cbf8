"""Migration ``audit_and_flags`` (SQLite 7, PostgreSQL 9): a database at the previous version,
with requests in every state, migrates and keeps working — listed, answered (with the edit
audit), taken, flagged, cancelled, and its settled rows still read.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from halt_support import ARGS, T0, checkpoint
from run_backends import Clock
from test_edited_answers import edit, with_schema

from pg_support import pg_connect
from toolnexus.errors import CheckpointError
from toolnexus.stores.checks import call_digest
from toolnexus.stores.sqlite import SqliteStore
from toolnexus.stores.sqlite_schema import MIGRATIONS, migrate
from toolnexus.suspension import Answer

DIGEST = call_digest("deploy", ARGS)
ANSWER = json.dumps({"id": "x", "ok": True})


def rows_at_the_previous_version(*, key: Any, text: Any) -> list[dict[str, Any]]:
    """One request in each state, as the previous schema held them (``key``/``text``: how the
    backend spells a row's key columns and its strings)."""
    index = {"kind": text("approval"), "tool": text("deploy"), "prompt": text("Deploy?")}

    def row(rid: str, status: str, *, created_at: float = T0 - 100, **columns: Any) -> Any:
        halted = checkpoint(rid, created_at=created_at).dumps()
        listed = {**index, "created_at": created_at}
        return {**key(rid), "status": status, "checkpoint": halted, **listed, **columns}

    answered: dict[str, Any] = {
        "answer": ANSWER,
        "answered_at": T0 - 50,
        "digest": DIGEST,
        "token": 1,
    }
    return [
        row("waiting", "pending", created_at=T0 - 100),
        row("queued", "answered", recorded=True, answered_by=text("ana"), **answered),
        row(
            "held",
            "claimed",
            recorded=True,
            answered_by=text("bob"),
            lease_until=T0 + 300,
            **answered,
        ),
        row(
            "lapsed-host",
            "claimed",
            created_at=T0 - 90,
            answer=ANSWER,
            answered_by=text("host"),
            lease_until=T0 - 1,
            token=1,
        ),
        row(
            "finished",
            "done",
            checkpoint=None,
            recorded=True,
            answered_by=text("cy"),
            settled_at=T0 - 40,
            **answered,
        ),
    ]


async def keeps_working(store: Any, clock: Clock) -> None:
    """What every migrated store must still do with the rows above."""
    listed = await store.list_pending()
    assert [(e.request_id, e.status, e.problem) for e in listed] == [
        ("waiting", "pending", None),
        ("lapsed-host", "pending", None),
    ]
    finished = await store.answer_record("finished")
    assert finished is not None
    assert (finished.status, finished.answered_by, finished.digest) == ("done", "cy", DIGEST)
    assert (finished.original, finished.problem, finished.flagged_at) == (None, None, None)
    [history] = await store.list_history(request_id="finished")
    assert (history.original, history.problem) == (None, None)
    # answered (the edit audit recorded), taken (with its digest), flagged, cancelled
    await store.save_halt(with_schema(checkpoint("waiting", created_at=T0 - 100)))
    record = await store.post_answer("waiting", edit({"env": "staging"}, rid="waiting"))
    assert record.original == {"tool": "deploy", "arguments": ARGS, "digest": DIGEST}
    claim = await store.take()
    assert claim is not None
    assert (claim.request_id, claim.answered_by, claim.digest) == ("queued", "ana", DIGEST)
    assert claim.checkpoint is not None
    await store.flag("queued", claim, "the approved call changed", hold_s=math.inf)
    clock.now = T0 + 1e6  # "held"'s lease ran out: queued again; "queued" is held for ever
    assert [(e.request_id, e.status) for e in await store.list_pending()] == [
        ("queued", "claimed"),
        ("lapsed-host", "pending"),
    ]
    cancelled = await store.cancel("queued", answered_by="op")
    assert (cancelled.status, cancelled.problem) == ("cancelled", "the approved call changed")
    again = await store.take()  # the oldest answer first: "held", its lease long run out
    assert again is not None
    assert (again.request_id, again.answered_by) == ("held", "bob")


# -- SQLite 6 → 7 ------------------------------------------------------------------------------


def sqlite_key(rid: str) -> dict[str, Any]:
    return {"request_id": rid}


def as_text(value: str) -> str:
    return value


async def test_a_sqlite_file_at_version_6_migrates_and_keeps_working(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        assert migrate(conn, MIGRATIONS[:6]) == 6
        for row in rows_at_the_previous_version(key=sqlite_key, text=as_text):
            names = ", ".join(row)
            marks = ", ".join("?" * len(row))
            conn.execute(f"INSERT INTO halts ({names}) VALUES ({marks})", list(row.values()))
    clock = Clock()
    async with SqliteStore(path, clock=clock) as store:
        await keeps_working(store, clock)
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        newest = (len(MIGRATIONS),)  # 7, and those appended since
        assert conn.execute("SELECT max(version) FROM schema_migrations").fetchone() == newest
        assert conn.execute("PRAGMA user_version").fetchone() == newest
        [index] = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'halts_pending'"
        ).fetchone()
        assert "problem IS NOT NULL" in index


async def test_an_infinite_hold_is_stored_as_sqlites_infinity(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    async with SqliteStore(path) as store:
        await store.save_halt(checkpoint())
        await store.post_answer("req-1", Answer("req-1", True))
        claim = await store.take("req-1")
        assert claim is not None
        await store.flag("req-1", claim, "for an operator", hold_s=math.inf)
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        found = conn.execute(
            "SELECT lease_until, typeof(lease_until), lease_until > 1e308, problem FROM halts"
        ).fetchone()
    assert found == (math.inf, "real", 1, "for an operator")


# -- PostgreSQL 8 → 9 --------------------------------------------------------------------------


def pg_key(rid: str) -> dict[str, Any]:
    return {"key": hashlib.sha256(rid.encode()).digest(), "request_id": rid.encode()}


def as_bytes(value: str) -> bytes:
    return value.encode()


@pytest.fixture
async def pg_at_8(pg_url: str) -> str:
    import psycopg

    from toolnexus.stores.postgres_schema import MIGRATIONS as PG_MIGRATIONS
    from toolnexus.stores.postgres_schema import migrate as pg_migrate

    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        assert await pg_migrate(conn, PG_MIGRATIONS[:8]) == 8
    with pg_connect(pg_url) as conn:
        for row in rows_at_the_previous_version(key=pg_key, text=as_bytes):
            if row["status"] == "pending":  # as save_halt wrote it since migration 5
                row |= {"halt_digest": DIGEST, "deadline": None}
            names = ", ".join(row)
            marks = ", ".join(f"%({name})s" for name in row)
            conn.execute(f"INSERT INTO toolnexus_halts ({names}) VALUES ({marks})", row)
    return pg_url


async def test_a_postgres_database_at_version_8_migrates_and_keeps_working(pg_at_8: str) -> None:
    from toolnexus.stores.postgres import PostgresStore
    from toolnexus.stores.postgres_schema import MIGRATIONS as PG_MIGRATIONS

    clock = Clock()
    async with PostgresStore(pg_at_8, clock=clock) as store:
        await keeps_working(store, clock)

    with pg_connect(pg_at_8) as conn:
        versions = conn.execute("SELECT max(version) FROM toolnexus_schema_migrations")
        assert versions.fetchone() == (len(PG_MIGRATIONS),)  # 9, and those appended since


async def test_a_request_saved_before_version_9_is_answered_by_reading_its_checkpoint(
    pg_at_8: str,
) -> None:
    from toolnexus.stores.postgres import PostgresStore

    async with PostgresStore(pg_at_8, clock=Clock()) as store:
        record = await store.post_answer("waiting", Answer("waiting", True), answered_by="ana")
        assert (record.status, record.digest) == ("answered", DIGEST)
        with pg_connect(pg_at_8) as conn:
            conn.execute(
                "UPDATE toolnexus_halts SET checkpoint = '{\"version\": 1}'"
                " WHERE request_id = 'lapsed-host'"
            )
        with pytest.raises(CheckpointError, match="lapsed-host"):
            await store.post_answer("lapsed-host", Answer("lapsed-host", True))
        assert [e.request_id for e in await store.list_pending()] == ["lapsed-host"]


async def test_an_infinite_hold_is_stored_as_postgres_infinity(pg_url: str) -> None:
    from toolnexus.stores.postgres import PostgresStore

    async with PostgresStore(pg_url) as store:
        await store.save_halt(checkpoint())
        await store.post_answer("req-1", Answer("req-1", True))
        claim = await store.take("req-1")
        assert claim is not None
        await store.flag("req-1", claim, "for an operator", hold_s=math.inf)
    with pg_connect(pg_url) as conn:
        found = conn.execute(
            "SELECT lease_until, lease_until = 'Infinity'::float8, convert_from(problem, 'UTF8')"
            " FROM toolnexus_halts"
        ).fetchone()
    assert found == (math.inf, True, "for an operator")
