"""Answering is separate from resuming: client.answer / cancel / purge / worker / resume(id).

One process, the memory store and a scripted model on loopback; the process-crossing and
crash cases live in tests/test_resume_chaos.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any, NamedTuple

import pytest

from test_resume import Ledger, gate_tool, plain_tool
from toolnexus import (
    Answer,
    AnswerConflict,
    AnswerMismatch,
    CallbackError,
    ResumeError,
    RunCancelled,
    UnknownRequest,
    create_client,
    create_toolkit,
)
from toolnexus.errors import InvalidAnswer, LeaseLost
from toolnexus.resumption import Resumption
from toolnexus.stores.runs import InMemoryStore
from toolnexus.testing import ScriptedModel, call, text, tool_calls
from toolnexus.waiting import store_wait_for


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


class WatchedStore(InMemoryStore):
    """The memory store, telling the test when a run has saved its halt."""

    def __init__(self, clock: Any = None) -> None:
        super().__init__(clock)
        self.halted = asyncio.Event()

    async def save_halt(self, checkpoint: Any) -> None:
        await super().save_halt(checkpoint)
        self.halted.set()


async def halted_run(client: Any, toolkit: Any, conversation: str | None = "conv-1") -> Any:
    result = await client.ask("go", toolkit, id=conversation)
    assert result.status == "pending"
    assert result.pending is not None
    return result.pending


async def test_an_answer_is_recorded_and_a_worker_finishes_the_run_once() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    script = [tool_calls(call("gate", {}, id="c1")), text("shipped")]
    async with ScriptedModel(script) as model:
        store = InMemoryStore()
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            request = await halted_run(client, tk)
            record = await client.answer(request.id, Answer(request.id, True), answered_by="ana")
            assert (record.status, record.answered_by) == ("answered", "ana")
            assert ledger.runs["gate"] == 1  # answering ran nothing
            assert len(model.requests) == 1
            results: list[tuple[str, Any]] = []
            worker = client.worker(tk, on_result=lambda rid, r: results.append((rid, r)))
            assert await worker.drain() == 1
            assert await worker.drain() == 0
            transcript = await client.conversation_store.get("conv-1")
    assert ledger.runs["gate"] == 2
    assert [(rid, r.text) for rid, r in results] == [(request.id, "shipped")]
    assert worker.resumed == 1
    settled = await store.answer_record(request.id)
    assert settled is not None
    assert settled.status == "done"
    assert settled.outcome is not None
    assert settled.outcome["text"] == "shipped"
    assert transcript is not None
    assert transcript[-1] == {"role": "assistant", "content": "shipped"}


async def test_a_host_resumes_itself_with_the_recorded_answer_by_request_id() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    async with ScriptedModel([tool_calls(call("gate", {}, id="c1")), text("ok")]) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as client:
            request = await halted_run(client, tk)
            await client.answer(request.id, {"id": request.id, "ok": True, "data": {"n": 1}})
            done = await client.resume(tk, request.id)
            with pytest.raises(AnswerConflict, match="already answered"):
                await client.resume(tk, request.id)
    assert done.text == "ok"
    assert ledger.answers[-1] == Answer(request.id, True, {"n": 1})


async def test_resume_by_id_of_an_unanswered_request_is_refused() -> None:
    tk = await create_toolkit(extra_tools=[gate_tool(Ledger())], builtins=False)
    async with ScriptedModel([tool_calls(call("gate", {}, id="c1"))]) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as client:
            request = await halted_run(client, tk)
            with pytest.raises(UnknownRequest, match="answered"):
                await client.resume(tk, request.id)
            assert [e.request_id for e in await client.list_pending()] == [request.id]


BAD_ANSWERS: list[tuple[object, type[Exception]]] = [
    (Answer("other", True), AnswerMismatch),
    (Answer("{rid}", "false"), InvalidAnswer),  # pyright: ignore[reportArgumentType]
    (Answer("{rid}", 1), InvalidAnswer),  # pyright: ignore[reportArgumentType]
    (Answer("{rid}", True, "x"), InvalidAnswer),  # pyright: ignore[reportArgumentType]
    ({"id": "{rid}", "ok": "false"}, InvalidAnswer),
    ({"id": "{rid}", "ok": True, "data": "x"}, InvalidAnswer),
]


def _with_id(value: object, rid: str) -> object:
    if isinstance(value, Answer):
        return Answer(rid if value.id == "{rid}" else value.id, value.ok, value.data, value.reason)
    assert isinstance(value, dict)
    return {k: (rid if v == "{rid}" else v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]


@pytest.mark.parametrize(("bad", "error"), BAD_ANSWERS, ids=range(len(BAD_ANSWERS)))
async def test_a_bad_answer_is_refused_on_every_path_and_changes_nothing(
    bad: object, error: type[Exception]
) -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    async with ScriptedModel([tool_calls(call("gate", {}, id="c1"))]) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as client:
            request = await halted_run(client, tk)
            answer: Any = _with_id(bad, request.id)
            with pytest.raises(error):
                await client.answer(request.id, answer)
            with pytest.raises(error):
                await client.resume(tk, answer) if error is not AnswerMismatch else (
                    await client.run_with_answer(tk, None, request, answer)
                )
            with pytest.raises(error):
                await client.ask_with_answer(tk, "conv-1", request, answer)
            assert [e.request_id for e in await client.list_pending()] == [request.id]
            assert await client.run_store.answer_record(request.id) is None
    assert ledger.runs["gate"] == 1
    assert len(model.requests) == 1


@pytest.mark.parametrize(
    "bad",
    [
        Answer("r", "yes"),  # pyright: ignore[reportArgumentType]
        Answer("r", True, "x"),  # pyright: ignore[reportArgumentType]
        {"id": "r", "ok": 1},
    ],
    ids=["ok-str", "data-str", "dict-ok-int"],
)
async def test_an_inline_wait_for_returning_a_badly_typed_answer_is_a_callback_error(
    bad: Any,
) -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)

    def wait_for(request: Any) -> Any:
        if isinstance(bad, Answer):
            return Answer(request.id, bad.ok, bad.data)
        return {**bad, "id": request.id}

    async with ScriptedModel([tool_calls(call("gate", {}, id="c1"))]) as model:
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", wait_for=wait_for
        ) as client:
            with pytest.raises(CallbackError, match="invalid Answer"):
                await client.run("go", tk)
    assert ledger.runs["gate"] == 1  # never re-executed with the bad answer


async def test_a_pending_of_another_conversation_is_refused_and_nothing_changes() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    script = [tool_calls(call("gate", {}, id="x1")), tool_calls(call("gate", {}, id="y1"))]
    async with ScriptedModel(script) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as client:
            await halted_run(client, tk, "conv-x")
            of_y = await halted_run(client, tk, "conv-y")
            x_before = await client.conversation_store.get("conv-x")
            with pytest.raises(ResumeError, match='belongs to conversation "conv-y"'):
                await client.ask_with_answer(tk, "conv-x", of_y, Answer(of_y.id, True))
            assert await client.conversation_store.get("conv-x") == x_before
            assert len(await client.list_pending()) == 2
    assert ledger.runs["gate"] == 2


async def test_cancel_ends_the_run_without_calling_the_model_and_refuses_later_answers() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    async with ScriptedModel([tool_calls(call("gate", {}, id="c1"))]) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as client:
            request = await halted_run(client, tk)
            record = await client.cancel(request.id, reason="order withdrawn", answered_by="ops")
            assert record.status == "cancelled"
            assert record.answer.data == {"note": "order withdrawn"}
            assert await client.list_pending() == []
            with pytest.raises(AnswerConflict, match="cancelled by ops"):
                await client.answer(request.id, Answer(request.id, True))
            with pytest.raises(AnswerConflict, match="cancelled by ops"):
                await client.resume(tk, Answer(request.id, True))
            assert await client.worker(tk).drain() == 0
            with pytest.raises(AnswerConflict):
                await client.cancel(request.id)
    assert len(model.requests) == 1
    assert ledger.runs["gate"] == 1


async def test_purge_forgets_settled_requests_by_age() -> None:
    clock = Clock()
    tk = await create_toolkit(extra_tools=[gate_tool(Ledger())], builtins=False)
    script = [tool_calls(call("gate", {}, id="a")), text("done"), tool_calls(call("gate", {}))]
    async with ScriptedModel(script) as model:
        store = InMemoryStore(clock)
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            first = await halted_run(client, tk, "a")
            await client.resume(tk, Answer(first.id, True))
            second = await halted_run(client, tk, "b")
            clock.now += 7 * 86400
            assert await client.purge(older_than=86400) == 1
            assert await store.answer_record(first.id) is None
            assert [e.request_id for e in await client.list_pending()] == [second.id]


async def test_a_worker_without_the_halted_tool_holds_the_run_logs_once_and_does_not_spin(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    lacking = await create_toolkit(extra_tools=[plain_tool(ledger)], builtins=False)
    async with ScriptedModel([tool_calls(call("gate", {}, id="c1")), text("done")]) as model:
        store = InMemoryStore(clock)
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            request = await halted_run(client, tk)
            await client.answer(request.id, Answer(request.id, True))
            wrong = client.worker(lacking, retry_s=60)
            with caplog.at_level(logging.ERROR, logger="toolnexus.worker"):
                assert await wrong.drain() == 1
                assert await wrong.drain() == 0  # held: not retried in a hot loop
                clock.now += 61
                assert await wrong.drain() == 1  # retried once the hold ran out
            assert "lacks the halted tool" in wrong.errors[request.id]
            assert wrong.failed == 2
            logged = [r for r in caplog.records if "could not resume" in r.getMessage()]
            assert len(logged) == 1
            assert await client.worker(tk).drain() == 0  # still held by the failed attempt
            clock.now += 61
            right = client.worker(tk)
            assert await right.drain() == 1
    assert right.resumed == 1
    assert ledger.runs == {"gate": 2}
    record = await store.answer_record(request.id)
    assert record is not None
    assert record.status == "done"


async def test_a_resume_overtaken_after_its_lease_cannot_settle_a_second_outcome() -> None:
    clock = Clock()
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    gate = asyncio.Event()

    in_call = asyncio.Event()

    async def slow(_request: Any) -> Any:
        in_call.set()
        await gate.wait()
        return text("late")

    script = [tool_calls(call("gate", {}, id="c1")), slow, text("first")]
    async with ScriptedModel(script) as model:
        store = InMemoryStore(clock)
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            request = await halted_run(client, tk)
            await client.answer(request.id, Answer(request.id, True))
            stalled_claim = await store.take(request.id, lease_s=10)
            assert stalled_claim is not None
            short = Resumption(store, lease_s=10)
            stalled = asyncio.ensure_future(
                client.resume_claim(tk, stalled_claim, resumption=short)
            )
            await asyncio.wait_for(in_call.wait(), 10)  # the stalled resume is in its model call
            clock.now += 11
            assert await client.worker(tk, lease_s=10).drain() == 1
            gate.set()
            with pytest.raises(LeaseLost):
                await stalled
            transcript = await store.get("conv-1")
    assert transcript is not None
    assert transcript[-1] == {"role": "assistant", "content": "first"}  # not the loser's "late"
    record = await store.answer_record(request.id)
    assert record is not None
    assert record.outcome is not None
    assert record.outcome["text"] == "first"
    # The approved call ran once per resumer that got past the fence: the stalled one had
    # already recorded it, so the takeover spliced it and did not run it again.
    assert ledger.runs["gate"] == 2


async def test_a_run_parked_on_the_store_resumes_through_the_store_once_answered() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    store = WatchedStore()
    async with ScriptedModel([tool_calls(call("gate", {}, id="c1")), text("done")]) as model:
        async with create_client(
            base_url=model.openai_base_url,
            model="m",
            api_key="k",
            store=store,
            wait_for=store_wait_for(store),
        ) as client:
            running = asyncio.ensure_future(client.ask("go", tk, id="conv-1"))
            await asyncio.wait_for(store.halted.wait(), 10)
            [entry] = await store.list_pending()
            await store.post_answer(entry.request_id, Answer(entry.request_id, True))
            result = await asyncio.wait_for(running, 10)
    assert result.status == "done"
    assert result.text == "done"
    assert ledger.runs["gate"] == 2
    record = await store.answer_record(entry.request_id)
    assert record is not None
    assert record.status == "done"


async def test_a_parked_run_whose_request_is_cancelled_ends_with_run_cancelled() -> None:
    tk = await create_toolkit(extra_tools=[gate_tool(Ledger())], builtins=False)
    store = WatchedStore()
    async with ScriptedModel([tool_calls(call("gate", {}, id="c1"))]) as model:
        async with create_client(
            base_url=model.openai_base_url,
            model="m",
            api_key="k",
            store=store,
            wait_for=store_wait_for(store),
        ) as client:
            running = asyncio.ensure_future(client.run("go", tk))
            await asyncio.wait_for(store.halted.wait(), 10)
            [entry] = await store.list_pending()
            await client.cancel(entry.request_id, reason="no", answered_by="ops")
            with pytest.raises(RunCancelled, match="cancelled by ops: no"):
                await asyncio.wait_for(running, 10)
    assert len(model.requests) == 1


async def test_stopping_a_worker_lets_a_cancel_of_the_caller_through() -> None:
    tk = await create_toolkit(extra_tools=[gate_tool(Ledger())], builtins=False)
    async with create_client(
        base_url="http://127.0.0.1:9", model="m", api_key="k", store=InMemoryStore()
    ) as client:
        worker = client.worker(tk, poll_interval=30)
        worker.start()
        await asyncio.sleep(0)  # the worker is waiting for the queue
        stopping = asyncio.ensure_future(worker.stop())
        await asyncio.sleep(0)  # stop() is waiting for the runner to end
        stopping.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stopping
        await worker.stop()  # a second stop is a no-op


async def test_a_worker_stops_promptly_while_it_waits_for_the_queue() -> None:
    tk = await create_toolkit(extra_tools=[gate_tool(Ledger())], builtins=False)
    async with create_client(
        base_url="http://127.0.0.1:9", model="m", api_key="k", store=InMemoryStore()
    ) as client:
        async with asyncio.timeout(5):
            async with client.worker(tk, poll_interval=30):
                await asyncio.sleep(0)


async def test_resume_claim_streams_the_resumed_runs_text_to_on_text() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    script = [tool_calls(call("gate", {}, id="c1")), text("shipped to the moon")]
    async with ScriptedModel(script) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as client:
            request = await halted_run(client, tk)
            await client.answer(request.id, Answer(request.id, True))
            claim = await client.run_store.take(request.id)
            assert claim is not None
            deltas: list[str] = []

            async def on_text(delta: str) -> None:  # async callbacks are awaited
                deltas.append(delta)

            done = await client.resume_claim(tk, claim, on_text=on_text)
            transcript = await client.conversation_store.get("conv-1")
            record = await client.run_store.answer_record(request.id)
    assert done.text == "shipped to the moon"
    assert len(deltas) == 3  # the model's three deltas, as they arrived
    assert "".join(deltas) == done.text
    assert ledger.runs["gate"] == 2
    assert transcript is not None
    assert transcript[-1] == {"role": "assistant", "content": "shipped to the moon"}
    assert record is not None
    assert record.status == "done"


async def test_resume_claim_with_on_text_on_an_in_process_client_gives_the_claim_back() -> None:
    from toolnexus import create_in_process_client

    replies: list[Any] = [{"toolCalls": [{"id": "k1", "name": "gate", "arguments": {}}]}]
    tk = await create_toolkit(extra_tools=[gate_tool(Ledger())], builtins=False)
    async with create_in_process_client(model="local", generate=lambda r: replies[0]) as client:
        result = await client.run("go", tk)
        assert result.pending is not None
        rid = result.pending.id
        await client.answer(rid, Answer(rid, True))
        claim = await client.run_store.take(rid)
        assert claim is not None
        with pytest.raises(NotImplementedError, match="does not support streaming"):
            await client.resume_claim(tk, claim, on_text=print)
        retaken = await client.run_store.take(rid)
    assert retaken is not None  # refused before anything ran: the request is takeable again


class RenewReturnsLate(InMemoryStore):
    """The memory store whose second `renew` — the heartbeat's first (the first is the lease
    confirmed right before the approved tool runs) — takes effect at once but returns only when
    the test says so: the heartbeat's renew is still on its way back when the run settles."""

    def __init__(self) -> None:
        super().__init__()
        self.renewed = asyncio.Event()
        self.give_back = asyncio.Event()
        self.renews = 0

    async def renew(self, claim: Any, *, lease_s: float | None = None) -> Any:
        self.renews += 1
        out = await super().renew(claim, lease_s=lease_s)
        if self.renews == 2:
            self.renewed.set()
            await self.give_back.wait()
        return out


async def test_a_heartbeat_renew_that_returns_after_the_run_settled_forgets_the_run() -> None:
    """A renew in flight when the run settles must not put the settled run back among the
    held ones (it would be renewed — and logged as lost — every beat for ever)."""
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    reply_now = asyncio.Event()

    async def model_reply(request: Any) -> Any:
        await reply_now.wait()
        return text("shipped")

    async with ScriptedModel([tool_calls(call("gate", {}, id="c1")), model_reply]) as model:
        store = RenewReturnsLate()
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            request = await halted_run(client, tk)
            await client.answer(request.id, Answer(request.id, True))
            settled = asyncio.Event()
            worker = client.worker(tk, lease_s=0.15, on_result=lambda *_: settled.set())
            async with worker:
                await asyncio.wait_for(store.renewed.wait(), 10)  # a beat's renew in flight
                reply_now.set()
                await asyncio.wait_for(settled.wait(), 10)  # the run settled meanwhile
                store.give_back.set()
                for _ in range(5):  # the heartbeat takes the renew's reply
                    await asyncio.sleep(0)
                held = worker.resumption._held  # pyright: ignore[reportPrivateUsage]
                assert request.id not in held
    assert worker.resumed == 1
    assert ledger.runs["gate"] == 2
    record = await store.answer_record(request.id)
    assert record is not None
    assert record.status == "done"


class OverlappingTakes(InMemoryStore):
    """The memory store whose takes after the first hold on until a second take is in
    flight beside them (or 3 s pass), counting takes, and the most in flight at once."""

    def __init__(self) -> None:
        super().__init__()
        self.takes = 0
        self.in_flight = 0
        self.most = 0
        self.overlapped = asyncio.Event()

    async def take(self, *args: Any, **kwargs: Any) -> Any:
        self.takes += 1
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        if self.in_flight >= 2:
            self.overlapped.set()
        try:
            if self.takes > 1:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.overlapped.wait(), 3)
            return await super().take(*args, **kwargs)
        finally:
            self.in_flight -= 1


@contextlib.asynccontextmanager
async def answered_gates(store: InMemoryStore, count: int) -> AsyncIterator[Answered]:
    """``count`` runs halted on the ``gate`` tool in ``store``, each answered (approved)."""
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[gate_tool(ledger)], builtins=False)
    script = [tool_calls(call("gate", {}, id="c1"))] * count + [text("done")] * count
    async with (
        ScriptedModel(script) as model,
        create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client,
    ):
        ids = [(await halted_run(client, tk, f"conv-{i}")).id for i in range(count)]
        for rid in ids:
            await client.answer(rid, Answer(rid, True))
        yield Answered(client, tk, ids, ledger)


class Answered(NamedTuple):
    client: Any
    toolkit: Any
    ids: list[str]
    ledger: Ledger


async def statuses(store: InMemoryStore, ids: list[str]) -> list[str | None]:
    return [(r.status if (r := await store.answer_record(i)) else None) for i in ids]


async def test_a_worker_takes_runs_in_every_lane_at_once_not_one_take_at_a_time() -> None:
    # One taker in front of the lanes would cap a worker at one take's round trip per run.
    store = OverlappingTakes()
    async with answered_gates(store, 4) as runs:
        worker = runs.client.worker(runs.toolkit, concurrency=2)
        assert await worker.drain() == 4
        assert store.most == 2  # two lanes, two takes in flight; never more
        assert worker.resumed == 4
        assert await statuses(store, runs.ids) == ["done"] * 4
    assert runs.ledger.runs["gate"] == 4 + 4  # each gate ran once halting, once approved


async def test_an_idle_pass_costs_one_take_whatever_the_concurrency() -> None:
    store = OverlappingTakes()
    store.overlapped.set()  # (count the takes only)
    async with answered_gates(store, 0) as runs:
        worker = runs.client.worker(runs.toolkit, concurrency=8)
        assert await worker.drain() == 0
        assert await worker.drain() == 0
        assert store.takes == 2


async def test_a_drain_with_max_runs_takes_no_more_than_that_across_its_lanes() -> None:
    store = InMemoryStore()
    async with answered_gates(store, 5) as runs:
        worker = runs.client.worker(runs.toolkit, concurrency=4)
        assert await worker.drain(max_runs=2) == 2
        assert sorted(await statuses(store, runs.ids), key=str) == ["answered"] * 3 + ["done"] * 2
        assert await worker.drain() == 3
        assert await statuses(store, runs.ids) == ["done"] * 5


class TakeSwallowsACancel(InMemoryStore):
    """The memory store whose second `take` waits for the test and swallows a cancel that
    lands meanwhile — as a pooled driver's connection checkout has been seen to."""

    def __init__(self) -> None:
        super().__init__()
        self.takes = 0
        self.waiting = asyncio.Event()
        self.go_on = asyncio.Event()

    async def take(self, *args: Any, **kwargs: Any) -> Any:
        self.takes += 1
        if self.takes == 2:
            self.waiting.set()
            try:
                await self.go_on.wait()
            except asyncio.CancelledError:
                await self.go_on.wait()  # the cancel is lost here
        return await super().take(*args, **kwargs)


async def test_a_stop_whose_cancel_a_store_swallowed_takes_no_further_run() -> None:
    store = TakeSwallowsACancel()
    async with answered_gates(store, 3) as runs:
        worker = runs.client.worker(runs.toolkit, concurrency=1)  # one lane: takes one by one
        worker.start()
        await asyncio.wait_for(store.waiting.wait(), 10)  # in the second take
        stopping = asyncio.ensure_future(worker.stop())
        for _ in range(3):
            await asyncio.sleep(0)  # the cancel has landed (and been swallowed)
        store.go_on.set()
        await asyncio.wait_for(stopping, 10)
        now = await statuses(store, runs.ids)
        assert store.takes == 2  # no third take after the stop
        assert now.count("answered") >= 1  # the third run waits for another worker
        assert await runs.client.worker(runs.toolkit).drain() == now.count("answered")
