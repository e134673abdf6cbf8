"""A store that fails in the middle of a resume: nothing is half-written, nothing runs twice."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from toolnexus import (
    Answer,
    AnswerConflict,
    SqliteStore,
    StoreError,
    Tool,
    ToolContext,
    ToolResult,
    create_client,
    create_toolkit,
    pending,
)
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


async def test_a_store_that_fails_at_the_end_of_a_resume_leaves_a_retryable_claim(
    tmp_path: Path,
) -> None:
    runs: Counter[str] = Counter()

    async def gate(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        runs["gate"] += 1
        if ctx is not None and ctx.answer is not None:
            return ToolResult("approved")
        return pending(kind="approval", prompt="approve?")

    db = tmp_path / "state.db"
    now = [1000.0]
    lock: list[sqlite3.Connection] = []

    def locking_reply(request: RecordedRequest) -> Reply:
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")  # the store is unreachable from here on
        lock.append(conn)
        return text("done")

    tk = await create_toolkit(
        extra_tools=[Tool("gate", "gate", SCHEMA, "native", gate)], builtins=False
    )
    script = [tool_calls(call("gate", {}, id="g1")), locking_reply, text("done for real")]
    async with ScriptedModel(script) as model:
        store = SqliteStore(db, busy_timeout_ms=50, clock=lambda: now[0])
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            halted = await client.run("go", tk)
            assert halted.pending is not None
            answer = Answer(halted.pending.id, True)
            with pytest.raises(StoreError):
                await client.run_with_answer(tk, halted.messages, halted.pending, answer)
            lock.pop().rollback()
            # the claim is held (a lease); the tool's new result and the answer are recorded
            record = await store.answer_record(halted.pending.id)
            assert record is not None
            assert record.status == "claimed"
            assert await client.list_pending() == []
            progress = await store.load_halt(halted.pending.id)
            assert progress is not None
            assert [
                (o.state, o.result.output if o.result else None) for o in progress.outstanding
            ] == [("done", "approved")]
            now[0] += 3600  # the lease of the failed resume runs out
            # the same answer again is a second answer (refused, nothing changes): the one
            # recorded is resumed by the request's id
            with pytest.raises(AnswerConflict, match="already answered"):
                await client.run_with_answer(tk, halted.messages, halted.pending, answer)
            resumed = await client.resume(tk, halted.pending.id)
        await store.aclose()
    assert resumed.status == "done"
    assert resumed.text == "done for real"
    assert runs == Counter({"gate": 2})  # asked once, re-run once: never a third time
    record_store = SqliteStore(db)
    record = await record_store.answer_record(halted.pending.id)
    await record_store.aclose()
    assert record is not None
