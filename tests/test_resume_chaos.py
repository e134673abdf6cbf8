"""Chaos: real processes SIGKILLed at every step of the resumption, on SQLite and Postgres.

Every test halts runs in a child process (`tests/helpers/chaos_proc.py`), records the approval
from another child that has no toolkit, and resumes with worker processes — bare-client runs
(``client.worker``) and agent trees (``AgentRuntime.restore`` + ``rt.worker``). A process is
killed with SIGKILL at one point of the protocol (right after a named store operation returns,
or from outside while its resumed model call is in flight); a fresh worker then finishes the
run. What must hold afterwards, counted outside every process:

- the approved tool ran exactly once per run (one line per run in the side-effect file);
- the request is ``done``, with the run's outcome;
- the transcript is complete and balanced, and ends with the outcome's text.

Not tested as exactly-once, by design: a process killed *while the approved tool itself runs*,
before `RunStore.save_progress` records it (documented in `toolnexus.stores.requests`).

Everything waits on process exits and on events of the scripted model, with timeouts; the only
waits in time are the children's own store polls and the lease running out.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from toolnexus import create_client
from toolnexus.stores.url import resolve_store
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls

CHILD = Path(__file__).parent / "helpers" / "chaos_proc.py"
LEASE = "1.5"
"""The lease of the workers that may be killed or stopped: how long a takeover waits."""
CHILD_TIMEOUT = 15.0
"""How long a worker child runs before giving up (it exits 3 and says so)."""

pytestmark = pytest.mark.timeout(60)


# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each backend in turn: a SQLite file, or a private schema of the real Postgres."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'chaos.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture(params=["client", "tree"])
def kind(request: pytest.FixtureRequest) -> str:
    """Bare-client runs, or agent trees (a parent whose ``task`` child asks)."""
    return request.param


# -- the scripted model ---------------------------------------------------------------------


class Brain:
    """The model: call ``approve`` (the leaf) or ``task`` (the parent) first, then answer with
    the tool's result and a serial number (so two replies to the same run differ).

    ``hold`` holds that many *resumed* model calls (the first call after the approved tool
    ran): each sets `arrived` and waits for `release` — while the test kills or stops the
    process that made it.
    """

    def __init__(self) -> None:
        self.served = 0
        self.hold = 0
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, request: RecordedRequest) -> Reply:
        self.served += 1
        serial = self.served
        body = request.body
        seen = [m for m in body["messages"] if m.get("role") == "tool"]
        if body["model"] == "m-parent":
            if not seen:
                return tool_calls(call("task", {"agent": "approver", "prompt": "ask"}))
            return text(f"parent done: {seen[-1]['content']}")
        if not seen:
            return tool_calls(call("approve", {}))
        if self.hold > 0:
            self.hold -= 1
            self.arrived.set()
            await self.release.wait()
        return text(f"done: {seen[-1]['content']} #{serial}")


@asynccontextmanager
async def scripted() -> AsyncIterator[tuple[ScriptedModel, Brain]]:
    brain = Brain()
    async with ScriptedModel(default=brain) as model:
        try:
            yield model, brain
        finally:
            brain.release.set()


# -- the children ---------------------------------------------------------------------------


@dataclass
class Chaos:
    """The child processes of one test, all on one store and one model."""

    store: str
    model: str
    kind: str
    dir: Path
    procs: list[asyncio.subprocess.Process] = field(default_factory=list)

    @property
    def effects(self) -> Path:
        return self.dir / "effects.log"

    def effect_lines(self) -> list[str]:
        """The approved tool's executions so far: one request id a line."""
        return self.effects.read_text().splitlines() if self.effects.exists() else []

    def ids_file(self, ids: list[str]) -> str:
        path = self.dir / f"ids-{uuid.uuid4().hex[:8]}.json"
        path.write_text(json.dumps(ids))
        return str(path)

    async def spawn(self, mode: str, *extra: str) -> asyncio.subprocess.Process:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(CHILD),
            mode,
            "--store",
            self.store,
            "--model",
            self.model,
            "--kind",
            self.kind,
            "--effects",
            str(self.effects),
            *extra,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        self.procs.append(proc)
        return proc

    async def finish(self, proc: asyncio.subprocess.Process, *, killed: bool = False) -> Any:
        """Wait for ``proc``; it must exit 0 (its JSON output is returned) or, when
        ``killed``, die of SIGKILL. Its stderr is kept in ``<tmp>/child-<pid>.log``, its
        stdout in ``<tmp>/child-<pid>.out``."""
        out, err = await asyncio.wait_for(proc.communicate(), CHILD_TIMEOUT + 10)
        (self.dir / f"child-{proc.pid}.log").write_bytes(err)
        (self.dir / f"child-{proc.pid}.out").write_bytes(out)
        if killed:
            assert proc.returncode == -signal.SIGKILL, (proc.returncode, err.decode()[-2000:])
            return None
        assert proc.returncode == 0, (proc.returncode, out.decode(), err.decode()[-3000:])
        return json.loads(out)

    async def run(self, mode: str, *extra: str, killed: bool = False) -> Any:
        return await self.finish(await self.spawn(mode, *extra), killed=killed)

    async def halt(self, runs: int = 1, *extra: str, killed: bool = False) -> list[str]:
        ids = await self.run("halt", "--runs", str(runs), *extra, killed=killed)
        if killed:
            ids = await pending_ids(self.store)
        assert len(ids) == runs, ids
        return ids

    async def answer(self, ids: list[str], *extra: str, killed: bool = False) -> None:
        await self.run("answer", "--ids", self.ids_file(ids), *extra, killed=killed)

    def worker_args(self, ids: list[str], *extra: str) -> list[str]:
        return [
            "--ids",
            self.ids_file(ids),
            "--lease",
            LEASE,
            "--poll",
            "0.05",
            "--timeout",
            str(CHILD_TIMEOUT),
            *extra,
        ]

    async def worker(self, ids: list[str], *extra: str, killed: bool = False) -> Any:
        return await self.run("worker", *self.worker_args(ids, *extra), killed=killed)

    async def spawn_worker(self, ids: list[str], *extra: str) -> asyncio.subprocess.Process:
        return await self.spawn("worker", *self.worker_args(ids, *extra))

    def cleanup(self) -> None:
        for proc in self.procs:
            if proc.returncode is None:
                with suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGCONT)
                    proc.kill()


@asynccontextmanager
async def chaos(store_url: str, kind: str, tmp_path: Path) -> AsyncIterator[tuple[Chaos, Brain]]:
    async with scripted() as (model, brain):
        c = Chaos(store_url, model.openai_base_url, kind, tmp_path)
        try:
            yield c, brain
        finally:
            c.cleanup()
            for proc in c.procs:
                with suppress(Exception):
                    await asyncio.wait_for(proc.wait(), 10)


# -- checks ---------------------------------------------------------------------------------


@asynccontextmanager
async def opened(url: str) -> AsyncIterator[Any]:
    store: Any = resolve_store(url)
    try:
        yield store
    finally:
        await store.aclose()


async def pending_ids(url: str) -> list[str]:
    async with opened(url) as store:
        return [e.request_id for e in await store.list_pending()]


def balanced(messages: list[dict[str, Any]], tool: str, result: str) -> str:
    """Check one transcript: a user turn, one call of ``tool`` answered exactly once with
    ``result``, every call answered, ending with the model's text; returns that text."""
    assert messages[0]["role"] == "user", messages
    calls: dict[str, str] = {}
    answered: dict[str, list[str]] = {}
    for m in messages:
        for c in m.get("tool_calls") or []:
            assert c["id"] not in calls, f"duplicate call id: {messages}"
            calls[c["id"]] = c["function"]["name"]
        if m["role"] == "tool":
            assert m["tool_call_id"] in calls, f"a tool result without its call: {messages}"
            answered.setdefault(m["tool_call_id"], []).append(m["content"])
    assert sorted(calls) == sorted(answered), f"unanswered calls: {messages}"
    assert all(len(v) == 1 for v in answered.values()), f"answered twice: {messages}"
    assert list(calls.values()) == [tool], messages
    assert [v[0] for v in answered.values()] == [result], messages
    last = messages[-1]
    assert last["role"] == "assistant", messages
    assert not last.get("tool_calls"), messages
    final = last["content"]
    assert isinstance(final, str), messages
    assert final, messages
    return final


async def check_settled_once(c: Chaos, ids: list[str]) -> None:
    """Each approved run: its tool ran once, its request is ``done`` with the run's outcome,
    its transcripts are complete and balanced."""
    lines = c.effect_lines() if c.effects.exists() else []
    async with opened(c.store) as store:
        if sorted(lines) != sorted(ids):
            # Say what became of each run, and where the children's output is, before failing.
            seen = [
                f"{rid}: {lines.count(rid)} effect(s), {await store.answer_record(rid)!r}"
                for rid in sorted(ids)
            ]
            pytest.fail(
                f"side effects {lines} for runs {ids}; logs in {c.dir}:\n" + "\n".join(seen)
            )
        assert await store.list_pending() == []
        for n, rid in enumerate(sorted(ids)):
            record = await store.answer_record(rid)
            assert record is not None, rid
            assert (record.status, record.answered_by) == ("done", "chaos-approver"), record
            assert record.outcome is not None, record
            assert record.outcome["status"] == "done", record
            assert await store.load_halt(rid) is None
            # Which run is this request's? Its own conversation names the request.
            final = await check_transcripts(store, c.kind, rid, len(ids))
            assert record.outcome["text"] == final, (n, record.outcome, final)


async def check_transcripts(store: Any, kind: str, rid: str, runs: int) -> str:
    approved = f"approved {rid}"
    if kind == "client":
        for i in range(runs):
            messages = await store.get(f"conv-{i}")
            if messages and any(m.get("content") == approved for m in messages):
                leaf = balanced(messages, "approve", approved)
                assert leaf.startswith(f"done: {approved} #"), leaf
                return leaf
        raise AssertionError(f"no conversation holds the approved call of {rid}")
    for i in range(1, runs + 1):
        parent_id = f"root/approverParent.{i}"
        leaf_messages = await store.get(f"{parent_id}/approver.1")
        parent_messages = await store.get(parent_id)
        if parent_messages and approved in json.dumps(parent_messages):
            assert leaf_messages, f"the leaf of {parent_id} kept no transcript"
            leaf = balanced(leaf_messages, "approve", approved)
            assert leaf.startswith(f"done: {approved} #"), leaf
            top = balanced(parent_messages, "task", leaf)
            assert top == f"parent done: {leaf}", top
            return top
    raise AssertionError(f"no tree's conversation holds the approved call of {rid}")


# -- a process killed at each step, a fresh worker finishes -----------------------------------


async def test_killed_after_the_halt_is_saved(store_url: str, kind: str, tmp_path: Path) -> None:
    """The halting process dies right after its halt reached the run store."""
    async with chaos(store_url, kind, tmp_path) as (c, _):
        ids = await c.halt(1, "--kill-after", "save_halt", killed=True)
        await c.answer(ids)
        await c.worker(ids)
        await check_settled_once(c, ids)


async def test_killed_after_the_answer_is_recorded(
    store_url: str, kind: str, tmp_path: Path
) -> None:
    """The answering process (no toolkit) dies right after recording; no worker ran yet."""
    async with chaos(store_url, kind, tmp_path) as (c, _):
        ids = await c.halt()
        await c.answer(ids, "--kill-after", "post_answer", killed=True)
        async with opened(c.store) as store:
            record = await store.answer_record(ids[0])
        assert record is not None
        assert record.status == "answered", record
        assert c.effect_lines() == []
        await c.worker(ids)
        await check_settled_once(c, ids)


@pytest.mark.parametrize(
    "point",
    [
        pytest.param(("--kill-after", "take"), id="after-the-claim"),
        pytest.param(("--kill-after", "save_progress"), id="after-the-tool-before-the-model"),
        pytest.param(("--kill-before", "complete"), id="between-the-save-and-complete"),
        pytest.param(("--kill-after", "complete"), id="after-complete"),
    ],
)
async def test_a_worker_killed_mid_resume_is_replaced(
    store_url: str, kind: str, tmp_path: Path, point: tuple[str, str]
) -> None:
    """A worker dies at ``point``; once its lease runs out a fresh worker finishes the run.

    ``--kill-before complete`` is the moment after the conversation transcript was saved
    (the outcome) and before the request is settled."""
    async with chaos(store_url, kind, tmp_path) as (c, _):
        ids = await c.halt()
        await c.answer(ids)
        await c.worker(ids, *point, killed=True)
        expected_effects = [] if point[1] == "take" else ids
        assert c.effect_lines() == expected_effects
        summary = await c.worker(ids)
        assert summary["lease_lost"] == []
        await check_settled_once(c, ids)


async def test_a_worker_killed_with_its_resumed_model_call_in_flight(
    store_url: str, kind: str, tmp_path: Path
) -> None:
    """SIGKILL from outside while the model is answering the call that follows the approved
    tool: the fresh worker calls the model again but never the tool."""
    async with chaos(store_url, kind, tmp_path) as (c, brain):
        ids = await c.halt()
        await c.answer(ids)
        brain.hold = 1
        victim = await c.spawn_worker(ids)
        await asyncio.wait_for(brain.arrived.wait(), CHILD_TIMEOUT)
        victim.kill()
        await c.finish(victim, killed=True)
        assert c.effect_lines() == ids
        await c.worker(ids)
        await check_settled_once(c, ids)


# -- many workers, one queue ------------------------------------------------------------------


async def test_racing_workers_settle_every_run_once(
    store_url: str, kind: str, tmp_path: Path
) -> None:
    """Three worker processes race on the answered runs of one queue (30 runs; 9 trees)."""
    runs = 30 if kind == "client" else 9
    async with chaos(store_url, kind, tmp_path) as (c, _):
        ids = await c.halt(runs)
        await c.answer(ids)
        workers = [await c.spawn_worker(ids, "--lease", "10") for _ in range(3)]
        summaries = [await c.finish(w) for w in workers]
        completed = [rid for s in summaries for rid in s["completed"]]
        assert sorted(completed) == sorted(ids), summaries
        assert [s["lease_lost"] for s in summaries] == [[], [], []]
        await check_settled_once(c, ids)


# -- a stalled worker is overtaken and cannot write a second outcome -------------------------


async def test_a_worker_stopped_past_its_lease_is_overtaken_and_writes_no_second_outcome(
    store_url: str, kind: str, tmp_path: Path
) -> None:
    """SIGSTOP a worker while its resumed model call is in flight, past its lease; another
    worker takes the run over and settles it; SIGCONT the first: its fenced writes fail with
    `LeaseLost`; the outcome, the transcript and the side effect stay the second worker's."""
    async with chaos(store_url, kind, tmp_path) as (c, brain):
        ids = await c.halt()
        await c.answer(ids)
        brain.hold = 1
        stalled = await c.spawn_worker(ids)
        await asyncio.wait_for(brain.arrived.wait(), CHILD_TIMEOUT)
        stalled.send_signal(signal.SIGSTOP)
        try:
            winner = await c.worker(ids)
            async with opened(c.store) as store:
                before = await store.answer_record(ids[0])
        finally:
            brain.release.set()  # the stalled call gets its reply while the process is stopped
            stalled.send_signal(signal.SIGCONT)
        loser = await c.finish(stalled)
        assert winner["completed"] == ids, winner
        # Its resume ended with `LeaseLost` (a worker counts that as failed, with no error
        # kept): the fenced check before its transcript and outcome (`Resumption.settle`
        # renews, then completes), or for a tree the renew opening the parent's level.
        assert loser["completed"] == [], loser
        assert (loser["failed"], loser["errors"]) == (1, {}), loser
        assert ids[0] in {rid for _op, rid in loser["lease_lost"]}, loser
        async with opened(c.store) as store:
            after = await store.answer_record(ids[0])
        assert before is not None
        assert after is not None
        assert (after.status, after.outcome, after.settled_at) == (
            before.status,
            before.outcome,
            before.settled_at,
        )
        await check_settled_once(c, ids)


# -- the workers above stop when they are done --------------------------------------------


async def test_a_worker_stops_at_once_after_it_started(store_url: str) -> None:
    """Every worker child above stops its worker once the runs are settled — often right
    after starting it (nothing was left to take): that stop must return, not hang."""
    async with opened(store_url) as store, scripted() as (model, _):
        client = create_client(base_url=model.openai_base_url, model="m", api_key="k", store=store)
        try:
            worker = client.worker([], poll_interval=0.05)
            loop = asyncio.get_running_loop()
            async with asyncio.timeout(4):  # a backstop: a hung stop returns when cancelled
                async with worker:
                    assert await store.answer_record("pnd-nothing") is None
                    stopping = loop.time()
            assert loop.time() - stopping < 2.0, "Worker.stop() did not return"
        finally:
            await client.aclose()
