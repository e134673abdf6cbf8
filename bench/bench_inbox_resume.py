"""The approvals inbox: answer on the page → the run resumed on a worker in another process.

    export "$(bash scripts/pg.sh start | tail -n 1)"      # for the Postgres rows (else skipped)
    .venv/bin/python bench/bench_inbox_resume.py          # ~30 s
    .venv/bin/python bench/bench_inbox_resume.py --quick  # ~10 s
    .venv/bin/python bench/bench_inbox_resume.py --backend sqlite --answers 100

A worker process (``toolnexus worker --app bench_inbox_resume:make``, the store's defaults:
Postgres LISTEN/NOTIFY, SQLite polling every 0.2 s) runs beside `inbox_app` on uvicorn on
127.0.0.1, over a fresh store (a SQLite file, a private Postgres schema) holding halted runs (one
real halt through the client, cloned under fresh request ids). The bench answers one request at
a time, spaced 50-250 ms apart, alternating two ways: through the inbox's ``POST
/api/requests/{id}/answer`` with a user's bearer token (what the page's form does, minus the
browser), and — the floor — ``store.post_answer`` in the bench process (no inbox, no HTTP). Two
instants per answer: the approved tool starting (the tool appends ``<id> <time.time()>`` to a
file) and the worker printing ``<id>: done`` (the run settled: one model call after the tool).
The first 5 answers of each way are not counted. The list page's own cost is
``bench_inbox.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp
from common import Row, print_table
from halted import append_line, brain, clones, gather_limited, one_real_halt, private_schema

TOKEN = "bench-inbox-token-0123456789"
USERS = {"bench": TOKEN}
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HERE = Path(__file__).resolve().parent


# -- the worker's app (toolnexus worker --app bench_inbox:make) ---------------------------------


def make() -> tuple[Any, Any]:
    """The worker's ``(client, toolkit)``: the ticket tool, its start instants in a file."""
    from halted import MODEL, ticket_tool

    import toolnexus as tn
    from toolnexus.stores.url import resolve_store

    starts = Path(os.environ["BENCH_STARTS"])

    def started(request_id: str) -> None:
        append_line(starts, f"{request_id} {time.time():.6f}")

    store = resolve_store(os.environ["BENCH_STORE"])
    client = tn.create_client(
        base_url=os.environ["BENCH_MODEL_URL"], model=MODEL, api_key="x", store=store
    )
    return client, [ticket_tool(started)]


# -- stores ------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def open_store(backend: str, tmp: Path) -> AsyncIterator[tuple[Any, str]]:
    """A fresh store of ``backend`` (``sqlite`` or ``postgres``) and its URL."""
    from toolnexus.stores.url import resolve_store

    if backend == "sqlite":
        url = f"sqlite:///{tmp / 'inbox.db'}"
        async with resolve_store(url) as store:  # pyright: ignore[reportGeneralTypeIssues]
            yield store, url
        return
    pg = os.environ["TOOLNEXUS_PG_URL"]
    async with private_schema(pg, "inbox") as url, resolve_store(url) as store:  # pyright: ignore[reportGeneralTypeIssues]
        yield store, url


async def fill(store: Any, model_url: str, count: int) -> list[str]:
    """``count`` pending requests (one real halt, cloned) → their ids, oldest first."""
    template = await one_real_halt(model_url, store)
    made = clones(template, count)
    started = time.perf_counter()
    await gather_limited(8, [store.save_halt(c) for c in made])
    rate = count / (time.perf_counter() - started)
    print(f"  saved {count} halted runs ({rate:.0f}/s)", flush=True)
    return [c.pending.id for c in made if c.pending is not None]


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


# -- answer → resumed ----------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def worker_process(env: dict[str, str]) -> AsyncIterator[asyncio.subprocess.Process]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus",
        "worker",
        "--app",
        "bench_inbox_resume:make",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=HERE,
    )
    assert proc.stderr is not None
    try:
        line = await asyncio.wait_for(proc.stderr.readline(), 60)
        if b"worker: ready" not in line:
            raise RuntimeError(f"the worker did not start: {line!r}")
        yield proc
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 20)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def bench_answer(backend: str, answers: int) -> list[Row]:
    from toolnexus.inbox import inbox_app
    from toolnexus.serve.server import start
    from toolnexus.suspension import Answer
    from toolnexus.testing import ScriptedModel

    print(f"answer → resumed, {backend}, {answers} answers per way", flush=True)
    warm = 5
    with tempfile.TemporaryDirectory(prefix="tn-bench-answer-") as tmp:
        async with ScriptedModel(default=brain) as model, open_store(backend, Path(tmp)) as opened:
            store, url = opened
            ids = await fill(store, model.openai_base_url, 2 * (answers + warm))
            starts = Path(tmp) / "starts.txt"
            env = {
                **os.environ,
                "BENCH_STORE": url,
                "BENCH_MODEL_URL": model.openai_base_url,
                "BENCH_STARTS": str(starts),
            }
            app = inbox_app(store, users=USERS)
            served = await start(app, "127.0.0.1:0")
            answered: dict[str, float] = {}
            done: dict[str, float] = {}
            try:
                async with worker_process(env) as proc, aiohttp.ClientSession() as http:
                    assert proc.stdout is not None
                    stdout = proc.stdout

                    all_done = asyncio.Event()

                    async def read_done() -> None:
                        while line := await stdout.readline():
                            rid, _, status = line.decode().strip().partition(": ")
                            if status == "done":
                                done[rid] = time.time()
                            if len(done) == len(ids):
                                all_done.set()

                    reader = asyncio.ensure_future(read_done())
                    ways = ["inbox", "store"] * (answers + warm)
                    for rid, way in zip(ids, ways, strict=True):
                        answered[rid] = time.time()
                        if way == "inbox":
                            async with http.post(
                                f"{served.url}/api/requests/{rid}/answer",
                                json={"ok": True},
                                headers=AUTH,
                            ) as r:
                                if r.status != 200:
                                    raise RuntimeError(f"answer: {r.status} {await r.text()}")
                        else:
                            await store.post_answer(rid, Answer(rid, ok=True), answered_by="b")
                        await asyncio.sleep(random.uniform(0.05, 0.25))
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(all_done.wait(), 30)
                    reader.cancel()
            finally:
                await served.stop()
                await app.aclose()
            started_at = dict(
                (rid, float(at))
                for rid, at in (line.split() for line in starts.read_text().splitlines())
            )

    def figures(offset: int) -> tuple[list[float], list[float], int]:
        picked = ids[offset::2][warm:]  # inbox answers at even positions, the floor's odd
        to_start = [started_at[r] - answered[r] for r in picked if r in started_at]
        to_done = [done[r] - answered[r] for r in picked if r in done]
        return to_start, to_done, len(picked) - len(to_done)

    floor_start, floor_done, floor_lost = figures(1)
    ours_start, ours_done, ours_lost = figures(0)
    rows: list[Row] = []
    for what, floor, ours in (
        ("tool starts", floor_start, ours_start),
        ("run done", floor_done, ours_done),
    ):
        rows.append(
            Row(
                f"{backend}: answer -> {what}, ms p50 / p99",
                f"{pct(floor, 0.5):.1f} / {pct(floor, 0.99):.1f}",
                f"{pct(ours, 0.5):.1f} / {pct(ours, 0.99):.1f}",
                f"{pct(ours, 0.5) - pct(floor, 0.5):+.1f} ms",
                "(info)",
                None,
            )
        )
    lost = floor_lost + ours_lost
    rows.append(
        Row(
            f"{backend}: runs not done within 30 s",
            str(floor_lost),
            str(ours_lost),
            "",
            "0",
            lost == 0,
        )
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 answers per way")
    parser.add_argument("--backend", choices=["sqlite", "postgres"], action="append")
    parser.add_argument("--answers", type=int, help="answers per way (40)")
    args = parser.parse_args()
    backends = args.backend or ["sqlite", "postgres"]
    if "postgres" in backends and not os.environ.get("TOOLNEXUS_PG_URL"):
        print("TOOLNEXUS_PG_URL is not set: the Postgres rows are skipped", file=sys.stderr)
        backends = [b for b in backends if b != "postgres"]
    answers = args.answers or (10 if args.quick else 40)
    rows: list[Row] = []
    for backend in backends:
        rows += asyncio.run(bench_answer(backend, answers))
    print_table(rows, f"answer -> resumed on a worker process ({os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
