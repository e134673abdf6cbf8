"""Simple judgments over a classifier: bands, named questions, rules, policies and a gate.

::

    qs = questions([noul("fixable", "Can an agent fix this from the report alone?"),
                    choice("component", "Which component owns the fix?", COMPONENTS)])
    out = await gate(clf, state("You triage bug reports.", report), qs,
                     [Rule("fixable", "close", below=0.3),
                      Rule("component", "route", is_="pricing", target="pricing-team")])
    if out.escalated:                 # the classifier was unsure: ask a person
        result = pending_of(...)      # out.request is an ordinary Request (kind "input")

`Bands` turn numbers into a reading: a noul's probability is ``no`` below ``low``, ``yes``
above ``high``, else ``uncertain``; a choice is *sure* when its confidence is above ``high``
and its distribution is not near-uniform (a score: above ``high``). Rules are tried in order
and the first that fires wins; an answer that is missing, uncertain or of the wrong type for
its rule escalates to a person instead of being guessed at. `Tape` records a live classifier's
decisions once and replays them offline, so a policy is tested without a model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, cast

from ..errors import ClassifierError, UsageError
from ..suspension import Request
from .answers import ChoiceAnswer, Decision, DecisionAnswer, NoulAnswer, answer_wire, decision_wire
from .backends import RecordedDecision, Static
from .classifier import DEFAULT_CLASSIFIER_MODEL, Classifier, create_classifier
from .questions import (
    ChoiceQuestion,
    NoulCriteria,
    NoulQuestion,
    Question,
    ScoreQuestion,
    as_questions,
    canonical_json,
    question_from_wire,
    questions_wire,
)

__all__ = [
    "DEFAULT_BANDS",
    "Band",
    "Bands",
    "Evaluates",
    "JudgeAnswer",
    "NamedQuestion",
    "Outcome",
    "Policy",
    "Rule",
    "Tape",
    "ask",
    "choice",
    "context",
    "decide",
    "decision_wire",
    "gate",
    "noul",
    "question_from_wire",
    "questions",
    "read",
    "score",
    "state",
    "static_classifier",
]

Band: TypeAlias = Literal["no", "uncertain", "yes"]
NamedQuestion: TypeAlias = tuple[str, Question]
"""A question with the name its answer goes under (what the builders return)."""


class Evaluates(Protocol):
    """Anything that evaluates questions about a state (a `Classifier`)."""

    async def evaluate(self, state: Any, questions: Mapping[str, Question]) -> Decision: ...


@dataclass(frozen=True, slots=True)
class Bands:
    """The cut-offs that read a probability or a confidence (see the module docstring)."""

    low: float = 0.30
    high: float = 0.70

    def __post_init__(self) -> None:
        if not 0.0 <= self.low <= self.high <= 1.0:
            raise UsageError(f"Bands need 0 ≤ low ≤ high ≤ 1, got low={self.low}, high={self.high}")

    def noul(self, p: float) -> Band:
        """``no`` when ``p < low``, ``yes`` when ``p > high``, else ``uncertain``."""
        if p < self.low:
            return "no"
        return "yes" if p > self.high else "uncertain"

    def sure(self, confidence: float, near_uniform: bool = False) -> bool:
        """Whether a pick with this confidence can be acted on without a person."""
        return confidence > self.high and not near_uniform


DEFAULT_BANDS = Bands()


# -- building ----------------------------------------------------------------------------------


def noul(name: str, instructions: str, true: str = "", false: str = "") -> NamedQuestion:
    """A named noul question; criteria are sent only when ``true`` or ``false`` is given."""
    criteria = NoulCriteria(true, false) if true or false else None
    return name, NoulQuestion(instructions, criteria)


def choice(name: str, instructions: str, options: Mapping[str, str]) -> NamedQuestion:
    """A named choice question over ``options`` (id → meaning)."""
    return name, ChoiceQuestion(instructions, dict(options))


def score(name: str, instructions: str, levels: Sequence[str]) -> NamedQuestion:
    """A named score question over ordered ``levels`` (the first is level 0)."""
    return name, ScoreQuestion(instructions, list(levels))


def questions(named: Iterable[NamedQuestion]) -> dict[str, Question]:
    """The question map of named questions, in order.

    Raises:
        ClassifierError: ``duplicate question name "<n>"``.
    """
    return as_questions(named)


def state(role: str, data: object) -> dict[str, Any]:
    """A state that says who the classifier is: ``{"role": role, **data}`` (data that is not a
    mapping goes under ``"data"``)."""
    if isinstance(data, Mapping):
        return {"role": role, **cast("Mapping[str, Any]", data)}
    return {"role": role, "data": data}


def context(ctx: object, message: object, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``{"context": ctx, "message": message, **extra}``."""
    return {"context": ctx, "message": message, **(extra or {})}


# -- reading -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JudgeAnswer:
    """A classifier's answer read against bands: a noul has a ``band``, a choice or a score a
    ``sure`` flag.

    Attributes:
        raw: the answer as the classifier gave it.
        band: a noul's reading (``None`` for the other kinds).
        sure: whether a choice or a score can be acted on (``None`` for a noul).
    """

    raw: DecisionAnswer
    band: Band | None = None
    sure: bool | None = None

    @property
    def type(self) -> Literal["noul", "choice", "score"]:
        return self.raw.type

    @property
    def uncertain(self) -> bool:
        """A noul in the uncertain band, or a choice or score that is not sure."""
        return self.band == "uncertain" if isinstance(self.raw, NoulAnswer) else not self.sure

    def value(self) -> float:
        """A noul's probability, a choice's confidence, or a score's level."""
        raw = self.raw
        if isinstance(raw, NoulAnswer):
            return raw.noul
        return raw.confidence if isinstance(raw, ChoiceAnswer) else raw.score

    def choice(self) -> str:
        """The chosen option.

        Raises:
            ClassifierError: the answer is not a choice.
        """
        if not isinstance(self.raw, ChoiceAnswer):
            raise ClassifierError(f"classifier: a {self.type} answer has no choice")
        return self.raw.choice

    def wire(self) -> dict[str, Any]:
        """The answer's wire body with its reading (``band`` or ``sure``): JSON for an audit."""
        reading: dict[str, Any] = (
            {"band": self.band} if isinstance(self.raw, NoulAnswer) else {"sure": self.sure}
        )
        return {**answer_wire(self.raw), **reading}


def read(answer: DecisionAnswer, bands: Bands | None = None) -> JudgeAnswer:
    """Read one answer against ``bands`` (`DEFAULT_BANDS` when ``None``)."""
    cut = bands or DEFAULT_BANDS
    if isinstance(answer, NoulAnswer):
        return JudgeAnswer(answer, band=cut.noul(answer.noul))
    if isinstance(answer, ChoiceAnswer):
        return JudgeAnswer(answer, sure=cut.sure(answer.confidence, answer.near_uniform))
    return JudgeAnswer(answer, sure=cut.sure(answer.confidence))


async def ask(
    classifier: Evaluates,
    st: object,
    named: Mapping[str, Question] | Iterable[NamedQuestion],
    bands: Bands | None = None,
) -> dict[str, JudgeAnswer]:
    """Evaluate the named questions and read each answer; a question left unanswered is
    absent from the result.

    Raises:
        ClassifierError: as the classifier's ``evaluate``, or a duplicate name.
    """
    asked = as_questions(named)
    decision = await classifier.evaluate(st, asked)
    return {name: read(decision.answers[name], bands) for name in asked if name in decision.answers}


# -- deciding ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rule:
    """When ``question``'s answer meets the condition, the outcome is ``action`` (and
    ``target``).

    The condition is ``is_`` for a choice (the chosen option), else ``below`` (value <
    below) and/or ``at_least`` (value ≥ at_least; both given is a range) for a noul's
    probability or a score's level.
    """

    question: str
    action: str
    below: float | None = None
    at_least: float | None = None
    is_: str | None = None
    target: str = ""


@dataclass(frozen=True, slots=True)
class Policy:
    """Rules tried in order, and what happens when none fires: ``default`` as the action, or
    (when it is empty) an escalation. ``skip_uncertain`` passes over rules whose answer is
    uncertain instead of escalating on them."""

    rules: Sequence[Rule]
    default: str = ""
    bands: Bands | None = None
    skip_uncertain: bool = False


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a gate decided: an ``action`` (``""``: no rule fired), or an escalation whose
    ``request`` (kind ``input``) a person answers; ``answers`` are the readings it used."""

    action: str = ""
    target: str = ""
    escalated: bool = False
    request: Request | None = None
    answers: dict[str, JudgeAnswer] = field(default_factory=lambda: {})


def _blocker(rule: Rule, answer: JudgeAnswer | None) -> tuple[str, bool] | None:
    """Why ``rule`` cannot be applied to ``answer`` — the reason, and whether it is the
    uncertainty that ``skip_uncertain`` passes over — or ``None`` when it can be."""
    name = rule.question
    if answer is None:
        return f'missing answer "{name}"', False
    if answer.uncertain:
        return f'uncertain answer "{name}"', True
    if (rule.is_ is not None) != (answer.type == "choice"):
        wanted = "an is_ rule" if rule.is_ is not None else "a numeric rule"
        return f"{wanted} cannot read the {answer.type} answer {name!r}", False
    if rule.is_ is None and rule.below is None and rule.at_least is None:
        return f"the rule on {name!r} has no condition (below, at_least or is_)", False
    return None


def _fires(rule: Rule, answer: JudgeAnswer) -> bool:
    if rule.is_ is not None:
        return answer.choice() == rule.is_
    value = answer.value()
    return (rule.below is None or value < rule.below) and (
        rule.at_least is None or value >= rule.at_least
    )


def _escalation(
    request_id: str, name: str, reason: str, prompt: str, answers: dict[str, JudgeAnswer]
) -> Outcome:
    request = Request(
        id=request_id,
        kind="input",
        prompt=prompt,
        data={
            "question": name,
            "reason": reason,
            "answers": {key: a.wire() for key, a in answers.items()},
        },
    )
    return Outcome("needs_input", "", True, request, answers)


def decide(answers: dict[str, JudgeAnswer], policy: Policy | Sequence[Rule]) -> Outcome:
    """Apply rules to read answers: the first rule that fires wins.

    A rule whose answer is missing, uncertain (unless the policy skips those) or of the wrong
    kind escalates at once (request id ``gate:<i>:<question>``). When no rule fires, a bare
    rule list gives ``action == ""``; a `Policy` gives its ``default``, or escalates with id
    ``gate:default`` and reason ``no rule fired``.
    """
    is_policy = isinstance(policy, Policy)
    rules = policy.rules if isinstance(policy, Policy) else policy
    skip = policy.skip_uncertain if isinstance(policy, Policy) else False
    for index, rule in enumerate(rules):
        answer = answers.get(rule.question)
        blocked = _blocker(rule, answer)
        if blocked is not None:
            reason, uncertain = blocked
            if uncertain and skip:
                continue
            prompt = f"Classifier is unsure about {rule.question!r} ({reason})."
            return _escalation(
                f"gate:{index}:{rule.question}", rule.question, reason, prompt, answers
            )
        assert answer is not None
        if _fires(rule, answer):
            return Outcome(rule.action, rule.target, False, None, answers)
    if is_policy and policy.default:
        return Outcome(policy.default, "", False, None, answers)
    if is_policy:
        prompt = "No rule decided this: a person must (no rule fired)."
        return _escalation("gate:default", "", "no rule fired", prompt, answers)
    return Outcome(answers=answers)


async def gate(
    classifier: Evaluates,
    st: object,
    qs: Mapping[str, Question] | Iterable[NamedQuestion],
    rules: Policy | Sequence[Rule],
    bands: Bands | None = None,
) -> Outcome:
    """`ask`, then `decide` (``bands`` or the policy's bands read the answers).

    Raises:
        ClassifierError: the classifier failed (the caller decides whether that fails closed).
    """
    chosen = bands or (rules.bands if isinstance(rules, Policy) else None)
    return decide(await ask(classifier, st, qs, chosen), rules)


# -- offline -----------------------------------------------------------------------------------


def static_classifier(
    *recorded: tuple[object, Mapping[str, Question] | Iterable[NamedQuestion], Mapping[str, Any]],
    model: str | None = None,
) -> Classifier:
    """A ``static`` classifier over ``(state, questions, response)`` recordings.

    >>> clf = static_classifier(({"s": 1}, [noul("x", "q")], {"model": "m", "answers": {}}))
    """
    return create_classifier(
        style="static",
        model=model,
        decisions=[
            RecordedDecision(st, as_questions(qs), response) for st, qs, response in recorded
        ],
    )


class Tape:
    """Records a live classifier's decisions by call name, and replays them without one.

    ::

        tape = Tape(live_classifier)
        await ask(tape.call("triage"), st, qs)     # evaluated live, recorded
        save(json.dumps(tape.recorded))
        replay = Tape(recorded=json.loads(saved), model=MODEL)
        await ask(replay.call("triage"), st, qs)   # the recorded decision, no network

    ``recorded`` is ``{name: {state, questions, response}}`` in wire form. A replayed call
    with no recording fails when it is evaluated: ``tape: no recorded decision for call
    "<name>"``; one whose state or questions differ from the recording misses like a static
    classifier.
    """

    def __init__(
        self,
        live: Evaluates | None = None,
        recorded: Mapping[str, Mapping[str, Any]] | None = None,
        model: str | None = None,
    ) -> None:
        self.live = live
        self.recorded: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (recorded or {}).items()}
        live_model = getattr(live, "model", None)
        self.model: str = (
            model
            or (live_model if isinstance(live_model, str) else "")
            or (DEFAULT_CLASSIFIER_MODEL)
        )

    def call(self, name: str) -> Classifier:
        """The classifier to use for the call named ``name``: it records (with a live
        classifier) or replays."""
        live = self.live
        if live is not None:

            async def record(st: object, qs: Mapping[str, Question]) -> Decision:
                decision = await live.evaluate(st, qs)
                self.recorded[name] = {
                    "state": json.loads(canonical_json(st)),
                    "questions": questions_wire(qs),
                    "response": decision_wire(decision),
                }
                return decision

            return create_classifier(style="custom", evaluate=record, model=self.model)

        async def replay(st: object, qs: Mapping[str, Question]) -> Decision:
            entry = self.recorded.get(name)
            if entry is None:
                raise ClassifierError(f'tape: no recorded decision for call "{name}"')
            wire_qs = cast("Mapping[str, Mapping[str, Any]]", entry.get("questions") or {})
            recording = RecordedDecision(
                entry.get("state"),
                {key: question_from_wire(q) for key, q in wire_qs.items()},
                cast("Mapping[str, Any]", entry.get("response") or {}),
            )
            return await Static(self.model, [recording]).evaluate(st, qs)

        return create_classifier(style="custom", evaluate=replay, model=self.model)
