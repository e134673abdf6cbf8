"""Run-store cost per operation: SqliteStore and PostgresStore against bare drivers + json.

    .venv/bin/python bench/bench_runstore.py            # SQLite (+ Postgres if configured)
    TOOLNEXUS_PG_URL=postgresql://… .venv/bin/python bench/bench_runstore.py

The floor does the same work by hand on the caller's thread: ``json.dumps`` of the checkpoint
and one upsert (save), one select and ``json.loads`` (load), one conditional update (claim,
complete), on the same file settings (WAL, synchronous=NORMAL) or the same server. What the
store adds is its overhead: the hop to the worker thread (SQLite), checkpoint validation on
load, the pending-index columns, exactly-once bookkeeping, argument checks.

DESIGN §8 target: persist + restore (save_halt + load_halt) ≤ 0.1 ms per run over the floor.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from toolnexus._types import empty_usage
from toolnexus.loop.checkpoint import Checkpoint, Outstanding
from toolnexus.stores.sqlite import SqliteStore
from toolnexus.suspension import Answer, Request

OPS = ("save_halt", "load_halt", "claim", "complete")


def make_checkpoint(rid: str, turns: int = 3) -> Checkpoint:
    """A tool-calling halt after ``turns`` tool turns (3 turns ≈ 2 KB of JSON, 12 ≈ 8 KB)."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful release assistant."},
        {"role": "user", "content": "Ship build 4812 to production after the checks pass."},
    ]
    for turn in range(turns):
        call = {
            "id": f"call_{turn}",
            "type": "function",
            "function": {"name": "run_check", "arguments": json.dumps({"suite": f"s{turn}"})},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": "ok " * 60})
    request = Request(id=rid, kind="approval", prompt="Deploy build 4812 to prod?")
    deploy = {"id": "call_d", "type": "function", "function": {"name": "deploy", "arguments": "{}"}}
    messages.append({"role": "assistant", "content": None, "tool_calls": [deploy]})
    return Checkpoint(
        model="m-1",
        style="openai",
        messages=messages,
        turn=turns + 1,
        usage=empty_usage(),
        tool_calls=[],
        outstanding=[
            Outstanding(
                call_id="call_d",
                name="deploy",
                arguments='{"build": 4812, "env": "prod"}',
                state="suspended",
                request=request,
            )
        ],
        pending=request,
        conversation_id="conv-1",
    )


def per_op_us(total_s: float, count: int) -> float:
    return total_s / count * 1e6


# -- SQLite -------------------------------------------------------------------------------


def sqlite_floor(path: Path, checkpoints: list[Checkpoint]) -> dict[str, float]:
    conn = sqlite3.connect(path, isolation_level=None, cached_statements=256)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS floor (id TEXT PRIMARY KEY, status TEXT, body TEXT,"
        " answer TEXT)"
    )
    ids = [cp.pending.id for cp in checkpoints]
    out: dict[str, float] = {}
    start = time.perf_counter()
    for cp in checkpoints:
        conn.execute(
            "INSERT INTO floor (id, status, body) VALUES (?, 'pending', ?)"
            " ON CONFLICT (id) DO UPDATE SET body = excluded.body",
            (cp.pending.id, json.dumps(cp.to_json(), separators=(",", ":"))),
        )
    out["save_halt"] = per_op_us(time.perf_counter() - start, len(ids))
    start = time.perf_counter()
    for rid in ids:
        json.loads(conn.execute("SELECT body FROM floor WHERE id = ?", (rid,)).fetchone()[0])
    out["load_halt"] = per_op_us(time.perf_counter() - start, len(ids))
    start = time.perf_counter()
    for rid in ids:
        conn.execute(
            "UPDATE floor SET status = 'claimed', answer = ? WHERE id = ? AND status = 'pending'",
            ('{"id":"x","ok":true}', rid),
        )
    out["claim"] = per_op_us(time.perf_counter() - start, len(ids))
    start = time.perf_counter()
    for rid in ids:
        conn.execute("UPDATE floor SET status = 'answered', body = NULL WHERE id = ?", (rid,))
    out["complete"] = per_op_us(time.perf_counter() - start, len(ids))
    conn.close()
    return out


async def store_ops(store: Any, checkpoints: list[Checkpoint]) -> dict[str, float]:
    ids = [cp.pending.id for cp in checkpoints]
    out: dict[str, float] = {}

    async def timed(name: str, op: Callable[[int], Awaitable[object]]) -> None:
        start = time.perf_counter()
        for index in range(len(ids)):
            await op(index)
        out[name] = per_op_us(time.perf_counter() - start, len(ids))

    await timed("save_halt", lambda i: store.save_halt(checkpoints[i]))
    await timed("load_halt", lambda i: store.load_halt(ids[i]))
    await timed("claim", lambda i: store.claim(ids[i], Answer(ids[i], True), answered_by="b"))
    await timed("complete", lambda i: store.complete(ids[i]))
    return out


async def sqlite_ours(path: Path, checkpoints: list[Checkpoint]) -> dict[str, float]:
    async with SqliteStore(path) as store:
        await store.list_pending(limit=1)  # open + migrate outside the timing
        out = await store_ops(store, checkpoints)
        # The bare cost of one hop to the worker thread and back, for the decomposition.
        start = time.perf_counter()
        for _ in checkpoints:
            await store._call(lambda _conn: None)  # pyright: ignore[reportPrivateUsage]
        out["hop"] = per_op_us(time.perf_counter() - start, len(checkpoints))
        return out


# -- Postgres -----------------------------------------------------------------------------


async def pg_floor(url: str, checkpoints: list[Checkpoint]) -> dict[str, float]:
    import psycopg

    ids = [cp.pending.id for cp in checkpoints]
    out: dict[str, float] = {}
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("DROP TABLE IF EXISTS toolnexus_bench_floor")
        await conn.execute(
            "CREATE TABLE toolnexus_bench_floor (id TEXT PRIMARY KEY, status TEXT, body TEXT,"
            " answer TEXT)"
        )
        start = time.perf_counter()
        for cp in checkpoints:
            await conn.execute(
                "INSERT INTO toolnexus_bench_floor (id, status, body) VALUES (%s, 'pending', %s)"
                " ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body",
                (cp.pending.id, json.dumps(cp.to_json(), separators=(",", ":"))),
            )
        out["save_halt"] = per_op_us(time.perf_counter() - start, len(ids))
        start = time.perf_counter()
        for rid in ids:
            cur = await conn.execute("SELECT body FROM toolnexus_bench_floor WHERE id = %s", (rid,))
            row = await cur.fetchone()
            assert row is not None
            json.loads(row[0])
        out["load_halt"] = per_op_us(time.perf_counter() - start, len(ids))
        start = time.perf_counter()
        for rid in ids:
            await conn.execute(
                "UPDATE toolnexus_bench_floor SET status = 'claimed', answer = %s"
                " WHERE id = %s AND status = 'pending' RETURNING 1",
                ('{"id":"x","ok":true}', rid),
            )
        out["claim"] = per_op_us(time.perf_counter() - start, len(ids))
        start = time.perf_counter()
        for rid in ids:
            await conn.execute(
                "UPDATE toolnexus_bench_floor SET status = 'answered', body = NULL WHERE id = %s",
                (rid,),
            )
        out["complete"] = per_op_us(time.perf_counter() - start, len(ids))
        await conn.execute("DROP TABLE toolnexus_bench_floor")
    return out


async def pg_ours(url: str, checkpoints: list[Checkpoint]) -> dict[str, float]:
    import psycopg
    from psycopg import sql

    from toolnexus.stores.postgres import PostgresStore

    schema = f"bench_{os.getpid()}_{time.time_ns()}"
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    scoped = f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"
    try:
        async with PostgresStore(scoped, max_size=2) as store:
            await store.list_pending(limit=1)
            return await store_ops(store, checkpoints)
    finally:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


# -- report -------------------------------------------------------------------------------


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {op: statistics.median(run[op] for run in runs) for op in runs[0]}


def report(title: str, floor: dict[str, float], ours: dict[str, float]) -> None:
    print(f"\n{title}")
    print(f"  {'operation':<12}{'floor µs':>10}{'ours µs':>10}{'overhead µs':>14}")
    for op in OPS:
        print(f"  {op:<12}{floor[op]:>10.1f}{ours[op]:>10.1f}{ours[op] - floor[op]:>14.1f}")
    persist = ours["save_halt"] + ours["load_halt"] - floor["save_halt"] - floor["load_halt"]
    print(f"  persist + restore overhead: {persist / 1000:.3f} ms per run (target ≤ 0.1 ms)")
    if "hop" in ours:
        rest = persist - 2 * ours["hop"]
        print(f"  of which 2 worker hops: {2 * ours['hop']:.1f} µs; the rest: {rest:.1f} µs")


async def main() -> None:
    count = 300 if "--quick" in sys.argv else 2000
    repeats = 3 if "--quick" in sys.argv else 5
    url = os.environ.get("TOOLNEXUS_PG_URL")
    for turns in (3, 12):
        size = len(make_checkpoint("r", turns).dumps())
        floor_runs: list[dict[str, float]] = []
        our_runs: list[dict[str, float]] = []
        with tempfile.TemporaryDirectory() as tmp:
            for repeat in range(repeats):
                cps = [make_checkpoint(f"r{repeat}-{i}", turns) for i in range(count)]
                floor_runs.append(sqlite_floor(Path(tmp) / f"floor{repeat}.db", cps))
                our_runs.append(await sqlite_ours(Path(tmp) / f"ours{repeat}.db", cps))
        report(
            f"SQLite, {count} runs x {repeats}, checkpoint {size} B, medians",
            median_of(floor_runs),
            median_of(our_runs),
        )
        if not url:
            print("\nPostgres: skipped (set TOOLNEXUS_PG_URL; see scripts/pg.sh)")
            continue
        floor_runs, our_runs = [], []
        for repeat in range(repeats):
            cps = [make_checkpoint(f"p{repeat}-{i}", turns) for i in range(count)]
            floor_runs.append(await pg_floor(url, cps))
            our_runs.append(await pg_ours(url, cps))
        report(
            f"PostgreSQL (loopback), {count} runs x {repeats}, checkpoint {size} B, medians",
            median_of(floor_runs),
            median_of(our_runs),
        )


if __name__ == "__main__":
    asyncio.run(main())
