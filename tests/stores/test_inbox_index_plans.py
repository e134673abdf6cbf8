"""The inbox queries read their partial indexes at 100,000 rows (SQLite migration 6,
Postgres migration 7)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path

import pytest
from halt_support import T0
from test_postgres_requests import FILL
from test_sqlite_runs import assert_indexed, fill_halts, plans_of

from pg_support import pg_connect
from toolnexus.stores import postgres_inbox as inbox
from toolnexus.stores import sqlite_inbox, sqlite_runs
from toolnexus.stores.postgres import PostgresStore
from toolnexus.stores.sqlite import SqliteStore


@pytest.fixture
async def filled(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    path = tmp_path / "plans.db"
    store = SqliteStore(path)
    await store.list_pending()  # created and migrated
    fill_halts(path, 100_000)
    yield store
    await store.aclose()


async def test_the_search_pages_and_counts_stay_on_the_pending_index(filled: SqliteStore) -> None:
    search = partial(sqlite_runs.list_pending, "approval", None, None, None, None, 50, 1.5)
    assert_indexed(
        await plans_of(filled, partial(search, text="deploy", offset=500)), "halts_pending"
    )
    where, args = sqlite_runs.pending_filters(None, "deploy", None, 60.0, None, 1.5, "c4")
    count = partial(sqlite_inbox._count, where, args)  # pyright: ignore[reportPrivateUsage]
    [plan] = (await plans_of(filled, count)).values()
    # The grouping sorts the handful of kinds read off the index, never the table.
    assert plan == ["SCAN halts USING INDEX halts_pending", "USE TEMP B-TREE FOR GROUP BY"]


@pytest.mark.parametrize(
    ("filters", "index"),
    [
        ((None, None, None, None, None, None), "halts_history"),
        (("ana", None, None, None, None, None), "halts_answerer"),
        ((None, "done", "approval", None, 5000.0, None), "halts_history"),
    ],
)
async def test_the_history_reads_its_indexes_newest_first(
    filled: SqliteStore, filters: tuple[object, ...], index: str
) -> None:
    job = partial(sqlite_inbox._history, filters, 0, 50, 1.5)  # pyright: ignore[reportPrivateUsage]
    plans = await plans_of(filled, job)
    assert_indexed(plans, index)
    assert not any("TEMP B-TREE" in step for plan in plans.values() for step in plan), plans


async def test_announcing_reads_the_unannounced_index(filled: SqliteStore) -> None:
    job = partial(sqlite_inbox._take_unannounced, 100, 1.5)  # pyright: ignore[reportPrivateUsage]
    assert_indexed(await plans_of(filled, job), "halts_unannounced")


# -- Postgres (migration 7), on the fill of tests/stores/test_postgres_requests.py ----------


async def test_the_postgres_inbox_queries_read_their_indexes_at_100000_rows(pg_url: str) -> None:
    async with PostgresStore(pg_url) as store:
        await store.list_pending(limit=1)  # migrated
    with pg_connect(pg_url) as conn:
        conn.execute(FILL, {"t0": T0})
        conn.execute(
            "UPDATE toolnexus_halts SET answered_by ="
            " convert_to('u' || (abs(hashtext(key::text)) % 400), 'UTF8')"
            " WHERE answered_at IS NOT NULL"
        )
        conn.execute("UPDATE toolnexus_halts SET announced = true WHERE random() < 0.98")
        conn.execute("ANALYZE toolnexus_halts")
        page, page_args = inbox.pending_filters("approval", None, None, None, None, T0)
        history, history_args = inbox.history_query((None, None, None, None, None, None), T0)
        by, by_args = inbox.history_query((None, "u3", None, None, None, None), T0)
        announce, announce_args = inbox.unannounced_query(T0)
        order = " ORDER BY answered_at DESC, request_id DESC LIMIT 50 OFFSET 0"
        plans = {
            "search page 20": (
                "".join(page) + " ORDER BY created_at, request_id LIMIT 50 OFFSET 950",
                page_args,
                "toolnexus_halts_pending",
            ),
            "history": ("".join(history) + order, history_args, "toolnexus_halts_history"),
            "history by person": ("".join(by) + order, by_args, "toolnexus_halts_answerer"),
            "announce": (announce, [*announce_args, 100], "toolnexus_halts_"),
        }
        for name, (sql, args, index) in plans.items():
            plan = "\n".join(line for (line,) in conn.execute("EXPLAIN " + sql, args))
            assert "Seq Scan" not in plan, f"{name}:\n{plan}"
            assert f"using {index}" in plan.lower() or index in plan, f"{name}:\n{plan}"


# -- the operator's reads (SQLite migration 10, Postgres migration 12) -----------------------


async def test_a_prefix_and_the_runs_in_flight_read_their_indexes_on_sqlite(
    filled: SqliteStore,
) -> None:
    find = partial(sqlite_inbox._find_ids, "r0123", 10)  # pyright: ignore[reportPrivateUsage]
    assert_indexed(await plans_of(filled, find), "sqlite_autoindex_halts_1")  # the primary key
    runs_sql = sqlite_inbox._RUNS  # pyright: ignore[reportPrivateUsage]
    plans = await plans_of(filled, lambda conn: conn.execute(runs_sql, (1.5, 100, 0)).fetchall())
    assert_indexed(plans, "halts_runs")
    assert not any("TEMP B-TREE" in step for plan in plans.values() for step in plan), plans


async def test_the_postgres_operator_reads_use_their_indexes_at_100000_rows(pg_url: str) -> None:
    async with PostgresStore(pg_url) as store:
        await store.list_pending(limit=1)  # migrated
    with pg_connect(pg_url) as conn:
        conn.execute(FILL, {"t0": T0})
        conn.execute("ANALYZE toolnexus_halts")
        ids = "".join(
            [inbox._IDS_FROM, inbox._IDS_BELOW, inbox._IDS_ORDER]  # pyright: ignore[reportPrivateUsage]
        )
        plans = {
            "find_request_ids": (ids, [b"r123", b"r124", 4, b"r123", 10], "_id_prefix"),
            "list_runs": (inbox._RUNS, [T0, 100, 0], "toolnexus_halts_runs"),  # pyright: ignore[reportPrivateUsage]
        }
        for name, (sql, args, index) in plans.items():
            plan = "\n".join(line for (line,) in conn.execute("EXPLAIN " + sql, args))
            assert "Seq Scan" not in plan, f"{name}:\n{plan}"
            assert index in plan, f"{name}:\n{plan}"
    async with PostgresStore(pg_url) as store:
        found = await store.find_request_ids("r1234")
    assert found == ["r1234", *(f"r1234{n}" for n in range(10))][:10]
