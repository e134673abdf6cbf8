"""store_wait_for: a live run parked on the store, answered through the store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from toolnexus import (
    Answer,
    AnswerConflict,
    Tool,
    ToolContext,
    ToolResult,
    UsageError,
    create_client,
    pending,
)
from toolnexus.stores.runs import InMemoryRunStore
from toolnexus.stores.sqlite import SqliteStore
from toolnexus.testing import ScriptedModel, call, text, tool_calls
from toolnexus.waiting import EXPIRED_BY, store_wait_for

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


async def refund(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
    if ctx is not None and ctx.answer is not None:
        return ToolResult("refunded" if ctx.answer.ok else "kept")
    return pending(kind="approval", prompt="refund?")


TOOL = Tool("refund", "refund", SCHEMA, "native", refund)


class ObservedStore(InMemoryRunStore):
    """The real in-memory store, plus an event when a run parks on it."""

    def __init__(self) -> None:
        super().__init__()
        self.parked = asyncio.Event()

    async def save_halt(self, checkpoint: Any) -> None:
        await super().save_halt(checkpoint)
        self.parked.set()


async def test_a_parked_run_is_listed_and_resumes_when_an_answer_is_posted() -> None:
    store = ObservedStore()
    async with ScriptedModel([tool_calls(call("refund", {}, id="r1")), text("done")]) as model:
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", wait_for=store_wait_for(store)
        ) as client:
            run = asyncio.create_task(client.run("refund it", [TOOL]))
            await asyncio.wait_for(store.parked.wait(), 5)
            (entry,) = await store.list_pending()
            assert (entry.kind, entry.tool, entry.prompt) == ("approval", "refund", "refund?")
            await store.post_answer(
                entry.request_id, Answer(entry.request_id, True), answered_by="ana"
            )
            result = await asyncio.wait_for(run, 5)
    assert result.status == "done"
    assert result.tool_calls[0].output == "refunded"
    record = await store.answer_record(entry.request_id)
    assert record is not None
    assert record.answered_by == "ana"
    assert await store.list_pending() == []


async def test_a_parked_run_times_out_as_an_expired_decline() -> None:
    store = InMemoryRunStore()
    async with ScriptedModel([tool_calls(call("refund", {})), text("gave up")]) as model:
        async with create_client(
            base_url=model.openai_base_url,
            model="m",
            api_key="k",
            wait_for=store_wait_for(store, timeout=0.01),
        ) as client:
            result = await client.run("refund it", [TOOL])
    assert result.status == "done"
    assert model.requests[-1].body["messages"][-1]["content"] == "declined/expired: refund?"


def test_a_store_without_an_answer_channel_is_refused() -> None:
    with pytest.raises(UsageError, match="answer channel"):
        store_wait_for(object())


# -- an expired wait settles the request --------------------------------------------------

RID = "req-refund"


async def refund_fixed(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
    if ctx is not None and ctx.answer is not None:
        return ToolResult("refunded" if ctx.answer.ok else "kept")
    return pending(kind="approval", prompt="refund?", id=RID)


FIXED = Tool("refund", "refund", SCHEMA, "native", refund_fixed)


class ObservedSqliteStore(SqliteStore):
    """The real SQLite store, plus an event when a run parks on it."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, poll_interval=0.01)
        self.parked = asyncio.Event()

    async def save_halt(self, checkpoint: Any) -> None:
        await super().save_halt(checkpoint)
        self.parked.set()


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    opened: Any = (
        ObservedStore() if request.param == "memory" else ObservedSqliteStore(tmp_path / "w.db")
    )
    yield opened
    await opened.aclose()


async def run_refund(wait_for: Any, **client_options: Any) -> tuple[str, ScriptedModel]:
    """Run the refund tool to the end; return what the tool's call produced, and the model."""
    async with ScriptedModel([tool_calls(call("refund", {})), text("over")]) as model:
        async with create_client(
            base_url=model.openai_base_url,
            model="m",
            api_key="k",
            wait_for=wait_for,
            **client_options,
        ) as client:
            result = await client.run("refund it", [FIXED])
    assert result.status == "done"
    return result.tool_calls[0].output, model


async def test_a_timed_out_wait_settles_the_request_so_a_late_answer_is_a_conflict(
    store: Any,
) -> None:
    output, model = await run_refund(store_wait_for(store, timeout=0.01))
    assert output == "declined/expired: refund?"
    assert model.requests[-1].body["messages"][-1]["content"] == "declined/expired: refund?"
    assert await store.list_pending() == []
    assert await store.load_halt(RID) is None
    record = await store.answer_record(RID)
    assert record is not None
    assert record.answered_by == EXPIRED_BY == "toolnexus:expired"
    assert record.answer == Answer(RID, False, reason="expired")
    with pytest.raises(AnswerConflict, match="expired before it was answered"):
        await store.post_answer(RID, Answer(RID, True), answered_by="late")
    with pytest.raises(AnswerConflict, match="expired before it was answered"):
        await store.claim(RID, Answer(RID, True), answered_by="late")


async def test_a_wait_that_reaches_expires_at_settles_the_request_as_expired(store: Any) -> None:
    output, _ = await run_refund(store_wait_for(store, timeout=60), pending_ttl=0.05)
    assert output == "declined/expired: refund?"
    assert await store.list_pending() == []
    record = await store.answer_record(RID)
    assert record is not None
    assert (record.answered_by, record.answer.ok, record.answer.reason) == (
        EXPIRED_BY,
        False,
        "expired",
    )
    with pytest.raises(AnswerConflict, match="expired before it was answered"):
        await store.post_answer(RID, Answer(RID, True), answered_by="late")


async def test_a_request_past_its_deadline_before_it_parks_is_still_settled_as_expired(
    store: Any,
) -> None:
    # A deadline of a microsecond: gone before the loop can park the run. The host is not
    # asked, and the store still records the expiry, as for a wait that ran out.
    output, _ = await run_refund(store_wait_for(store, timeout=60), pending_ttl=1e-6)
    assert output == "declined/expired: refund?"
    assert await store.list_pending() == []
    record = await store.answer_record(RID)
    assert record is not None
    assert (record.answered_by, record.answer.reason) == (EXPIRED_BY, "expired")
    with pytest.raises(AnswerConflict, match="expired before it was answered"):
        await store.post_answer(RID, Answer(RID, True), answered_by="late")


class JustInTimeStore(InMemoryRunStore):
    """The real in-memory store, where an answer lands just as the parked wait gives up."""

    async def expire(self, request_id: str) -> Any:
        await self.post_answer(request_id, Answer(request_id, True), answered_by="ana")
        return await super().expire(request_id)


async def test_an_answer_posted_as_the_wait_runs_out_is_the_one_used() -> None:
    store = JustInTimeStore()
    output, _ = await run_refund(store_wait_for(store, timeout=0.01))
    assert output == "refunded"
    record = await store.answer_record(RID)
    assert record is not None
    assert record.answered_by == "ana"
    assert await store.load_halt(RID) is None


async def test_a_run_cancelled_while_it_waits_leaves_its_request_pending(store: Any) -> None:
    async with ScriptedModel([tool_calls(call("refund", {}))]) as model:
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", wait_for=store_wait_for(store)
        ) as client:
            run = asyncio.create_task(client.run("refund it", [FIXED]))
            await asyncio.wait_for(store.parked.wait(), 5)
            assert [e.request_id for e in await store.list_pending()] == [RID]
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run
    assert [e.request_id for e in await store.list_pending()] == [RID]
    assert await store.answer_record(RID) is None
