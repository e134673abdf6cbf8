"""Answers and decisions: the strict decoder, the derived near-uniform flag, the typed readers
and the wire form (COMPAT §10)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolnexus import (
    ChoiceAnswer,
    ClassifierError,
    ClassifierUsage,
    Decision,
    NoulAnswer,
    ScoreAnswer,
    decision_wire,
    near_uniform,
)
from toolnexus.classifier import decision_from_wire

BASE_RESPONSE: dict[str, Any] = {
    "model": "typesafe/jev-1.13-20260917",
    "answers": {
        "department": {
            "type": "choice",
            "choice": "shipping",
            "probabilities": {"billing": 0.39, "technical": 0, "shipping": 0.61},
            "confidence": 0.41,
        },
        "is_refund_request": {"type": "noul", "noul": 0.98},
        "urgency": {
            "type": "score",
            "score": 1.21,
            "legend": {"0": "routine", "1": "elevated", "2": "urgent"},
            "probabilities": {"0": 0.04, "1": 0.71, "2": 0.25},
            "confidence": 0.57,
        },
    },
    "usage": {"input_tokens": 398, "output_tokens": 72},
}


def test_a_response_decodes_to_typed_answers() -> None:
    d = decision_from_wire(BASE_RESPONSE)
    assert d.model == "typesafe/jev-1.13-20260917"
    assert d.calibrated is True
    assert d.noul("is_refund_request") == NoulAnswer(0.98)
    department = d.choice("department")
    assert (department.choice, department.confidence, department.near_uniform) == (
        "shipping",
        0.41,
        False,
    )
    assert department.probabilities["technical"] == 0  # a zero stays an entry
    assert d.score("urgency").levels() == ["routine", "elevated", "urgent"]
    assert d.usage == ClassifierUsage(398, 72, None)


def test_levels_follow_the_level_number_not_the_string() -> None:
    answer = ScoreAnswer(1.0, {str(i): f"L{i}" for i in range(11)}, {}, 0.9)
    assert answer.levels()[-1] == "L10"
    assert answer.levels()[2] == "L2"


def test_an_absent_cost_stays_absent_and_a_cost_is_read_as_a_number() -> None:
    assert decision_from_wire({"model": "m", "answers": {}}).usage.cost is None
    priced = decision_from_wire(
        {"answers": {}, "usage": {"input_tokens": 1, "output_tokens": 2, "cost": 1.6716e-05}}
    )
    assert priced.usage == ClassifierUsage(1, 2, 1.6716e-05)
    assert ClassifierUsage().cost is None


@pytest.mark.parametrize(
    ("said", "calibrated"), [(None, True), ("absent", True), (True, True), (False, False)]
)
def test_calibrated_is_true_unless_the_reply_says_false(said: object, calibrated: bool) -> None:
    wire: dict[str, Any] = {"model": "m", "answers": {}}
    if said != "absent":
        wire["calibrated"] = said
    assert decision_from_wire(wire).calibrated is calibrated


def test_near_uniform_is_derived_never_read_from_the_wire() -> None:
    wire = {
        "answers": {
            "c": {
                "type": "choice",
                "choice": "a",
                "confidence": 0.9,
                "probabilities": {"a": 0.9, "b": 0.1},
                "near_uniform": True,
                "nearUniform": True,
            }
        }
    }
    assert decision_from_wire(wire).choice("c").near_uniform is False


@pytest.mark.parametrize(
    ("probabilities", "want"),
    [
        ({}, False),
        ({"only": 0.0}, True),
        ({"a": 0.25, "b": 0.25, "c": 0.25, "d": 0.25}, True),
        ({"east": 0.225, "north": 0.2999, "south": 0.225, "west": 0.2501}, True),  # 0.0499
        ({"east": 0.225, "north": 0.3001, "south": 0.225, "west": 0.2499}, False),  # 0.0501
        ({"a": 0.2, "b": 0.2}, False),  # taken as given, not renormalised
    ],
)
def test_near_uniform_is_inclusive_at_five_points(
    probabilities: dict[str, float], want: bool
) -> None:
    assert near_uniform(probabilities) is want


@pytest.mark.parametrize(
    ("wire", "needle"),
    [
        (
            {"answers": {"u": {"type": "score", "score": "high"}}},
            "answer 'u': score must be a number",
        ),
        ({"answers": {"u": {"type": "essay"}}}, "answer 'u': unknown answer type 'essay'"),
        ({"answers": {"n": {"type": "noul", "noul": 1.7}}}, "answer 'n': noul must be in 0..1"),
        ({"answers": {"n": {"type": "noul", "noul": True}}}, "noul must be a number, got bool"),
        (
            {"answers": {"c": {"type": "choice", "choice": "a", "confidence": 0.5}}},
            "answer 'c': probabilities must be an object",
        ),
        ({"model": "m"}, "answers must be an object, got NoneType"),
        ([], "the response must be an object, got list"),
        ({"answers": {}, "calibrated": "yes"}, "calibrated must be true or false"),
        ({"answers": {}, "usage": {"input_tokens": -1}}, "usage.input_tokens must be a whole"),
    ],
)
def test_a_malformed_response_is_refused_naming_the_field(wire: object, needle: str) -> None:
    with pytest.raises(ClassifierError, match=r"^classifier: malformed response: ") as caught:
        decision_from_wire(wire)
    assert needle in str(caught.value)


def test_the_readers_name_an_absent_or_mistyped_answer() -> None:
    d = decision_from_wire(BASE_RESPONSE)
    with pytest.raises(ClassifierError) as absent:
        d.choice("nope")
    assert str(absent.value) == "classifier: no answer 'nope' in this decision"
    with pytest.raises(ClassifierError) as mistyped:
        d.noul("department")
    assert str(mistyped.value) == "classifier: answer 'department' is a choice answer, not noul"
    with pytest.raises(ClassifierError, match="is a noul answer, not score"):
        d.score("is_refund_request")


def test_a_decision_goes_to_the_wire_and_back_unchanged() -> None:
    d = decision_from_wire({**BASE_RESPONSE, "calibrated": False})
    wire = decision_wire(d)
    assert "near_uniform" not in json.dumps(wire)
    assert decision_from_wire(json.loads(json.dumps(wire))) == d


def test_decisions_built_by_hand_have_the_pinned_defaults() -> None:
    d = Decision()
    assert (d.model, d.answers, d.usage, d.calibrated) == ("", {}, ClassifierUsage(), True)
    assert ChoiceAnswer("a", {"a": 1.0}, 1.0).near_uniform is False
