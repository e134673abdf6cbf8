"""Questions: their wire form, the canonical bytes every port must emit, the client-side limits
and the degenerate-criteria detection (COMPAT §10).

The two pinned hashes are the shared cross-language fixtures' (``examples/judge/base.json`` and
``hardened.json`` of the existing package's repository): the same questions must give the same
bytes in every port.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pytest

from toolnexus import (
    ChoiceQuestion,
    ClassifierError,
    NoulCriteria,
    NoulQuestion,
    ScoreQuestion,
    canonical_json,
    canonical_request,
    choice_over,
    question_from_wire,
    question_wire,
    questions_wire,
)
from toolnexus.judging.questions import as_questions, check_limits, degenerate_reason

BASE_QUESTIONS = {
    "department": ChoiceQuestion(
        "Which department should handle this?",
        {
            "billing": "refunds, charges, payments",
            "shipping": "delivery, damage in transit",
            "technical": "product does not work",
        },
    ),
    "is_refund_request": NoulQuestion("Is the customer asking for a refund?"),
    "urgency": ScoreQuestion("How urgent is this?", ["routine", "elevated", "urgent"]),
}
BASE_SHA = "52b15f09c7d7e9ee653422993325ecd82aca69570ccc49699db5a1396d241dc9"

HARDENED_QUESTIONS = {
    "is_injection": NoulQuestion(
        'Does the text contain <script> tags, a & entity, or a "quoted" path like C:\\tmp?'
    ),
    "severity": ScoreQuestion(
        "Severity?", ["zero - lowest level", "mid - middle level", "apex - highest level"]
    ),
    "zone": ChoiceQuestion(
        "Which zone? — em-dash, café, 日本語",
        {
            "10_alpha": "digit-leading key sorts before 'beta' in ASCII",
            "Alpha": "uppercase sorts BEFORE lowercase in ASCII",
            "beta": "second",
            "café": "non-ascii key",
        },
    ),
    "empty_criteria": NoulQuestion(
        "Empty strings are NOT absent: both keys must survive with empty values.", NoulCriteria()
    ),
}
HARDENED_SHA = "81489f052a12d1cc2b89cc8230b0028ba1523464078e1132b051b154150913f5"


def test_the_canonical_request_matches_the_shared_fixtures_hash() -> None:
    got = canonical_request("typesafe/jev-1.13", BASE_QUESTIONS)
    assert hashlib.sha256(got).hexdigest() == BASE_SHA
    assert len(got) == 454


def test_html_characters_and_non_ascii_are_sent_unescaped_in_code_point_key_order() -> None:
    got = canonical_request("typesafe/jev-1.13", HARDENED_QUESTIONS)
    assert hashlib.sha256(got).hexdigest() == HARDENED_SHA
    text = got.decode("utf-8")
    assert "<script> tags, a & entity" in text
    assert "日本語" in text
    assert text.index('"10_alpha"') < text.index('"Alpha"') < text.index('"beta"')


def test_absent_and_empty_noul_criteria_are_different_bytes() -> None:
    absent = canonical_request("m", {"q": NoulQuestion("i")})
    empty = canonical_request("m", {"q": NoulQuestion("i", NoulCriteria())})
    assert absent == b'{"model":"m","questions":{"q":{"instructions":"i","type":"noul"}}}'
    assert b'"criteria":{"false":"","true":""}' in empty


def test_a_score_rubric_keeps_its_order() -> None:
    wire = question_wire(ScoreQuestion("Severity?", ["zero", "mid", "apex"]))
    assert wire == {
        "type": "score",
        "instructions": "Severity?",
        "criteria": ["zero", "mid", "apex"],
    }
    assert b'"criteria":["zero","mid","apex"]' in canonical_json(wire)


def test_canonical_json_refuses_what_json_cannot_carry() -> None:
    with pytest.raises(ValueError, match="Out of range float"):
        canonical_json({"x": float("nan")})


@pytest.mark.parametrize(
    "question",
    [
        NoulQuestion("p?"),
        NoulQuestion("p?", NoulCriteria(true="yes", false="")),
        ChoiceQuestion("c?", {"a": "x", "b": "y"}),
        ScoreQuestion("s?", ["lo", "hi"]),
    ],
)
def test_a_question_survives_its_wire_form(question: object) -> None:
    assert question_from_wire(question_wire(question)) == question  # type: ignore[arg-type]


def test_an_unknown_wire_type_is_refused() -> None:
    with pytest.raises(ClassifierError, match="not a question wire form: type 'essay'"):
        question_from_wire({"type": "essay", "instructions": "?"})


def test_questions_wire_keys_every_question() -> None:
    assert questions_wire({"x": NoulQuestion("?")}) == {"x": {"type": "noul", "instructions": "?"}}


@dataclass
class Item:
    name: str
    description: str


def test_choice_over_takes_a_mapping_pairs_or_named_objects_and_the_first_name_wins() -> None:
    want = ChoiceQuestion("Which tool?", {"b": "does b", "a": "does a"})
    assert choice_over("Which tool?", {"b": "does b", "a": "does a"}) == want
    assert choice_over("Which tool?", [("b", "does b"), ("a", "does a"), ("b", "other")]) == want
    assert (
        choice_over("Which tool?", [Item("b", "does b"), {"name": "a", "description": "does a"}])
        == want
    )


def test_named_pairs_with_a_repeated_name_are_refused() -> None:
    with pytest.raises(ClassifierError, match=r'^duplicate question name "x"$'):
        as_questions([("x", NoulQuestion("one")), ("x", NoulQuestion("two"))])


@pytest.mark.parametrize(
    ("question", "message"),
    [
        (
            ChoiceQuestion("?", {f"o{i}": "d" for i in range(256)}),
            "classifier: question 'k': a choice needs 1..255 options, got 256",
        ),
        (ChoiceQuestion("?", {}), "classifier: question 'k': a choice needs 1..255 options, got 0"),
        (
            ScoreQuestion("?", ["only"]),
            "classifier: question 'k': a score needs 2..10 ordered levels, got 1",
        ),
        (
            ScoreQuestion("?", [str(i) for i in range(11)]),
            "classifier: question 'k': a score needs 2..10 ordered levels, got 11",
        ),
    ],
)
def test_a_question_over_its_limits_is_refused_with_the_pinned_text(
    question: ChoiceQuestion | ScoreQuestion, message: str
) -> None:
    with pytest.raises(ClassifierError) as caught:
        check_limits({"k": question})
    assert str(caught.value) == message


def test_the_limits_name_the_first_offending_key_in_sorted_order() -> None:
    bad = ScoreQuestion("?", ["only"])
    with pytest.raises(ClassifierError, match="question 'a'"):
        check_limits({"b": bad, "ok": NoulQuestion("?"), "a": bad})


def test_the_limits_accept_their_edges() -> None:
    check_limits(
        {
            "one": ChoiceQuestion("?", {"a": "x"}),
            "many": ChoiceQuestion("?", {f"o{i}": "d" for i in range(255)}),
            "two": ScoreQuestion("?", ["a", "b"]),
            "ten": ScoreQuestion("?", [str(i) for i in range(10)]),
        }
    )


def test_something_that_is_not_a_question_is_refused() -> None:
    with pytest.raises(ClassifierError, match="question 'k' is a str, not a question"):
        check_limits({"k": "Is it spam?"})  # type: ignore[dict-item]


@pytest.mark.parametrize(
    ("criteria", "reason"),
    [
        ({"east": "", "north": " "}, "every option's meaning is empty"),
        ({"east": "east", "north": "north"}, "every option's meaning only repeats its id"),
        ({"east": "a legal move", "north": "a legal move"}, "every option has the same meaning"),
        ({"east": "into the wall", "north": "toward the apple"}, None),
        ({"only": ""}, None),
    ],
)
def test_degenerate_choices_are_recognised(criteria: dict[str, str], reason: str | None) -> None:
    assert degenerate_reason(ChoiceQuestion("Which move?", criteria)) == reason


def test_only_choices_can_be_degenerate() -> None:
    assert degenerate_reason(ScoreQuestion("?", ["same", "same"])) is None
