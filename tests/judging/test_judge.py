"""The judge layer: states and builders, bands, rules and policies, the gate's escalations, and
a `Tape` that records once and replays offline (COMPAT §10)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from judging_support import choice_wire, noul_wire

from toolnexus import (
    Bands,
    ClassifierError,
    Decision,
    NoulAnswer,
    Outcome,
    Policy,
    Rule,
    Tape,
    UsageError,
    ask,
    canonical_request,
    choice,
    context,
    create_classifier,
    decide,
    gate,
    noul,
    question_from_wire,
    questions,
    score,
    state,
    static_classifier,
)

MODEL = "m"
COMPONENTS = {"pricing": "coupon code", "checkout": "the checkout handler"}
QS = [
    noul("fixable", "Can an agent fix this from the report alone?"),
    choice("component", "Which component owns the fix?", COMPONENTS),
    score("fixability", "How fixable is it?", ["needs input", "needs work", "fixable"]),
]


def score_wire(level: float, confidence: float) -> dict[str, Any]:
    return {
        "type": "score",
        "score": level,
        "confidence": confidence,
        "legend": {"0": "needs input", "1": "needs work", "2": "fixable"},
        "probabilities": {"0": 0.1, "1": 0.1, "2": 0.8},
    }


SURE_PRICING = choice_wire("pricing", 0.85, {"pricing": 0.9, "checkout": 0.1})


def judged(answers: dict[str, Any], st: object = None) -> Any:
    st = {"case": 1} if st is None else st
    return static_classifier((st, QS, {"model": MODEL, "answers": answers}), model=MODEL)


RULES = [
    Rule("fixable", "fail", below=0.3),
    Rule("component", "skip_to", is_="pricing", target="fix-pricing"),
    Rule("fixability", "skip_to", at_least=1.5, target="draft-pr"),
]


# -- building ----------------------------------------------------------------------------------


def test_a_role_state_and_a_context_state_are_plain_maps() -> None:
    assert state("r", {"message_received": "hi"}) == {"role": "r", "message_received": "hi"}
    assert state("r", "plain text") == {"role": "r", "data": "plain text"}
    assert context("triage", "checkout 500", {"reporter": "support"}) == {
        "context": "triage",
        "message": "checkout 500",
        "reporter": "support",
    }


def test_the_builders_give_the_bytes_of_the_hand_written_questions() -> None:
    hand = {
        "is_appropriate": {"type": "noul", "instructions": "Insults?"},
        "graded": {"type": "noul", "instructions": "?", "criteria": {"true": "yes", "false": ""}},
        "component": {"type": "choice", "instructions": "Which?", "criteria": {"a": "x", "b": "y"}},
        "fix": {"type": "score", "instructions": "How?", "criteria": ["lo", "hi"]},
    }
    built = questions(
        [
            noul("is_appropriate", "Insults?"),
            noul("graded", "?", true="yes"),
            choice("component", "Which?", {"a": "x", "b": "y"}),
            score("fix", "How?", ["lo", "hi"]),
        ]
    )
    assert (
        canonical_request(MODEL, built)
        == json.dumps(
            {"model": MODEL, "questions": hand}, sort_keys=True, separators=(",", ":")
        ).encode()
    )
    assert canonical_request(MODEL, {k: question_from_wire(v) for k, v in hand.items()}) == (
        canonical_request(MODEL, built)
    )


def test_a_repeated_question_name_is_refused() -> None:
    with pytest.raises(ClassifierError, match=r'^duplicate question name "x"$'):
        questions([noul("x", "one"), noul("x", "two")])


# -- reading -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "band", "bands"),
    [
        (0.30, "uncertain", None),
        (0.70, "uncertain", None),
        (0.29, "no", None),
        (0.71, "yes", None),
        (0.55, "yes", Bands(0.20, 0.50)),
    ],
)
async def test_a_noul_reads_as_a_band_with_open_edges(
    p: float, band: str, bands: Bands | None
) -> None:
    answers = await ask(judged({"fixable": noul_wire(p)}), {"case": 1}, QS, bands)
    assert (answers["fixable"].band, answers["fixable"].value()) == (band, p)
    assert answers["fixable"].uncertain is (band == "uncertain")


async def test_a_choice_is_sure_above_high_unless_near_uniform_and_a_score_above_high() -> None:
    flat = choice_wire("pricing", 0.9, {"pricing": 0.52, "checkout": 0.48})
    answers = await ask(
        judged({"component": flat, "fixability": score_wire(1.8, 0.71)}), {"case": 1}, QS
    )
    assert (answers["component"].sure, answers["component"].choice()) == (False, "pricing")
    assert (answers["fixability"].sure, answers["fixability"].value()) == (True, 1.8)
    assert "fixable" not in answers  # asked, not answered


def test_bands_refuse_cut_offs_out_of_order() -> None:
    with pytest.raises(UsageError, match="0 ≤ low ≤ high ≤ 1"):
        Bands(0.8, 0.2)


# -- deciding ----------------------------------------------------------------------------------


async def test_the_first_rule_that_fires_wins() -> None:
    clf = judged(
        {"fixable": noul_wire(0.9), "component": SURE_PRICING, "fixability": score_wire(1.8, 0.9)}
    )
    out = await gate(clf, {"case": 1}, QS, RULES)
    assert (out.action, out.target, out.escalated, out.request) == (
        "skip_to",
        "fix-pricing",
        False,
        None,
    )
    assert set(out.answers) == {"fixable", "component", "fixability"}


async def test_an_uncertain_answer_escalates_to_a_person_with_a_plain_request() -> None:
    clf = judged(
        {"fixable": noul_wire(0.5), "component": SURE_PRICING, "fixability": score_wire(1.8, 0.9)}
    )
    out = await gate(clf, {"case": 1}, QS, RULES)
    assert out.escalated
    assert out.action == "needs_input"
    request = out.request
    assert request is not None
    assert (request.id, request.kind) == ("gate:0:fixable", "input")
    assert request.prompt == "Classifier is unsure about 'fixable' (uncertain answer \"fixable\")."
    assert request.data is not None
    assert (request.data["question"], request.data["reason"]) == (
        "fixable",
        'uncertain answer "fixable"',
    )
    # the answers ride along as JSON, so the request can be stored and shown anywhere
    assert json.loads(json.dumps(request.data))["answers"]["fixable"] == {
        "type": "noul",
        "noul": 0.5,
        "band": "uncertain",
    }


async def test_a_missing_answer_escalates_naming_its_key_verbatim() -> None:
    clf = judged({"fixable": noul_wire(0.9)})
    out = await gate(clf, {"case": 1}, QS, [Rule('a"b\\c', "fail", below=0.3)])
    assert out.request is not None
    assert out.request.data is not None
    assert out.request.id == 'gate:0:a"b\\c'
    assert out.request.data["reason"] == 'missing answer "a"b\\c"'


async def test_a_rule_that_cannot_read_its_answer_escalates() -> None:
    clf = judged({"fixable": noul_wire(0.9), "component": SURE_PRICING})
    wrong = await gate(clf, {"case": 1}, QS, [Rule("fixable", "go", is_="pricing")])
    numeric = await gate(clf, {"case": 1}, QS, [Rule("component", "go", below=0.5)])
    empty = await gate(clf, {"case": 1}, QS, [Rule("fixable", "go")])
    assert [o.request.id for o in (wrong, numeric, empty) if o.request] == [
        "gate:0:fixable",
        "gate:0:component",
        "gate:0:fixable",
    ]
    assert empty.request is not None
    assert empty.request.data is not None
    assert "has no condition" in empty.request.data["reason"]


async def test_skip_uncertain_passes_over_uncertain_answers_only() -> None:
    clf = judged({"fixable": noul_wire(0.5), "fixability": score_wire(1.8, 0.9)})
    later = await gate(clf, {"case": 1}, QS, Policy(RULES, skip_uncertain=True))
    assert (later.action, later.escalated) == ("needs_input", True)
    assert later.request is not None
    assert later.request.id == "gate:1:component"
    misfit = Policy([Rule("fixable", "go", is_="x")], skip_uncertain=True)
    sure = judged({"fixable": noul_wire(0.9)})
    assert (await gate(sure, {"case": 1}, QS, misfit)).escalated


async def test_a_policy_without_a_firing_rule_takes_its_default_or_escalates() -> None:
    clf = judged({"fixable": noul_wire(0.9)})
    rules = [Rule("fixable", "fail", below=0.3)]
    assert (await gate(clf, {"case": 1}, QS, Policy(rules, default="proceed"))).action == "proceed"
    out = await gate(clf, {"case": 1}, QS, Policy(rules))
    assert out.request is not None
    assert out.request.data is not None
    assert (out.request.id, out.request.data["question"], out.request.data["reason"]) == (
        "gate:default",
        "",
        "no rule fired",
    )
    bare = await gate(clf, {"case": 1}, QS, rules)
    assert (bare.action, bare.escalated) == ("", False)


def test_a_rule_with_both_bounds_is_a_range() -> None:
    read = {"x": ask_free(0.5)}
    assert decide(read, [Rule("x", "mid", below=0.6, at_least=0.4)]).action == "mid"
    assert decide(read, [Rule("x", "mid", below=0.5, at_least=0.4)]).action == ""


def ask_free(p: float) -> Any:
    from toolnexus.judge import read

    return read(NoulAnswer(p), Bands(0.1, 0.2))


async def test_the_policys_bands_read_the_answers() -> None:
    clf = judged({"fixable": noul_wire(0.55)})
    out = await gate(
        clf, {"case": 1}, QS, Policy([Rule("fixable", "go", at_least=0.5)], bands=Bands(0.2, 0.5))
    )
    assert out == Outcome("go", "", False, None, out.answers)


async def test_a_classifier_failure_reaches_the_caller_of_gate() -> None:
    def boom(st: object, qs: object) -> Decision:
        raise ClassifierError("classifier: endpoint down")

    with pytest.raises(ClassifierError, match="endpoint down"):
        await gate(create_classifier(style="custom", evaluate=boom), {}, QS, RULES)


# -- the tape ----------------------------------------------------------------------------------


async def test_a_tape_records_live_decisions_and_replays_them_offline() -> None:
    qs = [noul("x", "q")]
    live = static_classifier(
        ({"s": 1}, qs, {"model": MODEL, "answers": {"x": noul_wire(0.96)}}), model=MODEL
    )
    tape = Tape(live)
    assert (await ask(tape.call("plan"), {"s": 1}, qs))["x"].value() == 0.96
    saved = json.dumps(tape.recorded)
    assert set(json.loads(saved)["plan"]) == {"state", "questions", "response"}
    replay = Tape(recorded=json.loads(saved), model=MODEL)
    assert (await ask(replay.call("plan"), {"s": 1}, qs))["x"].value() == 0.96


async def test_a_replay_misses_a_call_it_never_recorded_when_it_is_evaluated() -> None:
    replayer = Tape(recorded={}, model=MODEL).call("act")
    with pytest.raises(ClassifierError, match=r'^tape: no recorded decision for call "act"$'):
        await ask(replayer, {"s": 1}, [noul("x", "q")])


async def test_a_replay_misses_when_the_state_changed_since_the_recording() -> None:
    qs = [noul("x", "q")]
    live = static_classifier(
        ({"s": 1}, qs, {"model": MODEL, "answers": {"x": noul_wire(0.9)}}), model=MODEL
    )
    tape = Tape(live)
    await ask(tape.call("plan"), {"s": 1}, qs)
    replay = Tape(recorded=tape.recorded, model=MODEL)
    with pytest.raises(ClassifierError, match="no recorded decision for this request"):
        await ask(replay.call("plan"), {"s": 2}, qs)
