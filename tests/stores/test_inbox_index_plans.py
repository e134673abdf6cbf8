"""The SQLite inbox queries read their partial indexes at 100,000 rows (migration 6)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path

import pytest
from test_sqlite_runs import assert_indexed, fill_halts, plans_of

from toolnexus.stores import sqlite_inbox, sqlite_runs
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
        ((None, None, None, None, None), "halts_history"),
        (("ana", None, None, None, None), "halts_answerer"),
        ((None, "done", "approval", None, 5000.0), "halts_history"),
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
