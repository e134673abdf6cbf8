"""store_wait_for: a live run parked on the store, answered through the store."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolnexus import Answer, Tool, ToolContext, ToolResult, UsageError, create_client, pending
from toolnexus.stores.runs import InMemoryRunStore
from toolnexus.testing import ScriptedModel, call, text, tool_calls
from toolnexus.waiting import store_wait_for

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
