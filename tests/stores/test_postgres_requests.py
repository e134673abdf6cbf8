"""PostgresStore's request states below the contract suite: the migration of older rows, the
plans of the hot queries at scale, takers in many processes, fencing tokens, notifications,
failures that change nothing, and cancelling a parked wait at any moment.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from halt_support import T0, checkpoint
from run_backends import Clock, yes

from pg_support import pg_connect
from toolnexus.errors import AnswerConflict, StoreError
from toolnexus.stores import postgres_listen as listen
from toolnexus.stores import postgres_runs as runs
from toolnexus.stores.postgres import PostgresStore
from toolnexus.stores.postgres_schema import MIGRATIONS
from toolnexus.stores.postgres_schema import migrate as pg_migrate
from toolnexus.stores.runs import EXPIRED_BY, AnswerRecord


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def store(pg_url: str, clock: Clock) -> AsyncIterator[PostgresStore]:
    async with PostgresStore(pg_url, clock=clock, max_size=4) as opened:
        yield opened


def token_of(pg_url: str, rid: str) -> int:
    with pg_connect(pg_url) as conn:
        row = conn.execute(
            "SELECT token FROM toolnexus_halts WHERE request_id = %s", (rid.encode(),)
        ).fetchone()
    assert row is not None
    return row[0]


# -- the migration from version 3 --------------------------------------------------------------


def old_row(rid: str, status: str, **columns: Any) -> dict[str, Any]:
    """A ``toolnexus_halts`` row as toolnexus wrote it at schema version 3."""
    return {
        "key": hashlib.sha256(rid.encode()).digest(),
        "request_id": rid.encode(),
        "status": status,
        "checkpoint": checkpoint(rid).dumps(),
        "kind": b"approval",
        "tool": b"deploy",
        "created_at": T0,
        "prompt": b"Deploy to prod?",
        **columns,
    }


async def test_a_version_3_database_moves_its_rows_into_the_request_states(
    pg_url: str, clock: Clock
) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await pg_migrate(conn, MIGRATIONS[:3])
    answered = {"answer": json.dumps({"id": "x", "ok": True}), "answered_at": T0 - 50}
    rows = [
        old_row("waiting", "pending"),
        old_row("finished", "answered", checkpoint=None, answered_by=b"ana", **answered),
        old_row(
            "timed-out",
            "answered",
            checkpoint=None,
            answered_by=EXPIRED_BY.encode(),
            answer=json.dumps({"id": "timed-out", "ok": False, "reason": "expired"}),
            answered_at=T0 - 40,
        ),
        old_row("posted", "answered", answered_by=b"bob", **answered),
        old_row(
            "held", "claimed", answered_by=b"cy", answer=answered["answer"], lease_until=T0 + 300
        ),
    ]
    with pg_connect(pg_url) as conn:
        for row in rows:
            names = ", ".join(row)
            marks = ", ".join(f"%({name})s" for name in row)
            conn.execute(f"INSERT INTO toolnexus_halts ({names}) VALUES ({marks})", row)
    async with PostgresStore(pg_url, clock=clock) as store:
        assert [e.request_id for e in await store.list_pending()] == ["waiting"]
        finished = await store.answer_record("finished")
        assert finished is not None
        assert (finished.status, finished.settled_at, finished.answered_by) == (
            "done",
            T0 - 50,
            "ana",
        )
        timed_out = await store.answer_record("timed-out")
        assert timed_out is not None
        assert timed_out.status == "expired"
        posted = await store.answer_record("posted")
        assert posted is not None
        assert posted.status == "answered"  # posted before the upgrade, never resumed: queued
        claim = await store.take()
        assert claim is not None
        assert (claim.request_id, claim.answered_by) == ("posted", "bob")
        with pytest.raises(AnswerConflict, match="being answered right now by cy"):
            await store.claim("held", yes("held"))
        assert await store.purge(older_than=45) == 1  # "finished" settled 50 s ago
    with pg_connect(pg_url) as conn:
        versions = conn.execute("SELECT version FROM toolnexus_schema_migrations ORDER BY 1")
        assert [v for (v,) in versions] == [m.version for m in MIGRATIONS]


# -- the plans of the hot queries at scale -----------------------------------------------------

# 100,000 rows, settled ones the great majority, as a store accumulates them between purges:
# 90 % done, 5 % pending, 4 % answered, 1 % claimed (half of them taken), one in seven in an
# agent tree's queue. Settled over the last day, so a periodic purge removes a sliver.
FILL = """
INSERT INTO toolnexus_halts (key, request_id, status, checkpoint, kind, tool, created_at,
  answer, answered_at, settled_at, recorded, lease_until, queue_key, token)
SELECT sha256(convert_to('r' || i, 'UTF8')), convert_to('r' || i, 'UTF8'),
  CASE WHEN i %% 100 < 90 THEN 'done' WHEN i %% 100 < 95 THEN 'pending'
       WHEN i %% 100 < 99 THEN 'answered' ELSE 'claimed' END,
  CASE WHEN i %% 100 >= 90 THEN '{}' END,
  convert_to('approval', 'UTF8'), convert_to('deploy', 'UTF8'),
  %(t0)s - 86400 + i * 0.864,
  CASE WHEN i %% 100 < 90 OR i %% 100 >= 95 THEN '{"id":"x","ok":true}' END,
  CASE WHEN i %% 100 < 90 OR i %% 100 >= 95 THEN %(t0)s - 86400 + i * 0.864 END,
  CASE WHEN i %% 100 < 90 THEN %(t0)s - 86400 + i * 0.864 END,
  i %% 100 < 90 OR (i %% 100 >= 95 AND i %% 100 < 99) OR i %% 200 = 99,
  CASE WHEN i %% 100 = 99 THEN %(t0)s + 300 END,
  sha256(convert_to(CASE WHEN i %% 7 = 0 THEN 'agents/rt-1' ELSE '' END, 'UTF8')),
  1
FROM generate_series(1, 100000) AS i
"""

PLANS: dict[str, tuple[str, str, object]] = {
    "list_pending": (
        "toolnexus_halts_pending",
        runs.PENDING + " ORDER BY created_at, request_id LIMIT %s",
        (T0, 100),
    ),
    "list_pending(kind=...)": (
        "toolnexus_halts_pending",
        runs.PENDING + " AND kind = %s ORDER BY created_at, request_id LIMIT %s",
        (T0, b"approval", 100),
    ),
    "take()": (
        "toolnexus_halts_queue",
        runs._TAKE_OLDEST,  # pyright: ignore[reportPrivateUsage]
        {"now": T0, "lease": T0 + 300, "holder": "w:1", "queue": hashlib.sha256(b"").digest()},
    ),
    "take(queue=...)": (
        "toolnexus_halts_queue",
        runs._TAKE_OLDEST,  # pyright: ignore[reportPrivateUsage]
        {
            "now": T0,
            "lease": T0 + 300,
            "holder": "w:1",
            "queue": hashlib.sha256(b"agents/rt-1").digest(),
        },
    ),
    "purge": (
        "toolnexus_halts_settled",
        runs._PURGE,  # pyright: ignore[reportPrivateUsage]
        (T0 - 86400 + 900,),
    ),
}


async def test_the_pending_index_the_queue_and_purge_stay_index_driven_at_100000_rows(
    store: PostgresStore, pg_url: str
) -> None:
    await store.list_pending(limit=1)  # migrated
    with pg_connect(pg_url) as conn:
        conn.execute(FILL, {"t0": T0})
        conn.execute("ANALYZE toolnexus_halts")  # the planner sees the table as it is
        assert conn.execute("SELECT count(*) FROM toolnexus_halts").fetchone() == (100_000,)
        for name, (index, sql, args) in PLANS.items():
            plan = "\n".join(line for (line,) in conn.execute("EXPLAIN " + sql, args))
            assert "Seq Scan" not in plan, f"{name}:\n{plan}"
            assert f"using {index} on toolnexus_halts" in plan, f"{name}:\n{plan}"
            # LIMIT on the index order: no sort of every waiting row.
            assert not re.search(r"(^|->  )Sort  \(", plan, re.M), f"{name}:\n{plan}"
            if name.startswith("take"):  # the index holds the take's whole order
                assert "Sort" not in plan, f"{name}:\n{plan}"
    assert len(await store.list_pending()) == 100


BURST = """
INSERT INTO toolnexus_halts (key, request_id, status, checkpoint, kind, tool, created_at,
  answer, answered_at, recorded, queue_key, token)
SELECT sha256(convert_to('q' || i, 'UTF8')), convert_to('q' || i, 'UTF8'), 'answered', '{}',
  convert_to('approval', 'UTF8'), convert_to('deploy', 'UTF8'), %(t0)s - 7200 + i,
  '{"id":"x","ok":true}', %(t0)s - 3600 + i * 0.5, true, sha256(convert_to('', 'UTF8')), 1
FROM generate_series(1, 5000) AS i
"""


async def test_a_queue_filled_in_a_burst_is_taken_head_first_before_any_analyze(
    store: PostgresStore, pg_url: str
) -> None:
    # 5,000 answers recorded faster than autovacuum analyzes: the planner still believes the
    # queue is empty. Before migration 8 every take read the whole queue and sorted it.
    await store.list_pending(limit=1)  # migrated
    with pg_connect(pg_url) as conn:
        conn.execute("ALTER TABLE toolnexus_halts SET (autovacuum_enabled = false)")
        conn.execute(BURST, {"t0": T0})
        sql = "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + runs._TAKE_OLDEST  # pyright: ignore[reportPrivateUsage]
        args = {
            "now": T0,
            "lease": T0 + 300,
            "holder": "w:1",
            "queue": hashlib.sha256(b"").digest(),
        }
        with conn.transaction(force_rollback=True):
            (plan,) = conn.execute(sql, args).fetchone() or (None,)
    text = json.dumps(plan)
    assert "toolnexus_halts_queue" in text, text
    assert '"Sort' not in text, text  # neither a Sort nor an Incremental Sort node
    scans = [node for node in _nodes(plan[0]["Plan"]) if "Index Name" in node]
    assert [node["Actual Rows"] for node in scans] == [1, 1], text  # the head, then the row
    claim = await store.take()
    assert claim is not None
    assert claim.request_id == "q1"  # the oldest answer


def _nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [node, *(n for child in node.get("Plans", []) for n in _nodes(child))]


# -- takers --------------------------------------------------------------------------------------


async def test_take_skips_a_row_another_taker_holds_instead_of_waiting(
    store: PostgresStore, pg_url: str, clock: Clock
) -> None:
    for rid in ("older", "newer"):
        await store.save_halt(checkpoint(rid))
        clock.now += 1
        await store.post_answer(rid, yes(rid))
    with pg_connect(pg_url) as other:
        with other.transaction():  # another worker's take, in the middle of its statement
            other.execute(
                "SELECT 1 FROM toolnexus_halts WHERE request_id = %s FOR UPDATE", (b"older",)
            )
            claim = await asyncio.wait_for(store.take(), 5)
            assert claim is not None
            assert claim.request_id == "newer"
            assert await asyncio.wait_for(store.take(), 5) is None
    claim = await store.take()
    assert claim is not None
    assert claim.request_id == "older"


WORKER = """
import asyncio, json, sys
from toolnexus.stores.postgres import PostgresStore

async def main():
    async with PostgresStore(sys.argv[1], max_size=2) as store:
        await store.list_pending(limit=1)  # connected and migrated before the race
        print("ready", flush=True)
        sys.stdin.readline()
        taken = []
        while (claim := await store.take()) is not None:
            taken.append(claim.request_id)
            await store.complete(claim.request_id, claim, outcome={"by": sys.argv[2]})
        print(json.dumps(taken), flush=True)

asyncio.run(main())
"""


async def test_workers_in_many_processes_take_every_answer_exactly_once(
    store: PostgresStore, pg_url: str
) -> None:
    ids = [f"job-{i}" for i in range(120)]
    for rid in ids:
        await store.save_halt(checkpoint(rid))
        await store.post_answer(rid, yes(rid))
    workers = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            WORKER,
            pg_url,
            f"w{i}",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for i in range(4)
    ]
    try:
        for worker in workers:
            assert worker.stdout is not None
            assert await asyncio.wait_for(worker.stdout.readline(), 45) == b"ready\n"
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write(b"go\n")
        finished = [await asyncio.wait_for(w.communicate(), 45) for w in workers]
    finally:
        for worker in workers:
            if worker.returncode is None:
                worker.kill()
                await worker.communicate()
    assert all(w.returncode == 0 for w in workers), [err.decode() for _, err in finished]
    taken = [rid for out, _ in finished for rid in json.loads(out)]
    assert sorted(taken) == sorted(ids)  # every one, none twice
    for rid in ids:
        record = await store.answer_record(rid)
        assert record is not None
        assert record.status == "done"


# -- fencing tokens --------------------------------------------------------------------------------


async def test_every_claim_take_answer_expiry_and_cancel_raises_the_token(
    store: PostgresStore, pg_url: str, clock: Clock
) -> None:
    await store.save_halt(checkpoint("a"))
    assert token_of(pg_url, "a") == 0
    await store.post_answer("a", yes("a"))
    assert token_of(pg_url, "a") == 1
    first = await store.take("a", lease_s=10)
    assert first is not None
    assert first.token == token_of(pg_url, "a") == 2
    await store.release("a", first)
    assert token_of(pg_url, "a") == 2  # a release hands back, it does not take
    second = await store.take("a")
    assert second is not None
    assert second.token == 3
    await store.save_halt(checkpoint("b"))
    held = await store.claim("b", yes("b"), lease_s=10)
    assert held.token == token_of(pg_url, "b") == 1
    clock.now += 10
    await store.expire("b")  # the lapsed host claim is fenced out
    assert token_of(pg_url, "b") == 2
    await store.save_halt(checkpoint("c"))
    await store.cancel("c")
    assert token_of(pg_url, "c") == 1


# -- notifications ---------------------------------------------------------------------------------


async def parked_on_the_queue(store: PostgresStore) -> asyncio.Task[None]:
    """A worker between drains: its first wait returns at once (it was not listening yet)."""
    await asyncio.wait_for(store.wait_for_queued(timeout=30), 10)
    waiting = asyncio.create_task(store.wait_for_queued(timeout=30))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    return waiting


async def test_a_worker_waiting_for_the_queue_wakes_on_an_answer_from_another_store(
    store: PostgresStore, pg_url: str
) -> None:
    await store.save_halt(checkpoint())
    waiting = await parked_on_the_queue(store)
    async with PostgresStore(pg_url) as webhook:
        await webhook.post_answer("req-1", yes())
    await asyncio.wait_for(waiting, 10)
    assert await store.take() is not None


def listen_as(url: str) -> Any:
    """A raw autocommit connection LISTENing on the channel of ``url``'s schema, and its name."""
    conn = pg_connect(url)
    found = conn.execute(f"SELECT {listen.CHANNEL_OF_SCHEMA}").fetchone()
    assert found is not None
    conn.execute(f'LISTEN "{found[0]}"')
    return conn, found[0]


async def test_stores_in_two_schemas_of_one_database_never_wake_each_other(
    store: PostgresStore, pg_url: str
) -> None:
    # Channels are per database. A worker of schema A must not be woken (nor a run parked on
    # A's request "req-1" told to re-read) by what a store in schema B records — the same
    # request id included.
    other = pg_url.replace("search_path%3D", "search_path%3Dt_other_")
    schema = other.rsplit("search_path%3D", 1)[1]
    with pg_connect(pg_url.rsplit("?", 1)[0]) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        public = admin.execute(f"SELECT {listen.CHANNEL_OF_SCHEMA}").fetchone()
    assert public == (listen.CHANNEL,)  # the public schema keeps the channel it always had
    listener, channel = listen_as(pg_url)
    try:
        assert channel.startswith(f"{listen.CHANNEL}_")
        assert len(channel) == len(listen.CHANNEL) + 17
        async with PostgresStore(other) as elsewhere:
            other_listener, other_channel = listen_as(other)
            other_listener.close()
            assert other_channel != channel
            await elsewhere.save_halt(checkpoint())
            await elsewhere.post_answer("req-1", yes())  # B's notification first…
        await store.save_halt(checkpoint("req-2"))
        await store.post_answer("req-2", yes("req-2"))  # …then A's
        first = next(listener.notifies(timeout=10))
        assert first.channel == channel
        assert first.payload == runs._note("req-2")  # pyright: ignore[reportPrivateUsage]
    finally:
        listener.close()
        with pg_connect(pg_url.rsplit("?", 1)[0]) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


async def test_a_released_claim_wakes_the_workers_waiting_for_the_queue(
    store: PostgresStore, pg_url: str
) -> None:
    await store.save_halt(checkpoint())
    await store.post_answer("req-1", yes())
    async with PostgresStore(pg_url) as failing:
        claim = await failing.take()
        assert claim is not None
        waiting = await parked_on_the_queue(store)
        await failing.release("req-1", claim)
    await asyncio.wait_for(waiting, 10)
    assert await store.take() is not None


async def test_an_answer_queued_while_the_worker_drained_ends_its_next_wait_at_once(
    store: PostgresStore, pg_url: str
) -> None:
    await store.save_halt(checkpoint())
    await asyncio.wait_for(store.wait_for_queued(timeout=30), 10)  # LISTEN is active now
    async with PostgresStore(pg_url) as webhook:
        await webhook.post_answer("req-1", yes())  # nobody waits on the queue right now
    await asyncio.sleep(0.1)  # the notification arrives
    await asyncio.wait_for(store.wait_for_queued(timeout=30), 5)


async def test_an_expiry_recorded_elsewhere_wakes_the_parked_run(
    store: PostgresStore, pg_url: str
) -> None:
    await store.save_halt(checkpoint())
    parked = asyncio.create_task(store.wait_for_answer("req-1", timeout=30))
    assert await store.wait_for_answer("req-1", timeout=0.05) is None
    async with PostgresStore(pg_url) as sweeper:
        await sweeper.expire("req-1")
    record = await asyncio.wait_for(parked, 10)
    assert record is not None
    assert (record.status, record.answered_by) == ("answered", EXPIRED_BY)


# -- failures change nothing -------------------------------------------------------------------


async def test_a_database_error_while_answering_is_a_store_error_and_changes_nothing(
    store: PostgresStore, pg_url: str
) -> None:
    import psycopg

    await store.save_halt(checkpoint())
    with pg_connect(pg_url) as conn:  # the row is read, locked and only then refused
        conn.execute(
            "ALTER TABLE toolnexus_halts ADD CONSTRAINT short_names"
            " CHECK (answered_by IS NULL OR length(answered_by) < 10)"
        )
    long = "a-very-long-name"
    attempts: list[Callable[[], Awaitable[object]]] = [
        lambda: store.post_answer("req-1", yes(), answered_by=long),
        lambda: store.claim("req-1", yes(), answered_by=long),
        lambda: store.cancel("req-1", answered_by=long),
    ]
    for attempt in attempts:
        with pytest.raises(StoreError, match="short_names") as caught:
            await attempt()
        assert isinstance(caught.value.__cause__, psycopg.Error)
    assert [e.request_id for e in await store.list_pending()] == ["req-1"]
    assert await store.answer_record("req-1") is None
    assert token_of(pg_url, "req-1") == 0
    record = await store.post_answer("req-1", yes(), answered_by="ana")
    assert record.status == "answered"


# -- cancelling a parked wait ----------------------------------------------------------------------


class SwallowingStore(PostgresStore):
    """A store whose record read swallows a cancel, as psycopg_pool's waits do on Python 3.11:
    `asyncio.wait_for` returns the result when the cancel lands just as the awaited event
    completes (the pool opening, a connection handed over), and the read goes on."""

    def __init__(self, url: str) -> None:
        super().__init__(url, max_size=2)
        self.reading = asyncio.Event()

    async def answer_record(self, request_id: str) -> AnswerRecord | None:
        self.reading.set()
        with contextlib.suppress(asyncio.CancelledError):  # the lower layer's swallowed cancel
            await asyncio.sleep(30)
        return await super().answer_record(request_id)


async def test_a_cancel_that_lands_while_the_wait_reads_its_record_is_raised(pg_url: str) -> None:
    async with SwallowingStore(pg_url) as store:
        await store.save_halt(checkpoint())
        waiting = asyncio.create_task(store.wait_for_answer("req-1", timeout=None))
        await asyncio.wait_for(store.reading.wait(), 10)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(waiting, 5)  # before the fix: parked for ever
        listener: Any = store._listener  # pyright: ignore[reportPrivateUsage]
        assert listener._waiters == {}  # the waiter was unregistered


async def test_a_wait_cancelled_at_any_moment_of_its_start_ends_with_the_cancel(
    pg_url: str,
) -> None:
    # Each store opens its pool and its LISTEN connection in the wait; the cancel lands at a
    # different moment of that each time (before the fix, about one in forty was swallowed
    # by the pool opening and the wait returned None at its timeout instead).
    for step in range(40):
        async with PostgresStore(pg_url, max_size=2) as store:
            waiting = asyncio.create_task(store.wait_for_answer("req-1", timeout=20))
            await asyncio.sleep(step * 0.0008)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(waiting, 5)


async def test_take_hands_over_the_checkpoint_and_survives_an_unreadable_one(pg_url: str) -> None:
    from halt_support import checkpoint

    from toolnexus.stores.postgres import PostgresStore
    from toolnexus.suspension import Answer

    async with PostgresStore(pg_url) as store:
        for rid in ("good", "bad"):
            await store.save_halt(checkpoint(rid))
            await store.post_answer(rid, Answer(rid, True))
        good = await store.take("good")
        assert good is not None
        assert good.checkpoint is not None
        assert good.checkpoint.pending.id == "good"
        with pg_connect(pg_url) as conn:
            conn.execute(
                "UPDATE toolnexus_halts SET checkpoint = 'not json' WHERE request_id = %s",
                (b"bad",),
            )
        bad = await store.take("bad")
        assert bad is not None  # taken all the same; the resumer's load_halt reports it
        assert bad.checkpoint is None
