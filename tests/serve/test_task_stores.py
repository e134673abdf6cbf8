"""The A2A task stores: one contract over memory, file, SQLite and Postgres; resolve rules."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from toolnexus.errors import UsageError
from toolnexus.serve import FileTaskStore, InMemoryTaskStore, TaskStore, resolve_task_store
from toolnexus.serve.tasks_sql import PostgresTaskStore, SqliteTaskStore
from toolnexus.serve.tasks_url import resolve_store as resolve_task_store_only
from toolnexus.stores.url import resolve_store


def task(id: str, state: str, context: str | None = "c1") -> dict[str, Any]:
    out: dict[str, Any] = {"id": id, "kind": "task", "status": {"state": state}}
    if context is not None:
        out["contextId"] = context
    out["_toolnexus"] = {"request": f"r-{id}"}
    return out


@pytest.fixture(params=["memory", "file", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[TaskStore]:
    kind = request.param
    if kind == "memory":
        yield InMemoryTaskStore()
    elif kind == "file":
        yield FileTaskStore(tmp_path / "tasks")
    else:
        url = (
            f"sqlite:///{tmp_path / 's.db'}"
            if kind == "sqlite"
            else request.getfixturevalue("pg_url")
        )
        backend = resolve_store(url)
        found, owns = resolve_task_store(None, runs=backend)
        assert isinstance(found, SqliteTaskStore | PostgresTaskStore)
        assert owns is False
        try:
            yield found
        finally:
            await backend.aclose()


async def test_a_saved_task_comes_back_equal_with_its_private_key(store: TaskStore) -> None:
    t = task("t-1", "input-required")
    t["status"]["message"] = {"role": "agent", "parts": [{"kind": "text", "text": "é \u0000 ok?"}]}
    await store.save(t)
    assert await store.get("t-1") == t
    assert await store.get("missing") is None


async def test_saving_again_replaces_the_task(store: TaskStore) -> None:
    await store.save(task("t-1", "working"))
    await store.save(task("t-1", "completed"))
    got = await store.get("t-1")
    assert got is not None
    assert got["status"]["state"] == "completed"
    assert [t["id"] for t in await store.list()] == ["t-1"]


async def test_list_filters_by_context_and_state_newest_first(store: TaskStore) -> None:
    await store.save(task("a", "input-required", "c1"))
    await store.save(task("b", "completed", "c1"))
    await store.save(task("c", "input-required", "c2"))
    await store.save(task("d", "working", None))
    assert [t["id"] for t in await store.list(context_id="c1")] == ["b", "a"]
    assert [t["id"] for t in await store.list(state="input-required")] == ["c", "a"]
    waiting = await store.list(context_id="c1", state="input-required")
    assert [t["id"] for t in waiting] == ["a"]
    assert len(await store.list(limit=2)) == 2


async def test_a_task_without_a_string_id_is_refused(store: TaskStore) -> None:
    with pytest.raises(UsageError):
        await store.save({"status": {"state": "working"}})
    assert await store.list() == []


async def test_the_file_store_skips_unreadable_files_and_writes_atomically(tmp_path: Path) -> None:
    files = FileTaskStore(tmp_path / "t")
    await files.save(task("a/b", "working"))
    assert [p.name for p in (tmp_path / "t").iterdir()] == ["a_b.json"]
    (tmp_path / "t" / "broken.json").write_text("{not json")
    (tmp_path / "t" / "list.json").write_text("[1, 2]")
    assert await files.get("broken") is None
    assert [t["id"] for t in await files.list()] == ["a/b"]
    assert await files.get("a_b") is None  # another id that sanitizes alike


async def test_a_sqlite_task_store_survives_reopening(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    first, owns = resolve_task_store(url)
    assert owns is True
    await first.save(task("t-1", "input-required"))
    await first.aclose()
    second, _ = resolve_task_store(url)
    try:
        assert (await second.get("t-1")) == task("t-1", "input-required")
    finally:
        await second.aclose()


def test_resolve_rules(tmp_path: Path) -> None:
    assert isinstance(resolve_task_store(None)[0], InMemoryTaskStore)
    assert isinstance(resolve_task_store("memory")[0], InMemoryTaskStore)
    files = resolve_task_store(f"file:{tmp_path / 'x'}")[0]
    assert isinstance(files, FileTaskStore)
    own = InMemoryTaskStore()
    assert resolve_task_store(own) == (own, False)
    with pytest.raises(UsageError, match=r'Unknown A2A store: "redis://x" \(expected "memory"'):
        resolve_task_store("redis://x")
    with pytest.raises(UsageError, match=r"needs async get/save; .* lacks get"):
        resolve_task_store(object())


class GetSaveOnly(TaskStore):
    """A host's store with the reference's two methods only."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}

    async def get(self, id: str) -> dict[str, Any] | None:
        return self.rows.get(id)

    async def save(self, task: dict[str, Any]) -> None:
        self.rows[task["id"]] = json.loads(json.dumps(task))


async def test_a_host_store_with_only_get_and_save_serves_the_pause(
    serve_refunds: Any, ledger: Path
) -> None:
    from a2a.types import a2a_pb2 as pb
    from a2a_support import ledger_lines, sdk_client, send, user_message

    own = GetSaveOnly()
    served = await serve_refunds(a2a={"name": "refunds", "store": own})
    async with sdk_client(served.url) as client:
        task = await send(client, user_message("refund"))
        assert own.rows[task.id]["status"]["state"] == "input-required"
        done = await send(client, user_message("yes", task_id=task.id))
        assert done.status.state == pb.TASK_STATE_COMPLETED
    assert own.rows[task.id]["status"]["state"] == "completed"
    assert len(ledger_lines(ledger)) == 1
    assert resolve_task_store_only(own) is own


class PlainGetSave:
    """A host's store as the reference's tests write one: no base class, no ``list``."""

    def __init__(self) -> None:
        self.saved: list[str] = []
        self.rows: dict[str, dict[str, Any]] = {}

    async def get(self, id: str) -> dict[str, Any] | None:
        return self.rows.get(id)

    async def save(self, task: dict[str, Any]) -> None:
        self.saved.append(task["status"]["state"])
        self.rows[task["id"]] = json.loads(json.dumps(task))


async def test_a_host_store_without_list_or_base_class_serves_the_pause(
    serve_refunds: Any, ledger: Path
) -> None:
    from a2a.types import a2a_pb2 as pb
    from a2a_support import ledger_lines, sdk_client, send, user_message

    own = PlainGetSave()
    served = await serve_refunds(a2a={"name": "refunds", "store": own})
    async with sdk_client(served.url) as client:
        task = await send(client, user_message("refund"))
        assert own.rows[task.id]["status"]["state"] == "input-required"
        done = await send(client, user_message("yes", task_id=task.id))
        assert done.status.state == pb.TASK_STATE_COMPLETED
    assert own.saved[0] == "submitted"
    assert own.saved[-1] == "completed"
    assert len(ledger_lines(ledger)) == 1
    assert await resolve_task_store_only(own).list() == []  # the reference's seam lists nothing
