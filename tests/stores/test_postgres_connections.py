"""PostgresStore's connections (`toolnexus.stores.postgres_conn`): between operations up to
``min_size`` idle connections stay out of the pool and the next operation takes one of them;
anything else — a connection in a transaction or busy, one held past ``HOLD_S``, one an
operation waiting in the pool needs, every one on close — goes back to the pool. The store's
own operations run on a cursor kept with each connection while it stays out."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from toolnexus.errors import StoreError
from toolnexus.stores import postgres_conn
from toolnexus.stores.postgres import PostgresStore


@pytest.fixture
async def store(pg_url: str) -> AsyncIterator[PostgresStore]:
    async with PostgresStore(pg_url, min_size=2, max_size=4, timeout=5) as opened:
        yield opened


def kept(store: PostgresStore) -> list[Any]:
    return [lent.conn for lent in store._conns._idle]  # pyright: ignore[reportPrivateUsage]


def pool_requests(store: PostgresStore) -> int:
    pool: Any = store._conns._pool  # pyright: ignore[reportPrivateUsage]
    return pool.get_stats().get("requests_num", 0)


async def backend(store: PostgresStore) -> int:
    async with store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
        cur = await conn.execute("SELECT pg_backend_pid()")
        row = await cur.fetchone()
    assert row is not None
    return row[0]


async def test_the_next_operation_takes_the_connection_the_last_one_gave_back(
    store: PostgresStore,
) -> None:
    first = await backend(store)
    asked = pool_requests(store)
    assert [await backend(store) for _ in range(5)] == [first] * 5
    assert pool_requests(store) == asked  # the pool was not asked again
    assert len(kept(store)) == 1


async def test_the_store_runs_its_statements_on_the_kept_connections_cursor(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Any] = []
    real = psycopg.AsyncConnection.cursor

    def cursor(conn: Any, *args: Any, **kwargs: Any) -> Any:
        made.append(made_one := real(conn, *args, **kwargs))
        return made_one

    await store.list_pending(limit=1)  # the kept connection's cursor made
    monkeypatch.setattr(psycopg.AsyncConnection, "cursor", cursor)
    for i in range(5):
        await store.save(f"c{i}", [{"role": "user", "content": "hi"}])
        assert await store.get(f"c{i}") == [{"role": "user", "content": "hi"}]
        assert await store.delete(f"c{i}")
        assert await store.list_pending(limit=1) == []
    assert made == []  # every operation ran on the cursor kept with the connection
    (lent,) = store._conns._idle  # pyright: ignore[reportPrivateUsage]
    assert lent.cursor is not None
    assert not lent.cursor.closed
    # A connection that goes back to the pool leaves its cursor behind: the next one out of
    # the pool gets a new cursor of its own.
    monkeypatch.setattr(postgres_conn, "HOLD_S", 0.0)
    await store.list_pending(limit=1)
    assert len(made) == 1
    assert made[0] is not lent.cursor
    assert kept(store) == []


async def test_the_stores_statements_are_prepared_at_their_first_use(
    store: PostgresStore,
) -> None:
    await store.get("c1")  # one statement each, once, on the kept connection
    assert await store.answer_record("nobody") is None
    async with store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
        cur = await conn.execute("SELECT statement FROM pg_prepared_statements")
        prepared = {row[0] for row in await cur.fetchall()}
    # As psycopg sends them: the placeholders numbered.
    assert "SELECT messages FROM toolnexus_conversations WHERE key = $1" in prepared
    assert any(s.startswith("SELECT answer, answered_at, answered_by") for s in prepared)


async def test_no_more_than_min_size_stay_out_of_the_pool(store: PostgresStore) -> None:
    release = asyncio.Event()
    all_out = asyncio.Barrier(5)

    async def hold() -> None:
        async with store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
            await conn.execute("SELECT 1")
            await all_out.wait()
            await release.wait()

    tasks = [asyncio.create_task(hold()) for _ in range(4)]
    await all_out.wait()  # four connections out at once: the pool's max_size
    release.set()
    await asyncio.gather(*tasks)
    assert len(kept(store)) == 2  # min_size; the other two are back in the pool
    pool: Any = store._conns._pool  # pyright: ignore[reportPrivateUsage]
    assert pool.get_stats()["pool_available"] >= 2


async def test_a_connection_left_in_a_transaction_goes_back_to_the_pool(
    store: PostgresStore,
) -> None:
    async with store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
        await conn.execute("BEGIN")
        await conn.execute("CREATE TEMP TABLE left_open (x int)")
    assert conn not in kept(store)
    # The pool rolled it back: whichever connection comes next is idle, the table gone.
    for _ in range(3):
        async with store._connection() as again:  # pyright: ignore[reportPrivateUsage]
            assert again.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            cur = await again.execute("SELECT to_regclass('pg_temp.left_open') IS NULL")
            assert await cur.fetchone() == (True,)


async def test_a_statement_cancelled_in_flight_does_not_leave_its_connection_kept(
    store: PostgresStore, pg_url: str
) -> None:
    async def slow() -> None:
        async with store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
            await conn.execute("SELECT pg_sleep(30) AS cancelled_in_flight")

    task = asyncio.create_task(slow())
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as watch:
        running = None
        while not running:  # until the server runs it
            await asyncio.sleep(0)
            cur = await watch.execute(
                "SELECT 1 FROM pg_stat_activity WHERE state = 'active'"
                " AND query LIKE '%%cancelled_in_flight%%' AND pid <> pg_backend_pid()"
            )
            running = await cur.fetchone()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for conn in kept(store):
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    # The next operations work at once (none is handed a connection still running it).
    for _ in range(3):
        assert await asyncio.wait_for(backend(store), 10) > 0


async def test_an_operation_waiting_in_the_pool_gets_the_connection_given_back(
    pg_url: str,
) -> None:
    async with PostgresStore(pg_url, min_size=1, max_size=1, timeout=5) as store:
        release = asyncio.Event()
        holding = asyncio.Event()

        async def hold() -> None:
            async with store._connection() as conn:  # pyright: ignore[reportPrivateUsage]
                await conn.execute("SELECT 1")
                holding.set()
                await release.wait()

        holder = asyncio.create_task(hold())
        await holding.wait()
        waiter = asyncio.create_task(backend(store))  # the pool's only connection is out
        await asyncio.sleep(0)  # one step: it is waiting in the pool
        assert store._conns._waiting == 1  # pyright: ignore[reportPrivateUsage]
        assert not waiter.done()
        release.set()
        await holder
        # Given to the waiter, not kept: it gets it well before the pool's 5 s timeout.
        assert await asyncio.wait_for(waiter, 3) > 0


async def test_a_connection_out_of_the_pool_past_hold_s_goes_back(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await backend(store)
    assert len(kept(store)) == 1
    asked = pool_requests(store)
    monkeypatch.setattr(postgres_conn, "HOLD_S", 0.0)
    await backend(store)  # the kept one went back first; this one came from the pool
    assert pool_requests(store) == asked + 1
    assert kept(store) == []  # and went back too


async def test_closing_the_store_closes_the_kept_connections(pg_url: str) -> None:
    store = PostgresStore(pg_url, min_size=2, max_size=3)
    await asyncio.gather(backend(store), backend(store))
    held = kept(store)
    assert len(held) == 2
    await store.aclose()
    assert all(conn.closed for conn in held)
    assert kept(store) == []
    with pytest.raises(StoreError, match="closed"):
        await backend(store)
