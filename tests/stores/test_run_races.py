"""Exactly-once across real processes: claim races, migration races, answers between processes.

Every child is its own Python process with its own event loop and its own store object on the
same SQLite file or PostgreSQL schema, released at one moment by a line on its stdin.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from pg_support import pg_connect
from toolnexus._types import empty_usage
from toolnexus.errors import AnswerConflict
from toolnexus.loop.checkpoint import Checkpoint, Outstanding
from toolnexus.stores.postgres_schema import MIGRATIONS as PG_MIGRATIONS
from toolnexus.stores.sqlite import SqliteStore
from toolnexus.suspension import Answer, Request

REQUESTS = 50

OPEN = """
import asyncio, json, sys
from toolnexus.errors import AnswerConflict
from toolnexus.suspension import Answer

def open_store(kind, where):
    if kind == "sqlite":
        from toolnexus.stores.sqlite import SqliteStore
        return SqliteStore(where, busy_timeout_ms=30000, poll_interval=0.02)
    from toolnexus.stores.postgres import PostgresStore
    return PostgresStore(where, max_size=2)

kind, where, name = sys.argv[1], sys.argv[2], sys.argv[3]
"""

RACER = (
    OPEN
    + """
async def main():
    async with open_store(kind, where) as store:
        await store.list_pending(limit=1)  # connected and migrated before the first request
        print("ready", flush=True)
        # Lockstep: the parent hands both racers the same request id at the same moment.
        while rid := sys.stdin.readline().strip():
            try:
                await store.claim(rid, Answer(rid, True, {"by": name}), answered_by=name)
                print(json.dumps([rid, "won", name]), flush=True)
            except AnswerConflict as exc:
                print(json.dumps([rid, "lost", exc.answered_by]), flush=True)

asyncio.run(main())
"""
)

OPENER = (
    OPEN
    + """
async def main():
    print("ready", flush=True)
    sys.stdin.readline()
    async with open_store(kind, where) as store:
        await store.save(name, [{"role": "user", "content": name}])
    print("done", flush=True)

asyncio.run(main())
"""
)

WAITER = (
    OPEN
    + """
async def main():
    rid = sys.argv[4]
    async with open_store(kind, where) as store:
        parked = asyncio.create_task(store.wait_for_answer(rid, timeout=30))
        # A second waiter timing out gives the first one time to park.
        assert await store.wait_for_answer(rid, timeout=0.05) is None
        assert not parked.done()
        print("parked", flush=True)
        record = await parked
        print(json.dumps(record and [record.answered_by, record.answer.to_dict()]), flush=True)

asyncio.run(main())
"""
)

POSTER = (
    OPEN
    + """
async def main():
    rid = sys.argv[4]
    async with open_store(kind, where) as store:
        await store.post_answer(rid, Answer(rid, True, {"from": name}), answered_by=name)
    print("posted", flush=True)

asyncio.run(main())
"""
)


class Child:
    """A Python child process we talk to line by line."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, script: str, *args: str) -> Child:
        child = cls(await cls._spawn(script, *args))
        _LIVE.append(child)
        return child

    @staticmethod
    async def _spawn(script: str, *args: str) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            script,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )

    async def line(self) -> str:
        assert self.proc.stdout is not None
        raw = await asyncio.wait_for(self.proc.stdout.readline(), timeout=45)
        if not raw:
            assert self.proc.stderr is not None
            err = await self.proc.stderr.read()
            raise AssertionError(f"the child ended early: {err.decode()}")
        return raw.decode().rstrip("\n")

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")

    async def finish(self) -> None:
        _, err = await asyncio.wait_for(self.proc.communicate(), timeout=45)
        assert self.proc.returncode == 0, err.decode()


_LIVE: list[Child] = []


@pytest.fixture(autouse=True)
async def _reap_children() -> AsyncIterator[None]:
    """A failed test never leaves a child running."""
    yield
    while _LIVE:
        proc = _LIVE.pop().proc
        if proc.returncode is None:
            proc.kill()
            await proc.communicate()


def checkpoint(rid: str) -> Checkpoint:
    request = Request(id=rid, kind="approval", prompt="ok?")
    return Checkpoint(
        model="m-1",
        style="openai",
        messages=[{"role": "user", "content": "go"}],
        turn=1,
        usage=empty_usage(),
        tool_calls=[],
        outstanding=[
            Outstanding(
                call_id="c1", name="deploy", arguments="{}", state="suspended", request=request
            )
        ],
        pending=request,
    )


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    if request.param == "sqlite":
        return "sqlite", str(tmp_path / "runs.db")
    return "postgres", request.getfixturevalue("pg_url")


@pytest.fixture
async def store(target: tuple[str, str]) -> AsyncIterator[Any]:
    kind, where = target
    if kind == "sqlite":
        opened: Any = SqliteStore(where, poll_interval=0.02)
    else:
        from toolnexus.stores.postgres import PostgresStore

        opened = PostgresStore(where, max_size=2)
    yield opened
    await opened.aclose()


async def test_two_processes_racing_claims_get_exactly_one_winner_each(
    store: Any, target: tuple[str, str]
) -> None:
    # Half the requests have a halted row (UPDATE path), half are unknown (INSERT path).
    for index in range(0, REQUESTS, 2):
        await store.save_halt(checkpoint(f"race-{index}"))
    racers = [await Child.start(RACER, *target, name) for name in ("alpha", "beta")]
    for racer in racers:
        assert await racer.line() == "ready"
    for index in range(REQUESTS):
        rid = f"race-{index}"
        for racer in racers:
            racer.send(rid)
        outcomes = [json.loads(await racer.line()) for racer in racers]
        assert [o[0] for o in outcomes] == [rid, rid]
        winners = [who for _, verdict, who in outcomes if verdict == "won"]
        assert len(winners) == 1, outcomes
        [(_, lost, named)] = [o for o in outcomes if o[1] != "won"]
        assert (lost, named) == ("lost", winners[0])
        with pytest.raises(AnswerConflict) as caught:
            await store.claim(rid, Answer(rid, True), answered_by="parent")
        assert caught.value.answered_by == winners[0]
    for racer in racers:
        racer.send("")
        await racer.finish()


async def test_a_run_parked_in_another_process_wakes_on_an_answer_posted_here(
    store: Any, target: tuple[str, str]
) -> None:
    await store.save_halt(checkpoint("parked-1"))
    waiter = await Child.start(WAITER, *target, "child", "parked-1")
    assert await waiter.line() == "parked"
    await store.post_answer(
        "parked-1", Answer("parked-1", True, {"from": "parent"}), answered_by="parent"
    )
    assert json.loads(await waiter.line()) == [
        "parent",
        {"id": "parked-1", "ok": True, "data": {"from": "parent"}},
    ]
    await waiter.finish()


async def test_a_run_parked_here_wakes_on_an_answer_posted_by_another_process(
    store: Any, target: tuple[str, str]
) -> None:
    await store.save_halt(checkpoint("parked-2"))
    parked = asyncio.create_task(store.wait_for_answer("parked-2", timeout=45))
    assert await store.wait_for_answer("parked-2", timeout=0.05) is None
    poster = await Child.start(POSTER, *target, "webhook", "parked-2")
    assert await poster.line() == "posted"
    await poster.finish()
    record = await asyncio.wait_for(parked, timeout=45)
    assert record is not None
    assert (record.answered_by, record.answer) == (
        "webhook",
        Answer("parked-2", True, {"from": "webhook"}),
    )


async def test_two_processes_posting_the_same_answer_record_it_once(
    store: Any, target: tuple[str, str]
) -> None:
    await store.save_halt(checkpoint("twice"))
    posters = [await Child.start(POSTER, *target, name, "twice") for name in ("p1", "p2")]
    finished = await asyncio.gather(*(p.proc.communicate() for p in posters))
    posted = [out.decode().strip() == "posted" for out, _ in finished]
    conflicts = [b"AnswerConflict" in err for _, err in finished]
    assert sorted(posted) == [False, True]
    assert sorted(conflicts) == [False, True]
    record = await store.answer_record("twice")
    winner = "p1" if posted[0] else "p2"
    assert record is not None
    assert record.answered_by == winner


async def test_workers_opening_a_fresh_postgres_schema_at_once_migrate_it_once(
    pg_url: str,
) -> None:
    openers = [await Child.start(OPENER, "postgres", pg_url, f"w{i}") for i in range(4)]
    for opener in openers:
        assert await opener.line() == "ready"
    for opener in openers:
        opener.send("go")
    for opener in openers:
        assert await opener.line() == "done"
        await opener.finish()
    with pg_connect(pg_url) as conn:
        rows = conn.execute("SELECT version, name FROM toolnexus_schema_migrations ORDER BY 1")
        assert rows.fetchall() == [(m.version, m.name) for m in PG_MIGRATIONS]
        count = conn.execute("SELECT count(*) FROM toolnexus_conversations").fetchone()
        assert count == (4,)
