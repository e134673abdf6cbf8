"""The runtime store: which handle table a backend gets, and a tree surviving the process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from agent_support import check_secret_tool, llm_of

from toolnexus import Answer, StoreError
from toolnexus._types import Message
from toolnexus.agents import AgentDef, AgentRuntime, Handle, TaskResult
from toolnexus.agents.persistence import (
    InMemoryRuntimeStore,
    NullRuntimeStore,
    RuntimeStore,
    as_runtime_store,
)
from toolnexus.stores._handlerows import LEGACY_PREFIX
from toolnexus.stores.memory import InMemoryConversationStore
from toolnexus.stores.sqlite import SqliteStore
from toolnexus.stores.sqlite_schema import MIGRATIONS, migrate
from toolnexus.testing import ScriptedModel

T0 = 1_700_000_000.0


def registry() -> dict[str, AgentDef]:
    return {
        "asker": AgentDef(
            name="asker", description="needs approvals", model="m", tools=[check_secret_tool()]
        )
    }


class ConversationsOnly:
    """A host store with only the conversation Protocol, over a real store."""

    def __init__(self, store: Any) -> None:
        self.store = store

    async def get(self, id: str) -> list[Message] | None:
        return await self.store.get(id)

    async def save(self, id: str, messages: list[Message]) -> None:
        await self.store.save(id, messages)

    async def delete(self, id: str) -> bool:
        return await self.store.delete(id)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


async def park(rt: AgentRuntime) -> tuple[Handle, str]:
    """Spawn an asker and run it until it suspends on its approval."""
    h = rt.spawn(rt.root, "asker")
    assert isinstance(h, Handle)
    rt.wake(h, "get the secret")
    result = await rt.wait(h)
    assert result.pending is not None
    return h, result.pending.id


async def restored_and_resumed(
    path: Path, model: ScriptedModel, handle_id: str, request_id: str
) -> TaskResult:
    """A fresh process's view: restore the tree from ``path``, check the handle came back
    suspended, approve its request, and return the handle's result."""
    async with SqliteStore(path) as fresh:
        rt = await AgentRuntime.restore(registry=registry(), store=fresh, llm=llm_of(model))
        async with rt:
            restored = rt.handle(handle_id)
            assert restored is not None
            assert rt.state_of(restored) == "suspended"
            await rt.resume(Answer(id=request_id, ok=True))
            return await rt.wait(restored)


# -- which table a backend gets -------------------------------------------------------------


async def test_a_sqlite_store_keeps_the_handle_table_itself(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "s.db") as store:
        assert isinstance(store, RuntimeStore)
        assert as_runtime_store(store) is store


def test_the_memory_store_and_unknown_objects_persist_no_tree() -> None:
    assert isinstance(as_runtime_store(InMemoryConversationStore()), NullRuntimeStore)
    assert isinstance(as_runtime_store(object()), NullRuntimeStore)


def test_a_runtime_store_is_used_as_it_is() -> None:
    tree = InMemoryRuntimeStore()
    assert as_runtime_store(tree) is tree


async def test_a_host_conversation_store_keeps_the_table_as_one_document() -> None:
    host = ConversationsOnly(InMemoryConversationStore())
    tree = as_runtime_store(host)
    await tree.save_handles("rt", [{"id": "a", "n": 1}])
    await tree.save_handles("rt", [{"id": "b", "n": 2}, {"id": "a", "n": 3}])
    assert await host.get(LEGACY_PREFIX + "rt") == [{"id": "a", "n": 3}, {"id": "b", "n": 2}]
    assert await as_runtime_store(host).load_handles("rt") == [
        {"id": "a", "n": 3},
        {"id": "b", "n": 2},
    ]


async def test_a_malformed_handle_document_is_a_store_error() -> None:
    host = ConversationsOnly(InMemoryConversationStore())
    await host.save(LEGACY_PREFIX + "rt", [{"id": "a"}, {"state": "idle"}])
    with pytest.raises(StoreError, match="handle table of runtime 'rt' is malformed"):
        await as_runtime_store(host).load_handles("rt")


async def test_delete_handles_forgets_a_table_in_every_kind_of_store(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "s.db") as sqlite_store:
        stores: list[Any] = [
            InMemoryRuntimeStore(),
            as_runtime_store(ConversationsOnly(InMemoryConversationStore())),
            sqlite_store,
        ]
        for tree in stores:
            await tree.save_handles("rt", [{"id": "a"}])
            await tree.save_handles("kept", [{"id": "a"}])
            assert await tree.delete_handles("rt") is True
            assert await tree.load_handles("rt") == []
            assert await tree.delete_handles("rt") is False
            assert await tree.load_handles("kept") == [{"id": "a"}]


# -- a tree in SQLite -----------------------------------------------------------------------


async def test_a_tree_parked_in_sqlite_is_restored_by_a_fresh_store_and_resumed(
    tmp_path: Path, model: ScriptedModel
) -> None:
    path = tmp_path / "tree.db"
    async with SqliteStore(path) as store:
        async with AgentRuntime(registry=registry(), llm=llm_of(model), store=store) as rt:
            h, request_id = await park(rt)
    with closing(sqlite3.connect(path)) as conn:
        tables = conn.execute("SELECT runtime_id, handle_id FROM runtime_handles").fetchall()
        documents = conn.execute(
            "SELECT count(*) FROM conversations WHERE substr(id, 1, ?) = ?",
            (len(LEGACY_PREFIX), LEGACY_PREFIX),
        ).fetchone()
    assert sorted(tables) == [("default", "root"), ("default", h.id)]
    assert documents == (0,)
    final = await restored_and_resumed(path, model, h.id, request_id)
    assert final.status == "done"
    assert final.text == "approved and done"


async def test_each_run_writes_only_the_rows_it_changed_however_many_handles_exist(
    tmp_path: Path, model: ScriptedModel
) -> None:
    clock = Clock()
    async with SqliteStore(tmp_path / "tree.db", clock=clock) as store:
        async with AgentRuntime(registry=registry(), llm=llm_of(model), store=store) as rt:
            for _ in range(30):
                await park(rt)
            assert len(await store.load_handles("default")) == 31
            clock.now = T0 + 1
            h, _ = await park(rt)
            rows = await store.load_handles("default")
    with closing(sqlite3.connect(tmp_path / "tree.db")) as conn:
        written = conn.execute(
            "SELECT handle_id FROM runtime_handles WHERE updated_at = ? ORDER BY handle_id",
            (T0 + 1,),
        ).fetchall()
    assert len(rows) == 32
    assert written == [("root",), (h.id,)]


async def test_a_tree_stored_as_a_document_by_an_earlier_version_is_restored(
    tmp_path: Path, model: ScriptedModel
) -> None:
    # An earlier toolnexus kept the tree as one conversation document: write one that way…
    memory = InMemoryConversationStore()
    host = ConversationsOnly(memory)
    async with AgentRuntime(registry=registry(), llm=llm_of(model), store=host) as rt:
        h, request_id = await park(rt)
    document = await memory.get(LEGACY_PREFIX + "default")
    assert document is not None
    # …into a SQLite file at schema version 2, as that version would have.
    path = tmp_path / "old.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        migrate(conn, MIGRATIONS[:2])
        conn.execute(
            "INSERT INTO conversations VALUES (?, ?, 0)",
            (LEGACY_PREFIX + "default", json.dumps(document)),
        )
    async with SqliteStore(path) as store:
        rt = await AgentRuntime.restore(registry=registry(), store=store, llm=llm_of(model))
        async with rt:
            restored = rt.handle(h.id)
            assert restored is not None
            assert restored.state == "suspended"
            await rt.resume(Answer(id=request_id, ok=True))
            final = await rt.wait(restored)
        assert await store.get(LEGACY_PREFIX + "default") is None
    assert final.status == "done"


class FirstSaveLate(SqliteStore):
    """A store whose first handle save (the one a spawn schedules in the background) is slow
    — as one on a busy pooled connection may be: it goes on only when a later save has
    started, or after ``patience`` seconds when none does (saves are written one at a time)."""

    def __init__(self, path: Path, patience: float) -> None:
        super().__init__(path)
        self.patience = patience
        self.later_started = asyncio.Event()
        self.calls = 0

    async def save_handles(self, runtime_id: str, rows: list[dict[str, Any]]) -> None:
        self.calls += 1
        if self.calls == 1:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.later_started.wait(), self.patience)
        else:
            self.later_started.set()
        await super().save_handles(runtime_id, rows)


async def test_a_slow_background_save_never_lands_after_the_suspension_it_preceded(
    tmp_path: Path, model: ScriptedModel
) -> None:
    """The spawn's save is still in flight when the handle suspends: the suspended row is the
    one that stays, so a fresh process restores the handle suspended (not idle, with the
    question lost)."""
    path = tmp_path / "tree.db"
    async with FirstSaveLate(path, patience=0.5) as store:
        async with AgentRuntime(registry=registry(), llm=llm_of(model), store=store) as rt:
            h, request_id = await park(rt)
    async with SqliteStore(path) as fresh:
        rows = {r["id"]: r for r in await fresh.load_handles("default")}
    assert rows[h.id]["state"] == "suspended"
    final = await restored_and_resumed(path, model, h.id, request_id)
    assert final.text == "approved and done"
