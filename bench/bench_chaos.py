"""Chaos: SIGKILL a process at each step of answer → resume; count lost and duplicated runs.

    export "$(bash scripts/pg.sh start | tail -n 1)"     # for the Postgres rows
    .venv/bin/python bench/bench_chaos.py               # every kind, 20 runs per cell, ~7 min
    .venv/bin/python bench/bench_chaos.py --quick       # 8 runs per cell
    .venv/bin/python bench/bench_chaos.py --kind both   # the bare client and the agent tree
    .venv/bin/python bench/bench_chaos.py --backend sqlite --kind a2a --point take

Per cell (kill point × backend × kind), in a fresh SQLite file or a fresh Postgres schema,
every kind halting N runs on ``close_ticket`` (it needs an approval) and finishing them:

- **client** (a bare client): a halt process starts N runs (``client.ask(prompt, toolkit,
  id="conv-<i>")``); an answer process records an approval for every pending request
  (``client.answer``: no toolkit there); a worker process (``client.worker(toolkit,
  concurrency=1, lease_s=1)``) resumes them; a fresh recovery worker (``lease_s=1``,
  ``concurrency=4``) runs until every request is settled (or 30 s pass);
- **tree** (an agent tree): the same, with a ``closer`` coordinator whose ``task`` child
  ``approver`` does the asking, and the runtime's worker;
- **a2a** (an A2A task, `chaos_a2a`): processes serving the toolkit over A2A (``toolkit.serve``,
  ``lease_s=1``) are their own callers on loopback: a halt process sends N messages (each task
  ends ``input-required``); a follow-up process answers each task with a follow-up, one at a
  time (the answer recorded, then taken and resumed by the service); a fresh serving process
  recovers (`TaskLife.recover`) and its caller reads every task until it is ``completed``,
  sending the follow-ups still missing;
- **mcp-take** and **mcp-claim** (a served MCP call, `chaos_mcp`): processes serving the
  toolkit over MCP (``lease_s=1``) are their own 2026-07-28 client: a halt process makes N
  calls (each answered input-required with a ``requestState`` token, kept in a file); for
  mcp-take an answer process records the approvals (``client.answer``, as an inbox would) and
  each retry carries no answer (it takes the recorded one, T5); for mcp-claim each retry
  carries the answer (it claims, T4); a retry process retries each call, one at a time; a fresh
  serving process and client retry each call until it returns its result.

One process is killed with SIGKILL at the cell's point. The store each child uses is the real
`SqliteStore` / `PostgresStore`, *subclassed* so that right after the named operation returns
the process sends itself SIGKILL (wrapping, not mocking): after the N-th ``save_halt`` (every
halt saved), after the N-th ``post_answer`` (every answer recorded; an A2A task: the last
follow-up's, its run not taken yet), after the k-th ``take`` that returned a claim (mcp-claim:
the k-th ``claim``), after the k-th ``save_progress`` (the approved tool ran; the model not
called yet), after the k-th conversation ``save`` (the transcript is saved; ``complete`` not
called yet), after the k-th ``complete`` (the request settled; the A2A task not saved, the MCP
client not answered yet), with k = N // 2. "Model call in flight": the model server (this
process) SIGKILLs the resuming process when the k-th resumed model call reaches it, before
answering. The killed process resumes one run at a time, so exactly one run is at the point.
In a tree, ``save_progress`` counts the leaf's level and ``save`` the coordinator's (the last
transcript saved before ``complete``). A control cell kills *before* the k-th
``save_progress`` (the documented gap): exactly one duplicate expected, which shows the count
would see one. A served MCP call has no model call and no conversation, and no answer process
when its retry answers: those cells do not exist.

The approved tool's side effect is one line (its request id) appended to a file with
``O_APPEND`` and fsynced: lines = executions. Per cell: **runs** = halts in the store after
the halt phase; **settled** = ``done`` with the final text last in its conversation (a tree:
the leaf's and the coordinator's; an A2A task: also ``completed`` with that text, read with
``GetTask``; an MCP call: also its result returned to the client); **lost** = saved but not
settled, or settled without its tool having run (an A2A task or an MCP call: counted per task,
per call); **duplicated** = executions beyond one. Target: 0 lost, 0 duplicated, runs = N. A
served MCP call whose halt was saved but whose reply never reached the client (killed in
between) is called afresh by the client, as any client would; the first halt, which no retry
can name, is counted **stranded** (it waits in the store for an operator; its tool never runs).
The guarantee under test (`toolnexus.stores.requests`): the approved tool runs again only if
its process dies between the tool returning and ``save_progress`` — no kill point but the
control's falls in that gap.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chaos_a2a
import chaos_mcp
import halted

import toolnexus as tn
from toolnexus.agents import AgentDef, AgentRuntime, Handle
from toolnexus.stores.requests import SETTLED
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls

_SELF = os.path.abspath(__file__)
FINAL = halted.FINAL
PARENT = "m-parent"
PARENT_FINAL = "Parent done."

# point -> (the phase killed, the store operation after which it dies, which call: "n" or "k")
POINTS: dict[str, tuple[str, str, str]] = {
    "halt saved": ("halt", "save_halt", "n"),
    "answer recorded": ("answer", "post_answer", "n"),
    "after take": ("worker", "take", "k"),
    "after save_progress": ("worker", "save_progress", "k"),
    "model call in flight": ("worker", "model", "k"),
    "conversation saved": ("worker", "save", "k"),
    "request settled": ("worker", "complete", "k"),
    "control: tool ran, progress unsaved": ("worker", "before_save_progress", "k"),
}
EXPECTED_DUPLICATES = {"control: tool ran, progress unsaved": 1}
"""The control cell kills *before* ``save_progress``: in the documented gap, so the approved
tool runs again on recovery — one duplicate expected, which shows the count would see one."""
KINDS = {
    "client": "client",
    "tree": "agent tree",
    "a2a": "A2A task",
    "mcp-take": "MCP, answered elsewhere",
    "mcp-claim": "MCP, retry answers",
}
SERVED_MCP = ("mcp-take", "mcp-claim")
NOT_FOR_MCP = {"model call in flight", "conversation saved"}
"""An MCP call resolves its one call: no model call, no conversation."""


def applies(point: str, kind: str) -> bool:
    """Whether the kill point exists in ``kind``'s flow."""
    if kind in SERVED_MCP and point in NOT_FOR_MCP:
        return False
    return not (kind == "mcp-claim" and point == "answer recorded")  # its retry answers


def kill_op(op: str, kind: str) -> str:
    """The store call the point names for ``kind``: a retry that answers claims (T4)."""
    return "claim" if kind == "mcp-claim" and op == "take" else op


SHORT = {
    "halt": "halt saved",
    "answer": "answer recorded",
    "take": "after take",
    "progress": "after save_progress",
    "model": "model call in flight",
    "save": "conversation saved",
    "settled": "request settled",
    "control": "control: tool ran, progress unsaved",
}


# == the children ==================================================================================


def chaos_store(url: str, kill_op: str | None, kill_at: int) -> Any:
    """The real store for ``url``; SIGKILL right after the ``kill_at``-th ``kill_op`` returns."""
    base: type[Any]
    args: tuple[Any, ...]
    if url.startswith("sqlite:///"):
        base, args, options = tn.SqliteStore, (url[len("sqlite:///") :],), {"poll_interval": 0.05}
    else:
        base, args, options = tn.PostgresStore, (url,), {"max_size": 6}
    counts: Counter[str] = Counter()

    def returned(op: str) -> None:
        if op != kill_op:
            return
        counts[op] += 1
        if counts[op] == kill_at:
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    class ChaosStore(base):  # pyright: ignore[reportUntypedBaseClass]
        async def save_halt(self, *a: Any, **k: Any) -> Any:
            out = await super().save_halt(*a, **k)
            returned("save_halt")
            return out

        async def post_answer(self, *a: Any, **k: Any) -> Any:
            out = await super().post_answer(*a, **k)
            returned("post_answer")
            return out

        async def claim(self, *a: Any, **k: Any) -> Any:
            out = await super().claim(*a, **k)
            returned("claim")
            return out

        async def take(self, *a: Any, **k: Any) -> Any:
            out = await super().take(*a, **k)
            if out is not None:
                returned("take")
            return out

        async def save_progress(self, checkpoint: Any, *a: Any, **k: Any) -> Any:
            # A tree records progress per level: count the leaf's (the approved tool ran).
            leaf = _is_leaf(checkpoint.conversation_id)
            if leaf:
                returned("before_save_progress")  # the control cell: dies before the call
            out = await super().save_progress(checkpoint, *a, **k)
            if leaf:
                returned("save_progress")
            return out

        async def complete(self, *a: Any, **k: Any) -> Any:
            out = await super().complete(*a, **k)
            returned("complete")
            return out

        async def save(self, id: str, *a: Any, **k: Any) -> Any:
            out = await super().save(id, *a, **k)
            # A tree saves each level's transcript: count the coordinator's, the last one
            # before the request is completed.
            if not _is_leaf(id) or not id.startswith("root/"):
                returned("save")
            return out

    return ChaosStore(*args, **options)


def _is_leaf(conversation_id: str | None) -> bool:
    """A client run's conversation (``conv-<i>``), or a tree's leaf (``root/closer.1/…``)."""
    cid = conversation_id or ""
    return not cid.startswith("root/") or cid.count("/") >= 2


def effects_tool(effects: Path) -> tn.Tool:
    return halted.ticket_tool(lambda rid: halted.append_line(effects, rid, sync=True))


def registry(effects: Path) -> dict[str, AgentDef]:
    """The tree: ``closer`` (a coordinator) delegates to ``approver``, which needs approval."""
    return {
        "closer": AgentDef(
            name="closer", description="coordinates", model=PARENT, task_targets=["approver"]
        ),
        "approver": AgentDef(
            name="approver",
            description="closes tickets",
            model=halted.MODEL,
            tools=[effects_tool(effects)],
        ),
    }


def llm(model_url: str) -> dict[str, Any]:
    return {"base_url": model_url, "model": halted.MODEL, "api_key": halted.API_KEY}


async def halt_trees(opts: argparse.Namespace, store: Any) -> dict[str, Any]:
    rt = AgentRuntime(registry=registry(Path(opts.effects)), llm=llm(opts.model), store=store)
    handles: list[Handle] = []
    for i in range(opts.runs):
        h = rt.spawn(rt.root, "closer")
        assert isinstance(h, Handle), h
        rt.wake(h, f"Close ticket T-{i}")
        handles.append(h)
    results = [await rt.wait(h) for h in handles]
    await rt.aclose()  # the handles stay suspended in the store
    return {"halted": sum(r.pending is not None for r in results)}


async def child_halt(opts: argparse.Namespace, store: Any) -> dict[str, Any]:
    if opts.kind == "tree":
        return await halt_trees(opts, store)
    async with halted.new_client(opts.model, store) as client:
        kit = await tn.create_toolkit(
            extra_tools=[effects_tool(Path(opts.effects))], builtins=False
        )
        results = await asyncio.gather(
            *(client.ask(f"Close ticket T-{i}", kit, id=f"conv-{i}") for i in range(opts.runs))
        )
    return {"halted": sum(r.pending is not None for r in results)}


async def child_answer(opts: argparse.Namespace, store: Any) -> dict[str, Any]:
    ids: list[str] = opts.id_list
    async with halted.new_client(opts.model, store) as client:
        for rid in ids:
            await client.answer(rid, tn.Answer(id=rid, ok=True), answered_by="chaos")
    return {"answered": len(ids)}


async def settled(store: Any, ids: list[str]) -> bool:
    for rid in ids:
        record = await store.answer_record(rid)
        if record is None or record.status not in SETTLED:
            return False
    return True


async def child_worker(opts: argparse.Namespace, store: Any) -> dict[str, Any]:
    ids: list[str] = opts.id_list
    started = time.perf_counter()
    options: dict[str, Any] = {
        "lease_s": opts.lease,
        "poll_interval": 0.05,
        "retry_s": 0.5,
        "concurrency": opts.concurrency,
    }
    effects = Path(opts.effects)
    async with AsyncExitStack() as stack:
        if opts.kind == "tree":
            rt = await AgentRuntime.restore(
                registry=registry(effects), store=store, llm=llm(opts.model)
            )
            stack.push_async_callback(rt.aclose)
            worker = rt.worker(**options)
        else:
            client = await stack.enter_async_context(halted.new_client(opts.model, store))
            kit = await tn.create_toolkit(extra_tools=[effects_tool(effects)], builtins=False)
            worker = client.worker(kit, **options)
        deadline = time.monotonic() + opts.timeout
        async with worker:
            while not await settled(store, ids):
                if time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.05)
    return {
        "resumed": worker.resumed,
        "failed": worker.failed,
        "errors": list(worker.errors.values())[:3],
        "seconds": time.perf_counter() - started,
    }


async def child(opts: argparse.Namespace) -> None:
    store = chaos_store(opts.store, opts.kill_op, opts.kill_at)
    async with store:
        served = SERVED_PHASES.get(opts.kind, {}).get(opts.mode)
        if served is not None:
            out = await served(opts, store, effects_tool(Path(opts.effects)))
        elif opts.mode == "halt":
            out = await child_halt(opts, store)
        elif opts.mode == "answer":  # (an MCP call's answer process too)
            out = await child_answer(opts, store)
        else:  # the worker, and the recovery worker
            out = await child_worker(opts, store)
    print(json.dumps(out), flush=True)


_MCP_PHASES: dict[str, Any] = {
    "halt": chaos_mcp.child_halt,
    "worker": chaos_mcp.child_retries,
    "recover": chaos_mcp.child_recover,
}
SERVED_PHASES: dict[str, dict[str, Any]] = {
    "a2a": {
        "halt": chaos_a2a.child_halt,
        "worker": chaos_a2a.child_follow_ups,
        "recover": chaos_a2a.child_recover,
    },
    "mcp-take": _MCP_PHASES,
    "mcp-claim": _MCP_PHASES,
}
"""The phases of the served kinds: each child serves the toolkit and is its own caller."""


# == the parent ====================================================================================


class Model:
    """The scripted model; SIGKILLs the armed worker when its k-th resumed call arrives."""

    def __init__(self) -> None:
        self.victim: int | None = None
        self.kill_at = 0
        self.seen = 0
        self.server = ScriptedModel(default=self._step)

    def arm(self, pid: int, kill_at: int) -> None:
        self.victim, self.kill_at, self.seen = pid, kill_at, 0

    def disarm(self) -> None:
        self.victim = None

    async def _step(self, recorded: RecordedRequest) -> Reply:
        self.server.requests.clear()
        body = recorded.body
        resumed = any(m.get("role") == "tool" for m in body.get("messages") or [])
        if body.get("model") == PARENT:  # the tree's coordinator: delegate, then report
            if resumed:
                return text(PARENT_FINAL)
            return tool_calls(call("task", {"agent": "approver", "prompt": "close it"}))
        reply = halted.brain(recorded)
        if resumed and self.victim is not None:
            self.seen += 1
            if self.seen == self.kill_at:
                os.kill(self.victim, signal.SIGKILL)
                self.victim = None
                await asyncio.sleep(0.05)  # the worker is gone before the reply is written
        return reply


@dataclass(slots=True)
class Cell:
    point: str
    backend: str
    kind: str
    runs: int = 0
    settled: int = 0
    lost: int = 0
    duplicated: int = 0
    executions: int = 0
    stranded: int = 0
    killed: bool = False
    recovery_s: float = 0.0
    problems: list[str] = field(default_factory=list)

    def ok(self, runs: int) -> bool:
        expected = EXPECTED_DUPLICATES.get(self.point, 0)
        return (
            self.lost == 0
            and self.duplicated == expected
            and self.runs == runs
            and self.killed
            and not self.problems
        )


async def run_child(
    mode: str,
    store_url: str,
    model: Model,
    tmp: Path,
    *,
    kill_op: str | None = None,
    kill_at: int = 0,
    extra: tuple[str, ...] = (),
    arm: int = 0,
    kind: str = "client",
) -> tuple[int, dict[str, Any] | None, str]:
    args = [
        mode,
        "--kind",
        kind,
        "--store",
        store_url,
        "--model",
        model.server.openai_base_url,
        "--effects",
        str(tmp / "effects.txt"),
        "--ids",
        str(tmp / "ids.json"),
        "--calls",
        str(tmp / "calls.txt"),
        *extra,
    ]
    if kill_op and kill_op != "model":
        args += ["--kill-op", kill_op, "--kill-at", str(kill_at)]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        _SELF,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    if arm:
        model.arm(proc.pid, arm)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 90)
    finally:
        model.disarm()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    lines = out.decode().splitlines()
    report = json.loads(lines[-1]) if lines else None
    return proc.returncode or 0, report, err.decode()[-1500:]


@asynccontextmanager
async def backend_url(backend: str, tmp: Path) -> AsyncIterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp / 'chaos.db'}"
        return
    base = os.environ["TOOLNEXUS_PG_URL"]
    async with halted.private_schema(base, "chaos") as url:
        yield url


def open_store(url: str) -> Any:
    if url.startswith("sqlite:///"):
        return tn.SqliteStore(url[len("sqlite:///") :])
    return tn.PostgresStore(url, max_size=2)


async def one_cell(point: str, backend: str, kind: str, runs: int, model: Model) -> Cell:
    phase, op, which = POINTS[point]
    op = kill_op(op, kind)
    kill_at = runs if which == "n" else max(1, runs // 2)
    cell = Cell(point, backend, kind)
    with tempfile.TemporaryDirectory() as raw:
        tmp = Path(raw)
        (tmp / "effects.txt").touch()
        (tmp / "ids.json").write_text("[]")
        async with backend_url(backend, tmp) as url:

            async def step(mode: str, killed: bool, extra: tuple[str, ...] = ()) -> None:
                """One phase's process; killed at the cell's point when ``killed``."""
                rc, _, err = await run_child(
                    mode,
                    url,
                    model,
                    tmp,
                    kill_op=op if killed else None,
                    kill_at=kill_at,
                    extra=extra,
                    arm=kill_at if killed and op == "model" else 0,
                    kind=kind,
                )
                cell.killed |= killed and rc == -signal.SIGKILL
                if rc not in (0, -signal.SIGKILL):
                    cell.problems.append(f"{mode} process failed: {err}")

            await step("halt", phase == "halt", ("--runs", str(runs)))
            store = open_store(url)
            async with store:
                ids = [e.request_id for e in await store.list_pending(limit=1000)]
                checkpoints = {rid: await store.load_halt(rid) for rid in ids}
                tasks = await chaos_a2a.tasks_in(store) if kind == "a2a" else []
            conversations = {r: c.conversation_id if c else None for r, c in checkpoints.items()}
            cell.runs = len(ids)
            (tmp / "ids.json").write_text(json.dumps(tasks if kind == "a2a" else ids))
            if kind != "a2a" and kind != "mcp-claim":  # (an A2A follow-up records its answer)
                await step("answer", phase == "answer")
            if phase == "worker" or (kind == "a2a" and phase == "answer"):
                await step("worker", True, ("--concurrency", "1", "--timeout", "30"))
            started = time.perf_counter()
            rc, report, err = await run_child(
                "recover",
                url,
                model,
                tmp,
                extra=("--concurrency", "4", "--timeout", "30", "--runs", str(runs)),
                kind=kind,
            )
            cell.recovery_s = time.perf_counter() - started
            if rc != 0 or report is None:
                cell.problems.append(f"recovery process failed: {err}")
            elif report.get("failed"):
                cell.problems.append(
                    f"recovery worker: {report['failed']} failed {report['errors']}"
                )
            executions = Counter((tmp / "effects.txt").read_text().split())
            known = set(ids)
            store = open_store(url)
            async with store:
                if kind == "a2a":
                    halts = {c: r for r, c in conversations.items() if c is not None}
                    await chaos_a2a.tally(cell, store, tasks, halts, report, executions)
                elif kind in SERVED_MCP:
                    calls = tmp / "calls.txt"
                    await chaos_mcp.tally(cell, store, runs, checkpoints, calls, report, executions)
                    known |= chaos_mcp.requests_in(calls)
                else:
                    await tally_runs(cell, store, kind, ids, conversations, executions)
            strays = set(executions) - known
            if strays:
                cell.problems.append(f"{len(strays)} executions for unknown requests")
    if not cell.killed:
        cell.problems.append("the kill point was not reached")
    return cell


async def tally_runs(
    cell: Cell,
    store: Any,
    kind: str,
    ids: list[str],
    conversations: dict[str, str | None],
    executions: Counter[str],
) -> None:
    """Count per request (a bare client's run, an agent tree)."""
    for rid in ids:
        record = await store.answer_record(rid)
        cid = conversations.get(rid)
        final = await halted.ends_with(store, cid, FINAL)
        if kind == "tree" and cid:  # and the coordinator finished too
            final = final and await halted.ends_with(store, cid.rsplit("/", 1)[0], PARENT_FINAL)
        done = record is not None and record.status == "done" and final
        cell.settled += done
        if not done or executions[rid] == 0:
            cell.lost += 1
        cell.duplicated += max(0, executions[rid] - 1)
    cell.executions = sum(executions[rid] for rid in ids)


def print_cells(cells: list[Cell], runs: int) -> None:
    header = (
        "kill point",
        "backend",
        "kind",
        "runs",
        "settled",
        "lost",
        "duplicated",
        "tool runs",
        "stranded",
        "killed",
        "recovery s",
        "result",
    )
    lines = [
        (
            c.point,
            c.backend,
            KINDS[c.kind],
            str(c.runs),
            str(c.settled),
            str(c.lost),
            str(c.duplicated),
            str(c.executions),
            str(c.stranded),
            "yes" if c.killed else "NO",
            f"{c.recovery_s:.1f}",
            "PASS" if c.ok(runs) else "FAIL",
        )
        for c in cells
    ]
    print(
        f"chaos: SIGKILL at each point, {runs} halted runs per cell;"
        " target 0 lost / 0 duplicated (the control cell: 1 duplicate expected)"
    )
    table([header, *lines])


def print_matrix(cells: list[Cell]) -> None:
    """lost / duplicated per kill point (rows) and backend × kind (columns); – where the point
    does not exist in the kind's flow."""
    columns = list(dict.fromkeys((c.backend, c.kind) for c in cells))
    found = {(c.point, c.backend, c.kind): c for c in cells}
    header = ("kill point", *(f"{b} {k}" for b, k in columns))
    rows = [
        (
            point,
            *(
                f"{c.lost} / {c.duplicated}" if (c := found.get((point, *col))) else "–"
                for col in columns
            ),
        )
        for point in dict.fromkeys(c.point for c in cells)
    ]
    print("\nlost / duplicated:")
    table([header, *rows])


def table(rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(x) for x in col) for col in zip(*rows, strict=True)]
    for i, line in enumerate(rows):
        print("  ".join(x.ljust(w) for x, w in zip(line, widths, strict=True)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))


KIND_SETS = {"both": ["client", "tree"], "mcp": list(SERVED_MCP), "all": list(KINDS)}
"""``--kind`` values that name several kinds (``both``: as before the served kinds came)."""


async def parent(opts: argparse.Namespace) -> int:
    runs = opts.runs or (8 if opts.quick else 20)
    backends = [opts.backend] if opts.backend else ["sqlite", "postgres"]
    if "postgres" in backends and not os.environ.get("TOOLNEXUS_PG_URL"):
        print("postgres: skipped (set TOOLNEXUS_PG_URL)")
        backends.remove("postgres")
    points = [SHORT[opts.point]] if opts.point else list(POINTS)
    kinds = KIND_SETS.get(opts.kind, [opts.kind])
    cells: list[Cell] = []
    started = time.perf_counter()
    model = Model()
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(model.server)
        for backend in backends:
            for kind in kinds:
                for point in points:
                    if applies(point, kind):
                        cells.append(await one_cell(point, backend, kind, runs, model))
    print_cells(cells, runs)
    print_matrix(cells)
    for c in cells:
        for problem in c.problems:
            print(f"{c.point} / {c.backend} / {c.kind}: {problem}")
    print(
        f"({time.perf_counter() - started:.0f} s; recovery s = the recovery process's life, its"
        " start-up and the 1 s lease of a killed claim included; stranded = MCP halts whose"
        " token never reached the client)"
    )
    bad = [c for c in cells if not c.ok(runs)]
    print(
        "0 lost, 0 duplicated in every cell (the control: its 1 expected duplicate)"
        if not bad
        else f"{len(bad)} cells failed"
    )
    return 1 if bad else 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "mode", nargs="?", default="all", choices=["all", "halt", "answer", "worker", "recover"]
    )
    p.add_argument("--quick", action="store_true", help="8 runs per cell")
    p.add_argument("--runs", type=int, help="halted runs per cell")
    p.add_argument("--backend", choices=["sqlite", "postgres"])
    p.add_argument("--point", choices=list(SHORT))
    p.add_argument(
        "--kind",
        choices=[*KINDS, "mcp", "both", "all"],
        default="all",
        help="bare-client runs, agent trees (a coordinator whose child asks), A2A tasks, served"
        " MCP calls answered elsewhere (mcp-take) or by their retry (mcp-claim); mcp: both MCP"
        " flows; both: client and tree; all (default): every kind",
    )
    p.add_argument("--store", help="children: the store URL")
    p.add_argument("--model", help="children: the model's base URL")
    p.add_argument("--effects", help="children: the file the approved tool appends to")
    p.add_argument("--ids", help="children: the request ids (an A2A task's: the tasks; JSON)")
    p.add_argument("--calls", help="children: the MCP calls' tokens (one '<i> <token>' a line)")
    p.add_argument("--kill-op")
    p.add_argument("--kill-at", type=int, default=0)
    p.add_argument("--lease", type=float, default=1.0)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--timeout", type=float, default=30.0)
    opts = p.parse_args()
    if opts.mode != "all":
        opts.id_list = json.loads(Path(opts.ids).read_text()) if opts.ids else []
        asyncio.run(child(opts))
        return
    sys.exit(asyncio.run(parent(opts)))


if __name__ == "__main__":
    main()
