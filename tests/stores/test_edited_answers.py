"""Approve with edited arguments, at the store: every backend checks the edit against the schema
the checkpoint keeps and records the digest of what was approved (memory, SQLite, Postgres).

No toolkit anywhere here: this is what an approvals page or the CLI does.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from halt_support import ARGS, T0, checkpoint
from run_backends import Clock

import toolnexus
from toolnexus.errors import AnswerConflict, InvalidAnswer, RequestExpired, UsageError
from toolnexus.loop.checkpoint import Checkpoint
from toolnexus.stores.checks import call_digest
from toolnexus.suspension import Answer

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"env": {"enum": ["prod", "staging"]}, "n": {"type": "integer"}},
    "required": ["env"],
    "additionalProperties": False,
}


def with_schema(cp: Checkpoint, schema: Any = SCHEMA) -> Checkpoint:
    cp.outstanding[0].input_schema = schema
    return cp


def edit(arguments: Any, rid: str = "req-1", **more: Any) -> Answer:
    return Answer(rid, True, {"arguments": arguments, **more})


def digest_of(arguments: dict[str, Any]) -> str:
    return call_digest("deploy", json.dumps(arguments))


async def unchanged(store: Any) -> None:
    """The request still waits, nothing recorded."""
    assert [e.request_id for e in await store.list_pending()] == ["req-1"]
    assert await store.answer_record("req-1") is None


# -- the public check -----------------------------------------------------------------------


def test_edited_arguments_problem_is_public() -> None:
    assert toolnexus.edited_arguments_problem is toolnexus.loop.edits.edited_arguments_problem  # pyright: ignore[reportAttributeAccessIssue]
    assert "edited_arguments_problem" in toolnexus.__all__


def test_valid_edited_arguments_have_no_problem() -> None:
    cp = with_schema(checkpoint())
    assert toolnexus.edited_arguments_problem(cp, {"env": "staging", "n": 1}) is None


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ([1], "must be a JSON object, got array"),
        ("x", "must be a JSON object, got string"),
        (None, "must be a JSON object, got null"),
        (3, "must be a JSON object, got number"),
        ({"env": "moon"}, "'moon' is not one of"),
        ({"n": 1}, "'env' is a required property"),
        ({"env": "prod", "rm": "-rf"}, "Additional properties"),
        ({"env": "prod", "n": float("nan")}, "not JSON"),
    ],
)
def test_bad_edited_arguments_are_named(arguments: Any, words: str) -> None:
    problem = toolnexus.edited_arguments_problem(with_schema(checkpoint()), arguments)
    assert problem is not None
    assert words in problem
    assert '"deploy"' in problem


def test_only_an_approvals_arguments_can_be_edited() -> None:
    problem = toolnexus.edited_arguments_problem(checkpoint(kind="question"), {"env": "prod"})
    assert problem is not None
    assert 'of kind "question", not "approval"' in problem


def test_a_checkpoint_without_the_schema_is_checked_for_the_object_only() -> None:
    old = checkpoint()  # written before checkpoints kept the schema
    assert old.outstanding[0].input_schema is None
    assert toolnexus.edited_arguments_problem(old, {"env": "moon"}) is None
    assert toolnexus.edited_arguments_problem(old, [1]) is not None


def test_a_tool_that_does_not_validate_takes_any_object() -> None:
    cp = with_schema(checkpoint(), True)
    assert toolnexus.edited_arguments_problem(cp, {"anything": [1, 2]}) is None
    assert toolnexus.edited_arguments_problem(cp, "x") is not None


def test_edited_arguments_problem_refuses_what_is_not_a_checkpoint() -> None:
    problem = toolnexus.edited_arguments_problem({"pending": {}}, {})
    assert problem is not None
    assert "takes a Checkpoint" in problem


# -- the checkpoint keeps the schema --------------------------------------------------------


def test_the_schema_round_trips_through_the_checkpoint_json() -> None:
    cp = with_schema(checkpoint())
    back = Checkpoint.loads(cp.dumps())
    assert back.outstanding[0].input_schema == SCHEMA
    assert back.version == 1  # an optional field: no version bump
    assert json.loads(cp.dumps())["outstanding"][0]["input_schema"] == SCHEMA


def test_a_checkpoint_without_a_schema_writes_no_schema_key() -> None:
    assert "input_schema" not in json.loads(checkpoint().dumps())["outstanding"][0]


@pytest.mark.parametrize("bad", ["object", 3, ["type"]])
def test_a_malformed_stored_schema_is_a_checkpoint_error(bad: Any) -> None:
    data = checkpoint().to_json()
    data["outstanding"][0]["input_schema"] = bad
    with pytest.raises(toolnexus.CheckpointError, match="input_schema"):
        Checkpoint.from_json(data)


# -- post_answer on every backend -----------------------------------------------------------


async def test_an_edited_approval_records_the_digest_of_what_was_approved(store: Any) -> None:
    await store.save_halt(with_schema(checkpoint()))
    edited = {"env": "staging", "n": 1}
    record = await store.post_answer("req-1", edit(edited), answered_by="ana")
    assert record.digest == digest_of(edited)
    assert record.digest != call_digest("deploy", ARGS)
    stored = await store.answer_record("req-1")
    assert stored is not None
    assert (stored.status, stored.digest, stored.answer) == (
        "answered",
        digest_of(edited),
        edit(edited),
    )


async def test_a_plain_approval_still_records_the_halted_call(store: Any) -> None:
    await store.save_halt(with_schema(checkpoint()))
    record = await store.post_answer("req-1", Answer("req-1", True, {"note": "fine"}))
    assert record.digest == call_digest("deploy", ARGS)


@pytest.mark.parametrize(
    "arguments",
    [[1], "x", None, 3, {"env": "moon"}, {"n": 1}, {"env": "prod", "extra": True}],
)
async def test_a_bad_edit_is_refused_and_nothing_is_recorded(store: Any, arguments: Any) -> None:
    await store.save_halt(with_schema(checkpoint()))
    with pytest.raises(InvalidAnswer, match='cannot approve request "req-1" with edited'):
        await store.post_answer("req-1", edit(arguments), answered_by="mallory")
    await unchanged(store)
    # and the request still takes a good answer afterwards
    record = await store.post_answer("req-1", edit({"env": "prod"}), answered_by="ana")
    assert record.answered_by == "ana"


async def test_a_bad_edit_is_refused_with_a_digest_given_too(store: Any) -> None:
    await store.save_halt(with_schema(checkpoint()))
    with pytest.raises(InvalidAnswer):
        await store.post_answer("req-1", edit({"env": "moon"}), digest="d1")
    await unchanged(store)


async def test_an_edit_of_an_old_checkpoint_is_checked_for_the_object_only(store: Any) -> None:
    await store.save_halt(checkpoint())  # no schema kept: checked when the run resumes
    with pytest.raises(InvalidAnswer, match="JSON object"):
        await store.post_answer("req-1", edit([1]))
    await unchanged(store)
    record = await store.post_answer("req-1", edit({"env": "moon"}))
    assert record.digest == digest_of({"env": "moon"})


async def test_arguments_on_another_kind_are_left_alone(store: Any) -> None:
    await store.save_halt(with_schema(checkpoint(kind="input")))
    answer = edit("not an object at all")
    record = await store.post_answer("req-1", answer)
    assert record.answer == answer
    assert record.digest == call_digest("deploy", ARGS)


async def test_arguments_on_a_decline_are_left_alone(store: Any) -> None:
    await store.save_halt(with_schema(checkpoint()))
    answer = Answer("req-1", False, {"arguments": [1]}, reason="declined")
    record = await store.post_answer("req-1", answer)
    assert record.answer == answer
    assert record.digest == call_digest("deploy", ARGS)


async def test_an_edit_of_an_answered_request_is_a_conflict(store: Any) -> None:
    await store.save_halt(with_schema(checkpoint()))
    first = await store.post_answer("req-1", Answer("req-1", True), answered_by="ana")
    with pytest.raises(AnswerConflict, match="already answered by ana"):
        await store.post_answer("req-1", edit({"env": "staging"}), answered_by="bob")
    assert await store.answer_record("req-1") == first


async def test_an_edit_of_an_expired_request_records_the_expired_decline(
    store: Any, clock: Clock
) -> None:
    await store.save_halt(with_schema(checkpoint(expires="2023-11-14T22:13:30Z")))
    clock.now = T0 + 3600
    with pytest.raises(RequestExpired):
        await store.post_answer("req-1", edit({"env": "staging"}), answered_by="ana")
    record = await store.answer_record("req-1")
    assert record is not None
    assert (record.answer.ok, record.answer.reason) == (False, "expired")
    assert record.digest == call_digest("deploy", ARGS)  # nothing edited was approved


async def test_a_bad_edit_of_an_expired_request_changes_nothing(store: Any, clock: Clock) -> None:
    await store.save_halt(with_schema(checkpoint(expires="2023-11-14T22:13:30Z")))
    clock.now = T0 + 3600
    with pytest.raises(InvalidAnswer):
        await store.post_answer("req-1", edit([1]))
    assert await store.answer_record("req-1") is None


async def test_an_edited_claim_records_the_edited_digest(store: Any) -> None:
    await store.save_halt(with_schema(checkpoint()))
    from toolnexus.stores.checks import answer_digests

    stored = await store.load_halt("req-1")
    approved, halted = answer_digests(stored, edit({"env": "staging"}))
    assert approved == digest_of({"env": "staging"})
    assert halted == call_digest("deploy", ARGS)


async def test_a_hostile_edit_nested_too_deep_is_refused_and_nothing_is_recorded(
    store: Any,
) -> None:
    await store.save_halt(with_schema(checkpoint()))
    deep: Any = {"env": "prod"}
    for _ in range(5000):
        deep = {"env": "prod", "n": deep}
    with pytest.raises(UsageError):  # InvalidAnswer is one too
        await store.post_answer("req-1", edit(deep))
    await unchanged(store)


async def test_a_huge_valid_edit_is_recorded_whole(store: Any) -> None:
    await store.save_halt(with_schema(checkpoint()))
    big = {"env": "staging", "n": 1}
    record = await store.post_answer("req-1", edit(big, note="x" * 200_000))
    assert record.answer.data is not None
    assert record.answer.data["note"] == "x" * 200_000
    assert record.digest == digest_of(big)
