"""A racing answer (T2) or claim (T4) that loses on PostgreSQL: told who won, in one statement.

The write and the read that says why it matched nothing are one statement (the read a ``FOR
SHARE`` CTE), so a loser arriving while the winner's write is still in flight waits for it and
names it, instead of reading the snapshot from before it. And a host's resume refused because
the request is held or settled does not read the answer record to retake it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from halt_support import checkpoint
from run_backends import Clock, yes

from toolnexus import (
    Answer,
    ToolContext,
    ToolResult,
    create_client,
    create_toolkit,
    define_tool,
    pending,
)
from toolnexus.errors import AnswerConflict
from toolnexus.stores.postgres import PostgresStore
from toolnexus.stores.runs import InMemoryStore
from toolnexus.testing import ScriptedModel, call, text, tool_calls


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def store(pg_url: str, clock: Clock) -> AsyncIterator[PostgresStore]:
    async with PostgresStore(pg_url, clock=clock, max_size=2) as opened:
        yield opened


class Statements:
    """Counts the statements the store's pooled connections send (a spy: they still run),
    with the connection each went out on: every statement passes `AsyncCursor.execute`
    (``AsyncConnection.execute`` makes a cursor and calls it)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sent: list[tuple[object, str]] = []
        real = psycopg.AsyncCursor.execute

        async def execute(cur: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            self.sent.append((cur.connection, str(query)))
            return await real(cur, query, *args, **kwargs)

        monkeypatch.setattr(psycopg.AsyncCursor, "execute", execute)


async def blocked_on(
    watch: psycopg.AsyncConnection[Any],
    holder: psycopg.AsyncConnection[Any],
    task: asyncio.Task[Any],
) -> None:
    """Until a backend waits for a lock ``holder`` holds (or ``task`` ended without waiting)."""
    while not task.done():
        cur = await watch.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
            (holder.info.backend_pid,),
        )
        row = await cur.fetchone()
        if row is not None and row[0] > 0:
            return
        await asyncio.sleep(0)  # yield to the store's statement, then look again


WINNER = (
    "UPDATE toolnexus_halts SET status = %s, answered_by = %s, answer = %s, recorded = %s,"
    " lease_until = %s, token = token + 1 WHERE request_id = %s"
)


async def race_against_a_write_in_flight(
    pg_url: str,
    store: PostgresStore,
    monkeypatch: pytest.MonkeyPatch,
    winner: tuple[Any, ...],
    loser: Any,
) -> tuple[AnswerConflict, list[str]]:
    """Hold the winner's write open, start the loser, commit: the loser's conflict and the
    statements it sent."""
    async with (
        await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as held,
        await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as watch,
    ):
        spy = Statements(monkeypatch)
        async with held.transaction():
            await held.execute(WINNER, winner)
            losing = asyncio.create_task(loser())
            await asyncio.wait_for(blocked_on(watch, held, losing), 10)
            assert not losing.done()
        with pytest.raises(AnswerConflict) as refused:
            await asyncio.wait_for(losing, 10)
    return refused.value, [q for conn, q in spy.sent if conn is not held and conn is not watch]


async def test_an_answer_losing_to_an_answer_in_flight_names_it_in_one_statement(
    store: PostgresStore, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.save_halt(checkpoint("a"))
    answer = json.dumps({"id": "a", "ok": True})
    winner = ("answered", b"ana", answer, True, None, b"a")

    conflict, sent = await race_against_a_write_in_flight(
        pg_url,
        store,
        monkeypatch,
        winner,
        lambda: store.post_answer("a", yes("a"), answered_by="bob"),
    )

    assert (conflict.answered_by, conflict.status) == ("ana", "answered")
    assert "already answered by ana" in str(conflict)
    assert len(sent) == 1
    record = await store.answer_record("a")
    assert record is not None
    assert (record.status, record.answered_by) == ("answered", "ana")


async def test_a_claim_losing_to_a_claim_in_flight_names_it_in_one_statement(
    store: PostgresStore, pg_url: str, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.save_halt(checkpoint("a"))
    answer = json.dumps({"id": "a", "ok": True})
    winner = ("claimed", b"ana", answer, False, clock.now + 30, b"a")

    conflict, sent = await race_against_a_write_in_flight(
        pg_url,
        store,
        monkeypatch,
        winner,
        lambda: store.claim("a", yes("a"), answered_by="bob", lease_s=30),
    )

    assert (conflict.answered_by, conflict.status) == ("ana", "claimed")
    assert "being answered right now by ana" in str(conflict)
    assert len(sent) == 1
    clock.now += 31  # the winner's lease runs out: the request is claimable again
    again = await store.claim("a", yes("a"), answered_by="bob", lease_s=30)
    assert again.answered_by == "bob"


async def test_an_answer_to_a_settled_or_unknown_request_is_refused_in_one_statement(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.save_halt(checkpoint("a"))
    await store.cancel("a", answered_by="ana")
    spy = Statements(monkeypatch)

    with pytest.raises(AnswerConflict) as refused:
        await store.post_answer("a", yes("a"), answered_by="bob")
    with pytest.raises(KeyError):
        await store.post_answer("nobody", yes("nobody"))

    assert (refused.value.answered_by, refused.value.status) == ("ana", "cancelled")
    assert len(spy.sent) == 2
    record = await store.answer_record("a")
    assert record is not None
    assert (record.status, record.answered_by) == ("cancelled", "ana")


# -- the host's resume: a refused claim reads the answer record only when it could retake -------


class CountingStore(InMemoryStore):
    """The memory store, counting answer-record reads."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def answer_record(self, request_id: str) -> Any:
        self.reads += 1
        return await super().answer_record(request_id)


@define_tool
def gate(ctx: ToolContext | None = None) -> str | ToolResult:
    """A gated step."""
    if ctx is None or ctx.answer is None:
        return pending(kind="approval", prompt="go?")
    return "gone"


async def test_a_resume_refused_by_a_live_claim_does_not_read_the_record() -> None:
    tk = await create_toolkit(extra_tools=[gate], builtins=False)
    script = [
        tool_calls(call("gate", {}, id="c1")),
        tool_calls(call("gate", {}, id="c2")),
        text("done"),
    ]
    async with ScriptedModel(script) as model:
        store = CountingStore()
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            halted = await client.run("go", tk)
            assert halted.pending is not None
            rid = halted.pending.id
            await store.claim(rid, Answer(rid, True), answered_by="ana", lease_s=60)

            with pytest.raises(AnswerConflict) as held:
                await client.resume(tk, Answer(rid, True), answered_by="bob")
            assert (held.value.answered_by, held.value.status) == ("ana", "claimed")
            assert store.reads == 0

            # Recorded (by this host's earlier attempt, say) and queued: the same answer again
            # is a second answer, refused naming who; the recorded one resumes by its id.
            other = await client.run("go", tk)
            assert other.pending is not None
            oid = other.pending.id
            await client.answer(oid, Answer(oid, True), answered_by="ana")
            with pytest.raises(AnswerConflict, match="already answered by ana"):
                await client.resume(tk, Answer(oid, True), answered_by="bob")
            assert store.reads > 0
            resumed = await client.resume(tk, oid)
            assert resumed.status == "done"


# -- the host's resume: a read that shows the request taken refuses it without the claim -------


async def test_load_waiting_refuses_a_live_claim_and_returns_what_the_claim_may_take(
    store: PostgresStore, clock: Clock
) -> None:
    for rid in ("pending", "answered", "claimed", "lapsed", "done", "cancelled"):
        await store.save_halt(checkpoint(rid))
    await store.post_answer("answered", yes("answered"), answered_by="ana")
    await store.claim("claimed", yes("claimed"), answered_by="ana", lease_s=30)
    await store.claim("lapsed", yes("lapsed"), answered_by="ana", lease_s=5)
    held = await store.claim("done", yes("done"), answered_by="ana", lease_s=30)
    await store.complete("done", held, outcome={"status": "done"})
    await store.cancel("cancelled", answered_by="ana")
    clock.now += 10  # the 5 s lease lapsed: claimable again (T10), the 30 s one holds

    for rid in ("pending", "answered", "lapsed"):
        loaded = await store.load_waiting(rid)
        assert loaded is not None
        assert loaded.pending.id == rid
    with pytest.raises(AnswerConflict) as refused:
        await store.load_waiting("claimed")
    assert (refused.value.answered_by, refused.value.status) == ("ana", "claimed")
    # Settled: refused as its answer record would be (who answered, how it ended), in the
    # same read; load_halt has no checkpoint for it.
    for rid, status in (("done", "done"), ("cancelled", "cancelled")):
        with pytest.raises(AnswerConflict) as settled:
            await store.load_waiting(rid)
        assert (settled.value.answered_by, settled.value.status) == ("ana", status)
        assert await store.load_halt(rid) is None
    # Unknown: None, as load_halt says; the caller tells why.
    assert await store.load_waiting("nobody") is None
    assert await store.load_halt("nobody") is None
    # Nothing was written: the claim still holds, the settled rows are as they were.
    with pytest.raises(AnswerConflict):
        await store.claim("claimed", yes("claimed"), answered_by="bob", lease_s=30)
    for rid in ("done", "cancelled"):
        record = await store.answer_record(rid)
        assert record is not None
        assert record.answered_by == "ana"


async def test_a_resume_refused_by_a_visible_claim_sends_one_statement(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tk = await create_toolkit(extra_tools=[gate], builtins=False)
    async with (
        ScriptedModel([tool_calls(call("gate", {}, id="c1")), text("done")]) as model,
        PostgresStore(pg_url, max_size=2) as store,
    ):
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            halted = await client.run("go", tk)
            assert halted.pending is not None
            rid = halted.pending.id
            await store.claim(rid, Answer(rid, True), answered_by="ana", lease_s=60)
            spy = Statements(monkeypatch)

            with pytest.raises(AnswerConflict) as held:
                await client.resume(tk, Answer(rid, True), answered_by="bob")

            assert (held.value.answered_by, held.value.status) == ("ana", "claimed")
            assert len(spy.sent) == 1  # the read; no guards, no claim
            with pytest.raises(AnswerConflict) as still:  # ana's claim is untouched
                await store.claim(rid, Answer(rid, True), answered_by="bob", lease_s=60)
            assert still.value.answered_by == "ana"
            assert len(model.requests) == 1  # only the halting call: nothing resumed


async def test_a_resume_refused_by_a_settled_run_sends_one_statement(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tk = await create_toolkit(extra_tools=[gate], builtins=False)
    script = [tool_calls(call("gate", {}, id="c1")), tool_calls(call("gate", {}, id="c2"))]
    script.append(text("done"))
    async with (
        ScriptedModel(script) as model,
        PostgresStore(pg_url, max_size=2) as store,
    ):
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            finished = await client.run("go", tk)
            cancelled = await client.run("go", tk)
            assert finished.pending is not None
            assert cancelled.pending is not None
            done_id, cancelled_id = finished.pending.id, cancelled.pending.id
            resumed = await client.resume(tk, Answer(done_id, True), answered_by="ana")
            assert resumed.status == "done"
            await client.cancel(cancelled_id, answered_by="ana")
            calls = len(model.requests)
            spy = Statements(monkeypatch)

            for rid, status in ((done_id, "done"), (cancelled_id, "cancelled")):
                with pytest.raises(AnswerConflict) as settled:
                    await client.resume(tk, Answer(rid, True), answered_by="bob")
                assert (settled.value.answered_by, settled.value.status) == ("ana", status)
            assert len(spy.sent) == 2  # one read each; no answer record, no guards, no claim
            assert len(model.requests) == calls  # nothing resumed
            for rid, status in ((done_id, "done"), (cancelled_id, "cancelled")):
                record = await store.answer_record(rid)
                assert record is not None
                assert (record.status, record.answered_by) == (status, "ana")
