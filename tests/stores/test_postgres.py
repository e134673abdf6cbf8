"""PostgresStore against a real server: migrations, failures, the LISTEN connection, lifecycle."""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from halt_support import checkpoint

from pg_support import pg_connect
from toolnexus.errors import StoreError, UsageError
from toolnexus.suspension import Answer

HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture
def app_name() -> str:
    """This test's ``application_name``: its connections apart from any other test run's on the
    same server."""
    return f"toolnexus-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
async def store(pg_url: str, app_name: str) -> AsyncIterator[Any]:
    from toolnexus.stores.postgres import PostgresStore

    async with PostgresStore(f"{pg_url}&application_name={app_name}", max_size=3) as opened:
        yield opened


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=45, check=False
    )


# -- import hygiene -----------------------------------------------------------------------


def test_importing_toolnexus_and_its_stores_does_not_import_psycopg() -> None:
    done = run_python(
        "import sys, toolnexus, toolnexus.stores.url, toolnexus.stores.postgres\n"
        "print(sorted(m for m in sys.modules if m.startswith('psycopg')))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_psycopg_creating_the_store_names_the_extra() -> None:
    done = run_python(
        "import sys\n"
        "sys.modules['psycopg'] = None\n"
        "from toolnexus.stores.url import resolve_store\n"
        "try:\n"
        "    resolve_store('postgresql://db/app')\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'toolnexus-sdk[postgres]'" in done.stdout


# -- construction -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [{"min_size": -1}, {"max_size": 0}, {"min_size": 3, "max_size": 2}, {"timeout": 0}],
    ids=repr,
)
def test_bad_pool_options_are_usage_errors(kwargs: dict[str, Any]) -> None:
    from toolnexus.stores.postgres import PostgresStore

    with pytest.raises(UsageError):
        PostgresStore("postgresql://db/app", **kwargs)


def test_an_unparseable_connection_string_is_a_usage_error() -> None:
    from toolnexus.stores.postgres import PostgresStore

    with pytest.raises(UsageError, match="connection string"):
        PostgresStore("host=db port=5432 dbname='unterminated")


def test_the_repr_names_the_server_but_never_the_password() -> None:
    from toolnexus.stores.postgres import PostgresStore

    store = PostgresStore("postgresql://app:s3cret@db.internal:6543/prod")
    assert repr(store) == "PostgresStore('PostgreSQL app@db.internal:6543/prod')"


# -- failures -----------------------------------------------------------------------------


async def test_an_unreachable_server_is_a_store_error_without_the_password() -> None:
    from toolnexus.stores.postgres import PostgresStore

    store = PostgresStore("postgresql://app:s3cret@127.0.0.1:1/x", timeout=0.5)
    with pytest.raises(StoreError) as caught:
        await store.get("c1")
    await store.aclose()
    assert "127.0.0.1:1" in str(caught.value)
    assert "s3cret" not in str(caught.value)


async def test_a_client_with_an_unreachable_store_url_fails_at_open_naming_the_cause() -> None:
    import socket
    import time

    from toolnexus import create_client

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    for url, cause in (
        (f"postgresql://app:s3cret@127.0.0.1:{closed}/x", "refused"),
        ("postgres://nohost.invalid/x", "nohost.invalid"),
    ):
        client = create_client(
            base_url="http://127.0.0.1:9/v1", model="m", api_key="k-unused", store=url
        )
        started = time.monotonic()
        with pytest.raises(StoreError) as caught:
            async with client:
                pass
        assert time.monotonic() - started < 8
        assert cause in str(caught.value).lower()
        assert "s3cret" not in str(caught.value)


async def test_opening_an_unreachable_store_fails_within_its_connect_timeout() -> None:
    import time

    from toolnexus.stores.postgres import PostgresStore

    store = PostgresStore("postgresql://app@10.255.255.1:5432/x", connect_timeout=1)
    started = time.monotonic()
    with pytest.raises(StoreError, match="cannot reach"):
        await store.open()
    await store.aclose()
    assert time.monotonic() - started < 4


async def test_store_errors_chain_the_psycopg_cause(pg_url: str) -> None:
    import psycopg

    from toolnexus.stores.postgres import PostgresStore

    with pytest.raises(StoreError) as caught:
        async with PostgresStore(pg_url + "&dbname=no_such_db", timeout=0.5):
            pass
    assert "no_such_db" in str(caught.value)
    assert isinstance(caught.value.__cause__, psycopg.Error)


async def test_a_hand_edited_transcript_is_a_store_error_and_the_row_is_untouched(
    store: Any, pg_url: str
) -> None:
    await store.save("c1", HELLO)
    with pg_connect(pg_url) as conn:
        conn.execute("UPDATE toolnexus_conversations SET messages = '{not json'")
    with pytest.raises(StoreError, match="invalid JSON"):
        await store.get("c1")
    with pg_connect(pg_url) as conn:
        assert conn.execute("SELECT messages FROM toolnexus_conversations").fetchone() == (
            "{not json",
        )


async def test_a_hand_edited_answer_is_a_store_error(store: Any, pg_url: str) -> None:
    await store.save_halt(checkpoint("r1"))
    await store.post_answer("r1", Answer("r1", True), answered_by="ana")
    with pg_connect(pg_url) as conn:
        conn.execute("UPDATE toolnexus_halts SET answer = '[1, 2]'")
    with pytest.raises(StoreError, match="answer recorded for request 'r1'"):
        await store.answer_record("r1")


async def test_answering_reads_the_checkpoint_only_when_the_row_lacks_its_digest(
    store: Any, pg_url: str
) -> None:
    # Rows saved since migration 5 carry the halted call's digest and deadline, so an answer
    # is one guarded UPDATE; rows saved before (NULLs) are answered by reading the checkpoint.
    # Both record the same digest, and both refuse a passed deadline the same way.
    from toolnexus.errors import RequestExpired

    for rid in ("new", "old", "late-new", "late-old"):
        expires = "2000-01-01T00:00:00Z" if rid.startswith("late") else None
        await store.save_halt(checkpoint(rid, expires=expires))
    with pg_connect(pg_url) as conn:
        stored = conn.execute(
            "SELECT halt_digest, deadline FROM toolnexus_halts WHERE request_id = %s",
            (b"late-new",),
        ).fetchone()
        assert stored is not None
        assert (len(stored[0]), stored[1]) == (64, 946684800.0)
        conn.execute(
            "UPDATE toolnexus_halts SET halt_digest = NULL, deadline = NULL"
            " WHERE request_id IN ('old', 'late-old')"
        )
    new = await store.post_answer("new", Answer("new", True), answered_by="ana")
    old = await store.post_answer("old", Answer("old", True), answered_by="ana")
    assert new.digest == old.digest == stored[0]
    assert (new.status, old.status) == ("answered", "answered")
    for rid in ("late-new", "late-old"):
        with pytest.raises(RequestExpired):
            await store.post_answer(rid, Answer(rid, True), answered_by="ana")
        record = await store.answer_record(rid)
        assert record is not None
        assert record.answered_by == "toolnexus:expired"


def record_waiting(pg_url: str, rid: str) -> tuple[Any, ...] | None:
    """The one-statement answer (T2) run by hand on ``rid``: its row, first column whether it
    recorded."""
    from toolnexus.loop.checkpoint import CHECKPOINT_VERSION
    from toolnexus.stores import postgres_runs as runs

    values = {
        "key": hashlib.sha256(rid.encode()).digest(),
        "answer": f'{{"id":"{rid}","ok":true}}',
        "by": b"ana",
        "digest": None,
        "now": 1.0,
        "note": "n",
        "readable": CHECKPOINT_VERSION,
        "plain": True,
        "needy": [],
    }
    with pg_connect(pg_url) as conn:
        return conn.execute(runs._RECORD_WAITING, values).fetchone()  # pyright: ignore[reportPrivateUsage]


async def test_a_saved_checkpoint_carries_what_lets_an_answer_skip_parsing_it(
    store: Any, pg_url: str
) -> None:
    # save_halt stores the text's sha256 and the version it declares: the one-statement
    # answer records only when both show the text is one this build reads, as written.
    await store.save_halt(checkpoint("fresh"))
    await store.save_halt(checkpoint("edited"))
    with pg_connect(pg_url) as conn:
        found = conn.execute(
            "SELECT checkpoint_sha256 = sha256(convert_to(checkpoint, 'UTF8')),"
            " checkpoint_version FROM toolnexus_halts WHERE request_id = %s",
            (b"fresh",),
        ).fetchone()
        assert found == (True, 1)
        conn.execute(  # rewritten by hand, still a readable checkpoint
            "UPDATE toolnexus_halts SET checkpoint = checkpoint || ' ' WHERE request_id = %s",
            (b"edited",),
        )
    fresh = record_waiting(pg_url, "fresh")
    assert fresh is not None
    assert fresh[0] is True
    edited = record_waiting(pg_url, "edited")
    assert edited is not None
    assert (edited[0], edited[2]) == (False, "pending")  # not recorded: the reading path's
    record = await store.post_answer("edited", Answer("edited", True), answered_by="ana")
    assert record.status == "answered"


async def test_a_checkpoint_of_a_version_this_build_does_not_read_is_refused_with_its_hash(
    store: Any, pg_url: str
) -> None:
    # As a newer toolnexus sharing the database would write it: the hash matches the text.
    import json

    from toolnexus.errors import CheckpointError

    await store.save_halt(checkpoint("future"))
    newer = json.dumps({**checkpoint("future").to_json(), "version": 99})
    with pg_connect(pg_url) as conn:
        conn.execute(
            "UPDATE toolnexus_halts SET checkpoint = %s,"
            " checkpoint_sha256 = sha256(convert_to(%s, 'UTF8')), checkpoint_version = 99",
            (newer, newer),
        )
    with pytest.raises(CheckpointError, match="version 99 is not supported"):
        await store.post_answer("future", Answer("future", True), answered_by="ana")
    assert await store.answer_record("future") is None
    assert [e.request_id for e in await store.list_pending()] == ["future"]


# -- migrations ---------------------------------------------------------------------------


async def test_migrations_are_recorded_once_across_reopens(pg_url: str) -> None:
    from toolnexus.stores.postgres import PostgresStore
    from toolnexus.stores.postgres_schema import MIGRATIONS

    for _ in range(3):
        async with PostgresStore(pg_url) as store:
            await store.get("c1")
    with pg_connect(pg_url) as conn:
        rows = conn.execute("SELECT version, name FROM toolnexus_schema_migrations ORDER BY 1")
        assert rows.fetchall() == [(m.version, m.name) for m in MIGRATIONS]


async def test_a_database_at_version_1_is_upgraded_and_keeps_its_conversations(
    pg_url: str,
) -> None:
    from toolnexus.stores.postgres import PostgresStore
    from toolnexus.stores.postgres_schema import MIGRATIONS

    with pg_connect(pg_url) as conn:
        conn.execute(
            "CREATE TABLE toolnexus_schema_migrations (version INTEGER PRIMARY KEY,"
            " name TEXT NOT NULL, applied_at DOUBLE PRECISION NOT NULL)"
        )
        conn.execute(MIGRATIONS[0].statements[0])
        conn.execute("INSERT INTO toolnexus_schema_migrations VALUES (1, 'conversations', 0)")
        conn.execute(
            "INSERT INTO toolnexus_conversations VALUES (%s, %s, %s, 0)",
            (hashlib.sha256(b"c1").digest(), b"c1", '[{"role":"user","content":"old"}]'),
        )
    async with PostgresStore(pg_url) as store:
        assert await store.get("c1") == [{"role": "user", "content": "old"}]
        assert await store.list_pending() == []


async def test_a_database_from_a_newer_toolnexus_is_refused_and_left_alone(
    store: Any, pg_url: str
) -> None:
    from toolnexus.stores.postgres import PostgresStore

    await store.save("c1", HELLO)
    with pg_connect(pg_url) as conn:
        conn.execute("INSERT INTO toolnexus_schema_migrations VALUES (99, 'future', 0)")
    with pytest.raises(StoreError, match="schema version 99, newer"):
        async with PostgresStore(pg_url):
            pass
    with pg_connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM toolnexus_conversations").fetchone() == (1,)


# -- the LISTEN connection ----------------------------------------------------------------


async def test_a_waiter_survives_losing_the_listen_connection(
    store: Any, pg_url: str, app_name: str
) -> None:
    await store.save_halt(checkpoint("r1"))
    parked = asyncio.create_task(store.wait_for_answer("r1", timeout=30))
    assert await store.wait_for_answer("r1", timeout=0.05) is None
    with pg_connect(pg_url) as conn:
        killed = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE query LIKE 'LISTEN \"toolnexus_answers%%' AND application_name = %s",
            (app_name,),
        ).fetchall()
    assert killed == [(True,)]
    await store.post_answer("r1", Answer("r1", True), answered_by="ana")
    record = await asyncio.wait_for(parked, timeout=30)
    assert record is not None
    assert record.answered_by == "ana"


async def test_closing_the_store_ends_parked_waits_with_a_store_error(pg_url: str) -> None:
    from toolnexus.stores.postgres import PostgresStore

    store = PostgresStore(pg_url)
    parked = asyncio.create_task(store.wait_for_answer("r1", timeout=30))
    assert await store.wait_for_answer("r1", timeout=0.05) is None
    await store.aclose()
    with pytest.raises(StoreError, match="closed"):
        await asyncio.wait_for(parked, timeout=30)


# -- lifecycle ----------------------------------------------------------------------------


async def test_a_closed_store_refuses_calls(store: Any) -> None:
    await store.aclose()
    with pytest.raises(StoreError, match="closed"):
        await store.get("c1")


async def test_aclose_is_idempotent_and_needs_no_connection(pg_url: str) -> None:
    from toolnexus.stores.postgres import PostgresStore

    store = PostgresStore(pg_url)
    await store.aclose()
    await store.aclose()


async def test_the_pool_never_opens_more_than_max_size_connections(
    store: Any, pg_url: str, app_name: str
) -> None:
    await asyncio.gather(*(store.save(f"c{i}", HELLO) for i in range(30)))
    with pg_connect(pg_url) as conn:
        opened = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (app_name,)
        ).fetchone()
    assert opened is not None
    assert opened[0] <= 3
