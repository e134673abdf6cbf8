"""The run-store backends every contract test runs against: memory, SQLite, Postgres.

Import the fixtures (``backend``, ``clock``, ``store``) into a test module to run its tests on
all three; ``Backend.raw`` / ``Backend.corrupt`` reach under a store to check or damage a row.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from halt_support import T0

from pg_support import pg_connect
from toolnexus.stores.runs import InMemoryRunStore
from toolnexus.stores.sqlite import SqliteStore
from toolnexus.suspension import Answer

__all__ = ["Backend", "Clock", "backend", "clock", "store", "yes"]


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def yes(rid: str = "req-1", **data: Any) -> Answer:
    return Answer(id=rid, ok=True, data=data or None)


class Backend:
    """How to build one backend, and how to reach under it to hand-edit a checkpoint row."""

    name = ""

    async def make(self, clock: Clock) -> Any:
        raise NotImplementedError

    def corrupt(self, store: Any, rid: str, text: str) -> None:
        raise NotImplementedError

    def raw(self, store: Any, rid: str) -> object:
        raise NotImplementedError


class Memory(Backend):
    name = "memory"

    async def make(self, clock: Clock) -> Any:
        return InMemoryRunStore(clock)

    def corrupt(self, store: Any, rid: str, text: str) -> None:
        store._rows[rid].checkpoint = text

    def raw(self, store: Any, rid: str) -> object:
        return store._rows[rid].checkpoint


class Sqlite(Backend):
    name = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path

    async def make(self, clock: Clock) -> Any:
        return SqliteStore(self.path, clock=clock, poll_interval=0.02)

    def corrupt(self, store: Any, rid: str, text: str) -> None:
        with closing(sqlite3.connect(self.path, isolation_level=None)) as conn:
            conn.execute("UPDATE halts SET checkpoint = ? WHERE request_id = ?", (text, rid))

    def raw(self, store: Any, rid: str) -> object:
        with closing(sqlite3.connect(self.path, isolation_level=None)) as conn:
            return conn.execute(
                "SELECT checkpoint, status FROM halts WHERE request_id = ?", (rid,)
            ).fetchone()


class Postgres(Backend):
    name = "postgres"

    def __init__(self, url: str) -> None:
        self.url = url

    async def make(self, clock: Clock) -> Any:
        from toolnexus.stores.postgres import PostgresStore

        return PostgresStore(self.url, clock=clock, max_size=4)

    def corrupt(self, store: Any, rid: str, text: str) -> None:
        with pg_connect(self.url) as conn:
            conn.execute(
                "UPDATE toolnexus_halts SET checkpoint = %s WHERE request_id = %s",
                (text, rid.encode()),
            )

    def raw(self, store: Any, rid: str) -> object:
        with pg_connect(self.url) as conn:
            return conn.execute(
                "SELECT checkpoint, status FROM toolnexus_halts WHERE request_id = %s",
                (rid.encode(),),
            ).fetchone()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "memory":
        return Memory()
    if request.param == "sqlite":
        return Sqlite(tmp_path / "runs.db")
    return Postgres(request.getfixturevalue("pg_url"))


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def store(backend: Backend, clock: Clock) -> AsyncIterator[Any]:
    opened = await backend.make(clock)
    yield opened
    await opened.aclose()
