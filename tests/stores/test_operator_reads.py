"""What an operator reads beyond the inbox's pages, on every backend: the ids that begin with
what was typed (`InboxIndex.find_request_ids`), the runs between an answer and their end with
who holds each and until when (`InboxIndex.list_runs`, `AnswerRecord.holder` /
``lease_until``), and the history of one tool."""

from __future__ import annotations

import math
from typing import Any

import pytest
from halt_support import T0, checkpoint
from run_backends import Clock, yes

from toolnexus.errors import UsageError
from toolnexus.stores.inbox_index import prefix_end
from toolnexus.stores.postgres_inbox import bytes_end
from toolnexus.stores.requests import holder_name


def ids(entries: Any) -> list[str]:
    return [e.request_id for e in entries]


async def halt(store: Any, *rids: str, at: float = T0 - 100) -> None:
    for n, rid in enumerate(rids):
        await store.save_halt(checkpoint(rid, created_at=at + n, prompt=f"Deploy {rid}?"))


# -- find_request_ids ----------------------------------------------------------------------


async def test_a_prefix_finds_every_request_that_begins_with_it_whatever_its_state(
    store: Any, clock: Clock
) -> None:
    await halt(store, "pnd-1a2b-x", "pnd-1a2c-y", "pnd-1a2b-z", "pnd-9", "other")
    await store.post_answer("pnd-1a2b-z", yes("pnd-1a2b-z"), answered_by="ana")
    await store.cancel("pnd-1a2c-y", reason="dup")
    claim = await store.take("pnd-1a2b-z")
    await store.complete("pnd-1a2b-z", claim, outcome={"status": "done"})
    assert await store.find_request_ids("pnd-1a2") == ["pnd-1a2b-x", "pnd-1a2b-z", "pnd-1a2c-y"]
    assert await store.find_request_ids("pnd-1a2b") == ["pnd-1a2b-x", "pnd-1a2b-z"]
    assert await store.find_request_ids("pnd-1a2b-z") == ["pnd-1a2b-z"]  # settled, still found
    assert await store.find_request_ids("pnd-1a2", limit=2) == ["pnd-1a2b-x", "pnd-1a2b-z"]
    assert await store.find_request_ids("pnd-2") == []
    assert await store.find_request_ids("PND") == []  # ids are matched exactly, case and all


async def test_an_id_that_is_also_a_prefix_of_others_comes_first(store: Any) -> None:
    await halt(store, "req-10", "req-1", "req-11")
    assert await store.find_request_ids("req-1") == ["req-1", "req-10", "req-11"]


async def test_like_wildcards_in_a_prefix_are_plain_characters(store: Any) -> None:
    await halt(store, "a%b", "a_b", "axb", "a\\b")
    assert await store.find_request_ids("a%") == ["a%b"]
    assert await store.find_request_ids("a_") == ["a_b"]
    assert await store.find_request_ids("a\\") == ["a\\b"]


async def test_prefixes_beyond_ascii_and_beyond_64_bytes_find_the_same_ids(store: Any) -> None:
    long = "x" * 70
    await halt(store, "café-1", "cafe-2", "caf\U0001f600", "caf\uffff", long + "1", long + "2")
    assert await store.find_request_ids("café") == ["café-1"]
    assert await store.find_request_ids("caf") == ["cafe-2", "café-1", "caf\uffff", "caf\U0001f600"]
    assert await store.find_request_ids("caf\U0001f601") == []
    assert await store.find_request_ids(long) == [long + "1", long + "2"]
    assert await store.find_request_ids(long + "2") == [long + "2"]


async def test_a_prefix_must_be_a_non_empty_string(store: Any) -> None:
    for bad in ("", None, 3):
        with pytest.raises(UsageError):
            await store.find_request_ids(bad)


def test_the_end_of_a_prefix_range_is_the_least_string_above_it() -> None:
    assert prefix_end("pnd-1a") == "pnd-1b"
    assert prefix_end("a\U0010ffff\U0010ffff") == "b"
    assert prefix_end("\U0010ffff") is None
    assert prefix_end("a\ud7ff") == "a\ue000"  # the surrogates are no code points of UTF-8
    assert bytes_end(b"ab\xff") == b"ac"
    assert bytes_end(b"\xff\xff") is None


# -- list_runs and the claim's holder ---------------------------------------------------------


async def test_the_runs_in_flight_are_the_queued_and_the_held_with_their_holder_and_lease(
    store: Any, clock: Clock
) -> None:
    await halt(store, "waiting", "queued", "held", "done")
    for rid in ("queued", "held", "done"):
        await store.post_answer(rid, yes(rid), answered_by="ana")
    claim = await store.take("held", lease_s=60)
    assert claim is not None
    finished = await store.take("done")
    await store.complete("done", finished, outcome={"status": "done"})

    queued, held = await store.list_runs()
    assert (queued.request_id, queued.status, queued.holder, queued.lease_until) == (
        "queued",
        "answered",
        None,
        None,
    )
    assert (queued.answered_by, queued.answered_at, queued.prompt) == ("ana", T0, "Deploy queued?")
    assert (held.request_id, held.status, held.holder) == ("held", "claimed", holder_name())
    assert held.lease_until == T0 + 60
    record = await store.answer_record("held")
    assert (record.status, record.holder, record.lease_until) == ("claimed", holder_name(), T0 + 60)
    assert (await store.answer_record("queued")).holder is None

    clock.now += 61  # the lease ran out: queued again, held by nobody (T10)
    assert [(r.request_id, r.status, r.holder) for r in await store.list_runs()] == [
        ("queued", "answered", None),
        ("held", "answered", None),
    ]
    record = await store.answer_record("held")
    assert (record.status, record.holder, record.lease_until) == ("answered", None, None)
    assert ids(await store.list_runs(limit=1, offset=1)) == ["held"]


async def test_a_host_claim_is_in_flight_until_its_lease_runs_out(store: Any, clock: Clock) -> None:
    await halt(store, "host")
    await store.claim("host", yes("host"), answered_by="svc", lease_s=30)
    (run,) = await store.list_runs()
    assert (run.status, run.answered_by, run.answered_at, run.holder) == (
        "claimed",
        "svc",
        None,  # its own answer is recorded only once applied
        holder_name(),
    )
    clock.now += 31
    assert await store.list_runs() == []  # pending again: on the pending list, not here
    assert ids(await store.list_pending()) == ["host"]


async def test_a_flagged_run_is_in_flight_with_its_problem_and_an_endless_hold(
    store: Any, clock: Clock
) -> None:
    await halt(store, "stuck")
    await store.post_answer("stuck", yes("stuck"))
    claim = await store.take("stuck")
    await store.flag("stuck", claim, "the approved call changed", hold_s=math.inf)
    (run,) = await store.list_runs()
    assert (run.status, run.problem, run.lease_until) == (
        "claimed",
        "the approved call changed",
        math.inf,
    )
    record = await store.answer_record("stuck")
    assert (record.lease_until, record.holder) == (math.inf, holder_name())


async def test_a_released_or_settled_claim_holds_nothing(store: Any, clock: Clock) -> None:
    await halt(store, "a", "b")
    for rid in ("a", "b"):
        await store.post_answer(rid, yes(rid))
    a, b = await store.take("a"), await store.take("b")
    await store.release("a", a)
    await store.complete("b", b, outcome={"status": "done"})
    record = await store.answer_record("a")
    assert (record.status, record.holder, record.lease_until) == ("answered", None, None)
    record = await store.answer_record("b")
    assert (record.status, record.holder, record.lease_until) == ("done", None, None)
    assert ids(await store.list_runs()) == ["a"]


# -- the history of one tool ------------------------------------------------------------------


async def test_the_history_keeps_one_tools_requests(store: Any, clock: Clock) -> None:
    await store.save_halt(checkpoint("d", tool="deploy", created_at=T0 - 2))
    await store.save_halt(checkpoint("r", tool="refund", created_at=T0 - 1))
    for rid in ("d", "r"):
        await store.post_answer(rid, yes(rid), answered_by="ana")
    assert ids(await store.list_history(tool="refund")) == ["r"]
    assert ids(await store.list_history(tool="deploy", answered_by="ana")) == ["d"]
    assert await store.list_history(tool="nothing") == []
