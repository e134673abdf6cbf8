"""The request state machine (T1–T12 of `toolnexus.stores.requests`) on every backend.

Answering is separate from resuming: `post_answer` records (T2/T3), `take` hands the recorded
answer to one resumer under a lease with a fencing token (T5), the holder's writes are fenced
(T6–T9), a lapsed lease puts the request back (T10), `cancel` abandons it (T11) and `purge`
forgets settled requests (T12). Each bad input is checked to leave the stored state as it was.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from halt_support import ARGS, T0, checkpoint
from run_backends import Clock, yes

from toolnexus.errors import (
    AnswerConflict,
    AnswerMismatch,
    LeaseLost,
    RequestExpired,
    UnknownRequest,
    UsageError,
)
from toolnexus.stores.runs import EXPIRED_BY, AnswerRecord, Claim, call_digest
from toolnexus.suspension import Answer


async def halted(store: Any, *ids: str, **kwargs: Any) -> None:
    for i, rid in enumerate(ids or ("req-1",)):
        await store.save_halt(checkpoint(rid, created_at=T0 + i, **kwargs))


async def state_of(store: Any, rid: str = "req-1") -> tuple[Any, ...]:
    """What a bad input must leave alone: listed?, record, checkpoint."""
    listed = [e.request_id for e in await store.list_pending()]
    record = await store.answer_record(rid)
    held = await store.load_halt(rid)
    return (rid in listed, record, None if held is None else held.dumps())


# -- T2: answering records, and only records ----------------------------------------------


async def test_an_answer_is_recorded_with_who_when_and_the_digest(store: Any, clock: Clock) -> None:
    await halted(store)
    clock.now = T0 + 5
    record = await store.post_answer("req-1", yes(), answered_by="ana")
    assert record == AnswerRecord(
        "req-1", yes(), T0 + 5, "ana", call_digest("deploy", ARGS), "answered"
    )
    assert await store.answer_record("req-1") == record


async def test_an_answered_request_leaves_the_pending_index_but_keeps_its_checkpoint(
    store: Any,
) -> None:
    await halted(store)
    await store.post_answer("req-1", yes())
    assert await store.list_pending() == []
    assert await store.load_halt("req-1") is not None


async def test_an_answer_may_be_given_as_its_wire_dict(store: Any) -> None:
    await halted(store)
    record = await store.post_answer("req-1", {"id": "req-1", "ok": False, "reason": "declined"})
    assert record.answer == Answer("req-1", False, reason="declined")


async def test_an_answer_to_an_unknown_request_is_refused(store: Any) -> None:
    with pytest.raises(UnknownRequest, match="nobody"):
        await store.post_answer("nobody", yes("nobody"))
    assert await store.answer_record("nobody") is None


async def test_an_answer_whose_id_differs_is_a_mismatch_and_changes_nothing(store: Any) -> None:
    await halted(store)
    before = await state_of(store)
    with pytest.raises(AnswerMismatch, match="other"):
        await store.post_answer("req-1", yes("other"))
    assert await state_of(store) == before


WRONG_TYPES: list[object] = [
    Answer("req-1", "false"),  # pyright: ignore[reportArgumentType]
    Answer("req-1", 1),  # pyright: ignore[reportArgumentType]
    Answer("req-1", True, "x"),  # pyright: ignore[reportArgumentType]
    Answer("req-1", False, None, 5),  # pyright: ignore[reportArgumentType]
    {"id": "req-1", "ok": "false"},
    {"id": "req-1", "ok": 1},
    {"id": "req-1", "ok": True, "data": "x"},
    {"id": "req-1", "ok": True, "extra": 1},
    {"ok": True},
    "yes",
]


@pytest.mark.parametrize("bad", WRONG_TYPES, ids=range(len(WRONG_TYPES)))
async def test_an_answer_with_wrong_types_is_a_usage_error_and_changes_nothing(
    store: Any, bad: object
) -> None:
    await halted(store)
    before = await state_of(store)
    with pytest.raises(UsageError, match="answer"):
        await store.post_answer("req-1", bad)
    assert await state_of(store) == before


async def test_a_second_answer_is_a_conflict_naming_the_first_and_changes_nothing(
    store: Any,
) -> None:
    await halted(store)
    await store.post_answer("req-1", yes(), answered_by="ana")
    before = await state_of(store)
    with pytest.raises(AnswerConflict, match="already answered by ana"):
        await store.post_answer("req-1", Answer("req-1", False), answered_by="bob")
    assert await state_of(store) == before


# -- T3: expiry -----------------------------------------------------------------------------


async def test_an_answer_after_the_deadline_records_the_expired_decline(store: Any) -> None:
    await halted(store, expires="2000-01-01T00:00:00Z")
    with pytest.raises(RequestExpired, match="expired"):
        await store.post_answer("req-1", yes(), answered_by="ana")
    record = await store.answer_record("req-1")
    assert record is not None
    assert record.answer == Answer("req-1", False, reason="expired")
    assert record.answered_by == EXPIRED_BY
    assert record.status == "answered"
    with pytest.raises(AnswerConflict):
        await store.post_answer("req-1", yes(), answered_by="ana")


async def test_expire_records_the_decline_for_a_resumer_to_apply(store: Any) -> None:
    await halted(store)
    record = await store.expire("req-1")
    assert record.answer == Answer("req-1", False, reason="expired")
    claim = await store.take("req-1")
    assert claim is not None
    assert claim.answer == Answer("req-1", False, reason="expired")
    await store.complete("req-1", claim)
    settled = await store.answer_record("req-1")
    assert settled is not None
    assert settled.status == "expired"


async def test_expire_after_an_answer_is_a_conflict(store: Any) -> None:
    await halted(store)
    await store.post_answer("req-1", yes(), answered_by="ana")
    with pytest.raises(AnswerConflict, match="ana"):
        await store.expire("req-1")


# -- T5: taking an answered request ---------------------------------------------------------


async def test_take_hands_the_recorded_answer_to_one_resumer(store: Any, clock: Clock) -> None:
    await halted(store)
    await store.post_answer("req-1", yes(n=1), answered_by="ana")
    claim = await store.take("req-1", lease_s=30)
    assert claim is not None
    assert (claim.request_id, claim.answer, claim.answered_by) == ("req-1", yes(n=1), "ana")
    assert claim.lease_until == T0 + 30
    assert await store.take("req-1") is None
    record = await store.answer_record("req-1")
    assert record is not None
    assert record.status == "claimed"


async def test_a_checkpoint_handed_over_with_a_take_is_the_stored_one(store: Any) -> None:
    await halted(store)
    await store.post_answer("req-1", yes())
    claim = await store.take("req-1")
    assert claim is not None
    stored = await store.load_halt("req-1")
    assert stored is not None
    if claim.checkpoint is not None:  # a backend may read it with the take (Postgres does)
        assert claim.checkpoint.dumps() == stored.dumps()


async def test_take_without_an_id_takes_the_oldest_answer_first(store: Any, clock: Clock) -> None:
    await halted(store, "a", "b", "c")
    for rid in ("c", "a"):
        clock.now += 1
        await store.post_answer(rid, yes(rid))
    first = await store.take()
    second = await store.take()
    assert (first and first.request_id, second and second.request_id) == ("c", "a")
    assert await store.take() is None


async def test_take_without_an_id_takes_only_from_its_queue(store: Any) -> None:
    await store.save_halt(checkpoint("client-run"))
    tree = checkpoint("tree-run", created_at=T0 + 1)
    tree.queue = "agents/rt-1"
    await store.save_halt(tree)
    await store.post_answer("tree-run", yes("tree-run"))
    await store.post_answer("client-run", yes("client-run"))
    assert (await store.load_halt("tree-run")).queue == "agents/rt-1"  # pyright: ignore[reportOptionalMemberAccess]
    assert await store.take(queue="agents/other") is None
    mine = await store.take(queue="agents/rt-1")
    assert mine is not None
    assert mine.request_id == "tree-run"
    default = await store.take()
    assert default is not None
    assert default.request_id == "client-run"
    assert await store.take() is None


async def test_nothing_pending_unknown_or_settled_is_taken(store: Any) -> None:
    await halted(store, "pending", "done")
    await store.post_answer("done", yes("done"))
    claim = await store.take("done")
    assert claim is not None
    await store.complete("done", claim)
    assert await store.take("pending") is None
    assert await store.take("done") is None
    assert await store.take("unknown") is None
    assert await store.take() is None


async def test_concurrent_takes_have_exactly_one_winner(store: Any) -> None:
    await halted(store)
    await store.post_answer("req-1", yes())
    got = await asyncio.gather(*(store.take("req-1") for _ in range(20)))
    assert len([c for c in got if c is not None]) == 1


async def test_every_claim_gets_a_larger_token(store: Any, clock: Clock) -> None:
    await halted(store)
    first = await store.claim("req-1", yes(), lease_s=10)
    clock.now += 11
    second = await store.claim("req-1", yes(), lease_s=10)
    assert second.token > first.token


# -- T6–T9: the holder's writes are fenced --------------------------------------------------


async def overtaken(store: Any, clock: Clock) -> tuple[Claim, Claim]:
    """An answered request taken, its lease run out, and taken over by a second resumer."""
    await halted(store)
    await store.post_answer("req-1", yes(), answered_by="ana")
    stale = await store.take("req-1", lease_s=10)
    assert stale is not None
    clock.now += 10
    current = await store.take("req-1", lease_s=60)
    assert current is not None
    assert current.token > stale.token
    return stale, current


async def test_a_lapsed_taken_claim_is_queued_again(store: Any, clock: Clock) -> None:
    await halted(store)
    await store.post_answer("req-1", yes())
    assert await store.take("req-1", lease_s=10) is not None
    clock.now += 9.5
    assert await store.take() is None
    clock.now += 0.5
    assert await store.take() is not None


async def test_an_overtaken_resumer_cannot_complete(store: Any, clock: Clock) -> None:
    stale, current = await overtaken(store, clock)
    with pytest.raises(LeaseLost, match="req-1"):
        await store.complete("req-1", stale, outcome={"status": "done", "text": "twice"})
    record = await store.answer_record("req-1")
    assert record is not None
    assert record.status == "claimed"
    await store.complete("req-1", current, outcome={"status": "done", "text": "once"})
    settled = await store.answer_record("req-1")
    assert settled is not None
    assert settled.outcome == {"status": "done", "text": "once"}


async def test_an_overtaken_resumer_cannot_record_progress(store: Any, clock: Clock) -> None:
    stale, _ = await overtaken(store, clock)
    before = await store.load_halt("req-1")
    with pytest.raises(LeaseLost):
        await store.save_progress(checkpoint(turn=9), stale)
    after = await store.load_halt("req-1")
    assert before is not None
    assert after is not None
    assert after.dumps() == before.dumps()


async def test_an_overtaken_resumer_cannot_renew_or_release(store: Any, clock: Clock) -> None:
    stale, current = await overtaken(store, clock)
    with pytest.raises(LeaseLost):
        await store.renew(stale)
    await store.release("req-1", stale)  # a stale release changes nothing
    assert await store.take("req-1") is None
    await store.complete("req-1", current)


async def test_a_claim_overtaken_after_its_lease_is_fenced_out(store: Any, clock: Clock) -> None:
    await halted(store)
    stale = await store.claim("req-1", yes(), answered_by="crashed", lease_s=10)
    clock.now += 10
    current = await store.claim("req-1", yes(), answered_by="rescuer", lease_s=60)
    assert current.token > stale.token
    with pytest.raises(LeaseLost):
        await store.save_progress(checkpoint(turn=9), stale)
    with pytest.raises(LeaseLost):
        await store.complete("req-1", stale, outcome={"status": "done", "text": "twice"})
    await store.save_progress(checkpoint(turn=9), current)
    await store.complete("req-1", current, outcome={"status": "done", "text": "once"})
    settled = await store.answer_record("req-1")
    assert settled is not None
    assert (settled.status, settled.answered_by) == ("done", "rescuer")
    assert settled.outcome == {"status": "done", "text": "once"}


async def test_the_holder_records_progress_and_renews(store: Any, clock: Clock) -> None:
    await halted(store)
    await store.post_answer("req-1", yes())
    claim = await store.take("req-1", lease_s=10)
    assert claim is not None
    await store.save_progress(checkpoint(turn=9), claim)
    loaded = await store.load_halt("req-1")
    assert loaded is not None
    assert loaded.turn == 9
    clock.now += 8
    renewed = await store.renew(claim, lease_s=10)
    assert renewed.lease_until == clock.now + 10
    clock.now += 8  # past the first lease, within the renewed one
    assert await store.take("req-1") is None
    await store.complete("req-1", renewed)


async def test_complete_settles_done_with_the_outcome_and_drops_the_checkpoint(
    store: Any, clock: Clock
) -> None:
    await halted(store)
    await store.post_answer("req-1", yes(), answered_by="ana")
    claim = await store.take("req-1")
    assert claim is not None
    clock.now = T0 + 50
    await store.complete("req-1", claim, outcome={"status": "done", "text": "shipped"})
    record = await store.answer_record("req-1")
    assert record is not None
    assert (record.status, record.settled_at, record.answered_by) == ("done", T0 + 50, "ana")
    assert record.outcome == {"status": "done", "text": "shipped"}
    assert await store.load_halt("req-1") is None
    with pytest.raises(AnswerConflict, match="ana"):
        await store.post_answer("req-1", yes())


async def test_releasing_a_taken_claim_queues_the_answer_again(store: Any) -> None:
    await halted(store)
    await store.post_answer("req-1", yes(), answered_by="ana")
    claim = await store.take("req-1")
    assert claim is not None
    await store.release("req-1", claim)
    assert await store.list_pending() == []
    again = await store.take("req-1")
    assert again is not None
    assert again.answer == yes()
    assert again.token > claim.token


async def test_releasing_a_host_claim_puts_the_request_back_in_the_pending_index(
    store: Any,
) -> None:
    await halted(store)
    claim = await store.claim("req-1", yes(), answered_by="host")
    await store.release("req-1", claim)
    assert [e.request_id for e in await store.list_pending()] == ["req-1"]
    assert await store.answer_record("req-1") is None
    assert await store.take("req-1") is None


async def test_a_host_claim_whose_progress_was_recorded_returns_to_the_queue_not_the_inbox(
    store: Any, clock: Clock
) -> None:
    await halted(store)
    claim = await store.claim("req-1", yes(), answered_by="host", lease_s=10)
    await store.save_progress(checkpoint(turn=5), claim)
    clock.now += 10  # the host died after the approved call ran
    assert await store.list_pending() == []
    again = await store.take("req-1")
    assert again is not None
    assert (again.answer, again.answered_by) == (yes(), "host")
    await store.release("req-1", again)
    assert await store.list_pending() == []
    assert await store.take("req-1") is not None


# -- T10: lapsed host claims ----------------------------------------------------------------


async def test_a_lapsed_host_claim_is_pending_again_and_may_be_answered(
    store: Any, clock: Clock
) -> None:
    await halted(store)
    stale = await store.claim("req-1", yes(), answered_by="crashed", lease_s=10)
    assert await store.list_pending() == []
    clock.now += 10
    assert [e.request_id for e in await store.list_pending()] == ["req-1"]
    assert await store.answer_record("req-1") is None
    await store.post_answer("req-1", yes(), answered_by="ana")
    with pytest.raises(LeaseLost):
        await store.complete("req-1", stale)
    claim = await store.take("req-1")
    assert claim is not None
    assert claim.answered_by == "ana"


async def test_a_lapsed_taken_claim_cannot_be_claimed_with_another_answer(
    store: Any, clock: Clock
) -> None:
    await halted(store)
    await store.post_answer("req-1", yes(), answered_by="ana")
    assert await store.take("req-1", lease_s=10) is not None
    clock.now += 11
    with pytest.raises(AnswerConflict, match="ana"):
        await store.claim("req-1", Answer("req-1", False), answered_by="bob")


# -- T11: cancel ----------------------------------------------------------------------------


async def test_cancel_ends_the_run_and_records_who_when_and_why(store: Any, clock: Clock) -> None:
    await halted(store)
    clock.now = T0 + 7
    record = await store.cancel("req-1", reason="not needed", answered_by="ops")
    assert record.status == "cancelled"
    assert record.answer == Answer("req-1", False, {"note": "not needed"}, "cancelled")
    assert (record.answered_by, record.answered_at, record.settled_at) == ("ops", T0 + 7, T0 + 7)
    assert await store.list_pending() == []
    assert await store.load_halt("req-1") is None
    assert await store.take("req-1") is None


async def test_an_answer_after_a_cancel_says_it_was_cancelled(store: Any) -> None:
    await halted(store)
    await store.cancel("req-1", answered_by="ops")
    before = await state_of(store)
    with pytest.raises(AnswerConflict, match="cancelled by ops"):
        await store.post_answer("req-1", yes(), answered_by="ana")
    assert await state_of(store) == before


async def test_a_cancel_of_an_answered_request_is_a_conflict_and_changes_nothing(
    store: Any,
) -> None:
    await halted(store)
    await store.post_answer("req-1", yes(), answered_by="ana")
    before = await state_of(store)
    with pytest.raises(AnswerConflict, match="ana"):
        await store.cancel("req-1", answered_by="ops")
    assert await state_of(store) == before


async def test_a_cancel_of_an_unknown_request_is_refused(store: Any) -> None:
    with pytest.raises(UnknownRequest):
        await store.cancel("nobody")


async def test_a_cancel_wakes_the_parked_run(store: Any) -> None:
    await halted(store)
    waiting = asyncio.ensure_future(store.wait_for_answer("req-1", timeout=30))
    await asyncio.sleep(0)
    await store.cancel("req-1", answered_by="ops")
    record = await asyncio.wait_for(waiting, 10)
    assert record is not None
    assert record.status == "cancelled"


async def test_a_bad_cancel_reason_is_a_usage_error(store: Any) -> None:
    await halted(store)
    with pytest.raises(UsageError, match="reason"):
        await store.cancel("req-1", reason=5)
    assert [e.request_id for e in await store.list_pending()] == ["req-1"]


# -- T12: purge -----------------------------------------------------------------------------


async def test_purge_forgets_only_requests_settled_long_enough_ago(
    store: Any, clock: Clock
) -> None:
    await halted(store, "old-done", "old-cancelled", "new-done", "pending", "answered", "claimed")
    claim = await store.claim("old-done", yes("old-done"))
    await store.complete("old-done", claim)
    await store.cancel("old-cancelled")
    clock.now += 3600
    claim = await store.claim("new-done", yes("new-done"))
    await store.complete("new-done", claim)
    await store.post_answer("answered", yes("answered"))
    await store.claim("claimed", yes("claimed"))
    clock.now += 60
    assert await store.purge(older_than=600) == 2
    assert await store.answer_record("old-done") is None
    assert await store.answer_record("old-cancelled") is None
    assert await store.answer_record("new-done") is not None
    assert await store.answer_record("answered") is not None
    assert [e.request_id for e in await store.list_pending()] == ["pending"]
    assert await store.purge(older_than=600) == 0


async def test_a_purge_racing_a_resume_leaves_the_resume_alone(store: Any, clock: Clock) -> None:
    await halted(store)
    await store.post_answer("req-1", yes())
    claim = await store.take("req-1")
    assert claim is not None
    clock.now += 10**6
    assert await store.purge(older_than=0) == 0
    await store.complete("req-1", claim)
    assert await store.purge(older_than=0) == 1


@pytest.mark.parametrize("age", [-1, float("nan"), "1", None])
async def test_a_bad_purge_age_is_a_usage_error(store: Any, age: Any) -> None:
    with pytest.raises(UsageError, match="older_than"):
        await store.purge(older_than=age)


# -- waking ---------------------------------------------------------------------------------


async def test_a_parked_run_wakes_on_the_recorded_answer(store: Any) -> None:
    await halted(store)
    waiting = asyncio.ensure_future(store.wait_for_answer("req-1", timeout=30))
    await asyncio.sleep(0)
    await store.post_answer("req-1", yes(), answered_by="ana")
    record = await asyncio.wait_for(waiting, 10)
    assert record is not None
    assert (record.status, record.answered_by) == ("answered", "ana")


async def test_a_worker_waiting_for_the_queue_wakes_on_an_answer(store: Any) -> None:
    await halted(store)
    started = time.monotonic()
    waiting = asyncio.ensure_future(store.wait_for_queued(timeout=30))
    await asyncio.sleep(0)
    await store.post_answer("req-1", yes())
    await asyncio.wait_for(waiting, 10)
    assert time.monotonic() - started < 10
    assert await store.take() is not None


async def test_waiting_for_the_queue_ends_at_its_timeout(store: Any) -> None:
    await asyncio.wait_for(store.wait_for_queued(timeout=0.01), 10)
