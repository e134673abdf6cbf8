"""A child process for the chaos tests of the resumption (`tests/test_resume_chaos.py`).

::

    python chaos_proc.py halt   --store URL --model BASE --effects FILE [--kind client|tree]
                                [--runs N] [--kill-after OP[@N]] [--kill-before OP[@N]]
    python chaos_proc.py answer --store URL --model BASE --ids FILE [--kill-after OP[@N]]
    python chaos_proc.py worker --store URL --model BASE --effects FILE --ids FILE
                                [--kind client|tree] [--lease S] [--poll S] [--timeout S]
                                [--kill-after OP[@N]] [--kill-before OP[@N]]

``halt`` starts ``--runs`` runs that each halt on the approval tool ``approve`` (bare-client
runs: ``client.ask(f"run-{i}", toolkit, id=f"conv-{i}")``; agent trees: one
``approverParent`` per run whose ``approver`` child asks) and prints the pending request ids as
a JSON list. ``answer`` records an approval for every id of ``--ids`` with ``client.answer``
— no toolkit in this process. ``worker`` runs ``client.worker(toolkit)`` (or, for trees,
``AgentRuntime.restore`` + ``rt.worker()``) until every id of ``--ids`` is settled and every
run this process took has finished, then prints a JSON summary.

The approval tool's side effect happens outside the process: on its approved retry it appends
one line (the request id) to ``--effects``, opened with ``O_APPEND`` and fsynced, so the test
counts executions by counting lines.

Kill points are injected without touching the code under test: the store the child uses is
the real `SqliteStore` / `PostgresStore`, subclassed so that right after (``--kill-after``) or
right before (``--kill-before``) the N-th call of a named store operation (``save_halt``,
``post_answer``, ``take`` — only a take that returned a claim counts —, ``save_progress``,
``save`` — the conversation save —, ``save_handles``, ``complete``) the process sends itself
SIGKILL.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from toolnexus import Answer, LeaseLost, Tool, ToolContext, ToolResult, create_client, pending
from toolnexus.agents import AgentDef, AgentRuntime, Handle
from toolnexus.stores.requests import SETTLED

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}
STOP_TIMEOUT = 3.0
"""How long ``Worker.stop`` may take before the child reports it hung and leaves anyway."""
OPS = ("save_halt", "post_answer", "take", "save_progress", "save", "save_handles", "complete")


# -- kill points ------------------------------------------------------------------------------


class KillPoints:
    """When to SIGKILL this process: ``{op: n}`` before and after the n-th call of ``op``."""

    def __init__(self, after: str | None, before: str | None) -> None:
        self.after = self._parse(after)
        self.before = self._parse(before)
        self.counts: dict[tuple[str, str], int] = {}
        self.lease_lost: list[tuple[str, str]] = []
        """``(operation, request id)`` of each fenced write that raised `LeaseLost` here."""
        self.completed: list[str] = []
        """Request ids this process completed (settled)."""
        self.taken = 0
        """How many claims this process took."""

    @staticmethod
    def _parse(spec: str | None) -> dict[str, int]:
        if not spec:
            return {}
        op, _, n = spec.partition("@")
        if op not in OPS:
            raise SystemExit(f"unknown kill point {op!r}; one of {OPS}")
        return {op: int(n or 1)}

    def hit(self, when: str, op: str) -> None:
        wanted = (self.before if when == "before" else self.after).get(op)
        if wanted is None:
            return
        key = (when, op)
        self.counts[key] = self.counts.get(key, 0) + 1
        if self.counts[key] == wanted:
            sys.stdout.flush()
            sys.stderr.write(f"chaos: SIGKILL {when} {op}@{wanted}\n")
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)


def chaos_store(url: str, kills: KillPoints) -> Any:
    """The real store for ``url``, with the kill points of ``kills`` around its operations."""
    base: type[Any]
    args: tuple[Any, ...]
    options: dict[str, Any]
    if url.startswith("sqlite:///"):
        from toolnexus.stores.sqlite import SqliteStore

        base, args, options = SqliteStore, (url[len("sqlite:///") :],), {"poll_interval": 0.05}
    else:
        from toolnexus.stores.postgres import PostgresStore

        base, args, options = PostgresStore, (url,), {"max_size": 4}

    class ChaosStore(base):  # pyright: ignore[reportUntypedBaseClass]
        async def save_halt(self, *a: Any, **k: Any) -> Any:
            kills.hit("before", "save_halt")
            out = await super().save_halt(*a, **k)
            kills.hit("after", "save_halt")
            return out

        async def post_answer(self, *a: Any, **k: Any) -> Any:
            kills.hit("before", "post_answer")
            out = await super().post_answer(*a, **k)
            kills.hit("after", "post_answer")
            return out

        async def take(self, *a: Any, **k: Any) -> Any:
            claim = await super().take(*a, **k)
            if claim is not None:
                kills.taken += 1
                kills.hit("after", "take")
            return claim

        async def renew(self, claim: Any, *a: Any, **k: Any) -> Any:
            try:
                return await super().renew(claim, *a, **k)
            except LeaseLost:
                kills.lease_lost.append(("renew", claim.request_id))
                raise

        async def save_progress(self, checkpoint: Any, claim: Any, *a: Any, **k: Any) -> Any:
            kills.hit("before", "save_progress")
            try:
                out = await super().save_progress(checkpoint, claim, *a, **k)
            except LeaseLost:
                kills.lease_lost.append(("save_progress", claim.request_id))
                raise
            kills.hit("after", "save_progress")
            return out

        async def save(self, *a: Any, **k: Any) -> Any:
            kills.hit("before", "save")
            out = await super().save(*a, **k)
            kills.hit("after", "save")
            return out

        async def save_handles(self, *a: Any, **k: Any) -> Any:
            kills.hit("before", "save_handles")
            out = await super().save_handles(*a, **k)
            kills.hit("after", "save_handles")
            return out

        async def complete(self, request_id: str, *a: Any, **k: Any) -> Any:
            kills.hit("before", "complete")
            try:
                out = await super().complete(request_id, *a, **k)
            except LeaseLost:
                kills.lease_lost.append(("complete", request_id))
                raise
            kills.completed.append(request_id)
            kills.hit("after", "complete")
            return out

    return ChaosStore(*args, **options)


# -- the tools and the tree -------------------------------------------------------------------


def approve_tool(effects: Path) -> Tool:
    """``approve``: asks for approval; once approved, appends its request id to ``effects``."""

    def effect(line: str) -> None:
        fd = os.open(effects, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    async def approve(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        if ctx is not None and ctx.answer is not None and ctx.request is not None:
            if not ctx.answer.ok:
                return ToolResult(f"declined {ctx.request.id}")
            effect(ctx.request.id)
            return ToolResult(f"approved {ctx.request.id}")
        return pending(kind="approval", prompt="approve?")

    return Tool("approve", "needs approval", SCHEMA, "native", approve)


def registry(effects: Path) -> dict[str, AgentDef]:
    return {
        "approverParent": AgentDef(
            name="approverParent",
            description="coordinates",
            model="m-parent",
            task_targets=["approver"],
        ),
        "approver": AgentDef(
            name="approver",
            description="asks for approval",
            model="m-leaf",
            tools=[approve_tool(effects)],
        ),
    }


def llm(base_url: str) -> dict[str, Any]:
    return {
        "base_url": base_url,
        "style": "openai",
        "model": "m",
        "api_key": "k",
        "retry_base_ms": 1,
    }


# -- modes --------------------------------------------------------------------------------


async def halt(opts: argparse.Namespace, store: Any) -> list[str]:
    effects = Path(opts.effects)
    if opts.kind == "client":
        async with create_client(base_url=opts.model, model="m", api_key="k", store=store) as c:
            tools = [approve_tool(effects)]
            results = await asyncio.gather(
                *(c.ask(f"run-{i}", tools, id=f"conv-{i}") for i in range(opts.runs))
            )
        ids: list[str] = []
        for r in results:
            assert r.pending is not None, r
            ids.append(r.pending.id)
        return ids
    rt = AgentRuntime(registry=registry(effects), llm=llm(opts.model), store=store)
    handles: list[Handle] = []
    for i in range(opts.runs):
        h = rt.spawn(rt.root, "approverParent")
        assert isinstance(h, Handle)
        rt.wake(h, f"run-{i}")
        handles.append(h)
    results = [await rt.wait(h) for h in handles]
    # The process leaves without closing the handles: they stay suspended in the store.
    await rt.aclose()
    out: list[str] = []
    for r in results:
        assert r.pending is not None, r
        out.append(r.pending.id)
    return out


async def answer(opts: argparse.Namespace, store: Any) -> list[str]:
    ids: list[str] = json.loads(Path(opts.ids).read_text())
    async with create_client(base_url=opts.model, model="m", api_key="k", store=store) as c:
        for rid in ids:
            await c.answer(rid, Answer(id=rid, ok=True), answered_by="chaos-approver")
    return ids


async def settled(store: Any, ids: list[str]) -> bool:
    for rid in ids:
        record = await store.answer_record(rid)
        if record is None or record.status not in SETTLED:
            return False
    return True


async def work(opts: argparse.Namespace, store: Any, kills: KillPoints) -> dict[str, Any]:
    ids: list[str] = json.loads(Path(opts.ids).read_text())
    effects = Path(opts.effects)
    options: dict[str, Any] = {
        "lease_s": opts.lease,
        "poll_interval": opts.poll,
        "retry_s": opts.retry,
        "concurrency": opts.concurrency,
    }
    deadline = time.monotonic() + opts.timeout
    rt: AgentRuntime | None = None
    if opts.kind == "client":
        client = create_client(base_url=opts.model, model="m", api_key="k", store=store)
        worker = client.worker([approve_tool(effects)], **options)
    else:
        client = None
        rt = await AgentRuntime.restore(
            registry=registry(effects), store=store, llm=llm(opts.model)
        )
        worker = rt.worker(**options)
    timed_out = False
    worker.start()
    try:
        # Done when every run is settled (by anyone) and every run taken here has ended
        # (settled here, or failed: overtaken, or held for a retry).
        while not (await settled(store, ids) and worker.resumed + worker.failed >= kills.taken):
            if time.monotonic() > deadline:
                timed_out = True
                break
            await asyncio.sleep(opts.poll)
    finally:
        # Bounded: a stop that does not return is reported (the tests' own check of a prompt
        # stop is `test_a_worker_stops_at_once_after_it_started`), not waited on for ever.
        began = time.monotonic()
        # (A stop cancelled by this timeout may still return normally: it suppresses the
        # CancelledError of its runner. Hence the clock decides.)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(worker.stop(), STOP_TIMEOUT)
        stop_s = time.monotonic() - began
        stop_hung = stop_s >= STOP_TIMEOUT
    summary = {
        "resumed": worker.resumed,
        "failed": worker.failed,
        "errors": worker.errors,
        "taken": kills.taken,
        "completed": kills.completed,
        # A heartbeat's renew that was in flight while this process completed the same run
        # fails harmlessly (the run is settled): that is no lost lease. A completion here was
        # fenced by the claim, so the claim was never lost before it.
        "lease_lost": [
            [op, rid]
            for op, rid in kills.lease_lost
            if not (op == "renew" and rid in kills.completed)
        ],
        "timed_out": timed_out,
        "stop_hung": stop_hung,
        "stop_s": round(stop_s, 3),
    }
    if stop_hung:
        sys.stderr.write(f"chaos: Worker.stop() took {stop_s:.1f} s\n")
    if client is not None:
        await client.aclose()
    if rt is not None:
        await rt.aclose()
    return summary


async def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=("halt", "answer", "worker"))
    p.add_argument("--store", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--effects", default=os.devnull)
    p.add_argument("--ids")
    p.add_argument("--kind", choices=("client", "tree"), default="client")
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--lease", type=float, default=1.5)
    p.add_argument("--poll", type=float, default=0.05)
    p.add_argument("--retry", type=float, default=0.5)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--timeout", type=float, default=15.0)
    p.add_argument("--kill-after")
    p.add_argument("--kill-before")
    opts = p.parse_args(argv)
    kills = KillPoints(opts.kill_after, opts.kill_before)
    store = chaos_store(opts.store, kills)
    try:
        if opts.mode == "halt":
            out: Any = await halt(opts, store)
        elif opts.mode == "answer":
            out = await answer(opts, store)
        else:
            out = await work(opts, store, kills)
    finally:
        await store.aclose()
    print(json.dumps(out), flush=True)
    return 3 if isinstance(out, dict) and out.get("timed_out") else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
