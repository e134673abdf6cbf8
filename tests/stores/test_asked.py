"""What a request asked (`toolnexus.stores.asked`) outlives its checkpoint on every backend: a
run that finishes (T8) or is cancelled (T11) drops the checkpoint, and the history still holds
the call's tool and arguments, the agent path and the conversation around it. Migration
``asked`` (SQLite 10, PostgreSQL 12): rows saved before have none, and keep working.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import replace
from pathlib import Path
from typing import Any

from halt_support import ARGS, checkpoint
from run_backends import Clock

from pg_support import pg_connect
from toolnexus.loop.checkpoint import Checkpoint
from toolnexus.stores.asked import CONTEXT_LIMIT, Asked, asked_of, decode_asked, encode_asked
from toolnexus.stores.sqlite import SqliteStore
from toolnexus.stores.sqlite_schema import MIGRATIONS, migrate
from toolnexus.suspension import Answer


def with_context(rid: str, user: str = "ship it", path: list[str] | None = None) -> Checkpoint:
    """`checkpoint` with the user's message ``user``, the model's text, and an agent path."""
    cp = checkpoint(rid)
    cp.messages = [{**cp.messages[0], "content": user}, {**cp.messages[1], "content": "On it."}]
    if path is not None:
        cp.pending = replace(cp.pending, data={"path": path})
        cp.outstanding[0].request = cp.pending
    return cp


async def history_of(store: Any, rid: str) -> Any:
    [entry] = await store.list_history(request_id=rid)
    return entry


async def test_a_finished_request_keeps_its_call_and_context_after_the_checkpoint_goes(
    store: Any,
) -> None:
    await store.save_halt(with_context("done-1", path=["lead", "billing"]))
    await store.post_answer("done-1", Answer("done-1", True), answered_by="ana")
    claim = await store.take("done-1")
    assert claim is not None
    await store.complete("done-1", claim, outcome={"status": "done", "text": "ok"})
    assert await store.load_halt("done-1") is None  # the checkpoint is gone (T8)
    asked = (await history_of(store, "done-1")).asked
    assert asked == Asked(
        tool="deploy",
        arguments=ARGS,
        path=("lead", "billing"),
        user_text="ship it",
        assistant_text=f"On it.\n→ deploy({ARGS})",
    )


async def test_a_cancelled_request_keeps_what_it_asked_too(store: Any) -> None:
    await store.save_halt(with_context("cx-1", user="refund the lot"))
    await store.cancel("cx-1", reason="wrong ticket", answered_by="ana")
    asked = (await history_of(store, "cx-1")).asked
    assert asked is not None
    assert (asked.tool, asked.arguments, asked.user_text) == ("deploy", ARGS, "refund the lot")


async def test_a_long_message_is_kept_cut_and_says_so(store: Any) -> None:
    await store.save_halt(with_context("long-1", user="x" * (CONTEXT_LIMIT + 50)))
    await store.cancel("long-1", answered_by="ana")
    asked = (await history_of(store, "long-1")).asked
    assert asked is not None
    assert len(asked.user_text) == CONTEXT_LIMIT
    assert asked.user_text.endswith("…")
    assert asked.cut is True
    assert asked.arguments == ARGS  # the call itself is never cut


def test_what_a_checkpoint_asked_round_trips_through_its_stored_text() -> None:
    asked = asked_of(with_context("r", path=["a"]))
    assert decode_asked(encode_asked(asked)) == asked
    assert decode_asked(None) is None
    assert decode_asked("not json") is None
    assert decode_asked("[1]") is None


# -- migration ``asked`` ------------------------------------------------------------------------


async def test_a_sqlite_file_at_version_9_migrates_and_its_old_rows_have_nothing_asked(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    old = checkpoint("old-1").dumps()
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        assert migrate(conn, MIGRATIONS[:9]) == 9
        conn.execute(
            "INSERT INTO halts (request_id, status, checkpoint, kind, tool, prompt, created_at)"
            " VALUES ('old-1', 'pending', ?, 'approval', 'deploy', 'Deploy?', 1)",
            (old,),
        )
    async with SqliteStore(path, clock=Clock()) as store:
        await store.cancel("old-1", answered_by="ana")
        assert (await history_of(store, "old-1")).asked is None
        await store.save_halt(checkpoint("new-1"))
        await store.cancel("new-1", answered_by="ana")
        assert (await history_of(store, "new-1")).asked is not None
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        names = [n for (n,) in conn.execute("SELECT name FROM schema_migrations ORDER BY version")]
    assert names[9] == "asked"


async def test_a_postgres_database_at_version_11_migrates_and_its_old_rows_have_nothing_asked(
    pg_url: str,
) -> None:
    import hashlib

    import psycopg

    from toolnexus.stores.postgres import PostgresStore
    from toolnexus.stores.postgres_schema import MIGRATIONS as PG_MIGRATIONS
    from toolnexus.stores.postgres_schema import migrate as pg_migrate

    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        assert await pg_migrate(conn, PG_MIGRATIONS[:11]) == 11
    with pg_connect(pg_url) as conn:
        conn.execute(
            "INSERT INTO toolnexus_halts (key, request_id, status, checkpoint, kind, tool,"
            " prompt, created_at) VALUES (%s, %s, 'pending', %s, %s, %s, %s, 1)",
            (
                hashlib.sha256(b"old-1").digest(),
                b"old-1",
                checkpoint("old-1").dumps(),
                b"approval",
                b"deploy",
                b"Deploy?",
            ),
        )
    async with PostgresStore(pg_url, clock=Clock()) as store:
        await store.cancel("old-1", answered_by="ana")
        assert (await history_of(store, "old-1")).asked is None
        await store.save_halt(checkpoint("new-1"))
        await store.cancel("new-1", answered_by="ana")
        assert (await history_of(store, "new-1")).asked is not None
    with pg_connect(pg_url) as conn:
        [(name,)] = conn.execute(
            "SELECT name FROM toolnexus_schema_migrations WHERE version = 12"
        ).fetchall()
    assert name == "asked"
