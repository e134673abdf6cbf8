"""The approvals inbox: its list page over 10,000 pending requests, and answer → run resumed on
a worker in another process.

    export "$(bash scripts/pg.sh start | tail -n 1)"   # for the Postgres rows (else skipped)
    .venv/bin/python bench/bench_inbox.py              # ~1-2 min
    .venv/bin/python bench/bench_inbox.py --quick      # 2,000 requests, fewer samples
    .venv/bin/python bench/bench_inbox.py --only list  # or: answer; --backend sqlite

1. **List page.** N (10,000) pending requests in a fresh store (memory, a SQLite file, a
   private Postgres schema): one real run halts through the client and its checkpoint is cloned
   under fresh request ids (``save_halt``). `inbox_app` runs on uvicorn on 127.0.0.1; a bare
   aiohttp session GETs each page sequentially with a bearer token. **Server time** is read by a
   thin ASGI wrapper around the inbox (request in → last body byte out), p50 / p99 over the
   samples, per page: the first page (50 rows, the counts per kind, the total), the last page,
   a text search, a kind + tool filter, one request's detail page. Floors, same process and
   server: a bare Starlette route returning a prebuilt 50-row HTML table (the HTTP + ASGI
   cost), and the store's own ``list_pending(limit=50)`` called directly (the query alone).
2. **Answer → resumed.** A worker process (``toolnexus worker --app bench_inbox:make``, the
   store's defaults: Postgres LISTEN/NOTIFY, SQLite polling every 0.2 s) runs beside the inbox;
   the bench answers one request at a time through the inbox's ``POST /api/requests/{id}/answer``
   (spaced 50-250 ms apart) and reads two instants: the approved tool starting (the tool appends
   ``<id> <time.time()>`` to a file) and the worker printing ``<id>: done`` (the run settled).
   Floor: the same with the answer recorded by ``store.post_answer`` in the bench process (no
   inbox, no HTTP): what the inbox adds is the difference.
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
    """A fresh store of ``backend`` and its URL (``memory`` has none a worker could share)."""
    if backend == "memory":
        from toolnexus.stores.runs import InMemoryStore

        yield InMemoryStore(), ""
        return
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


# -- serving -----------------------------------------------------------------------------------


class Timed:
    """An ASGI wrapper recording each HTTP request's server time under a label."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.label = ""
        self.samples: dict[str, list[float]] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        await self.app(scope, receive, send)
        self.samples.setdefault(self.label, []).append(time.perf_counter() - started)


def bare_page() -> Any:
    """The HTTP floor: a Starlette route returning a prebuilt 50-row table."""
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    rows = "".join(
        f'<tr data-request-id="bench-{i}"><td>approval</td><td><a href="requests/bench-{i}">'
        f"Close ticket T-{i}?</a></td><td>close_ticket</td><td>{{}}</td></tr>"
        for i in range(50)
    )
    body = f"<!doctype html><title>floor</title><table>{rows}</table>"

    async def page(request: Any) -> HTMLResponse:
        return HTMLResponse(body)

    return Starlette(routes=[Route("/", page)])


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def get_many(http: aiohttp.ClientSession, timed: Timed, label: str, url: str, n: int) -> None:
    timed.label = "warm-up"
    for _ in range(5):
        async with http.get(url, headers=AUTH) as r:
            await r.read()
    timed.label = label
    for _ in range(n):
        async with http.get(url, headers=AUTH) as r:
            await r.read()
            if r.status != 200:
                raise RuntimeError(f"{label}: {r.status} {(await r.text())[:300]}")


async def bench_list(backend: str, count: int, samples: int) -> list[Row]:
    from toolnexus.inbox import inbox_app
    from toolnexus.serve.server import start
    from toolnexus.testing import ScriptedModel

    print(f"list page, {backend}, {count} pending", flush=True)
    with tempfile.TemporaryDirectory(prefix="tn-bench-inbox-") as tmp:
        async with ScriptedModel(default=brain) as model, open_store(backend, Path(tmp)) as opened:
            store, _ = opened
            ids = await fill(store, model.openai_base_url, count)
            app = inbox_app(store, users=USERS)
            timed = Timed(app)
            floor_timed = Timed(bare_page())
            served = await start(timed, "127.0.0.1:0")
            floor = await start(floor_timed, "127.0.0.1:0")
            try:
                async with aiohttp.ClientSession() as http:
                    probe = ids[count // 2][-8:]
                    pages = {
                        "first page (50 rows, counts, total)": "/",
                        f"last page ({count // 50})": f"/?page={count // 50}",
                        "text search (one match)": f"/?q={probe}",
                        "kind + tool filter": "/?kind=approval&tool=close_ticket",
                        "one request's detail": f"/requests/{ids[count // 2]}",
                    }
                    for label, path in pages.items():
                        await get_many(http, timed, label, served.url + path, samples)
                    await get_many(http, floor_timed, "floor", floor.url + "/", samples)
                query: list[float] = []
                for _ in range(samples):
                    started = time.perf_counter()
                    await store.list_pending(limit=50)
                    query.append(time.perf_counter() - started)
            finally:
                await served.stop()
                await floor.stop()
                await app.aclose()
    http_floor = floor_timed.samples["floor"]
    rows = [
        Row(
            f"{backend}: {label}, server ms p50 / p99",
            f"{pct(http_floor, 0.5):.2f} / {pct(http_floor, 0.99):.2f}",
            f"{pct(values, 0.5):.2f} / {pct(values, 0.99):.2f}",
            f"+{pct(values, 0.5) - pct(http_floor, 0.5):.2f} ms",
            "(info)",
            None,
        )
        for label, values in timed.samples.items()
        if label != "warm-up"
    ]
    rows.append(
        Row(
            f"{backend}: store.list_pending(limit=50) alone, ms p50 / p99",
            "-",
            f"{pct(query, 0.5):.2f} / {pct(query, 0.99):.2f}",
            "",
            "(info)",
            None,
        )
    )
    return rows


# -- answer → resumed ----------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def worker_process(env: dict[str, str]) -> AsyncIterator[asyncio.subprocess.Process]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus",
        "worker",
        "--app",
        "bench_inbox:make",
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
    rows: list[Row] = []
    for way, offset in (("store.post_answer (floor)", 1), ("inbox POST /api/.../answer", 0)):
        picked = ids[offset::2][warm:]
        to_start = [started_at[r] - answered[r] for r in picked if r in started_at]
        to_done = [done[r] - answered[r] for r in picked if r in done]
        lost = len(picked) - len(to_done)
        rows.append(
            Row(
                f"{backend}: answer via {way} → tool starts, ms p50 / p99",
                "",
                f"{pct(to_start, 0.5):.1f} / {pct(to_start, 0.99):.1f}",
                "",
                "(info)",
                None,
            )
        )
        rows.append(
            Row(
                f"{backend}: answer via {way} → run done, ms p50 / p99",
                "",
                f"{pct(to_done, 0.5):.1f} / {pct(to_done, 0.99):.1f}",
                f"{lost} not done" if lost else "",
                "(info)",
                None if not lost else False,
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 requests, fewer samples")
    parser.add_argument("--only", choices=["list", "answer"])
    parser.add_argument("--backend", choices=["memory", "sqlite", "postgres"], action="append")
    parser.add_argument("--count", type=int, help="pending requests for the list (10,000)")
    args = parser.parse_args()
    backends = args.backend or ["memory", "sqlite", "postgres"]
    if "postgres" in backends and not os.environ.get("TOOLNEXUS_PG_URL"):
        print("TOOLNEXUS_PG_URL is not set: the Postgres rows are skipped", file=sys.stderr)
        backends = [b for b in backends if b != "postgres"]
    count = args.count or (2_000 if args.quick else 10_000)
    samples = 50 if args.quick else 200
    rows: list[Row] = []
    if args.only in (None, "list"):
        for backend in backends:
            rows += asyncio.run(bench_list(backend, count, samples))
    if args.only in (None, "answer"):
        for backend in (b for b in backends if b != "memory"):
            rows += asyncio.run(bench_answer(backend, 10 if args.quick else 40))
    print_table(rows, f"approvals inbox ({os.cpu_count()} cores; server time unless noted)")


if __name__ == "__main__":
    main()
