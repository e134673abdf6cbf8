"""The RuntimeStore contract (the agent runtime's handle table), against SQLite and Postgres."""

from __future__ import annotations

import asyncio
import math
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from pg_support import pg_connect
from toolnexus.agents.persistence import RuntimeStore, as_runtime_store
from toolnexus.errors import StoreError, UsageError
from toolnexus.stores.sqlite import SqliteStore

T0 = 1_700_000_000.0


class Clock:
    """A clock the test moves by hand (stamps each row's ``updated_at``)."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def row(handle_id: str, **fields: Any) -> dict[str, Any]:
    """A handle row shaped like `Handle.to_json` (a nested checkpoint included)."""
    return {
        "id": handle_id,
        "agent": "worker",
        "parent": "root",
        "children": [],
        "state": "suspended",
        "inbox": [{"from": "root", "channel": "task", "text": "go"}],
        "budget": {"max_turns": 5},
        "tokens": 12,
        "turns": 1,
        "tool_calls": 1,
        "started_at": 1_700_000_000.25,
        "next_child": 1,
        "task_key": None,
        "result": None,
        "pending": {"id": "req-1", "kind": "approval", "prompt": "ok?"},
        "checkpoint": {"version": 1, "messages": [{"role": "user", "content": "go"}]},
        "spawned": True,
        **fields,
    }


class Backend:
    """How to open one backend, and how to reach under it to read or hand-edit a row."""

    async def make(self, clock: Clock) -> Any:
        raise NotImplementedError

    def corrupt(self, runtime_id: str, handle_id: str, data: str) -> None:
        raise NotImplementedError

    def raw(self, runtime_id: str, handle_id: str) -> object:
        raise NotImplementedError

    def stamps(self, runtime_id: str) -> list[float]:
        """Every row's ``updated_at`` for ``runtime_id``."""
        raise NotImplementedError


class Sqlite(Backend):
    def __init__(self, path: Path) -> None:
        self.path = path

    async def make(self, clock: Clock) -> Any:
        return SqliteStore(self.path, clock=clock)

    def _query(self, sql: str, args: tuple[object, ...]) -> list[tuple[Any, ...]]:
        with closing(sqlite3.connect(self.path, isolation_level=None)) as conn:
            return conn.execute(sql, args).fetchall()

    def corrupt(self, runtime_id: str, handle_id: str, data: str) -> None:
        self._query(
            "UPDATE runtime_handles SET data = ? WHERE runtime_id = ? AND handle_id = ?",
            (data, runtime_id, handle_id),
        )

    def raw(self, runtime_id: str, handle_id: str) -> object:
        return self._query(
            "SELECT data FROM runtime_handles WHERE runtime_id = ? AND handle_id = ?",
            (runtime_id, handle_id),
        )[0][0]

    def stamps(self, runtime_id: str) -> list[float]:
        found = self._query(
            "SELECT updated_at FROM runtime_handles WHERE runtime_id = ?", (runtime_id,)
        )
        return [r[0] for r in found]


class Postgres(Backend):
    def __init__(self, url: str) -> None:
        self.url = url

    async def make(self, clock: Clock) -> Any:
        from toolnexus.stores.postgres import PostgresStore

        return PostgresStore(self.url, clock=clock, max_size=4)

    def _query(self, sql: str, args: tuple[object, ...]) -> list[tuple[Any, ...]]:
        with pg_connect(self.url) as conn:
            cur = conn.execute(sql, args)
            return cur.fetchall() if cur.description is not None else []

    def corrupt(self, runtime_id: str, handle_id: str, data: str) -> None:
        self._query(
            "UPDATE toolnexus_runtime_handles SET data = %s"
            " WHERE runtime_id = %s AND handle_id = %s",
            (data, runtime_id.encode(), handle_id.encode()),
        )

    def raw(self, runtime_id: str, handle_id: str) -> object:
        return self._query(
            "SELECT data FROM toolnexus_runtime_handles WHERE runtime_id = %s AND handle_id = %s",
            (runtime_id.encode(), handle_id.encode()),
        )[0][0]

    def stamps(self, runtime_id: str) -> list[float]:
        found = self._query(
            "SELECT updated_at FROM toolnexus_runtime_handles WHERE runtime_id = %s",
            (runtime_id.encode(),),
        )
        return [r[0] for r in found]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "sqlite":
        return Sqlite(tmp_path / "handles.db")
    return Postgres(request.getfixturevalue("pg_url"))


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def store(backend: Backend, clock: Clock) -> AsyncIterator[Any]:
    opened = await backend.make(clock)
    yield opened
    await opened.aclose()


def by_id(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in rows}


# -- the Protocol ---------------------------------------------------------------------------


def test_the_backend_is_a_runtime_store_used_as_it_is(store: Any) -> None:
    assert isinstance(store, RuntimeStore)
    assert as_runtime_store(store) is store


# -- round trips ----------------------------------------------------------------------------


async def test_an_unknown_runtime_has_no_rows(store: Any) -> None:
    assert await store.load_handles("nobody") == []


async def test_saved_rows_come_back_equal(store: Any) -> None:
    rows = [row("root", parent=None, children=["root/w.1"]), row("root/w.1")]
    await store.save_handles("rt", rows)
    assert by_id(await store.load_handles("rt")) == by_id(rows)


async def test_rows_come_back_in_handle_id_order(store: Any) -> None:
    await store.save_handles("rt", [row("root/w.2"), row("root"), row("root/w.1")])
    assert [r["id"] for r in await store.load_handles("rt")] == ["root", "root/w.1", "root/w.2"]


async def test_rows_survive_reopening_the_store(store: Any, backend: Backend, clock: Clock) -> None:
    await store.save_handles("rt", [row("root/w.1")])
    await store.aclose()
    reopened = await backend.make(clock)
    try:
        assert await reopened.load_handles("rt") == [row("root/w.1")]
    finally:
        await reopened.aclose()


async def test_saving_a_row_again_replaces_it_and_leaves_the_others(store: Any) -> None:
    await store.save_handles("rt", [row("a"), row("b")])
    await store.save_handles("rt", [row("a", state="idle", turns=2)])
    assert by_id(await store.load_handles("rt")) == {
        "a": row("a", state="idle", turns=2),
        "b": row("b"),
    }


async def test_rows_saved_separately_accumulate(store: Any) -> None:
    for n in range(5):
        await store.save_handles("rt", [row(f"h{n}")])
    assert sorted(by_id(await store.load_handles("rt"))) == ["h0", "h1", "h2", "h3", "h4"]


async def test_a_handle_given_twice_in_one_save_keeps_its_last_row(store: Any) -> None:
    await store.save_handles("rt", [row("a", turns=1), row("a", turns=2)])
    assert await store.load_handles("rt") == [row("a", turns=2)]


async def test_an_empty_save_changes_nothing(store: Any) -> None:
    await store.save_handles("rt", [row("a")])
    await store.save_handles("rt", [])
    assert await store.load_handles("rt") == [row("a")]


async def test_concurrent_saves_of_different_handles_all_land(store: Any) -> None:
    await asyncio.gather(*(store.save_handles("rt", [row(f"h{n:02}")]) for n in range(20)))
    assert [r["id"] for r in await store.load_handles("rt")] == [f"h{n:02}" for n in range(20)]


async def test_two_store_objects_saving_different_handles_lose_nothing(
    store: Any, backend: Backend, clock: Clock
) -> None:
    other = await backend.make(clock)
    try:
        await store.save_handles("rt", [row("a")])
        await other.save_handles("rt", [row("b")])
        await store.save_handles("rt", [row("a", turns=9)])
        assert by_id(await store.load_handles("rt")) == {"a": row("a", turns=9), "b": row("b")}
    finally:
        await other.aclose()


# -- isolation and deletion -----------------------------------------------------------------


async def test_runtimes_are_isolated_even_with_the_same_handle_ids(store: Any) -> None:
    await store.save_handles("one", [row("root", agent="first")])
    await store.save_handles("two", [row("root", agent="second")])
    assert await store.load_handles("one") == [row("root", agent="first")]
    assert await store.load_handles("two") == [row("root", agent="second")]


async def test_runtime_ids_that_share_a_prefix_do_not_mix(store: Any) -> None:
    await store.save_handles("rt", [row("a")])
    await store.save_handles("rt-2", [row("b")])
    await store.save_handles("r", [row("c")])
    assert [r["id"] for r in await store.load_handles("rt")] == ["a"]


async def test_delete_handles_forgets_one_runtime_only(store: Any) -> None:
    await store.save_handles("one", [row("a"), row("b")])
    await store.save_handles("two", [row("a")])
    assert await store.delete_handles("one") is True
    assert await store.load_handles("one") == []
    assert await store.load_handles("two") == [row("a")]
    assert await store.delete_handles("one") is False


# -- unicode --------------------------------------------------------------------------------


async def test_unicode_ids_and_contents_round_trip_exactly(store: Any) -> None:
    text = 'héllo 世界 🤖🏳️‍🌈 مرحبا e\u0301 "quoted" back\\slash new\nline nul\x00 \u2028'
    runtime_id = "équipe/🤖 nul\x00 rt"
    rows = [row("root/ü.1", note=text), row("root/agent 世界.2", inbox=[{"text": text}])]
    await store.save_handles(runtime_id, rows)
    assert by_id(await store.load_handles(runtime_id)) == by_id(rows)
    assert await store.load_handles("équipe/🤖 nul") == []


async def test_a_long_id_is_storable(store: Any) -> None:
    handle_id = "root" + "/worker.1" * 500
    await store.save_handles("r" * 5000, [row(handle_id)])
    assert await store.load_handles("r" * 5000) == [row(handle_id)]


# -- bad input is refused and changes nothing -----------------------------------------------


@pytest.mark.parametrize(
    "rows",
    [
        "not a list",
        [["not", "a", "dict"]],
        [{"state": "idle"}],
        [{"id": 7}],
        [row("a"), {"id": "b", "x": math.nan}],
        [row("a"), {"id": "b", "x": {1, 2}}],
        [row("a"), {"id": "b", "x": object()}],
        [row("a"), {"id": "b\ud800"}],
        [row("a"), {"id": "b", "x": "lone \udfff"}],
    ],
    ids=[
        "not a list",
        "not a dict",
        "no id",
        "id not a string",
        "nan",
        "a set",
        "an object",
        "surrogate id",
        "surrogate text",
    ],
)
async def test_rows_that_are_not_storable_are_a_usage_error_and_change_nothing(
    store: Any, rows: Any
) -> None:
    await store.save_handles("rt", [row("a", turns=1)])
    with pytest.raises(UsageError):
        await store.save_handles("rt", rows)
    assert await store.load_handles("rt") == [row("a", turns=1)]


@pytest.mark.parametrize("runtime_id", [None, 7, b"rt", "bad \ud800"], ids=repr)
async def test_a_runtime_id_that_is_not_text_is_a_usage_error(store: Any, runtime_id: Any) -> None:
    with pytest.raises(UsageError, match="runtime id"):
        await store.save_handles(runtime_id, [row("a")])
    with pytest.raises(UsageError, match="runtime id"):
        await store.load_handles(runtime_id)
    with pytest.raises(UsageError, match="runtime id"):
        await store.delete_handles(runtime_id)


# -- a hand-edited row is reported and left alone -------------------------------------------


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ("{truncated", "invalid JSON"),
        ("[1, 2]", "not a JSON object"),
        ('{"id": "someone else"}', "not a JSON object"),
        ('{"state": "idle"}', "not a JSON object"),
        ("[" * 100_000, "invalid JSON"),
    ],
    ids=["truncated", "array", "other id", "no id", "absurd nesting"],
)
async def test_a_malformed_stored_row_is_a_store_error_and_is_left_as_it_is(
    store: Any, backend: Backend, data: str, match: str
) -> None:
    await store.save_handles("rt", [row("a"), row("b")])
    backend.corrupt("rt", "b", data)
    with pytest.raises(StoreError, match=rf"handle 'b' of runtime 'rt' .*{match}") as caught:
        await store.load_handles("rt")
    assert "left as it is" in str(caught.value)
    assert backend.raw("rt", "b") == data


# -- the cost of a save ---------------------------------------------------------------------


async def test_a_save_writes_only_its_rows_however_large_the_table(
    store: Any, backend: Backend, clock: Clock
) -> None:
    await store.save_handles("rt", [row(f"h{n:03}") for n in range(300)])
    clock.now = T0 + 1
    await store.save_handles("rt", [row("h150", state="idle")])
    stamps = backend.stamps("rt")
    assert len(stamps) == 300
    assert stamps.count(T0 + 1) == 1
