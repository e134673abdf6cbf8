"""The A2A task stores: one contract over memory, file, SQLite and Postgres; resolve rules."""

from __future__ import annotations

import asyncio
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
    shown = [p.name for p in (tmp_path / "t").iterdir() if not p.name.startswith(".")]
    assert shown == ["a_b.json"]  # beside the index and the claims (.contexts)
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


# -- the context claim and the caller filter, on every backend ------------------------------------


def owned(id: str, state: str, owner: str | None, context: str = "c1") -> dict[str, Any]:
    out = task(id, state, context)
    if owner is not None:
        out["_toolnexus"]["owner"] = owner
    return out


async def test_a_context_is_claimed_by_one_task_and_the_loser_writes_nothing(
    store: TaskStore,
) -> None:
    assert await store.claim_context("c1", "t1", lease_s=300, task=task("t1", "submitted")) is None
    assert await store.get("t1") == task("t1", "submitted")
    lost = await store.claim_context("c1", "t2", lease_s=300, task=task("t2", "submitted"))
    assert lost == "t1"
    assert await store.get("t2") is None
    assert [t["id"] for t in await store.list(context_id="c1")] == ["t1"]
    assert await store.claim_context("c1", "t1", lease_s=300) is None  # its holder renews it
    assert await store.claim_context("c2", "t3", lease_s=300) is None  # another context


@pytest.mark.parametrize("state", ["completed", "failed", "canceled", "input-required"])
async def test_saving_the_holder_out_of_working_frees_its_context(
    store: TaskStore, state: str
) -> None:
    await store.claim_context("c1", "t1", lease_s=300, task=task("t1", "submitted"))
    await store.save(task("t1", "working"))
    assert await store.claim_context("c1", "t2", lease_s=300) == "t1"
    await store.save(task("t1", state))
    assert await store.claim_context("c1", "t2", lease_s=300, task=task("t2", "submitted")) is None
    await store.save(task("t1", "completed"))  # a save of the old holder frees nothing now
    assert await store.claim_context("c1", "t3", lease_s=300) == "t2"


async def test_a_claim_whose_lease_ran_out_or_was_given_up_is_free(store: TaskStore) -> None:
    await store.claim_context("c1", "t1", lease_s=0, task=task("t1", "working"))
    assert await store.claim_context("c1", "t2", lease_s=300) is None  # t1's process died
    assert await store.hold_context("c1", "t1", lease_s=300) is False  # t1 holds it no more
    assert await store.hold_context("c1", "t2", lease_s=300) is True
    assert await store.claim_context("c1", "t3", lease_s=300) == "t2"
    assert await store.hold_context("c1", "t2", lease_s=0) is True  # given up (a stop)
    assert await store.claim_context("c1", "t3", lease_s=300) is None


async def test_twenty_racing_claims_on_one_context_have_one_winner(store: TaskStore) -> None:
    racers = [task(f"t{i}", "submitted", "race") for i in range(20)]
    results = await asyncio.gather(
        *(store.claim_context("race", t["id"], lease_s=300, task=t) for t in racers)
    )
    winners = [t["id"] for t, held in zip(racers, results, strict=True) if held is None]
    assert len(winners) == 1
    assert set(results) == {None, winners[0]}
    assert [t["id"] for t in await store.list(context_id="race")] == winners


async def test_a_caller_lists_its_own_tasks_and_those_made_without_a_caller(
    store: TaskStore,
) -> None:
    await store.save(owned("a1", "completed", "alice"))
    await store.save(owned("b1", "completed", "bob"))
    await store.save(owned("n1", "completed", None))
    await store.save(owned("a2", "working", "alice", "c2"))
    assert [t["id"] for t in await store.list(caller="alice")] == ["a2", "n1", "a1"]
    assert [t["id"] for t in await store.list(caller="bob")] == ["n1", "b1"]
    assert [t["id"] for t in await store.list(caller="alice", context_id="c1")] == ["n1", "a1"]
    assert [t["id"] for t in await store.list(caller="alice", state="working")] == ["a2"]
    assert len(await store.list()) == 4  # no caller: every task
    assert await store.get("b1") == owned("b1", "completed", "bob")  # the owner is kept


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
