"""resolve_store: every accepted spelling, and a clear error for everything else."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from toolnexus.errors import UsageError
from toolnexus.stores.base import ConversationStore
from toolnexus.stores.memory import InMemoryConversationStore
from toolnexus.stores.sqlite import SqliteStore
from toolnexus.stores.url import resolve_store

HELLO = [{"role": "user", "content": "hello"}]


class HostStore:
    def __init__(self) -> None:
        self.data: dict[str, list[dict[str, Any]]] = {}

    async def get(self, id: str) -> list[dict[str, Any]] | None:
        return self.data.get(id)

    async def save(self, id: str, messages: list[dict[str, Any]]) -> None:
        self.data[id] = messages


class HostStoreWithDelete(HostStore):
    async def delete(self, id: str) -> bool:
        return self.data.pop(id, None) is not None


class SyncStore:
    def get(self, id: str) -> None:
        return None

    async def save(self, id: str, messages: list[dict[str, Any]]) -> None:
        return None


@pytest.mark.parametrize("spec", [None, "memory"])
def test_none_and_memory_give_a_fresh_in_memory_store(spec: str | None) -> None:
    first, second = resolve_store(spec), resolve_store(spec)
    assert isinstance(first, InMemoryConversationStore)
    assert first is not second


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///state.db", "state.db"),
        ("sqlite:///data/state.db", "data/state.db"),
        ("sqlite:////srv/app/state.db", "/srv/app/state.db"),
        ("sqlite:///my file.db", "my file.db"),
        ("sqlite:///:memory:", ":memory:"),
        ("sqlite://", ":memory:"),
    ],
)
def test_a_sqlite_url_gives_a_sqlite_store_on_its_path(url: str, path: str) -> None:
    store = resolve_store(url)
    assert isinstance(store, SqliteStore)
    assert store.path == path


async def test_a_sqlite_url_store_persists_to_the_file(tmp_path: Path) -> None:
    store = resolve_store(f"sqlite:///{tmp_path}/state.db")
    assert isinstance(store, SqliteStore)
    await store.save("c1", HELLO)
    await store.aclose()
    async with SqliteStore(tmp_path / "state.db") as reopened:
        assert await reopened.get("c1") == HELLO


@pytest.mark.parametrize("url", ["postgresql://u@db/app", "postgres://db/app"])
def test_a_postgres_url_gives_a_postgres_store_without_connecting(url: str) -> None:
    pytest.importorskip("psycopg")
    from toolnexus.stores.postgres import PostgresStore

    assert isinstance(resolve_store(url), PostgresStore)


@pytest.mark.parametrize(
    "url",
    [
        "sqlite:///",
        "sqlite://host/state.db",
        "sqlite:state.db",
        "sqlite:///state.db?mode=ro",
    ],
)
def test_a_malformed_sqlite_url_is_a_usage_error(url: str) -> None:
    with pytest.raises(UsageError, match="sqlite"):
        resolve_store(url)


@pytest.mark.parametrize(
    "spec", ["", "Memory", "redis://localhost", "state.db", "/tmp/state.db", 42, {}, [], b"memory"]
)
def test_anything_else_is_a_usage_error_listing_the_accepted_forms(spec: object) -> None:
    with pytest.raises(UsageError, match=re.escape('"memory", "sqlite:///relative/path.db"')):
        resolve_store(spec)


def test_a_complete_host_store_is_used_as_it_is() -> None:
    host = HostStoreWithDelete()
    assert resolve_store(host) is host


def test_an_in_memory_store_object_is_used_as_it_is() -> None:
    store = InMemoryConversationStore()
    assert resolve_store(store) is store


async def test_a_host_store_without_delete_is_wrapped_and_delegates() -> None:
    host = HostStore()
    store = resolve_store(host)
    assert isinstance(store, ConversationStore)
    await store.save("c1", HELLO)
    assert host.data == {"c1": HELLO}
    assert await store.get("c1") == HELLO


async def test_delete_on_a_host_store_without_delete_is_a_clear_usage_error() -> None:
    store = resolve_store(HostStore())
    with pytest.raises(UsageError, match="HostStore has no delete method"):
        await store.delete("c1")


def test_a_host_store_with_a_sync_method_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"SyncStore\.get must be async"):
        resolve_store(SyncStore())
