"""A ``toolnexus worker`` stopped with runs in flight, as a real process: Ctrl-C (SIGINT) stops
it taking runs and it says which runs it is resuming; the runs get the grace period to finish;
a second Ctrl-C (or the end of the grace period) abandons the rest; then it says, from the
store, which run finished, which it abandoned and what happens to each — and ``toolnexus runs``
and ``show`` show the abandoned run held by the stopped worker until its lease runs out.

The tool blocks at a gate (a TCP connection to this test) until the test opens it, and writes
each start and finish to a ledger file: the side effects are counted outside every process.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from gate_app import TOOL
from requests_support import HERE, cli

from proc_support import stop
from toolnexus import Answer, create_client
from toolnexus.stores.url import resolve_store
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls


def brain(request: RecordedRequest) -> Reply:
    messages = request.body["messages"]
    done = [m for m in messages if m.get("role") == "tool"]
    if not done:
        return tool_calls(call("ship", {"order": str(messages[-1]["content"]).split()[-1]}))
    return text(f"Done: {done[-1]['content']}.")


class Gate:
    """The test's end of the tools' gate: the orders waiting at it, and opening it for one."""

    def __init__(self) -> None:
        self.waiting: asyncio.Queue[str] = asyncio.Queue()
        self._writers: dict[str, asyncio.StreamWriter] = {}
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._arrived, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"127.0.0.1:{port}"

    async def _arrived(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        order = (await reader.readline()).decode().strip()
        self._writers[order] = writer
        await self.waiting.put(order)

    async def next(self) -> str:
        return await asyncio.wait_for(self.waiting.get(), 50)

    def open(self, order: str) -> None:
        self._writers[order].write(b"go\n")

    async def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
async def gate() -> AsyncIterator[Gate]:
    opened = Gate()
    yield opened
    await opened.close()


async def answered_runs(model: ScriptedModel, store_url: str, *orders: str) -> dict[str, str]:
    """One run halted and approved per order: request id by order."""
    ids: dict[str, str] = {}
    store: Any = resolve_store(store_url)
    async with (
        store,
        create_client(
            base_url=model.openai_base_url, model="m-1", api_key="sk-test-0123456789", store=store
        ) as client,
    ):
        for order in orders:
            result = await client.run(f"ship order {order}", [TOOL])
            assert result.pending is not None
            ids[order] = result.pending.id
            await store.post_answer(result.pending.id, Answer(result.pending.id, True))
    return ids


async def start_worker(
    store_url: str, model: ScriptedModel, ledger: Path, gate: str, grace: str
) -> asyncio.subprocess.Process:
    env = {
        "TN_STORE": store_url,
        "TN_BASE_URL": model.openai_base_url,
        "TN_LEDGER": str(ledger),
        "TN_GATE": gate,
    }
    return await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "toolnexus", "worker", "--app", "gate_app:make"),
        *("--concurrency", "2", "--grace", grace),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **env},
        cwd=HERE,
    )


async def line_of(stream: asyncio.StreamReader | None, starts: str) -> str:
    """The next line of ``stream`` that begins with ``starts``."""
    assert stream is not None
    while True:
        line = (await asyncio.wait_for(stream.readline(), 50)).decode()
        assert line, f"the stream ended before a line beginning {starts!r}"
        if line.startswith(starts):
            return line.rstrip("\n")


async def ended(worker: asyncio.subprocess.Process) -> bytes:
    """The worker's stderr once it has ended by itself (no further signal: one would hurry
    its stop)."""
    _, err = await asyncio.wait_for(worker.communicate(), 50)
    return err


async def runs_json(store_url: str) -> dict[str, dict[str, Any]]:
    code, out, err = await cli("runs", "--store", store_url, "--json")
    assert code == 0, err
    return {r["request_id"]: r for r in map(json.loads, out.splitlines())}


async def test_ctrl_c_finishes_what_it_can_and_says_what_it_abandoned_and_how(
    store_url: str, gate: Gate, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    async with ScriptedModel(default=brain) as model:
        ids = await answered_runs(model, store_url, "A-1", "B-2")
        worker = await start_worker(store_url, model, ledger, await gate.start(), "60")
        try:
            holder = f"{socket.gethostname()}:{worker.pid}"
            ready = await line_of(worker.stderr, "worker: ready")
            assert ready == f"worker: ready, holding the runs it takes as {holder}"
            assert {await gate.next(), await gate.next()} == {"A-1", "B-2"}
            held = await runs_json(store_url)
            assert {rid: (r["status"], r["holder"]) for rid, r in held.items()} == {
                ids["A-1"]: ("claimed", holder),
                ids["B-2"]: ("claimed", holder),
            }

            worker.send_signal(signal.SIGINT)
            stopping = await line_of(worker.stderr, "worker: stopping")
            assert stopping.startswith("worker: stopping; 2 runs in flight: ")
            assert ids["A-1"] in stopping
            assert ids["B-2"] in stopping
            assert stopping.endswith(
                "; waiting up to 60s for them to finish (Ctrl-C again: abandon them now)"
            )
            gate.open("A-1")
            assert await line_of(worker.stdout, ids["A-1"]) == f"{ids['A-1']}: done"
            worker.send_signal(signal.SIGINT)  # again: abandon B-2 now
            err = await ended(worker)
        finally:
            if worker.returncode is None:
                await stop(worker, 30, "the worker")
    said = err.decode().splitlines()
    assert worker.returncode == 0, said
    assert said[0] == "worker: asked again: abandoning the runs still in flight"
    assert said[1] == f"worker: finished in the grace period: {ids['A-1']} (done)"
    assert said[2].startswith(f"worker: abandoned {ids['B-2']}: cancelled mid-resume; held until")
    assert said[2].endswith(
        "left), then another worker resumes it from its last recorded step (a tool call that "
        "was cut off runs again)"
    )
    assert said[3] == "worker: stopped (1 resumed, 0 failed, 1 abandoned)"
    # Outside every process: A-1 shipped once; B-2 began and was cut off.
    assert ledger.read_text().splitlines() == ["started A-1", "started B-2", "shipped A-1"] or (
        ledger.read_text().splitlines() == ["started B-2", "started A-1", "shipped A-1"]
    )
    left = await runs_json(store_url)
    assert list(left) == [ids["B-2"]]  # nothing invisible: the abandoned run is listed
    abandoned = left[ids["B-2"]]
    assert (abandoned["status"], abandoned["holder"]) == ("claimed", holder)
    assert 0 < abandoned["lease_left"] <= 60  # the worker's retry hold, then queued again
    code, out, _ = await cli("show", ids["B-2"], "--store", store_url)
    assert code == 0
    assert f"held by    {holder}" in out
    assert "claimed: a worker is resuming the run" in out
    code, out, _ = await cli("pending", "--store", store_url, "--json")
    assert (code, out) == (0, "")


async def test_when_the_grace_period_ends_every_run_still_in_flight_is_abandoned(
    gate: Gate, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    ledger = tmp_path / "ledger.txt"
    async with ScriptedModel(default=brain) as model:
        ids = await answered_runs(model, url, "C-3", "D-4")
        worker = await start_worker(url, model, ledger, await gate.start(), "1")
        try:
            await line_of(worker.stderr, "worker: ready")
            assert {await gate.next(), await gate.next()} == {"C-3", "D-4"}
            worker.send_signal(signal.SIGTERM)  # as a service manager stops it
            err = await ended(worker)
        finally:
            if worker.returncode is None:
                await stop(worker, 30, "the worker")
    said = err.decode().splitlines()
    assert worker.returncode == 0, said
    assert said[0].startswith("worker: stopping; 2 runs in flight: ")
    assert said[1] == "worker: 1s passed: abandoning the runs still in flight"
    abandoned = [line for line in said if line.startswith("worker: abandoned ")]
    assert sorted(line.split()[2].rstrip(":") for line in abandoned) == sorted(ids.values())
    assert said[-1] == "worker: stopped (0 resumed, 0 failed, 2 abandoned)"
    assert sorted(ledger.read_text().splitlines()) == ["started C-3", "started D-4"]
    assert {r["status"] for r in (await runs_json(url)).values()} == {"claimed"}


async def test_a_stop_with_nothing_in_flight_says_so(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    async with ScriptedModel(default=brain) as model:
        await answered_runs(model, url)  # the store, with nothing in it
        worker = await start_worker(url, model, tmp_path / "ledger", "127.0.0.1:9", "5")
        await line_of(worker.stderr, "worker: ready")
        try:
            worker.send_signal(signal.SIGINT)
            err = await ended(worker)
        finally:
            if worker.returncode is None:
                await stop(worker, 30, "the worker")
    assert worker.returncode == 0
    assert err.decode().splitlines() == [
        "worker: stopping; no run in flight",
        "worker: stopped (0 resumed, 0 failed)",
    ]
