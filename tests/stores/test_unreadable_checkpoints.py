"""A stored checkpoint this build cannot read is treated alike by every backend.

Not JSON, not a checkpoint, or a ``version`` this toolnexus does not read: `post_answer` and
`expire` raise `CheckpointError` and record nothing (an answer is never recorded for a run
that cannot resume); `take` never raises once it took the row — its `Claim` carries no
checkpoint and the reason in ``unreadable``, for the resumer to flag — and `load_halt` keeps
raising. A checkpoint rewritten by hand that still reads is answered like any other.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest
from halt_support import T0, checkpoint
from run_backends import Backend, Clock, yes
from test_edited_answers import edit, with_schema
from test_run_contract import GARBAGE

from toolnexus.errors import CheckpointError
from toolnexus.stores.checks import call_digest, halted_call

CASES = pytest.mark.parametrize("text", GARBAGE, ids=range(len(GARBAGE)))


async def corrupted(store: Any, backend: Backend, text: str, *, rid: str = "req-1") -> object:
    """``rid`` halted, then its checkpoint hand-edited into ``text``; the raw row."""
    await store.save_halt(with_schema(checkpoint(rid)))
    backend.corrupt(store, rid, text)
    return backend.raw(store, rid)


async def nothing_recorded(store: Any, backend: Backend, before: object) -> None:
    assert backend.raw(store, "req-1") == before
    assert await store.answer_record("req-1") is None
    assert [e.request_id for e in await store.list_pending()] == ["req-1"]


# -- answering records nothing ---------------------------------------------------------------


@CASES
async def test_an_answer_to_an_unreadable_checkpoint_is_refused(
    store: Any, backend: Backend, text: str
) -> None:
    before = await corrupted(store, backend, text)
    with pytest.raises(CheckpointError, match="req-1"):
        await store.post_answer("req-1", yes(), answered_by="ana")
    await nothing_recorded(store, backend, before)


@CASES
async def test_an_edited_answer_to_an_unreadable_checkpoint_is_refused(
    store: Any, backend: Backend, text: str
) -> None:
    before = await corrupted(store, backend, text)
    with pytest.raises(CheckpointError, match="req-1"):
        await store.post_answer("req-1", edit({"env": "staging"}), answered_by="ana")
    await nothing_recorded(store, backend, before)


@CASES
async def test_an_answer_with_a_digest_given_is_refused_too(
    store: Any, backend: Backend, text: str
) -> None:
    before = await corrupted(store, backend, text)
    with pytest.raises(CheckpointError, match="req-1"):
        await store.post_answer("req-1", yes(), answered_by="ana", digest="d1")
    await nothing_recorded(store, backend, before)


@CASES
async def test_an_answer_past_the_deadline_of_an_unreadable_checkpoint_records_nothing(
    store: Any, backend: Backend, clock: Clock, text: str
) -> None:
    await store.save_halt(checkpoint(expires="2023-11-14T22:13:30Z"))
    backend.corrupt(store, "req-1", text)
    before = backend.raw(store, "req-1")
    clock.now = T0 + 3600
    with pytest.raises(CheckpointError, match="req-1"):
        await store.post_answer("req-1", yes(), answered_by="ana")
    await nothing_recorded(store, backend, before)


@CASES
async def test_expiring_an_unreadable_checkpoint_is_refused(
    store: Any, backend: Backend, text: str
) -> None:
    before = await corrupted(store, backend, text)
    with pytest.raises(CheckpointError, match="req-1"):
        await store.expire("req-1")
    await nothing_recorded(store, backend, before)


async def test_a_repaired_checkpoint_takes_its_answer(store: Any, backend: Backend) -> None:
    await corrupted(store, backend, "{not json")
    with pytest.raises(CheckpointError):
        await store.post_answer("req-1", yes(), answered_by="ana")
    backend.corrupt(store, "req-1", with_schema(checkpoint()).dumps())
    record = await store.post_answer("req-1", yes(), answered_by="ana")
    assert record.digest == call_digest(*halted_call(checkpoint()))


def reindented(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2)


def reordered(data: dict[str, Any]) -> str:
    return json.dumps(dict(reversed(list(data.items()))))


def with_a_key_added(data: dict[str, Any]) -> str:
    return json.dumps({**data, "note": "added by hand"})


@pytest.mark.parametrize("rewrite", [reindented, reordered, with_a_key_added])
async def test_a_checkpoint_rewritten_by_hand_that_still_reads_is_answered(
    store: Any, backend: Backend, rewrite: Callable[[dict[str, Any]], str]
) -> None:
    await store.save_halt(checkpoint())
    backend.corrupt(store, "req-1", rewrite(checkpoint().to_json()))
    record = await store.post_answer("req-1", yes(), answered_by="ana")
    assert (record.status, record.digest) == ("answered", call_digest(*halted_call(checkpoint())))


# -- a take never raises once it took the row ---------------------------------------------------


@CASES
async def test_a_take_of_an_unreadable_checkpoint_hands_over_why(
    store: Any, backend: Backend, text: str
) -> None:
    await store.save_halt(checkpoint())
    await store.post_answer("req-1", yes(), answered_by="ana")
    backend.corrupt(store, "req-1", text)
    claim = await store.take("req-1")
    assert claim is not None
    assert (claim.checkpoint, claim.answered_by) == (None, "ana")
    assert claim.unreadable is not None
    assert "request 'req-1'" in claim.unreadable
    assert "cannot be read" in claim.unreadable
    assert await store.take("req-1") is None  # taken: held by this claim
    with pytest.raises(CheckpointError, match="req-1"):
        await store.load_halt("req-1")


async def test_a_worker_take_of_an_unreadable_checkpoint_hands_over_why(
    store: Any, backend: Backend
) -> None:
    await store.save_halt(checkpoint())
    await store.post_answer("req-1", yes(), answered_by="ana")
    backend.corrupt(store, "req-1", "{not json")
    claim = await store.take()
    assert claim is not None
    assert (claim.request_id, claim.checkpoint) == ("req-1", None)
    assert claim.unreadable is not None
    assert "not valid JSON" in claim.unreadable


async def test_a_readable_take_hands_over_the_checkpoint_and_no_reason(store: Any) -> None:
    await store.save_halt(checkpoint())
    await store.post_answer("req-1", yes(), answered_by="ana")
    claim = await store.take("req-1")
    assert claim is not None
    assert claim.unreadable is None
    assert claim.checkpoint is not None
    assert claim.checkpoint.dumps() == checkpoint().dumps()


async def test_an_unreadable_take_flagged_for_a_while_is_taken_again_and_again(
    store: Any, backend: Backend, clock: Clock
) -> None:
    await store.save_halt(checkpoint())
    await store.post_answer("req-1", yes(), answered_by="ana")
    backend.corrupt(store, "req-1", "{not json")
    first = await store.take()
    assert first is not None
    assert first.unreadable is not None
    await store.flag("req-1", first, first.unreadable, hold_s=30)
    assert await store.take() is None
    [entry] = await store.list_pending()
    assert (entry.status, entry.problem) == ("claimed", first.unreadable)
    clock.now += 30
    again = await store.take()
    assert again is not None
    assert again.unreadable == first.unreadable
    await store.flag("req-1", again, again.unreadable, hold_s=math.inf)
    record = await store.cancel("req-1", reason="corrupt", answered_by="op")
    assert (record.status, record.problem) == ("cancelled", first.unreadable)


async def test_an_unreadable_pending_checkpoint_can_still_be_cancelled(
    store: Any, backend: Backend
) -> None:
    await corrupted(store, backend, "{not json")
    record = await store.cancel("req-1", reason="corrupt", answered_by="op")
    assert record.status == "cancelled"
    assert await store.list_pending() == []
