"""A checkpoint that cannot be read when its run is resumed (hand-edited after the answer, a
newer build's): the worker flags it for operators as it gives it back, holds it for its
``retry_s`` (not the whole lease), tries again after that, and an operator can cancel it — on a
real SQLite file and on Postgres. Nothing runs.

And a second answer is `AnswerConflict` on every path: the very same answer that is already
recorded too (it names who answered), while the recorded one resumes by its id.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from pg_support import pg_connect
from refund_support import MODELS, halted_refund, refunds
from refund_support import store_url as store_url  # the fixture
from toolnexus import Answer, AnswerConflict, PostgresStore, SqliteStore


def spoil(store_url: str) -> None:
    """Make every answered checkpoint unreadable (JSON of a version no build reads)."""
    garbage = json.dumps({"version": 999, "messages": []})
    if store_url.startswith("sqlite:"):
        with sqlite3.connect(store_url.removeprefix("sqlite:///")) as db:
            db.execute("UPDATE halts SET checkpoint = ? WHERE status = 'answered'", (garbage,))
        return
    with pg_connect(store_url) as db:
        db.execute(
            "UPDATE toolnexus_halts SET checkpoint = %s WHERE status = 'answered'", (garbage,)
        )


def store_at(url: str, clock: Any) -> Any:
    """The real store for ``url``, on the test's clock (leases and holds lapse when it says)."""
    if url.startswith("sqlite:"):
        return SqliteStore(url.removeprefix("sqlite:///"), clock=clock)
    return PostgresStore(url, clock=clock)


async def test_an_unreadable_checkpoint_is_flagged_held_for_retry_s_and_cancellable(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    now = [time.time()]
    store = store_at(store_url, lambda: now[0])
    async with store, halted_refund(store, ledger) as run:
        client, tk, model, rid = run.client, run.toolkit, run.model, run.request_id
        await client.answer(rid, Answer(rid, True), answered_by="ana")
        spoil(store_url)
        worker = client.worker(tk, lease_s=300, retry_s=60)
        assert await worker.drain() == 1
        assert "CheckpointError" in worker.errors[rid]
        (listed,) = await client.list_pending()
        assert listed.request_id == rid
        assert listed.problem is not None
        assert "cannot be read" in listed.problem
        record = await client.run_store.answer_record(rid)
        assert record is not None
        assert record.status == "claimed"
        # held for retry_s (60 s), not the lease (300 s): taken, and flagged, again after it
        now[0] += 30
        assert await worker.drain() == 0
        now[0] += 31
        assert await worker.drain() == 1
        cancelled = await client.cancel(rid, reason="spoiled row", answered_by="ops")
        assert cancelled.status == "cancelled"
        assert await worker.drain() == 0
    assert refunds(ledger) == []
    assert len(model.requests) == 1


async def test_the_same_answer_twice_is_a_conflict_naming_who_and_the_recorded_one_resumes(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    async with halted_refund(store_url, ledger) as run:
        client, tk, rid = run.client, run.toolkit, run.request_id
        await client.answer(rid, Answer(rid, True), answered_by="ana")
        for again in (
            client.answer(rid, Answer(rid, True), answered_by="bob"),
            client.resume(tk, Answer(rid, True), answered_by="bob"),
            client.run_with_answer(tk, run.messages, run.pending, Answer(rid, True)),
        ):
            with pytest.raises(AnswerConflict, match="already answered by ana") as caught:
                await again
            assert caught.value.answered_by == "ana"
        done = await client.resume(tk, rid)
        record: Any = await client.run_store.answer_record(rid)
    assert done.status == "done"
    assert record.answered_by == "ana"  # kept: the second answer changed nothing
    assert refunds(ledger) == [json.loads(MODELS)]
