"""Workers: draining answered runs with 1, 2 and 4 processes; answer → resume-start latency.

    export "$(bash scripts/pg.sh start | tail -n 1)"     # Postgres (the drain, the PG latency)
    .venv/bin/python bench/bench_workers.py             # ~4-6 min (10,000 runs per drain)
    .venv/bin/python bench/bench_workers.py --quick     # ~1.5 min (1,000 runs per drain)
    .venv/bin/python bench/bench_workers.py --only drain      # or: latency

1. **Drain** (Postgres). N halted runs are put in a fresh schema *through the store API*: one
   real run halts through the client (``close_ticket`` needs an approval), and its stored
   checkpoint is cloned N times under fresh request ids with ``save_halt``; then every answer
   is recorded with ``post_answer``. P worker processes (P = 1, 2, 4), each with its own client,
   `PostgresStore` and HTTP session, start at one instant and ``client.worker(toolkit,
   concurrency=C).drain()``; each resume is one approved tool execution and one model call
   (the model's reply is a final text). runs/s = N / (the slowest process's drain time).
   Checked: every run ``done``, N resumes reported, N resumed model calls seen. The floor:
   P processes doing the same by hand with bare psycopg + aiohttp, C lanes each: ``UPDATE …
   WHERE request_id = (SELECT … FOR UPDATE SKIP LOCKED) RETURNING checkpoint``, the model call,
   ``UPDATE`` done — 2 statements against our 5 (``take``, ``load_halt``, ``renew``,
   ``save_progress``, ``complete``). One `ScriptedModel` in this process serves everyone.
2. **Latency**: a worker process runs (``async with client.worker(toolkit)``); this process
   records answers one at a time, spaced, with ``post_answer``; the figure is the time from
   ``post_answer`` returning here to the approved tool starting in the worker (the tool appends
   ``<request id> <time.time()>`` to a file; same machine, same clock). Postgres: woken by
   ``LISTEN/NOTIFY``. SQLite: woken when the store's watch polls (``SqliteStore``'s
   ``poll_interval``, default 0.2 s; also 0.05 s). Floors: a bare LISTEN loop taking the row on
   each notification (Postgres); a bare ``PRAGMA data_version`` poll at the same interval
   (SQLite).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import halted
from common import Row, print_table

import toolnexus as tn
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel

_SELF = os.path.abspath(__file__)
WARM_ANSWERS = 5
"""Latency: the first answers to a fresh worker are not counted (its first statements are
prepared, its code paths cold); the very first one is reported as the cold figure."""
HEADERS = {"Content-Type": "application/json", "Authorization": f"Bearer {halted.API_KEY}"}


class Model:
    """The shared `ScriptedModel`: counts resumed calls, keeps the tool declaration we sent."""

    def __init__(self) -> None:
        self.resumed = 0
        self.tools: list[dict[str, Any]] = []
        self.server = ScriptedModel(default=self._step)

    def _step(self, recorded: RecordedRequest) -> Reply:
        self.server.requests.clear()  # flat memory: nothing reads the log
        body = recorded.body
        if not self.tools and body.get("tools"):
            self.tools = body["tools"]
        if any(m.get("role") == "tool" for m in body.get("messages") or []):
            self.resumed += 1
        return halted.brain(recorded)

    @property
    def url(self) -> str:
        return self.server.openai_base_url


# == child processes ===========================================================================


async def _go() -> float:
    """Say ready, then wait for the start instant (a JSON line on stdin) and sleep until it."""
    print("ready", flush=True)
    orders = json.loads(await asyncio.to_thread(sys.stdin.readline))
    await asyncio.sleep(max(0.0, orders["at"] - time.time()))
    return time.perf_counter()


async def drain_ours(pg: str, model_url: str, concurrency: int) -> dict[str, Any]:
    """Child: ``client.worker(toolkit).drain()`` over the shared queue."""
    store = tn.PostgresStore(pg, min_size=concurrency, max_size=concurrency + 2)
    async with store, halted.new_client(model_url, store) as client:
        kit = await halted.toolkit()
        worker = client.worker(kit, concurrency=concurrency)
        await store.list_pending(limit=1)  # the pool is open
        await client.run(halted.WARM_UP)  # the HTTP connection too
        started = await _go()
        cpu = time.process_time()
        taken = await worker.drain()
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu
    return {
        "taken": taken,
        "resumed": worker.resumed,
        "failed": worker.failed,
        "errors": list(worker.errors.values())[:3],
        "seconds": seconds,
        "cpu": cpu,
    }


_FLOOR_TABLE = (
    "CREATE TABLE floor_queue (request_id TEXT PRIMARY KEY, status TEXT NOT NULL,"
    " checkpoint TEXT, answer TEXT, answered_at DOUBLE PRECISION, lease_until DOUBLE PRECISION,"
    " outcome TEXT)",
    "CREATE INDEX floor_queue_answered ON floor_queue (answered_at) WHERE status = 'answered'",
)
_FLOOR_INSERT = (
    "INSERT INTO floor_queue (request_id, status, checkpoint, answer, answered_at)"
    " VALUES (%s, %s, %s, %s, %s)"
)
_FLOOR_TAKE = (
    "UPDATE floor_queue SET status = 'claimed', lease_until = %s WHERE request_id = ("
    "SELECT request_id FROM floor_queue WHERE status = 'answered' ORDER BY answered_at"
    " LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING request_id, checkpoint, answer"
)
_FLOOR_DONE = (
    "UPDATE floor_queue SET status = 'done', checkpoint = NULL, lease_until = NULL,"
    " outcome = %s WHERE request_id = %s AND status = 'claimed'"
)
_FLOOR_NOTIFY = (
    "WITH a AS (UPDATE floor_queue SET status = 'answered', answer = %s, answered_at = %s"
    " WHERE request_id = %s AND status = 'pending' RETURNING 1)"
    " SELECT pg_notify('floor_answers', %s) FROM a"
)


class FloorResumer:
    """The floor's resume of one taken row: the tool by hand, one model call, by aiohttp."""

    def __init__(self, session: aiohttp.ClientSession, model_url: str, tools: Any) -> None:
        self.session = session
        self.url = model_url + "/chat/completions"
        self.tools = tools

    def prepare(self, raw: str) -> dict[str, Any]:
        checkpoint = json.loads(raw)
        halted_call = checkpoint["outstanding"][0]
        ticket = json.loads(halted_call["arguments"])["ticket"]
        messages = [
            *checkpoint["messages"],
            {"role": "tool", "tool_call_id": halted_call["call_id"], "content": f"{ticket} closed"},
        ]
        return {"model": checkpoint["model"], "messages": messages, "tools": self.tools}

    async def finish(self, body: dict[str, Any]) -> str:
        data = json.dumps(body, ensure_ascii=False).encode()
        async with self.session.post(self.url, data=data, headers=HEADERS) as response:
            raw = await response.read()
            if response.status != 200:
                raise RuntimeError(f"HTTP {response.status}: {raw[:200]!r}")
        message = json.loads(raw)["choices"][0]["message"]
        outcome: dict[str, Any] = {"status": "done", "text": message["content"]}
        outcome["messages"] = [*body["messages"], message]
        return json.dumps(outcome, ensure_ascii=False)


async def drain_floor(pg: str, model_url: str, concurrency: int, tools: Any) -> dict[str, Any]:
    """Child: the floor's drain, ``concurrency`` lanes, one connection each."""
    import psycopg

    done = 0
    errors: list[str] = []
    async with contextlib.AsyncExitStack() as stack:
        session = await stack.enter_async_context(_session())
        resumer = FloorResumer(session, model_url, tools)
        conns = [
            await stack.enter_async_context(
                await psycopg.AsyncConnection.connect(pg, autocommit=True)
            )
            for _ in range(concurrency)
        ]
        await resumer.finish({"model": halted.MODEL, "messages": [_WARM], "tools": tools})

        async def lane(conn: Any) -> None:
            nonlocal done
            while True:
                cur = await conn.execute(_FLOOR_TAKE, (time.time() + 300,))
                row = await cur.fetchone()
                if row is None:
                    return
                try:
                    outcome = await resumer.finish(resumer.prepare(row[1]))
                    await conn.execute(_FLOOR_DONE, (outcome, row[0]))
                    done += 1
                except Exception as exc:
                    errors.append(f"{type(exc).__name__}: {exc}")

        started = await _go()
        cpu = time.process_time()
        await asyncio.gather(*(lane(c) for c in conns))
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu
    return {
        "taken": done,
        "resumed": done,
        "failed": len(errors),
        "errors": errors[:3],
        "seconds": seconds,
        "cpu": cpu,
    }


_WARM = {"role": "user", "content": halted.WARM_UP}


def _session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=256), timeout=aiohttp.ClientTimeout(total=None)
    )


async def latency_ours(store_url: str, model_url: str, stamps: str, poll: float) -> None:
    """Child: a running worker; the approved tool stamps its start. Ends when stdin closes."""
    path = Path(stamps)

    def stamp(request_id: str) -> None:
        halted.append_line(path, f"{request_id} {time.time():.6f}")

    if store_url.startswith("sqlite:///"):
        store: Any = tn.SqliteStore(store_url[len("sqlite:///") :], poll_interval=poll)
    else:
        store = tn.PostgresStore(store_url, max_size=6)
    async with store, halted.new_client(model_url, store) as client:
        kit = await halted.toolkit(stamp)
        await client.run(halted.WARM_UP)
        async with client.worker(kit):  # defaults: poll_interval 1.0, concurrency 4
            await asyncio.sleep(0.5)  # its first drain done, LISTEN (or the watch) started
            print("ready", flush=True)
            await asyncio.to_thread(sys.stdin.read)


async def latency_floor(store_url: str, stamps: str, poll: float) -> None:
    """Child: the floor's waiting worker — LISTEN (Postgres) or a data_version poll (SQLite);
    on a wake, take every answered row and stamp it."""
    path = Path(stamps)

    def stamp(request_id: str) -> None:
        halted.append_line(path, f"{request_id} {time.time():.6f}")

    stop = asyncio.ensure_future(asyncio.to_thread(sys.stdin.read))
    if store_url.startswith("sqlite:///"):
        conn = sqlite3.connect(store_url[len("sqlite:///") :], isolation_level=None)
        conn.execute("PRAGMA busy_timeout = 5000")
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        print("ready", flush=True)
        while not stop.done():
            await asyncio.sleep(poll)
            now = conn.execute("PRAGMA data_version").fetchone()[0]
            if now == version:
                continue
            version = now
            while True:
                row = conn.execute(_SQLITE_TAKE, (time.time() + 300,)).fetchone()
                if row is None:
                    break
                json.loads(row[1])
                stamp(row[0])
        conn.close()
        return
    import psycopg

    async with (
        await psycopg.AsyncConnection.connect(store_url, autocommit=True) as listen,
        await psycopg.AsyncConnection.connect(store_url, autocommit=True) as work,
    ):
        await listen.execute("LISTEN floor_answers")
        print("ready", flush=True)
        while not stop.done():
            woken = False
            async for _note in listen.notifies(timeout=0.2, stop_after=1):
                woken = True
            if not woken:
                continue
            while True:
                cur = await work.execute(_FLOOR_TAKE, (time.time() + 300,))
                row = await cur.fetchone()
                if row is None:
                    break
                json.loads(row[1])
                stamp(row[0])


_SQLITE_FLOOR = (
    "CREATE TABLE floor_queue (request_id TEXT PRIMARY KEY, status TEXT NOT NULL,"
    " checkpoint TEXT, answer TEXT, answered_at REAL, lease_until REAL)",
    "CREATE INDEX floor_queue_answered ON floor_queue (answered_at) WHERE status = 'answered'",
)
_SQLITE_TAKE = (
    "UPDATE floor_queue SET status = 'claimed', lease_until = ? WHERE request_id = ("
    "SELECT request_id FROM floor_queue WHERE status = 'answered' ORDER BY answered_at"
    " LIMIT 1) RETURNING request_id, checkpoint"
)


# == the parent ================================================================================


@dataclass(slots=True)
class Child:
    proc: asyncio.subprocess.Process

    @classmethod
    async def start(cls, *args: str) -> Child:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            _SELF,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(proc)

    async def ready(self) -> None:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 60)
        if line.strip() != b"ready":
            assert self.proc.stderr is not None
            err = await self.proc.stderr.read()
            raise RuntimeError(f"a child did not start: {line!r} {err.decode()[-2000:]}")

    async def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((line + "\n").encode())
        await self.proc.stdin.drain()

    async def finish(self, timeout: float) -> dict[str, Any] | None:
        """Close stdin, wait for the exit; the last stdout line as JSON (``None`` if empty)."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()  # communicate() without input leaves it open
        try:
            out, err = await asyncio.wait_for(self.proc.communicate(), timeout)
        finally:
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
        if self.proc.returncode != 0:
            raise RuntimeError(f"a child failed: {err.decode()[-2000:]}")
        lines = out.decode().split()
        return json.loads(out.decode().splitlines()[-1]) if lines else None


@contextlib.asynccontextmanager
async def children(args: list[list[str]]) -> AsyncIterator[list[Child]]:
    started = [await Child.start(*a) for a in args]
    try:
        yield started
    finally:
        for child in started:
            if child.proc.returncode is None:
                child.proc.kill()
                await child.proc.wait()


@dataclass(slots=True)
class Drain:
    side: str
    procs: int
    runs: int
    seconds: float
    cpu: float
    problems: list[str] = field(default_factory=list)
    setup: dict[str, float] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.runs / self.seconds


async def answered_runs(pg: str, model: Model, count: int) -> tuple[list[str], dict[str, float]]:
    """``count`` answered runs in the schema of ``pg``, through the store API; their ids."""
    store = tn.PostgresStore(pg, max_size=8)
    async with store:
        template = await halted.one_real_halt(model.url, store)
        copies = halted.clones(template, count)
        t = time.perf_counter()
        await halted.gather_limited(8, [store.save_halt(c) for c in copies])
        save_s = time.perf_counter() - t
        ids = [c.pending.id for c in copies]
        t = time.perf_counter()
        await halted.gather_limited(
            8, [store.post_answer(rid, tn.Answer(rid, True), answered_by="bench") for rid in ids]
        )
        answer_s = time.perf_counter() - t
    return ids, {"save_halt/s": count / save_s, "post_answer/s": count / answer_s}


async def floor_rows(pg: str, model: Model, count: int) -> None:
    """``count`` answered rows in the floor's table (the same checkpoint text as ours)."""
    import psycopg

    store = tn.PostgresStore(pg, max_size=2)
    async with store:
        template = await halted.one_real_halt(model.url, store)
    now = time.time()
    rows = [
        (c.pending.id, "answered", c.dumps(), json.dumps({"id": c.pending.id, "ok": True}), now)
        for c in halted.clones(template, count)
    ]
    async with await psycopg.AsyncConnection.connect(pg, autocommit=True) as conn:
        for statement in _FLOOR_TABLE:
            await conn.execute(statement)
        async with conn.cursor() as cur:
            await cur.executemany(_FLOOR_INSERT, rows)


async def statuses(pg: str, side: str) -> dict[str, int]:
    import psycopg

    table = "toolnexus_halts" if side == "ours" else "floor_queue"
    async with await psycopg.AsyncConnection.connect(pg, autocommit=True) as conn:
        cur = await conn.execute(f"SELECT status, count(*) FROM {table} GROUP BY status")
        return {str(s): int(n) for s, n in await cur.fetchall()}


async def one_drain(
    base: str, model: Model, side: str, procs: int, count: int, concurrency: int
) -> Drain:
    async with halted.private_schema(base, "workers") as pg:
        setup: dict[str, float] = {}
        if side == "ours":
            _, setup = await answered_runs(pg, model, count)
        else:
            await floor_rows(pg, model, count)
        model.resumed = 0
        mode = "drain-ours" if side == "ours" else "drain-floor"
        args = [mode, "--pg", pg, "--url", model.url, "--concurrency", str(concurrency)]
        if side == "floor":
            args += ["--tools", json.dumps(model.tools)]
        async with children([args] * procs) as kids:
            for kid in kids:
                await kid.ready()
            at = json.dumps({"at": time.time() + 0.3})
            for kid in kids:
                await kid.send(at)
            reports = [await kid.finish(600) for kid in kids]
        found = await statuses(pg, side)
    drain = Drain(side, procs, count, 0.0, 0.0, setup=setup)
    drain.seconds = max(r["seconds"] for r in reports if r)
    drain.cpu = sum(r["cpu"] for r in reports if r)
    resumed = sum(r["resumed"] for r in reports if r)
    failed = sum(r["failed"] for r in reports if r)
    if resumed != count or failed:
        errors = [e for r in reports if r for e in r["errors"]]
        drain.problems.append(f"{resumed} resumed, {failed} failed of {count}: {errors[:2]}")
    if found.get("done", 0) != count:
        drain.problems.append(f"statuses after the drain: {found}")
    if model.resumed != count:
        drain.problems.append(f"the model saw {model.resumed} resumed calls, not {count}")
    return drain


async def measure_drain(
    quick: bool, count: int | None, concurrency: int, notes: list[str]
) -> list[Row]:
    base = os.environ.get("TOOLNEXUS_PG_URL")
    if not base:
        return [Row("drain: skipped (set TOOLNEXUS_PG_URL)", "-", "-", "-", "-", None)]
    runs = count or (1_000 if quick else 10_000)
    results: dict[tuple[str, int], Drain] = {}
    model = Model()
    async with model.server:
        # Our side first at P=1 (it learns the tool declaration the floor then sends).
        for procs in (1, 2, 4):
            for side in ("ours", "floor") if procs % 2 else ("floor", "ours"):
                drain = await one_drain(base, model, side, procs, runs, concurrency)
                results[side, procs] = drain
                for problem in drain.problems:
                    print(f"drain problem ({side}, {procs}p): {problem}", file=sys.stderr)
    rows: list[Row] = []
    for procs in (1, 2, 4):
        f, o = results["floor", procs], results["ours", procs]
        ok = not o.problems
        rows.append(
            Row(
                f"drain {runs:,} answered runs, {procs} worker process{'es' if procs > 1 else ''}"
                f" x {concurrency}, runs/s",
                f"{f.rate:.0f}",
                f"{o.rate:.0f}",
                f"{o.rate / f.rate:.2f}x",
                "all done, once",
                ok,
            )
        )
        rows.append(
            Row(
                "  CPU ms per run (all worker processes)",
                f"{f.cpu * 1000 / runs:.2f}",
                f"{o.cpu * 1000 / runs:.2f}",
                f"{o.cpu / f.cpu:.2f}x",
                "-",
                None,
            )
        )
    for procs in (2, 4):
        f_scale = results["floor", procs].rate / results["floor", 1].rate
        o_scale = results["ours", procs].rate / results["ours", 1].rate
        rows.append(
            Row(f"  scaling {procs}p / 1p", f"{f_scale:.2f}x", f"{o_scale:.2f}x", "-", "-", None)
        )
    setup = [results["ours", p].setup for p in (1, 2, 4)]
    notes.append(
        f"drain setup (ours, {runs:,} runs, 8 at a time, through the store API): save_halt "
        + ", ".join(f"{s['save_halt/s']:.0f}/s" for s in setup)
        + "; post_answer "
        + ", ".join(f"{s['post_answer/s']:.0f}/s" for s in setup)
        + " (the halted checkpoints are clones of one real halted run, fresh request ids)"
    )
    return rows


# -- latency -------------------------------------------------------------------------------------


@dataclass(slots=True)
class Latency:
    label: str
    seconds: list[float]
    missing: int
    cold: float  # the first answer's latency (not counted)

    def pct(self, p: float) -> float:
        ordered = sorted(self.seconds)
        index = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
        return ordered[index] * 1000


async def one_latency(
    store_url: str, model: Model, side: str, answers: int, poll: float, spacing: tuple[float, float]
) -> Latency:
    sqlite = store_url.startswith("sqlite:///")
    with tempfile.TemporaryDirectory() as tmp:
        stamps = Path(tmp) / "stamps.txt"
        stamps.touch()
        if sqlite:
            store: Any = tn.SqliteStore(store_url[len("sqlite:///") :])
        else:
            store = tn.PostgresStore(store_url, max_size=4)
        async with store:
            template = await halted.one_real_halt(model.url, store)
            copies = halted.clones(template, WARM_ANSWERS + answers)
            ids = [c.pending.id for c in copies]
            floor_conn: Any = None
            if side == "ours":
                for c in copies:
                    await store.save_halt(c)
                args = ["latency-ours", "--pg", store_url, "--url", model.url]
            else:
                floor_conn = await _floor_latency_table(store_url, copies)
                args = ["latency-floor", "--pg", store_url]
            args += ["--stamps", str(stamps), "--poll", str(poll)]
            posted: dict[str, float] = {}
            async with children([args]) as (kid,):
                await kid.ready()
                rng = random.Random(7)
                for rid in ids:
                    await asyncio.sleep(rng.uniform(*spacing))
                    if side == "ours":
                        await store.post_answer(rid, tn.Answer(rid, True), answered_by="bench")
                    else:
                        await _floor_answer(floor_conn, sqlite, rid)
                    posted[rid] = time.time()
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline:
                    if len(stamps.read_text().splitlines()) >= len(ids):
                        break
                    await asyncio.sleep(0.05)
                await kid.finish(30)
            if floor_conn is not None:
                await _close(floor_conn, sqlite)
        started: dict[str, float] = {}
        for line in stamps.read_text().splitlines():
            rid, at = line.split()
            started.setdefault(rid, float(at))
    seconds = [started[rid] - posted[rid] for rid in ids[WARM_ANSWERS:] if rid in started]
    cold = started.get(ids[0], posted[ids[0]]) - posted[ids[0]]
    return Latency(side, seconds, answers - len(seconds), cold)


async def _floor_latency_table(store_url: str, copies: list[Any]) -> Any:
    rows = [(c.pending.id, "pending", c.dumps(), None, None) for c in copies]
    if store_url.startswith("sqlite:///"):
        conn = sqlite3.connect(store_url[len("sqlite:///") :], isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL").fetchone()
        conn.execute("PRAGMA busy_timeout = 5000")
        for statement in _SQLITE_FLOOR:
            conn.execute(statement.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS"))
        conn.execute("DELETE FROM floor_queue")
        conn.executemany(
            "INSERT INTO floor_queue (request_id, status, checkpoint, answer, answered_at)"
            " VALUES (?, ?, ?, ?, ?)",
            rows,
        )
        return conn
    import psycopg

    conn = await psycopg.AsyncConnection.connect(store_url, autocommit=True)
    await conn.execute("DROP TABLE IF EXISTS floor_queue")
    for statement in _FLOOR_TABLE:
        await conn.execute(statement)
    async with conn.cursor() as cur:
        await cur.executemany(_FLOOR_INSERT, rows)
    return conn


async def _floor_answer(conn: Any, sqlite: bool, rid: str) -> None:
    answer = json.dumps({"id": rid, "ok": True})
    if sqlite:
        conn.execute(
            "UPDATE floor_queue SET status = 'answered', answer = ?, answered_at = ?"
            " WHERE request_id = ? AND status = 'pending'",
            (answer, time.time(), rid),
        )
    else:
        await conn.execute(_FLOOR_NOTIFY, (answer, time.time(), rid, rid))


async def _close(conn: Any, sqlite: bool) -> None:
    if sqlite:
        conn.close()
    else:
        await conn.close()


async def measure_latency(quick: bool, answers: int | None, notes: list[str]) -> list[Row]:
    count = answers or (50 if quick else 200)
    rows: list[Row] = []
    model = Model()
    base = os.environ.get("TOOLNEXUS_PG_URL")
    async with model.server, contextlib.AsyncExitStack() as stack:
        cases: list[tuple[str, str, float, tuple[float, float]]] = []
        if base:
            pg = await stack.enter_async_context(halted.private_schema(base, "latency"))
            cases.append(("Postgres (LISTEN/NOTIFY)", pg, 1.0, (0.02, 0.06)))
        else:
            rows.append(
                Row(
                    "latency, Postgres: skipped (set TOOLNEXUS_PG_URL)",
                    "-",
                    "-",
                    "-",
                    "-",
                    None,
                )
            )
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        for poll in (0.2, 0.05):
            path = Path(tmp) / f"latency-{poll}.db"
            label = f"SQLite (poll_interval {poll} s)"
            cases.append((label, f"sqlite:///{path}", poll, (0.6 * poll, 1.4 * poll)))
        for label, url, poll, spacing in cases:
            measured = {
                side: await one_latency(url, model, side, count, poll, spacing)
                for side in ("floor", "ours")
            }
            f, o = measured["floor"], measured["ours"]
            for p in (50, 99):
                rows.append(
                    Row(
                        f"answer -> resume start, {label}, p{p} ms",
                        f"{f.pct(p):.1f}",
                        f"{o.pct(p):.1f}",
                        f"{o.pct(p) - f.pct(p):+.1f} ms",
                        "-" if o.missing == 0 else f"{o.missing} missing",
                        None if o.missing == 0 else False,
                    )
                )
            notes.append(
                f"latency {label}: {count} answers spaced {spacing[0] * 1000:.0f}-"
                f"{spacing[1] * 1000:.0f} ms; ours max {max(o.seconds) * 1000:.1f} ms,"
                f" mean {statistics.fmean(o.seconds) * 1000:.1f} ms; floor max"
                f" {max(f.seconds) * 1000:.1f} ms; the first answer (cold, not counted, nor the"
                f" next {WARM_ANSWERS - 1}): ours {o.cold * 1000:.1f} ms,"
                f" floor {f.cold * 1000:.1f} ms"
            )
    notes.append(
        "latency: from post_answer returning in the bench process to the approved tool starting"
        " in the worker process (the tool's own time.time() stamp); ours = client.worker"
        " defaults (poll_interval 1.0, concurrency 4); SqliteStore(poll_interval=...) in the"
        " worker sets how often it looks for commits by other processes"
    )
    return rows


# == main =========================================================================================


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "mode",
        nargs="?",
        default="all",
        choices=["all", "drain-ours", "drain-floor", "latency-ours", "latency-floor"],
    )
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--only", choices=["drain", "latency"])
    parser.add_argument("--runs", type=int, help="drain: answered runs per figure")
    parser.add_argument("--answers", type=int, help="latency: answers per figure")
    parser.add_argument("--concurrency", type=int, default=4, help="drain: runs per process")
    parser.add_argument("--pg", help="child modes: the store URL")
    parser.add_argument("--url", help="child modes: the model's URL")
    parser.add_argument("--tools", help="drain-floor: the tool declaration (JSON)")
    parser.add_argument("--stamps", help="latency children: where the tool stamps")
    parser.add_argument("--poll", type=float, default=0.2)
    return parser.parse_args()


async def measure(args: argparse.Namespace, notes: list[str]) -> list[Row]:
    rows: list[Row] = []
    if args.only in (None, "drain"):
        rows += await measure_drain(args.quick, args.runs, args.concurrency, notes)
    if args.only in (None, "latency"):
        rows += await measure_latency(args.quick, args.answers, notes)
    return rows


def main() -> None:
    args = arguments()
    if args.mode == "drain-ours":
        print(json.dumps(asyncio.run(drain_ours(args.pg, args.url, args.concurrency))))
        return
    if args.mode == "drain-floor":
        tools = json.loads(args.tools)
        print(json.dumps(asyncio.run(drain_floor(args.pg, args.url, args.concurrency, tools))))
        return
    if args.mode == "latency-ours":
        asyncio.run(latency_ours(args.pg, args.url, args.stamps, args.poll))
        return
    if args.mode == "latency-floor":
        asyncio.run(latency_floor(args.pg, args.stamps, args.poll))
        return
    started = time.perf_counter()
    notes: list[str] = []
    rows = asyncio.run(measure(args, notes))
    print_table(rows, f"workers: toolnexus vs the floor{' (quick)' if args.quick else ''}")
    for note in notes:
        print(note)
    print(f"({time.perf_counter() - started:.0f} s; 2 shared cores, loopback)")
    failed = [r.metric.strip() for r in rows if r.ok is False]
    print("all checks passed" if not failed else f"failed: {'; '.join(failed)}")


if __name__ == "__main__":
    main()
