"""The audit of an approval answered with edited arguments, on every backend.

What the model asked for (`AnswerRecord.original`: its tool, raw arguments and digest) is
recorded with the edited answer — by `post_answer` (T2) itself, by `claim` (T4) from what its
caller passes (`edit_audit`) — and kept once the request settles (T8), in `answer_record` and
in the inbox's history. With the answer (the edited arguments), `digest` (the edited call's)
and `answered_by`, an audit shows the whole edit. The digest a resumer checks right before
the approved call runs comes with its `Claim`.
"""

from __future__ import annotations

from typing import Any

import pytest
from halt_support import ARGS, T0, checkpoint
from run_backends import Clock
from test_edited_answers import SCHEMA, digest_of, edit, with_schema

from toolnexus.errors import InvalidAnswer, RequestExpired, UsageError
from toolnexus.stores.checks import answer_digests, call_digest, edit_audit
from toolnexus.suspension import Answer

EDITED = {"env": "staging", "n": 1}
ORIGINAL = {"tool": "deploy", "arguments": ARGS, "digest": call_digest("deploy", ARGS)}


# -- the helper -----------------------------------------------------------------------------


def test_edit_audit_is_the_models_call_when_the_answer_edits_it() -> None:
    assert edit_audit(with_schema(checkpoint()), edit(EDITED)) == ORIGINAL


@pytest.mark.parametrize(
    "answer",
    [
        Answer("req-1", True),
        Answer("req-1", True, {"note": "fine"}),
        Answer("req-1", False, {"arguments": EDITED}, reason="declined"),
    ],
    ids=["plain", "data", "decline"],
)
def test_edit_audit_is_none_when_the_answer_does_not_edit(answer: Answer) -> None:
    assert edit_audit(with_schema(checkpoint()), answer) is None


def test_edit_audit_is_none_for_another_kind_of_request() -> None:
    assert edit_audit(with_schema(checkpoint(kind="input")), edit(EDITED)) is None


async def test_an_invalid_edit_is_refused_by_the_intake_and_nothing_is_recorded(
    store: Any,
) -> None:
    # (edit_audit itself describes an accepted answer: the answer intake refuses a bad edit)
    await store.save_halt(with_schema(checkpoint(), SCHEMA))
    with pytest.raises(InvalidAnswer, match="edited arguments"):
        await store.post_answer("req-1", edit({"env": "moon"}), answered_by="ana")
    assert await store.answer_record("req-1") is None


# -- T2: post_answer records it -------------------------------------------------------------


async def test_an_edited_answer_records_the_models_call(store: Any) -> None:
    await store.save_halt(with_schema(checkpoint()))
    record = await store.post_answer("req-1", edit(EDITED), answered_by="ana")
    assert (record.original, record.digest) == (ORIGINAL, digest_of(EDITED))
    assert await store.answer_record("req-1") == record


async def test_a_plain_answer_records_no_original(store: Any) -> None:
    await store.save_halt(with_schema(checkpoint()))
    record = await store.post_answer("req-1", Answer("req-1", True), answered_by="ana")
    assert record.original is None
    stored = await store.answer_record("req-1")
    assert stored is not None
    assert stored.original is None


async def test_an_edit_recorded_with_a_given_digest_keeps_the_models_call_too(
    store: Any,
) -> None:
    await store.save_halt(with_schema(checkpoint()))
    record = await store.post_answer("req-1", edit(EDITED), digest="d1")
    assert (record.digest, record.original) == ("d1", ORIGINAL)


async def test_an_edit_of_an_expired_request_records_no_original(store: Any, clock: Clock) -> None:
    await store.save_halt(with_schema(checkpoint(expires="2023-11-14T22:13:30Z")))
    clock.now = T0 + 3600
    with pytest.raises(RequestExpired):
        await store.post_answer("req-1", edit(EDITED), answered_by="ana")
    record = await store.answer_record("req-1")
    assert record is not None
    assert (record.answered_by, record.original) == ("toolnexus:expired", None)


# -- kept through the resume and after it settles -------------------------------------------


async def test_the_original_is_kept_after_the_request_settles(store: Any) -> None:
    await store.save_halt(with_schema(checkpoint()))
    await store.post_answer("req-1", edit(EDITED), answered_by="ana")
    claim = await store.take("req-1")
    assert claim is not None
    await store.save_progress(with_schema(checkpoint(turn=2)), claim)
    await store.complete("req-1", claim, outcome={"status": "done"})
    assert await store.load_halt("req-1") is None  # the checkpoint is gone...
    record = await store.answer_record("req-1")
    assert record is not None
    assert (record.status, record.original, record.digest) == (  # ...the audit is not
        "done",
        ORIGINAL,
        digest_of(EDITED),
    )


async def test_the_history_shows_the_whole_edit(store: Any, clock: Clock) -> None:
    await store.save_halt(with_schema(checkpoint()))
    clock.now = T0 + 7
    await store.post_answer("req-1", edit(EDITED), answered_by="ana")
    claim = await store.take("req-1")
    assert claim is not None
    await store.complete("req-1", claim)
    [entry] = await store.list_history(request_id="req-1")
    assert entry.answer == edit(EDITED)
    assert (entry.answered_by, entry.answered_at, entry.status) == ("ana", T0 + 7, "done")
    assert (entry.digest, entry.original) == (digest_of(EDITED), ORIGINAL)
    [listed] = await store.list_history(answered_by="ana")
    assert listed == entry


# -- T4: claim records what its caller passes ------------------------------------------------


async def test_a_claim_records_the_original_it_is_given(store: Any) -> None:
    cp = with_schema(checkpoint())
    await store.save_halt(cp)
    answer = edit(EDITED)
    approved, _ = answer_digests(cp, answer)
    claim = await store.claim(
        "req-1", answer, answered_by="host", digest=approved, original=edit_audit(cp, answer)
    )
    assert claim.digest == approved == digest_of(EDITED)
    assert await store.answer_record("req-1") is None  # a host's claim shows once applied
    await store.complete("req-1", claim)
    record = await store.answer_record("req-1")
    assert record is not None
    assert (record.answered_by, record.digest, record.original) == ("host", approved, ORIGINAL)


async def test_a_claim_without_an_original_records_none(store: Any) -> None:
    await store.save_halt(with_schema(checkpoint()))
    claim = await store.claim("req-1", Answer("req-1", True), digest="d1")
    assert claim.digest == "d1"
    await store.complete("req-1", claim)
    record = await store.answer_record("req-1")
    assert record is not None
    assert (record.digest, record.original) == ("d1", None)


async def test_an_answer_after_a_released_host_claim_records_no_original_of_its_own(
    store: Any,
) -> None:
    await store.save_halt(with_schema(checkpoint()))
    claim = await store.claim("req-1", edit(EDITED), original=ORIGINAL)
    await store.release("req-1", claim)
    record = await store.post_answer("req-1", Answer("req-1", True), answered_by="ana")
    assert record.original is None
    again = await store.take("req-1")
    assert again is not None
    await store.complete("req-1", again)
    settled = await store.answer_record("req-1")
    assert settled is not None
    assert settled.original is None


BAD_ORIGINALS: list[object] = [
    "deploy",
    {"tool": "deploy", "arguments": ARGS},
    {**ORIGINAL, "extra": "x"},
    {**ORIGINAL, "arguments": {"env": "prod"}},
    {**ORIGINAL, "digest": None},
    {**ORIGINAL, "tool": "lone \ud800"},
]


@pytest.mark.parametrize("bad", BAD_ORIGINALS, ids=range(len(BAD_ORIGINALS)))
async def test_a_bad_original_is_a_usage_error_and_claims_nothing(store: Any, bad: Any) -> None:
    await store.save_halt(with_schema(checkpoint()))
    with pytest.raises(UsageError, match="original"):
        await store.claim("req-1", edit(EDITED), original=bad)
    assert [e.request_id for e in await store.list_pending()] == ["req-1"]
    await store.claim("req-1", edit(EDITED), original=ORIGINAL)


# -- the digest a resumer checks comes with its claim ----------------------------------------


async def test_a_take_hands_over_the_digest_of_what_was_approved(store: Any) -> None:
    await store.save_halt(with_schema(checkpoint("plain")))
    await store.save_halt(with_schema(checkpoint("edited")))
    await store.post_answer("plain", Answer("plain", True), answered_by="ana")
    await store.post_answer("edited", edit(EDITED, rid="edited"), answered_by="ana")
    plain = await store.take("plain")
    edited = await store.take()
    assert plain is not None
    assert edited is not None
    assert (plain.digest, edited.request_id, edited.digest) == (
        call_digest("deploy", ARGS),
        "edited",
        digest_of(EDITED),
    )


async def test_a_take_of_a_lapsed_claim_hands_over_its_recorded_digest(
    store: Any, clock: Clock
) -> None:
    await store.save_halt(with_schema(checkpoint()))
    await store.post_answer("req-1", edit(EDITED), answered_by="ana")
    first = await store.take("req-1", lease_s=10)
    clock.now += 10
    again = await store.take("req-1")
    assert first is not None
    assert again is not None
    assert first.digest == again.digest == digest_of(EDITED)
