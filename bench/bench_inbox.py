"""The approvals inbox with 10,000 pending requests: server time per page, p50 / p99.

    .venv/bin/python bench/bench_inbox.py            # SQLite (+ Postgres if configured)
    TOOLNEXUS_PG_URL=postgresql://… .venv/bin/python bench/bench_inbox.py

Each page is requested through the ASGI app directly (no socket, no client), signed in with a
bearer token, so the figure is the server's time: the store queries, the checkpoints of the
rows shown (for their arguments and agent paths) and the HTML. The floor is the page's store
queries alone (`search_pending` + `count_pending`, or `list_history`), what any page over the
store must pay. 2,000 of the rows are answered, for the history.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench_runstore import make_checkpoint  # the sibling script (bench/ is on sys.path)

from toolnexus.inbox import inbox_app
from toolnexus.stores.sqlite import SqliteStore
from toolnexus.suspension import Answer

PENDING = 10_000
ANSWERED = 2_000
ROUNDS = 60
TOKEN = "bench-token-0123456789"


async def fill(store: Any) -> None:
    kinds = ("approval", "question", "input", "authorization")
    for i in range(PENDING + ANSWERED):
        cp = make_checkpoint(f"req-{i:05d}", turns=2)
        cp.pending = type(cp.pending)(
            id=cp.pending.id, kind=kinds[i % 4], prompt=f"Deploy build {i} to env-{i % 7}?"
        )
        cp.outstanding[-1].request = cp.pending
        cp.created_at = time.time() - (PENDING - i)
        await store.save_halt(cp)
    for i in range(PENDING, PENDING + ANSWERED):
        rid = f"req-{i:05d}"
        await store.post_answer(rid, Answer(rid, i % 3 != 0), answered_by=f"user{i % 5}")


async def asgi_get(app: Any, path: str, query: str = "") -> int:
    """One GET through the app; the response status."""
    status = 0
    done = False

    async def receive() -> dict[str, Any]:
        nonlocal done
        if done:
            await asyncio.sleep(3600)
        done = True
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query.encode(),
        "headers": [(b"authorization", f"Bearer {TOKEN}".encode()), (b"host", b"bench")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    await app(scope, receive, send)
    return status


async def timed(call: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    for _ in range(5):
        await call()
    samples: list[float] = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - t0) * 1000)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]


async def bench(name: str, store: Any) -> None:
    t0 = time.perf_counter()
    await fill(store)
    took = time.perf_counter() - t0
    print(f"{name}: filled {PENDING} pending + {ANSWERED} answered in {took:.1f} s")
    app = inbox_app(store, users={"bench": TOKEN})
    pages: list[tuple[str, str, str, Callable[[], Awaitable[object]]]] = [
        ("list, page 1", "/", "", lambda: floor_list(store, {})),
        ("list, page 100", "/", "page=100", lambda: floor_list(store, {}, offset=4950)),
        (
            "list, kind filter",
            "/",
            "kind=question",
            lambda: floor_list(store, {"kind": "question"}),
        ),
        ("list, text search", "/", "q=env-3", lambda: floor_list(store, {"text": "env-3"})),
        ("history, page 1", "/history", "", lambda: store.list_history(limit=51)),
        (
            "history, by person",
            "/history",
            "by=user2",
            lambda: store.list_history(answered_by="user2", limit=51),
        ),
    ]
    print(f"  {'page':<20} {'p50 ms':>8} {'p99 ms':>8}   {'floor p50':>9} {'floor p99':>9}")
    for label, path, query, floor in pages:
        assert await asgi_get(app, path, query) == 200
        p50, p99 = await timed(lambda: asgi_get(app, path, query))  # noqa: B023
        f50, f99 = await timed(floor)
        print(f"  {label:<20} {p50:8.2f} {p99:8.2f}   {f50:9.2f} {f99:9.2f}")
    await app.aclose()


async def floor_list(store: Any, filters: dict[str, Any], offset: int = 0) -> None:
    kind = filters.pop("kind", None)
    await asyncio.gather(
        store.search_pending(kind=kind, offset=offset, limit=51, **filters),
        store.count_pending(**filters),
    )


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "inbox.db")
        try:
            await bench("sqlite", store)
        finally:
            await store.aclose()
    url = os.environ.get("TOOLNEXUS_PG_URL")
    if url:
        import uuid

        import psycopg

        schema = f"bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        sep = "&" if "?" in url else "?"
        scoped = f"{url}{sep}options=-csearch_path%3D{schema}"
        from toolnexus.stores.postgres import PostgresStore

        pg = PostgresStore(scoped, max_size=8)
        try:
            await bench("postgres", pg)
        finally:
            await pg.aclose()
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")


if __name__ == "__main__":
    asyncio.run(main())
