"""A tree answered without the tree: the answer goes to the store, the runtime's worker resumes.

In one process, on the memory store; tests/test_resume_chaos.py does it across killed processes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agent_support import llm_of
from test_escalation import brain, registry, start

from toolnexus import Answer, AnswerConflict, InMemoryStore, StoreError, create_client
from toolnexus.agents import AgentRuntime
from toolnexus.testing import ScriptedModel


async def test_an_answer_recorded_in_the_store_is_finished_by_the_runtime_worker() -> None:
    leaf_calls: list[Any] = []
    store = InMemoryStore()
    async with ScriptedModel(default=brain) as model:
        rt = AgentRuntime(registry=registry(leaf_calls=leaf_calls), llm=llm_of(model), store=store)
        parent = await start(rt)
        halted = await rt.wait(parent)
        assert halted.pending is not None
        rid = halted.pending.id
        [entry] = await store.list_pending()
        assert entry.request_id == rid
        await store.post_answer(rid, Answer(rid, True), answered_by="ana")
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            assert await client.worker(None).drain() == 0  # not a client's run: not taken
        worker = rt.worker()
        assert await worker.drain() == 1
        final = await rt.wait(parent)
        with pytest.raises(AnswerConflict, match="already answered by ana"):
            await rt.resume(Answer(rid, True))
        await rt.aclose()
    assert final.status == "done"
    assert final.text == "parent done: leaf got the secret"
    assert [a.ok if a else None for a in leaf_calls] == [None, True]
    record = await store.answer_record(rid)
    assert record is not None
    assert (record.status, record.answered_by) == ("done", "ana")
    assert record.outcome is not None
    assert record.outcome["text"] == "parent done: leaf got the secret"


class FailingComplete(InMemoryStore):
    """The memory store whose next ``complete`` fails (the database went away for a moment)."""

    def __init__(self) -> None:
        super().__init__()
        self.fail_next_complete = False

    async def complete(self, request_id: str, claim: Any = None, *, outcome: Any = None) -> None:
        if self.fail_next_complete:
            self.fail_next_complete = False
            raise StoreError("the database is unreachable")
        await super().complete(request_id, claim, outcome=outcome)


async def test_a_tree_whose_settling_failed_is_settled_by_a_worker_without_running_again() -> None:
    leaf_calls: list[Any] = []
    store = FailingComplete()
    async with ScriptedModel(default=brain) as model:
        rt = AgentRuntime(registry=registry(leaf_calls=leaf_calls), llm=llm_of(model), store=store)
        parent = await start(rt)
        halted = await rt.wait(parent)
        assert halted.pending is not None
        rid = halted.pending.id
        store.fail_next_complete = True
        with pytest.raises(StoreError):
            await rt.resume(Answer(rid, True), answered_by="ana")
        calls_after_resume = len(model.requests)
        assert (await store.answer_record(rid)).status == "answered"  # type: ignore[union-attr]
        assert await rt.worker().drain() == 1
        await rt.aclose()
    assert [a.ok if a else None for a in leaf_calls] == [None, True]
    assert len(model.requests) == calls_after_resume  # nothing ran again
    record = await store.answer_record(rid)
    assert record is not None
    assert (record.status, record.answered_by) == ("done", "ana")
    assert (await rt.wait(parent)).text == "parent done: leaf got the secret"


class YieldingStore(InMemoryStore):
    """The memory store, giving the event loop a turn inside each write (as a network store)."""

    async def save_halt(self, checkpoint: Any) -> None:
        for _ in range(3):
            await asyncio.sleep(0)
        await super().save_halt(checkpoint)


async def test_a_tree_seen_pending_is_already_in_the_pending_index() -> None:
    store = YieldingStore()
    async with ScriptedModel(default=brain) as model:
        rt = AgentRuntime(registry=registry(), llm=llm_of(model), store=store)
        parents = [await start(rt) for _ in range(9)]
        results = [await rt.wait(h) for h in parents]
        listed = {e.request_id for e in await store.list_pending()}
        await rt.aclose()
    assert [r.status for r in results] == ["pending"] * 9
    assert listed == {r.pending.id for r in results if r.pending is not None}
