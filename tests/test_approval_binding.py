"""The approval is bound to the action: a worker runs the approved call only if it is still the
call that was approved, and the audit of an edited approval keeps both calls — on a real
SQLite file and on Postgres.

A checkpoint row changed after its approval (here by SQL, as a hand on the database would) is
refused: nothing runs, the request is held for an operator (listed with its problem, on the
command line too), the refusal is logged, and an operator can cancel it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from pg_support import pg_connect
from refund_support import MODELS, halted_refund, refunds
from refund_support import store_url as store_url  # the fixture
from toolnexus import Answer
from toolnexus.stores.checks import call_digest


def tamper(store_url: str, old: str, new: str) -> None:
    """Change every answered checkpoint's text in the database, behind the store's back."""
    if store_url.startswith("sqlite:"):
        with sqlite3.connect(store_url.removeprefix("sqlite:///")) as db:
            db.execute(
                "UPDATE halts SET checkpoint = replace(checkpoint, ?, ?) WHERE status = 'answered'",
                (old, new),
            )
        return
    with pg_connect(store_url) as db:
        db.execute(
            "UPDATE toolnexus_halts SET checkpoint = replace(checkpoint, %s, %s)"
            " WHERE status = 'answered'",
            (old, new),
        )


async def cli(*args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(os.environ),
    )
    out, err = await asyncio.wait_for(proc.communicate(), 50)
    assert proc.returncode is not None
    return proc.returncode, out.decode() + err.decode()


async def test_a_checkpoint_changed_after_the_approval_is_refused_and_held_for_an_operator(
    store_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    async with halted_refund(store_url, ledger) as run:
        client, tk, model, rid = run.client, run.toolkit, run.model, run.request_id
        await client.answer(rid, Answer(rid, True), answered_by="ana")
        tamper(store_url, "A-7", "Z-9")  # the approved call now refunds another order
        worker = client.worker(tk, poll_interval=0.05, retry_s=0.05)
        with caplog.at_level(logging.ERROR, logger="toolnexus"):
            assert await worker.drain() == 1
        assert refunds(ledger) == []  # nothing ran
        assert len(model.requests) == 1  # and the model was not called again
        assert "ApprovalMismatch" in worker.errors[rid]
        assert any("held for an operator" in r.getMessage() for r in caplog.records)
        listed = await client.list_pending()
        assert [(e.request_id, e.status) for e in listed] == [(rid, "claimed")]
        assert listed[0].problem is not None
        assert "is not the call that was approved" in listed[0].problem
        assert await worker.drain() == 0  # held: no worker takes it again

        code, shown = await cli("pending", "--store", store_url)
        assert code == 0
        assert rid in shown
        assert "not the call that was approved" in shown

        record = await client.cancel(rid, reason="tampered", answered_by="ops")
        assert record.status == "cancelled"
        assert record.problem is not None
    assert refunds(ledger) == []


async def test_an_untouched_approval_runs_once_with_the_digest_it_was_given(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    async with halted_refund(store_url, ledger) as run:
        client, tk, rid = run.client, run.toolkit, run.request_id
        record = await client.answer(rid, Answer(rid, True), answered_by="ana")
        assert record.digest == call_digest("refund", MODELS)
        assert await client.worker(tk).drain() == 1
        settled = await client.run_store.answer_record(rid)
    assert settled is not None
    assert settled.status == "done"
    assert settled.problem is None
    assert refunds(ledger) == [{"amount": 5000, "order": "A-7"}]


async def test_the_audit_of_an_edited_approval_keeps_the_models_call_and_the_edited_one(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    edited = {"order": "A-7", "amount": 50}
    async with halted_refund(store_url, ledger) as run:
        client, tk, rid = run.client, run.toolkit, run.request_id
        answer = Answer(rid, True, data={"arguments": edited})
        await client.answer(rid, answer, answered_by="ana")
        assert await client.worker(tk).drain() == 1
        record = await client.run_store.answer_record(rid)
    assert refunds(ledger) == [{"amount": 50, "order": "A-7"}]
    assert record is not None
    assert record.status == "done"
    assert record.answered_by == "ana"
    assert record.answer.data == {"arguments": edited}
    assert record.digest == call_digest("refund", json.dumps(edited))
    assert record.original is not None
    assert json.loads(record.original["arguments"]) == json.loads(MODELS)
    assert record.original["tool"] == "refund"
    assert record.original["digest"] == call_digest("refund", MODELS)
    assert record.original["digest"] != record.digest
