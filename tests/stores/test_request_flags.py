"""T13 on every backend: a resumer flags a request it holds, for a while or for an operator.

`RunStore.flag` is fenced like `renew`; the row stays ``claimed`` under a lease that may be
infinite; it is listed beside the pending requests with its real status and problem until a
resume records progress (T7); an operator may cancel it whatever its lease (T11 widened).
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from halt_support import T0, checkpoint
from run_backends import Clock, yes

from toolnexus.errors import AnswerConflict, LeaseLost, UsageError
from toolnexus.stores.runs import Claim, PendingEntry

PROBLEM = "the approved call is not the one in the checkpoint"


async def halted(store: Any, *ids: str) -> None:
    for i, rid in enumerate(ids or ("req-1",)):
        await store.save_halt(checkpoint(rid, created_at=T0 - 100 + i))


async def taken(store: Any, rid: str = "req-1", *, lease_s: float = 30) -> Claim:
    """``rid`` answered by ana and taken by a resumer."""
    await store.post_answer(rid, yes(rid), answered_by="ana")
    claim = await store.take(rid, lease_s=lease_s)
    assert claim is not None
    return claim


async def listed(store: Any, **filters: Any) -> list[tuple[str, str, str | None]]:
    return [(e.request_id, e.status, e.problem) for e in await store.list_pending(**filters)]


# -- the flag itself ------------------------------------------------------------------------


async def test_a_flag_holds_the_claim_and_records_the_problem_and_when(
    store: Any, clock: Clock
) -> None:
    await halted(store)
    claim = await taken(store)
    clock.now = T0 + 5
    await store.flag("req-1", claim, PROBLEM, hold_s=60)
    record = await store.answer_record("req-1")
    assert record is not None
    assert (record.status, record.problem, record.flagged_at) == ("claimed", PROBLEM, T0 + 5)
    assert await store.take("req-1") is None
    clock.now = T0 + 64.999
    assert await store.take("req-1") is None  # held until now + hold_s


async def test_the_holder_keeps_its_claim_after_flagging(store: Any) -> None:
    await halted(store)
    claim = await taken(store)
    await store.flag("req-1", claim, PROBLEM, hold_s=60)
    renewed = await store.renew(claim, lease_s=30)
    assert renewed.token == claim.token


async def test_a_stale_claim_cannot_flag_and_changes_nothing(store: Any, clock: Clock) -> None:
    await halted(store)
    stale = await taken(store, lease_s=10)
    clock.now += 10
    current = await store.take("req-1", lease_s=60)
    assert current is not None
    with pytest.raises(LeaseLost, match="was lost"):
        await store.flag("req-1", stale, PROBLEM, hold_s=math.inf)
    record = await store.answer_record("req-1")
    assert record is not None
    assert (record.problem, record.flagged_at) == (None, None)
    clock.now += 60  # the current claim's lease, not an infinite one
    assert await store.take("req-1") is not None


async def test_a_claim_on_another_request_cannot_flag_this_one(store: Any) -> None:
    await halted(store, "a", "b")
    claim_a = await taken(store, "a")
    await taken(store, "b")
    with pytest.raises(LeaseLost, match='on request "a", not "b"'):
        await store.flag("b", claim_a, PROBLEM, hold_s=60)
    record = await store.answer_record("b")
    assert record is not None
    assert record.problem is None


async def test_a_released_claim_cannot_flag(store: Any) -> None:
    await halted(store)
    claim = await taken(store)
    await store.release("req-1", claim)
    with pytest.raises(LeaseLost):
        await store.flag("req-1", claim, PROBLEM, hold_s=60)
    assert await listed(store) == []  # queued again, not held for anyone


async def test_an_infinite_hold_never_lapses(store: Any, clock: Clock) -> None:
    await halted(store)
    claim = await taken(store)
    await store.flag("req-1", claim, PROBLEM, hold_s=math.inf)
    clock.now = T0 + 1e12
    assert await store.take("req-1") is None
    assert await store.take() is None
    assert await listed(store) == [("req-1", "claimed", PROBLEM)]
    record = await store.answer_record("req-1")
    assert record is not None
    assert record.status == "claimed"


async def test_a_request_held_for_an_operator_says_so_to_a_competing_claim(
    store: Any, clock: Clock
) -> None:
    await halted(store)
    claim = await store.claim("req-1", yes(), answered_by="ana", lease_s=30)
    await store.flag("req-1", claim, PROBLEM, hold_s=math.inf)
    clock.now = T0 + 1e9
    with pytest.raises(AnswerConflict) as caught:
        await store.claim("req-1", yes(), answered_by="bob")
    assert str(caught.value) == (
        'request "req-1" is being answered right now by ana: another resume claimed it '
        "(held until an operator acts)"
    )
    with pytest.raises(AnswerConflict, match="held until an operator acts"):
        await store.post_answer("req-1", yes(), answered_by="bob")


async def test_a_finite_hold_lapses_back_to_the_queue(store: Any, clock: Clock) -> None:
    await halted(store)
    claim = await taken(store)
    await store.flag("req-1", claim, "the checkpoint cannot be read", hold_s=20)
    clock.now += 20
    again = await store.take()
    assert again is not None
    assert (again.request_id, again.answered_by) == ("req-1", "ana")
    assert again.token > claim.token
    with pytest.raises(LeaseLost):
        await store.renew(claim)


async def test_a_lapsed_flagged_host_claim_is_pending_again_and_may_be_answered(
    store: Any, clock: Clock
) -> None:
    await halted(store)
    claim = await store.claim("req-1", yes(), answered_by="host", lease_s=30)
    await store.flag("req-1", claim, PROBLEM, hold_s=10)
    assert await listed(store) == [("req-1", "claimed", PROBLEM)]
    clock.now += 10
    assert await listed(store) == [("req-1", "pending", PROBLEM)]
    record = await store.post_answer("req-1", yes(), answered_by="ana")
    assert (record.status, record.problem) == ("answered", PROBLEM)  # until a resume gets on


# -- what operators see -------------------------------------------------------------------


async def test_flagged_requests_are_listed_with_the_pending_ones_oldest_first(
    store: Any, clock: Clock
) -> None:
    await halted(store, "held", "waiting", "queued", "busy")
    held = await taken(store, "held")
    clock.now += 1
    await store.flag("held", held, PROBLEM, hold_s=math.inf)
    lapsing = await taken(store, "queued")
    await store.flag("queued", lapsing, "cannot read", hold_s=5)
    await taken(store, "busy")  # claimed without a problem: not listed
    clock.now += 5
    entries = await store.list_pending()
    assert [(e.request_id, e.status, e.problem) for e in entries] == [
        ("held", "claimed", PROBLEM),
        ("waiting", "pending", None),
        ("queued", "answered", "cannot read"),
    ]
    assert entries[0] == PendingEntry(
        request_id="held",
        kind="approval",
        prompt="Deploy to prod?",
        tool="deploy",
        conversation_id="conv-1",
        created_at=T0 - 100,
        expires_at=None,
        status="claimed",
        problem=PROBLEM,
        flagged_at=T0 + 1,
    )


async def test_the_listing_filters_apply_to_flagged_requests(store: Any, clock: Clock) -> None:
    await store.save_halt(checkpoint("flagged", kind="input", tool="form", conversation_id="c9"))
    await store.save_halt(checkpoint("other", created_at=T0 + 1))
    claim = await taken(store, "flagged")
    await store.flag("flagged", claim, PROBLEM, hold_s=math.inf)
    assert [e.request_id for e in await store.list_pending(kind="input")] == ["flagged"]
    assert [e.request_id for e in await store.list_pending(tool="deploy")] == ["other"]
    assert [e.request_id for e in await store.list_pending(conversation_id="c9")] == ["flagged"]
    assert [e.request_id for e in await store.list_pending(limit=1)] == ["flagged"]
    clock.now = T0 + 50
    assert [e.request_id for e in await store.list_pending(older_than=50)] == ["flagged"]


async def test_the_inbox_searches_and_counts_flagged_requests(store: Any) -> None:
    await halted(store, "flagged", "waiting")
    claim = await taken(store, "flagged")
    await store.flag("flagged", claim, PROBLEM, hold_s=math.inf)
    found = await store.search_pending(text="FLAGGED")
    assert [(e.request_id, e.status, e.problem) for e in found] == [("flagged", "claimed", PROBLEM)]
    assert [e.request_id for e in await store.search_pending(offset=1)] == ["waiting"]
    assert await store.count_pending() == {"approval": 2}


async def test_a_flagged_request_is_not_announced_as_new(store: Any) -> None:
    await halted(store, "flagged")
    assert [e.request_id for e in await store.take_unannounced()] == ["flagged"]
    claim = await taken(store, "flagged")
    await store.flag("flagged", claim, PROBLEM, hold_s=math.inf)
    assert await store.take_unannounced() == []


# -- T7 clears, settling keeps ------------------------------------------------------------


async def test_recording_progress_clears_the_problem(store: Any, clock: Clock) -> None:
    await halted(store)
    claim = await taken(store)
    await store.flag("req-1", claim, "cannot read", hold_s=5)
    clock.now += 5
    again = await store.take("req-1")
    assert again is not None
    assert await listed(store) == [("req-1", "claimed", "cannot read")]
    await store.save_progress(checkpoint(turn=2), again)
    assert await listed(store) == []
    record = await store.answer_record("req-1")
    assert record is not None
    assert (record.status, record.problem, record.flagged_at) == ("claimed", None, None)


async def test_the_problem_is_kept_when_the_request_settles(store: Any, clock: Clock) -> None:
    await halted(store)
    claim = await taken(store)
    clock.now = T0 + 3
    await store.flag("req-1", claim, PROBLEM, hold_s=60)
    await store.complete("req-1", claim, outcome={"status": "error"})
    record = await store.answer_record("req-1")
    assert record is not None
    assert (record.status, record.problem, record.flagged_at) == ("done", PROBLEM, T0 + 3)
    [entry] = await store.list_history(request_id="req-1")
    assert (entry.status, entry.problem, entry.flagged_at) == ("done", PROBLEM, T0 + 3)
    assert await listed(store) == []


# -- an operator cancels --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("hold", "later"),
    [(math.inf, 1e9), (60, 1), (60, 61)],
    ids=["held-for-ever", "held", "lapsed"],
)
async def test_an_operator_cancels_a_flagged_request_whatever_its_lease(
    store: Any, clock: Clock, hold: float, later: float
) -> None:
    await halted(store)
    claim = await taken(store)
    await store.flag("req-1", claim, PROBLEM, hold_s=hold)
    clock.now += later
    record = await store.cancel("req-1", reason="stale approval", answered_by="op")
    assert (record.status, record.answered_by, record.problem) == ("cancelled", "op", PROBLEM)
    assert await store.answer_record("req-1") == record
    assert await store.load_halt("req-1") is None
    assert await listed(store) == []


async def test_the_holder_of_a_cancelled_flagged_request_is_fenced_out(store: Any) -> None:
    await halted(store)
    claim = await taken(store)
    await store.flag("req-1", claim, PROBLEM, hold_s=math.inf)
    await store.cancel("req-1", answered_by="op")
    with pytest.raises(LeaseLost):
        await store.renew(claim)
    with pytest.raises(LeaseLost):
        await store.save_progress(checkpoint(turn=2), claim)
    with pytest.raises(LeaseLost):
        await store.flag("req-1", claim, PROBLEM, hold_s=math.inf)
    with pytest.raises(LeaseLost):
        await store.complete("req-1", claim)
    record = await store.answer_record("req-1")
    assert record is not None
    assert record.status == "cancelled"


async def test_a_claimed_request_without_a_problem_still_cannot_be_cancelled(
    store: Any,
) -> None:
    await halted(store)
    await taken(store)
    with pytest.raises(AnswerConflict, match="being answered right now by ana"):
        await store.cancel("req-1", answered_by="op")
    record = await store.answer_record("req-1")
    assert record is not None
    assert record.status == "claimed"


async def test_a_settled_flagged_request_cannot_be_cancelled(store: Any) -> None:
    await halted(store)
    claim = await taken(store)
    await store.flag("req-1", claim, PROBLEM, hold_s=60)
    await store.complete("req-1", claim)
    with pytest.raises(AnswerConflict, match="already answered by ana"):
        await store.cancel("req-1", answered_by="op")


async def test_cancelling_a_flagged_host_claim_wakes_its_waiters(store: Any) -> None:
    await halted(store)
    claim = await store.claim("req-1", yes(), answered_by="host")
    await store.flag("req-1", claim, PROBLEM, hold_s=math.inf)
    parked = asyncio.create_task(store.wait_for_answer("req-1", timeout=30))
    assert await store.wait_for_answer("req-1", timeout=0.05) is None  # it waits
    await store.cancel("req-1", reason="operator", answered_by="op")
    record = await asyncio.wait_for(parked, timeout=30)
    assert record is not None
    assert (record.status, record.problem) == ("cancelled", PROBLEM)


async def test_an_operator_cancels_a_flagged_claim_that_has_no_checkpoint(store: Any) -> None:
    claim = await store.claim("host-held", yes("host-held"), answered_by="host")
    await store.flag("host-held", claim, PROBLEM, hold_s=math.inf)
    record = await store.cancel("host-held", answered_by="op")
    assert (record.status, record.problem) == ("cancelled", PROBLEM)
    with pytest.raises(LeaseLost):
        await store.complete("host-held", claim)


# -- bad input changes nothing ----------------------------------------------------------------


async def unflagged(store: Any) -> None:
    """Still held by its taker as it was: not listed, no problem."""
    assert await listed(store) == []
    record = await store.answer_record("req-1")
    assert record is not None
    assert (record.status, record.problem, record.flagged_at) == ("claimed", None, None)


@pytest.mark.parametrize("problem", ["", "   ", None, 7, b"bad", "lone \ud800"], ids=repr)
async def test_a_bad_problem_is_a_usage_error_and_changes_nothing(store: Any, problem: Any) -> None:
    await halted(store)
    claim = await taken(store)
    with pytest.raises(UsageError, match="problem"):
        await store.flag("req-1", claim, problem, hold_s=60)
    await unflagged(store)


@pytest.mark.parametrize("hold", [0, -1, -math.inf, math.nan, "60", True, None], ids=repr)
async def test_a_bad_hold_is_a_usage_error_and_changes_nothing(store: Any, hold: Any) -> None:
    await halted(store)
    claim = await taken(store)
    with pytest.raises(UsageError, match="hold_s"):
        await store.flag("req-1", claim, PROBLEM, hold_s=hold)
    await unflagged(store)


@pytest.mark.parametrize("bad", [None, "req-1", {"request_id": "req-1", "token": 1}], ids=repr)
async def test_flagging_with_something_other_than_a_claim_is_a_usage_error(
    store: Any, bad: Any
) -> None:
    await halted(store)
    await taken(store)
    with pytest.raises(UsageError, match="claim"):
        await store.flag("req-1", bad, PROBLEM, hold_s=60)
    await unflagged(store)


async def test_flagging_with_a_bad_request_id_is_a_usage_error(store: Any) -> None:
    await halted(store)
    claim = await taken(store)
    with pytest.raises(UsageError, match="request id"):
        await store.flag("", claim, PROBLEM, hold_s=60)
    await unflagged(store)
