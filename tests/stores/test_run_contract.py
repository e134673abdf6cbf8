"""The RunStore + AnswerChannel contract, run against every backend (memory, SQLite, Postgres)."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from halt_support import ARGS, T0, checkpoint
from run_backends import Backend, Clock, yes

from toolnexus.errors import AnswerConflict, CheckpointError, UnknownRequest, UsageError
from toolnexus.loop.checkpoint import Checkpoint
from toolnexus.stores.runs import (
    AnswerChannel,
    AnswerRecord,
    Claim,
    PendingEntry,
    RunStore,
    call_digest,
)
from toolnexus.suspension import Answer


async def saved(store: Any, *checkpoints: Checkpoint) -> None:
    for cp in checkpoints or (checkpoint(),):
        await store.save_halt(cp)


# -- protocols ----------------------------------------------------------------------------


def test_the_backend_is_a_run_store_and_an_answer_channel(store: Any) -> None:
    assert isinstance(store, RunStore)
    assert isinstance(store, AnswerChannel)


# -- save / load --------------------------------------------------------------------------


async def test_an_unknown_request_loads_as_none(store: Any) -> None:
    assert await store.load_halt("nobody") is None


async def test_a_saved_checkpoint_loads_back_equal(store: Any) -> None:
    await saved(store)
    loaded = await store.load_halt("req-1")
    assert loaded is not None
    assert loaded.to_json() == checkpoint().to_json()


async def test_a_loaded_checkpoint_is_a_copy(store: Any) -> None:
    await saved(store)
    first = await store.load_halt("req-1")
    assert first is not None
    first.messages.clear()
    again = await store.load_halt("req-1")
    assert again is not None
    assert again.messages == checkpoint().messages


async def test_saving_again_replaces_the_checkpoint(store: Any) -> None:
    await saved(store, checkpoint(turn=1), checkpoint(turn=7, prompt="Really?"))
    loaded = await store.load_halt("req-1")
    assert loaded is not None
    assert loaded.turn == 7
    [entry] = await store.list_pending()
    assert entry.prompt == "Really?"


async def test_saving_again_keeps_a_claimed_request_claimed(store: Any) -> None:
    await saved(store)
    await store.claim("req-1", yes(), answered_by="ana")
    await store.save_halt(checkpoint(turn=2))
    assert await store.list_pending() == []
    with pytest.raises(AnswerConflict):
        await store.claim("req-1", yes(), answered_by="bob")


async def test_a_new_halt_is_listed_with_its_pending_index_entry(store: Any) -> None:
    await saved(store, checkpoint(expires="2030-01-01T00:00:00Z"))
    assert await store.list_pending() == [
        PendingEntry(
            request_id="req-1",
            kind="approval",
            prompt="Deploy to prod?",
            tool="deploy",
            conversation_id="conv-1",
            created_at=T0,
            expires_at="2030-01-01T00:00:00Z",
            status="pending",
        )
    ]


# -- claim / complete / release -----------------------------------------------------------


async def test_a_claim_of_a_claimed_request_says_another_resume_holds_it_until_its_lease(
    store: Any,
) -> None:
    await saved(store)
    await store.claim("req-1", yes(), answered_by="ana", lease_s=90)
    with pytest.raises(AnswerConflict) as caught:
        await store.claim("req-1", yes(), answered_by="bob")
    assert caught.value.answered_by == "ana"
    assert str(caught.value) == (
        'request "req-1" is being answered right now by ana: another resume claimed it '
        "(lease until 2023-11-14T22:14:50.000Z)"
    )


async def test_a_claim_of_an_answered_request_says_it_was_already_answered(store: Any) -> None:
    await saved(store)
    await store.claim("req-1", yes(), answered_by="ana")
    await store.complete("req-1")
    with pytest.raises(AnswerConflict) as caught:
        await store.claim("req-1", yes(), answered_by="bob")
    assert caught.value.answered_by == "ana"
    assert str(caught.value) == 'request "req-1" was already answered by ana'


async def test_a_post_to_a_claimed_request_says_another_resume_holds_it(store: Any) -> None:
    await saved(store)
    await store.claim("req-1", yes(), answered_by="ana")
    with pytest.raises(AnswerConflict, match="is being answered right now by ana"):
        await store.post_answer("req-1", yes(), answered_by="bob")


async def test_a_conflict_with_an_anonymous_winner_names_nobody(store: Any) -> None:
    await saved(store)
    await store.post_answer("req-1", yes())
    with pytest.raises(AnswerConflict) as caught:
        await store.claim("req-1", yes(), answered_by="bob")
    assert caught.value.answered_by is None
    assert str(caught.value) == 'request "req-1" was already answered'


async def test_a_conflict_with_an_anonymous_claim_names_nobody(store: Any) -> None:
    await saved(store)
    await store.claim("req-1", yes(), lease_s=30)
    with pytest.raises(AnswerConflict) as caught:
        await store.claim("req-1", yes(), answered_by="bob")
    assert caught.value.answered_by is None
    assert str(caught.value) == (
        'request "req-1" is being answered right now: another resume claimed it '
        "(lease until 2023-11-14T22:13:50.000Z)"
    )


async def test_a_claim_of_an_unknown_request_is_recorded_so_a_second_conflicts(
    store: Any,
) -> None:
    await store.claim("host-held", yes("host-held"), answered_by="ana")
    with pytest.raises(AnswerConflict, match="by ana"):
        await store.claim("host-held", yes("host-held"))


async def test_a_claim_of_an_unknown_request_is_not_listed(store: Any) -> None:
    await store.claim("host-held", yes("host-held"))
    assert await store.list_pending() == []
    assert await store.load_halt("host-held") is None


async def test_a_claimed_request_is_not_listed(store: Any) -> None:
    await saved(store, checkpoint("a"), checkpoint("b", created_at=T0 + 1))
    await store.claim("a", yes("a"))
    assert [e.request_id for e in await store.list_pending()] == ["b"]


async def test_a_claimed_request_has_no_answer_record_yet(store: Any) -> None:
    await saved(store)
    await store.claim("req-1", yes())
    assert await store.answer_record("req-1") is None


async def test_complete_records_the_answer_who_when_and_the_digest(
    store: Any, clock: Clock
) -> None:
    await saved(store)
    digest = call_digest("deploy", ARGS)
    await store.claim("req-1", yes(note="go"), answered_by="ana", digest=digest)
    clock.now = T0 + 42
    await store.complete("req-1")
    assert await store.answer_record("req-1") == AnswerRecord(
        request_id="req-1",
        answer=yes(note="go"),
        answered_at=T0 + 42,
        answered_by="ana",
        digest=digest,
        status="done",
        settled_at=T0 + 42,
    )


async def test_complete_drops_the_checkpoint(store: Any) -> None:
    await saved(store)
    await store.claim("req-1", yes())
    await store.complete("req-1")
    assert await store.load_halt("req-1") is None


async def test_an_answered_request_cannot_be_claimed_again(store: Any) -> None:
    await saved(store)
    await store.claim("req-1", yes(), answered_by="ana")
    await store.complete("req-1")
    with pytest.raises(AnswerConflict, match="by ana"):
        await store.claim("req-1", yes(), answered_by="bob")


async def test_an_answered_request_is_not_listed(store: Any) -> None:
    await saved(store)
    await store.claim("req-1", yes())
    await store.complete("req-1")
    assert await store.list_pending() == []


async def test_completing_an_unknown_request_is_an_unknown_request_error(store: Any) -> None:
    with pytest.raises(UnknownRequest, match='"nobody"'):
        await store.complete("nobody")


async def test_release_makes_the_request_claimable_and_listed_again(store: Any) -> None:
    await saved(store)
    await store.claim("req-1", yes(), answered_by="ana")
    await store.release("req-1")
    assert [e.request_id for e in await store.list_pending()] == ["req-1"]
    await store.claim("req-1", yes(), answered_by="bob")
    with pytest.raises(AnswerConflict, match="by bob"):
        await store.claim("req-1", yes())


async def test_a_request_saved_again_while_claimed_is_listed_as_pending_once_released(
    store: Any,
) -> None:
    await saved(store)
    await store.claim("req-1", yes(), answered_by="ana")
    await store.save_halt(checkpoint(turn=2))  # the resume's progress, saved under the claim
    await store.release("req-1")  # …and then the resume failed
    [entry] = await store.list_pending()
    assert (entry.request_id, entry.status) == ("req-1", "pending")


async def test_release_forgets_the_released_answer(store: Any) -> None:
    await saved(store)
    await store.claim("req-1", yes(first=True), answered_by="ana")
    await store.release("req-1")
    await store.complete("req-1")
    assert await store.answer_record("req-1") is None


async def test_release_of_a_claim_without_a_checkpoint_forgets_it(store: Any) -> None:
    await store.claim("host-held", yes("host-held"), answered_by="ana")
    await store.release("host-held")
    with pytest.raises(UnknownRequest):
        await store.complete("host-held")


async def test_release_of_a_pending_or_unknown_request_changes_nothing(store: Any) -> None:
    await saved(store)
    await store.release("req-1")
    await store.release("nobody")
    assert [e.request_id for e in await store.list_pending()] == ["req-1"]


async def test_release_of_an_answered_request_changes_nothing(store: Any) -> None:
    await saved(store)
    await store.claim("req-1", yes(), answered_by="ana")
    await store.complete("req-1")
    await store.release("req-1")
    record = await store.answer_record("req-1")
    assert record is not None
    assert record.answered_by == "ana"


async def test_a_claim_whose_lease_ran_out_can_be_claimed_again(store: Any, clock: Clock) -> None:
    await saved(store)
    await store.claim("req-1", yes(), answered_by="crashed", lease_s=30)
    clock.now = T0 + 30
    await store.claim("req-1", yes(), answered_by="rescuer")
    with pytest.raises(AnswerConflict, match="by rescuer"):
        await store.claim("req-1", yes())


async def test_a_claim_under_a_live_lease_cannot_be_taken_over(store: Any, clock: Clock) -> None:
    await saved(store)
    await store.claim("req-1", yes(), answered_by="busy", lease_s=30)
    clock.now = T0 + 29.999
    with pytest.raises(AnswerConflict, match="by busy"):
        await store.claim("req-1", yes(), answered_by="impatient")


async def test_concurrent_claims_in_one_process_have_exactly_one_winner(store: Any) -> None:
    await saved(store)
    outcomes = await asyncio.gather(
        *(store.claim("req-1", yes(), answered_by=f"w{i}") for i in range(20)),
        return_exceptions=True,
    )
    winners = [o for o in outcomes if isinstance(o, Claim)]
    assert len(winners) == 1
    assert all(isinstance(o, AnswerConflict) for o in outcomes if not isinstance(o, Claim))


# -- the pending index --------------------------------------------------------------------


async def pending_ids(store: Any, **filters: Any) -> list[str]:
    return [e.request_id for e in await store.list_pending(**filters)]


@pytest.fixture
async def inbox(store: Any) -> Any:
    await saved(
        store,
        checkpoint("r3", kind="input", tool="form", conversation_id="c2", created_at=T0 - 30),
        checkpoint("r1", kind="approval", tool="deploy", conversation_id="c1", created_at=T0 - 300),
        checkpoint("r2", kind="approval", tool="delete", conversation_id=None, created_at=T0 - 60),
        checkpoint("r0", kind="approval", tool="deploy", conversation_id="c2", created_at=T0 - 60),
    )
    return store


async def test_pending_requests_are_listed_oldest_first_ties_by_id(inbox: Any) -> None:
    assert await pending_ids(inbox) == ["r1", "r0", "r2", "r3"]


async def test_list_pending_filters_by_kind(inbox: Any) -> None:
    assert await pending_ids(inbox, kind="approval") == ["r1", "r0", "r2"]


async def test_list_pending_filters_by_tool(inbox: Any) -> None:
    assert await pending_ids(inbox, tool="deploy") == ["r1", "r0"]


async def test_list_pending_filters_by_conversation(inbox: Any) -> None:
    assert await pending_ids(inbox, conversation_id="c2") == ["r0", "r3"]


async def test_list_pending_filters_by_minimum_age(inbox: Any) -> None:
    assert await pending_ids(inbox, older_than=60) == ["r1", "r0", "r2"]


async def test_list_pending_filters_by_maximum_age(inbox: Any) -> None:
    assert await pending_ids(inbox, newer_than=60) == ["r0", "r2", "r3"]


async def test_list_pending_combines_filters(inbox: Any) -> None:
    assert await pending_ids(inbox, kind="approval", tool="deploy", newer_than=100) == ["r0"]


async def test_list_pending_ages_follow_the_clock(inbox: Any, clock: Clock) -> None:
    clock.now = T0 + 1000
    assert await pending_ids(inbox, newer_than=1000) == []


async def test_list_pending_stops_at_the_limit(inbox: Any) -> None:
    assert await pending_ids(inbox, limit=2) == ["r1", "r0"]
    assert await pending_ids(inbox, limit=0) == []


async def test_a_filter_matching_nothing_lists_nothing(inbox: Any) -> None:
    assert await pending_ids(inbox, kind="APPROVAL") == []


# -- post_answer / wait_for_answer --------------------------------------------------------


async def test_a_posted_answer_is_recorded_with_the_digest_of_the_halted_call(
    store: Any, clock: Clock
) -> None:
    await saved(store)
    clock.now = T0 + 5
    await store.post_answer("req-1", yes(ok="yes"), answered_by="ana")
    assert await store.answer_record("req-1") == AnswerRecord(
        "req-1", yes(ok="yes"), T0 + 5, "ana", call_digest("deploy", ARGS), "answered"
    )


async def test_a_posted_answer_keeps_an_explicit_digest(store: Any) -> None:
    await saved(store)
    await store.post_answer("req-1", yes(), digest="d1")
    record = await store.answer_record("req-1")
    assert record is not None
    assert record.digest == "d1"


async def test_a_posted_answer_keeps_the_checkpoint_until_complete(
    store: Any, clock: Clock
) -> None:
    await saved(store)
    await store.post_answer("req-1", yes(), answered_by="ana")
    assert await store.load_halt("req-1") is not None
    clock.now = T0 + 100
    await store.complete("req-1")
    record = await store.answer_record("req-1")
    assert await store.load_halt("req-1") is None
    assert record is not None
    assert record.answered_at == T0


async def test_a_posted_answer_is_no_longer_pending(store: Any) -> None:
    await saved(store)
    await store.post_answer("req-1", yes())
    assert await store.list_pending() == []


async def test_a_second_post_is_a_conflict(store: Any) -> None:
    await saved(store)
    await store.post_answer("req-1", yes(), answered_by="ana")
    with pytest.raises(AnswerConflict, match="by ana"):
        await store.post_answer("req-1", yes(), answered_by="bob")


async def test_a_post_after_a_claim_is_a_conflict(store: Any) -> None:
    await saved(store)
    await store.claim("req-1", yes(), answered_by="resumer")
    with pytest.raises(AnswerConflict, match="by resumer"):
        await store.post_answer("req-1", yes(), answered_by="inbox")


async def test_a_claim_after_a_post_is_a_conflict(store: Any) -> None:
    await saved(store)
    await store.post_answer("req-1", yes(), answered_by="inbox")
    with pytest.raises(AnswerConflict, match="by inbox"):
        await store.claim("req-1", yes(), answered_by="resumer")


async def test_a_post_for_an_unknown_request_is_refused_and_records_nothing(store: Any) -> None:
    with pytest.raises(UnknownRequest, match="loose"):
        await store.post_answer("loose", yes("loose"), answered_by="ana")
    assert await store.answer_record("loose") is None
    assert await store.claim("loose", yes("loose")) is not None  # nothing was taken


async def test_waiting_on_an_answered_request_returns_at_once(store: Any) -> None:
    await saved(store)
    await store.post_answer("req-1", yes(), answered_by="ana")
    record = await store.wait_for_answer("req-1", timeout=None)
    assert record is not None
    assert record.answered_by == "ana"


async def test_waiting_times_out_with_none(store: Any) -> None:
    await saved(store)
    assert await store.wait_for_answer("req-1", timeout=0.05) is None


async def test_a_zero_timeout_only_looks(store: Any) -> None:
    await saved(store)
    assert await store.wait_for_answer("req-1", timeout=0) is None


async def test_a_parked_waiter_wakes_when_another_task_posts(store: Any) -> None:
    await saved(store)
    parked = asyncio.create_task(store.wait_for_answer("req-1", timeout=30))
    # Another waiter timing out lets the first one park; it must not return early.
    assert await store.wait_for_answer("req-1", timeout=0.05) is None
    assert not parked.done()
    await store.post_answer("req-1", yes(v=1), answered_by="ana")
    record = await asyncio.wait_for(parked, timeout=30)
    assert record == await store.answer_record("req-1")
    assert record is not None
    assert record.answer == yes(v=1)


async def test_every_waiter_on_a_request_wakes(store: Any) -> None:
    await saved(store)
    waiters = [asyncio.create_task(store.wait_for_answer("req-1", timeout=30)) for _ in range(5)]
    assert await store.wait_for_answer("req-1", timeout=0.05) is None
    await store.post_answer("req-1", yes(), answered_by="ana")
    records = await asyncio.wait_for(asyncio.gather(*waiters), timeout=30)
    assert {r.answered_by for r in records} == {"ana"}


async def test_a_waiter_wakes_when_a_claimed_resume_completes(store: Any) -> None:
    await saved(store)
    parked = asyncio.create_task(store.wait_for_answer("req-1", timeout=30))
    assert await store.wait_for_answer("req-1", timeout=0.05) is None
    await store.claim("req-1", yes(), answered_by="resumer")
    await store.complete("req-1")
    record = await asyncio.wait_for(parked, timeout=30)
    assert record is not None
    assert record.answered_by == "resumer"


async def test_a_waiter_ignores_answers_to_other_requests(store: Any) -> None:
    await saved(store, checkpoint("a"), checkpoint("b"))
    parked = asyncio.create_task(store.wait_for_answer("a", timeout=0.3))
    await store.post_answer("b", yes("b"))
    assert await parked is None


async def test_a_cancelled_wait_leaves_the_channel_working(store: Any) -> None:
    await saved(store)
    first = asyncio.create_task(store.wait_for_answer("req-1", timeout=30))
    assert await store.wait_for_answer("req-1", timeout=0.02) is None
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    second = asyncio.create_task(store.wait_for_answer("req-1", timeout=30))
    await store.post_answer("req-1", yes(), answered_by="ana")
    record = await asyncio.wait_for(second, timeout=30)
    assert record is not None
    assert record.answered_by == "ana"


# -- corrupt rows -------------------------------------------------------------------------

FUTURE = json.dumps({**checkpoint().to_json(), "version": 99})
GARBAGE = [
    "{not json",
    "[]",
    '"a string"',
    FUTURE,
    json.dumps({**checkpoint().to_json(), "outstanding": []}),
    json.dumps({**checkpoint().to_json(), "created_at": "yesterday"}),
    "[" * 100_000,
]


@pytest.mark.parametrize("text", GARBAGE, ids=range(len(GARBAGE)))
async def test_a_corrupt_checkpoint_is_a_checkpoint_error_and_the_row_is_unchanged(
    store: Any, backend: Backend, text: str
) -> None:
    await saved(store)
    backend.corrupt(store, "req-1", text)
    before = backend.raw(store, "req-1")
    with pytest.raises(CheckpointError, match="req-1"):
        await store.load_halt("req-1")
    assert backend.raw(store, "req-1") == before


async def test_a_checkpoint_from_a_newer_toolnexus_names_the_version(
    store: Any, backend: Backend
) -> None:
    await saved(store)
    backend.corrupt(store, "req-1", FUTURE)
    with pytest.raises(CheckpointError, match="version 99 is not supported"):
        await store.load_halt("req-1")


async def test_posting_to_a_corrupt_checkpoint_is_refused_and_changes_nothing(
    store: Any, backend: Backend
) -> None:
    await saved(store)
    backend.corrupt(store, "req-1", "{not json")
    before = backend.raw(store, "req-1")
    with pytest.raises(CheckpointError):
        await store.post_answer("req-1", yes())
    assert backend.raw(store, "req-1") == before
    assert await store.answer_record("req-1") is None


# -- hostile input ------------------------------------------------------------------------

HOSTILE = 'rq \x00 nul ü 世界 🤖 "quoted" \\ \u2028 ' + "x" * 9000


async def test_hostile_strings_survive_every_column(store: Any) -> None:
    await saved(
        store,
        checkpoint(HOSTILE, kind=HOSTILE, tool=HOSTILE, conversation_id=HOSTILE, prompt=HOSTILE),
    )
    [entry] = await store.list_pending(kind=HOSTILE, tool=HOSTILE, conversation_id=HOSTILE)
    assert (entry.request_id, entry.kind, entry.tool, entry.conversation_id, entry.prompt) == (
        HOSTILE,
        HOSTILE,
        HOSTILE,
        HOSTILE,
        HOSTILE,
    )
    await store.post_answer(HOSTILE, Answer(HOSTILE, True, {HOSTILE: HOSTILE}), answered_by=HOSTILE)
    record = await store.wait_for_answer(HOSTILE, timeout=5)
    assert record is not None
    assert record.answered_by == HOSTILE
    assert record.answer == Answer(HOSTILE, True, {HOSTILE: HOSTILE})


async def test_request_ids_are_kept_apart_exactly(store: Any) -> None:
    ids = ["a", "A", "a ", "ü", "a\x00b"]
    await saved(store, *(checkpoint(rid, prompt=str(i)) for i, rid in enumerate(ids)))
    await store.claim("a", yes("a"))
    assert sorted(e.request_id for e in await store.list_pending()) == sorted(ids[1:])
    for index, rid in enumerate(ids):
        loaded = await store.load_halt(rid)
        assert loaded is not None
        assert loaded.pending.prompt == str(index)


async def test_a_long_random_request_id_round_trips(store: Any) -> None:
    rid = secrets.token_hex(4000)  # incompressible, far beyond a btree entry
    await saved(store, checkpoint(rid))
    await store.claim(rid, yes(rid), answered_by="ana")
    await store.complete(rid)
    record = await store.answer_record(rid)
    assert record is not None
    assert record.request_id == rid


BAD_IDS: list[object] = [None, 7, b"req-1", "", "\ud800"]


CALLS: dict[str, Callable[[Any, Any], Awaitable[object]]] = {
    "load_halt": lambda s, rid: s.load_halt(rid),
    "claim": lambda s, rid: s.claim(rid, yes()),
    "post_answer": lambda s, rid: s.post_answer(rid, yes()),
    "complete": lambda s, rid: s.complete(rid),
    "release": lambda s, rid: s.release(rid),
    "answer_record": lambda s, rid: s.answer_record(rid),
    "wait_for_answer": lambda s, rid: s.wait_for_answer(rid, timeout=1),
}


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
@pytest.mark.parametrize("method", sorted(CALLS))
async def test_a_bad_request_id_is_a_usage_error(store: Any, bad: object, method: str) -> None:
    with pytest.raises(UsageError, match="request id"):
        await CALLS[method](store, bad)


BAD_ANSWERS: list[object] = [
    {"id": "req-1", "ok": True},
    None,
    Answer("req-1", True, {"n": float("nan")}),
    Answer("req-1", True, {"s": {1, 2}}),
    Answer("req-1", True, {"t": "lone \ud800"}),
]


@pytest.mark.parametrize("bad", BAD_ANSWERS, ids=range(len(BAD_ANSWERS)))
async def test_an_unstorable_answer_is_a_usage_error_and_changes_nothing(
    store: Any, bad: object
) -> None:
    await saved(store)
    with pytest.raises(UsageError, match="answer"):
        await store.claim("req-1", bad)
    if not isinstance(bad, dict):  # post_answer takes the wire dict too (a webhook's body)
        with pytest.raises(UsageError, match="answer"):
            await store.post_answer("req-1", bad)
    assert await pending_ids(store) == ["req-1"]


@pytest.mark.parametrize(
    "bad",
    [None, "checkpoint", checkpoint().to_json()],
    ids=["none", "str", "dict"],
)
async def test_saving_something_other_than_a_checkpoint_is_a_usage_error(
    store: Any, bad: object
) -> None:
    with pytest.raises(UsageError, match="Checkpoint"):
        await store.save_halt(bad)


async def test_a_checkpoint_with_a_lone_surrogate_is_a_usage_error(store: Any) -> None:
    cp = checkpoint()
    cp.messages.append({"role": "user", "content": "lone \ud800"})
    with pytest.raises(UsageError, match="Unicode"):
        await store.save_halt(cp)
    assert await store.load_halt("req-1") is None


@pytest.mark.parametrize(
    "filters",
    [
        {"limit": -1},
        {"limit": 1.5},
        {"limit": True},
        {"older_than": -1},
        {"newer_than": float("nan")},
        {"older_than": "60"},
        {"kind": 7},
        {"tool": b"deploy"},
        {"conversation_id": ["c1"]},
    ],
    ids=repr,
)
async def test_bad_list_pending_arguments_are_usage_errors(
    store: Any, filters: dict[str, Any]
) -> None:
    with pytest.raises(UsageError):
        await store.list_pending(**filters)


@pytest.mark.parametrize("lease", [0, -5, float("inf"), "30", None])
async def test_a_bad_lease_is_a_usage_error_and_claims_nothing(store: Any, lease: Any) -> None:
    await saved(store)
    with pytest.raises(UsageError, match="lease_s"):
        await store.claim("req-1", yes(), lease_s=lease)
    await store.claim("req-1", yes())


@pytest.mark.parametrize("timeout", [-1, float("nan"), "1", True])
async def test_a_bad_timeout_is_a_usage_error(store: Any, timeout: Any) -> None:
    with pytest.raises(UsageError, match="timeout"):
        await store.wait_for_answer("req-1", timeout=timeout)


@pytest.mark.parametrize("who", [7, b"ana", "\ud800"], ids=repr)
async def test_a_bad_answered_by_is_a_usage_error(store: Any, who: Any) -> None:
    await saved(store)
    with pytest.raises(UsageError, match="answered_by"):
        await store.claim("req-1", yes(), answered_by=who)
    assert await pending_ids(store) == ["req-1"]
