"""The inbox's sessions behave alike on every backend (memory, SQLite, Postgres): a session is
found until it is ended or runs out, ending it is seen by another store object on the same
database, and expired rows and rows of other tokens are deleted lazily."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from run_backends import Backend, Clock, Postgres, Sqlite

from toolnexus.errors import UsageError
from toolnexus.stores.sessions import SessionStore


def key(n: int) -> str:
    return hashlib.sha256(f"session-{n}".encode()).hexdigest()


async def test_a_session_is_found_until_it_is_ended(store: Any, clock: Clock) -> None:
    sessions = store.sessions
    assert isinstance(sessions, SessionStore)
    opened = await sessions.open(key(1), user="ana", tag="t-ana", lifetime=3600)
    assert (opened.user, opened.tag, opened.created_at, opened.expires_at) == (
        "ana",
        "t-ana",
        clock.now,
        clock.now + 3600,
    )
    assert await sessions.find(key(1)) == opened
    assert await sessions.find(key(2)) is None
    assert await sessions.end(key(1)) is True
    assert await sessions.find(key(1)) is None
    assert await sessions.end(key(1)) is False


async def test_a_session_past_its_end_is_not_found_and_is_deleted_by_the_next_sign_in(
    store: Any, clock: Clock
) -> None:
    await store.sessions.open(key(1), user="ana", tag="t-ana", lifetime=60)
    clock.now += 59.5
    assert await store.sessions.find(key(1)) is not None
    clock.now += 0.5
    assert await store.sessions.find(key(1)) is None
    await store.sessions.open(key(2), user="bob", tag="t-bob", lifetime=60)
    assert await store.sessions.end(key(1)) is False  # already deleted
    assert await store.sessions.find(key(2)) is not None


async def test_prune_ends_the_sessions_of_other_tokens_unknown_users_and_past_ends(
    store: Any, clock: Clock
) -> None:
    sessions = store.sessions
    await sessions.open(key(1), user="ana", tag="old", lifetime=3600)
    await sessions.open(key(2), user="ana", tag="new", lifetime=3600)
    await sessions.open(key(3), user="gone", tag="t", lifetime=3600)
    await sessions.open(key(4), user="bob", tag="t-bob", lifetime=10)
    await sessions.open(key(5), user="bob", tag="t-bob", lifetime=3600)
    clock.now += 10
    assert await sessions.prune({"ana": "new", "bob": "t-bob"}) == 3
    found = [await sessions.find(key(n)) for n in range(1, 6)]
    assert [r is not None for r in found] == [False, True, False, False, True]
    assert await sessions.prune({"ana": "new", "bob": "t-bob"}) == 0


@pytest.fixture(params=["sqlite", "postgres"])
def durable(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "sqlite":
        return Sqlite(tmp_path / "runs.db")
    return Postgres(request.getfixturevalue("pg_url"))


async def test_ending_a_session_is_seen_by_another_store_on_the_same_database(
    durable: Backend, clock: Clock
) -> None:
    first, second = await durable.make(clock), await durable.make(clock)
    try:
        await first.sessions.open(key(1), user="ana", tag="t", lifetime=3600)
        assert await second.sessions.find(key(1)) is not None
        assert await second.sessions.end(key(1)) is True
        assert await first.sessions.find(key(1)) is None
    finally:
        await first.aclose()
        await second.aclose()


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"key": "nothex"}, "64 lower-case hex"),
        ({"key": key(1).upper()}, "64 lower-case hex"),
        ({"user": ""}, "user must be a non-empty string"),
        ({"tag": None}, "tag must be a non-empty string"),
        ({"lifetime": 0}, "positive seconds"),
        ({"lifetime": float("inf")}, "finite"),
    ],
)
async def test_bad_arguments_are_usage_errors_and_store_nothing(
    store: Any, given: dict[str, Any], expected: str
) -> None:
    arguments: dict[str, Any] = {"key": key(1), "user": "ana", "tag": "t", "lifetime": 60}
    arguments.update(given)
    with pytest.raises(UsageError, match=expected):
        await store.sessions.open(arguments.pop("key"), **arguments)
    assert await store.sessions.find(key(1)) is None
    with pytest.raises(UsageError):
        await store.sessions.find("x")
    with pytest.raises(UsageError):
        await store.sessions.prune({"ana": 1})
