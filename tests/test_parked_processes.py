"""A run parked with store_wait_for whose process dies once its answer arrived: a worker in
another process finishes it, and the approved action happens exactly once.

Real processes, SIGSTOP/SIGKILL, a SQLite file and the real Postgres; the side effect is a line
in a file, counted outside every process.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from toolnexus import Answer
from toolnexus.stores.url import resolve_store
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls

HELPER = Path(__file__).parent / "helpers" / "parked_proc.py"


def brain(request: RecordedRequest) -> Reply:
    if not [m for m in request.body["messages"] if m.get("role") == "tool"]:
        return tool_calls(call("refund", {}, id="r1"))
    return text("refund done")


@pytest.fixture(params=["sqlite", "postgres"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'parked.db'}"
        return
    yield request.getfixturevalue("pg_url")


async def spawn(mode: str, base_url: str, url: str, ledger: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(HELPER),
        mode,
        base_url,
        url,
        str(ledger),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def halted_id(proc: asyncio.subprocess.Process) -> str:
    assert proc.stdout is not None
    assert proc.stderr is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
    if not line.startswith("halted "):
        err = (await asyncio.wait_for(proc.stderr.read(), 30)).decode()
        raise AssertionError(f"the parked process did not halt: {line!r}\n{err[-3000:]}")
    return line.split()[1]


async def finish_with_worker(base_url: str, url: str, ledger: Path) -> str:
    worker = await spawn("worker", base_url, url, ledger)
    out, err = await asyncio.wait_for(worker.communicate(), 60)
    assert worker.returncode == 0, err.decode()
    return out.decode()


async def settled(url: str, rid: str) -> Any:
    store: Any = resolve_store(url)
    try:
        return await store.answer_record(rid), await store.get("order-1")
    finally:
        await store.aclose()


async def test_a_parked_run_killed_after_its_answer_arrived_is_finished_by_a_worker(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    ledger.touch()
    async with ScriptedModel(default=brain) as model:
        parked = await spawn("park", model.openai_base_url, store_url, ledger)
        rid = await halted_id(parked)
        parked.send_signal(signal.SIGSTOP)  # it cannot take the answer now
        store: Any = resolve_store(store_url)
        await store.post_answer(rid, Answer(rid, True), answered_by="ana")
        await store.aclose()
        parked.kill()
        await parked.wait()
        out = await finish_with_worker(model.openai_base_url, store_url, ledger)
    assert "settled 1" in out
    assert ledger.read_text().splitlines() == [f"refunded {rid}"]
    record, transcript = await settled(store_url, rid)
    assert (record.status, record.answered_by) == ("done", "ana")
    assert transcript[-1] == {"role": "assistant", "content": "refund done"}


async def test_a_parked_run_killed_while_it_resumes_is_finished_once_by_a_worker(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    ledger.touch()
    in_call = asyncio.Event()
    release = asyncio.Event()

    async def slow_brain(request: RecordedRequest) -> Reply:
        if [
            m for m in request.body["messages"] if m.get("role") == "tool"
        ] and not in_call.is_set():
            in_call.set()  # the parked run resumed: the approved action ran and was recorded
            await release.wait()
        return brain(request)

    async with ScriptedModel(default=slow_brain) as model:
        parked = await spawn("park", model.openai_base_url, store_url, ledger)
        rid = await halted_id(parked)
        store: Any = resolve_store(store_url)
        await store.post_answer(rid, Answer(rid, True), answered_by="ana")
        await store.aclose()
        await asyncio.wait_for(in_call.wait(), 30)
        parked.kill()  # with its resumed model call in flight
        await parked.wait()
        release.set()
        out = await finish_with_worker(model.openai_base_url, store_url, ledger)
    assert "settled 1" in out
    assert ledger.read_text().splitlines() == [f"refunded {rid}"]  # not run again
    record, transcript = await settled(store_url, rid)
    assert record.status == "done"
    assert transcript[-1] == {"role": "assistant", "content": "refund done"}
