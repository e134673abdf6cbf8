"""Exactly once at the tool: a resumer stopped (SIGSTOP) inside the approved call's
``before_tool`` hook, past its lease, while another process takes the run over and finishes it,
never starts the tool when it wakes up — the lease is confirmed after the hooks, right before
the tool runs. The side effect is counted in a file outside both processes, on a real SQLite
file and on Postgres; the tool's context carries one idempotency key for both resumers and a
larger fencing token for the later one.

The confirm costs no round trip for a claim taken or renewed a moment ago (a worker's fresh
take): only an older one is renewed, and one taken over is refused.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from helpers.stall_proc import refund_tool
from refund_support import halted_refund
from refund_support import store_url as store_url  # the fixture
from toolnexus import Answer
from toolnexus.errors import LeaseLost
from toolnexus.resumption import Resumption, claim_fresh_s
from toolnexus.stores.requests import Claim
from toolnexus.stores.sqlite import SqliteStore

HELPER = Path(__file__).parent / "helpers" / "stall_proc.py"
LEASE_S = 1.0


async def spawn(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(HELPER),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(os.environ),
    )


async def appears(path: Path, proc: asyncio.subprocess.Process, timeout: float = 30.0) -> None:
    """Until ``path`` exists (the child wrote it), failing fast if the child died first."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.returncode is not None:
            _, err = await proc.communicate()
            raise AssertionError(f"the child ended first:\n{err.decode()}")
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        await asyncio.sleep(0.01)


def ledger_lines(ledger: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in ledger.read_text().splitlines()] if ledger.exists() else []


async def test_a_resumer_stopped_past_its_lease_never_runs_the_tool_the_winner_ran(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    hooked, go = tmp_path / "hooked", tmp_path / "go"
    async with halted_refund(store_url, ledger, arguments="{}", tool=refund_tool(ledger)) as run:
        client, model, rid = run.client, run.model, run.request_id
        await client.answer(rid, Answer(rid, True), answered_by="ana")

        stalled = await spawn(
            store_url, model.openai_base_url, str(ledger), str(LEASE_S), str(hooked), str(go)
        )
        await appears(hooked, stalled)  # it took the run and is in the approved call's hook
        stalled.send_signal(signal.SIGSTOP)
        try:
            winner = await spawn(store_url, model.openai_base_url, str(ledger), str(LEASE_S))
            out, err = await asyncio.wait_for(winner.communicate(), 60)
            assert winner.returncode == 0, err.decode()
            assert json.loads(out)["resumed"] == 1
            assert len(ledger_lines(ledger)) == 1  # the winner refunded
        finally:
            go.write_text("go")
            stalled.send_signal(signal.SIGCONT)
        out, err = await asyncio.wait_for(stalled.communicate(), 60)
        assert stalled.returncode == 0, err.decode()
        report = json.loads(out)
        assert (report["resumed"], report["failed"]) == (0, 1)  # it lost, and knew it
        assert "lost request" in err.decode()
        record = await client.run_store.answer_record(rid)
    assert record is not None
    assert record.status == "done"
    lines = ledger_lines(ledger)
    assert len(lines) == 1  # once, counted outside both processes
    assert lines[0]["key"] == f"{rid}:c1"
    assert isinstance(lines[0]["token"], int)


class CountingStore(SqliteStore):
    """A real SQLite store that also counts its renewals (the round trips a confirm costs)."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.renewals = 0

    async def renew(self, claim: Claim, *, lease_s: float = 300.0) -> Claim:
        self.renewals += 1
        return await super().renew(claim, lease_s=lease_s)


async def test_a_claim_taken_a_moment_ago_is_confirmed_without_a_round_trip(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    store = CountingStore(tmp_path / "runs.db")
    async with halted_refund(store, ledger, arguments="{}", tool=refund_tool(ledger)) as run:
        client, tk, rid = run.client, run.toolkit, run.request_id
        await client.answer(rid, Answer(rid, True), answered_by="ana")
        worker = client.worker(tk, lease_s=30)
        assert await worker.drain() == 1
        assert worker.resumed == 1
        record = await store.answer_record(rid)
    assert record is not None
    assert record.status == "done"
    assert len(ledger_lines(ledger)) == 1
    assert store.renewals == 0  # taken, applied, settled: the take's lease was enough


async def test_an_older_claim_is_renewed_before_anything_runs_the_heartbeats_renewal_counts(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger.jsonl"
    store = CountingStore(tmp_path / "runs.db")
    async with halted_refund(store, ledger, arguments="{}", tool=refund_tool(ledger)) as run:
        client, rid = run.client, run.request_id
        await client.answer(rid, Answer(rid, True), answered_by="ana")
        claim = await store.take(rid, lease_s=30)
        assert claim is not None
        resumption = Resumption(store, lease_s=30)
        assert await resumption.confirm(claim) is claim  # a moment old: most of its lease
        assert store.renewals == 0
        aged = replace(claim, taken=time.monotonic() - claim_fresh_s(30) - 0.001)
        renewed = await resumption.confirm(aged)
        assert store.renewals == 1
        assert renewed.token == claim.token
        assert renewed.taken > aged.taken
        assert await resumption.confirm(renewed) is renewed  # just renewed: fresh again
        assert store.renewals == 1
        # A held claim's latest renewal (the heartbeat's) counts: the old copy needs none.
        resumption._hold(renewed)  # pyright: ignore[reportPrivateUsage]
        try:
            assert await resumption.confirm(aged) is renewed
            assert store.renewals == 1
        finally:
            resumption._unhold(rid)  # pyright: ignore[reportPrivateUsage]
        # Given back and taken by another resumer: the old claim is not confirmed.
        await store.release(rid, renewed)
        again = await store.take(rid, lease_s=30)
        assert again is not None
        assert again.token > claim.token
        with pytest.raises(LeaseLost):
            await resumption.confirm(aged)
        assert store.renewals == 2
