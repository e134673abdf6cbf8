"""The questions a classifier answers, their wire form and the canonical request bytes.

Three kinds, discriminated on the wire by ``type``:

- `NoulQuestion`: a probability in 0..1 that the instructions hold of the state;
- `ChoiceQuestion`: one of 1..255 options, each an id with its meaning;
- `ScoreQuestion`: a level on a scale of 2..10 ordered levels (the list order *is* the
  numbering, so it is never sorted).

The canonical bytes (`canonical_json`) sort object keys recursively in code-point order, keep
arrays as they are, use compact separators and leave non-ASCII text unescaped: the same
questions give the same bytes in every port (the shared fixtures pin their sha256).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, cast

from ..errors import ClassifierError

__all__ = [
    "MAX_CHOICE_OPTIONS",
    "MAX_SCORE_LEVELS",
    "MIN_SCORE_LEVELS",
    "ChoiceQuestion",
    "NoulCriteria",
    "NoulQuestion",
    "Question",
    "QuestionType",
    "ScoreQuestion",
    "as_questions",
    "canonical_json",
    "canonical_request",
    "check_limits",
    "choice_over",
    "degenerate_reason",
    "question_from_wire",
    "question_wire",
    "questions_wire",
]

MAX_CHOICE_OPTIONS = 255
"""The most options a choice may offer."""
MIN_SCORE_LEVELS = 2
"""The fewest levels a score scale may have."""
MAX_SCORE_LEVELS = 10
"""The most levels a score scale may have."""

QuestionType: TypeAlias = Literal["noul", "choice", "score"]


@dataclass(frozen=True, slots=True)
class NoulCriteria:
    """What a ``true`` and a ``false`` answer mean. Empty strings are sent as they are:
    ``NoulCriteria()`` is ``{"false": "", "true": ""}`` on the wire, unlike no criteria."""

    true: str = ""
    false: str = ""


@dataclass(frozen=True, slots=True)
class NoulQuestion:
    """The probability, in 0..1, that ``instructions`` hold of the state.

    >>> NoulQuestion("Is the customer asking for a refund?")
    """

    instructions: str
    criteria: NoulCriteria | None = None

    @property
    def type(self) -> QuestionType:
        return "noul"


@dataclass(frozen=True, slots=True)
class ChoiceQuestion:
    """One option out of ``criteria`` (option id → what choosing it means), 1..255 of them.

    >>> ChoiceQuestion("Which department?", {"billing": "charges", "shipping": "delivery"})
    """

    instructions: str
    criteria: dict[str, str] = field(default_factory=lambda: {})

    @property
    def type(self) -> QuestionType:
        return "choice"


@dataclass(frozen=True, slots=True)
class ScoreQuestion:
    """A level on an ordered scale: ``criteria[0]`` is level 0, and so on (2..10 levels).

    >>> ScoreQuestion("How urgent is this?", ["routine", "elevated", "urgent"])
    """

    instructions: str
    criteria: list[str] = field(default_factory=lambda: [])

    @property
    def type(self) -> QuestionType:
        return "score"


Question: TypeAlias = NoulQuestion | ChoiceQuestion | ScoreQuestion
"""Any of the three question kinds."""


def _named(item: object) -> tuple[str, str]:
    """``(name, description)`` of a choice item: a pair, a mapping or an object with both."""
    if isinstance(item, tuple):
        pair = cast("tuple[object, ...]", item)
        if len(pair) == 2:
            return str(pair[0]), str(pair[1])
        return str(pair), ""
    if isinstance(item, Mapping):
        mapping = cast("Mapping[str, object]", item)
        return str(mapping.get("name", "")), str(mapping.get("description") or "")
    return str(getattr(item, "name", "")), str(getattr(item, "description", None) or "")


def choice_over(instructions: str, items: Mapping[str, str] | Iterable[object]) -> ChoiceQuestion:
    """A choice over named items: a mapping ``{name: description}``, or items that are
    ``(name, description)`` pairs, mappings or objects with ``name`` and ``description``
    (a tool, a skill). A repeated name keeps its first description.

    >>> choice_over("Which tool?", {"search": "searches the web", "read": "reads a file"})
    """
    pairs: Iterable[tuple[str, str]]
    if isinstance(items, Mapping):
        mapping = cast("Mapping[object, object]", items)
        pairs = ((str(k), str(v)) for k, v in mapping.items())
    else:
        pairs = (_named(item) for item in items)
    criteria: dict[str, str] = {}
    for name, description in pairs:
        criteria.setdefault(name, description)
    return ChoiceQuestion(instructions, criteria)


def question_wire(question: Question) -> dict[str, Any]:
    """The wire form ``{type, instructions, criteria?}`` (a noul's absent criteria stay absent).

    >>> question_wire(NoulQuestion("Is it spam?"))
    {'type': 'noul', 'instructions': 'Is it spam?'}
    """
    if isinstance(question, NoulQuestion):
        wire: dict[str, Any] = {"type": "noul", "instructions": question.instructions}
        if question.criteria is not None:
            wire["criteria"] = {"true": question.criteria.true, "false": question.criteria.false}
        return wire
    if isinstance(question, ChoiceQuestion):
        return {
            "type": "choice",
            "instructions": question.instructions,
            "criteria": dict(question.criteria),
        }
    if isinstance(question, ScoreQuestion):  # pyright: ignore[reportUnnecessaryIsInstance]
        return {
            "type": "score",
            "instructions": question.instructions,
            "criteria": list(question.criteria),
        }
    raise ClassifierError(f"classifier: not a question: {type(question).__name__}")


def as_questions(
    questions: Mapping[str, Question] | Iterable[tuple[str, Question]],
) -> dict[str, Question]:
    """A question map from a mapping, or from named ``(name, question)`` pairs in order.

    Raises:
        ClassifierError: ``duplicate question name "<n>"`` when a pair repeats a name.
    """
    if isinstance(questions, Mapping):
        return dict(cast("Mapping[str, Question]", questions))
    named: dict[str, Question] = {}
    for pair in questions:
        name, question = pair
        if name in named:
            raise ClassifierError(f'duplicate question name "{name}"')
        named[name] = question
    return named


def questions_wire(questions: Mapping[str, Question]) -> dict[str, dict[str, Any]]:
    """``{key: question_wire(q)}`` for a mapping of questions."""
    return {key: question_wire(q) for key, q in questions.items()}


def question_from_wire(wire: Mapping[str, Any]) -> Question:
    """The typed question for a wire form (the inverse of `question_wire`).

    Raises:
        ClassifierError: an unknown ``type`` or criteria of the wrong shape.

    >>> question_from_wire({"type": "score", "instructions": "?", "criteria": ["lo", "hi"]})
    ScoreQuestion(instructions='?', criteria=['lo', 'hi'])
    """
    kind = wire.get("type")
    instructions = wire.get("instructions", "")
    if not isinstance(instructions, str):
        raise ClassifierError("classifier: a question's instructions must be a string")
    criteria: object = wire.get("criteria")
    if kind == "noul":
        if criteria is None:
            return NoulQuestion(instructions)
        if isinstance(criteria, Mapping):
            given = cast("Mapping[str, object]", criteria)
            return NoulQuestion(
                instructions, NoulCriteria(str(given.get("true", "")), str(given.get("false", "")))
            )
    elif kind == "choice" and isinstance(criteria, Mapping):
        options = cast("Mapping[object, object]", criteria)
        return ChoiceQuestion(instructions, {str(k): str(v) for k, v in options.items()})
    elif kind == "score" and isinstance(criteria, list):
        levels = cast("list[object]", criteria)
        return ScoreQuestion(instructions, [str(level) for level in levels])
    raise ClassifierError(f"classifier: not a question wire form: type {kind!r}")


def canonical_json(value: object) -> bytes:
    """``value`` as canonical JSON bytes: keys sorted, arrays kept, compact, UTF-8 unescaped.

    Raises:
        ValueError: ``value`` holds a NaN or an infinity (not JSON).
        TypeError: ``value`` holds something JSON cannot carry.

    >>> canonical_json({"b": 1, "a": ["é", 2]})
    b'{"a":["\\xc3\\xa9",2],"b":1}'
    """
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def canonical_request(model: str, questions: Mapping[str, Question]) -> bytes:
    """The canonical bytes of ``{model, questions}``: what a request means, its state aside
    (numbers in a state do not canonicalise across languages, so no hash covers them)."""
    return canonical_json({"model": model, "questions": questions_wire(questions)})


def check_limits(questions: Mapping[str, Question]) -> None:
    """Refuse, before anything is sent, a question outside the limits (keys in sorted order).

    Raises:
        ClassifierError: naming the first offending key and the limit.
    """
    for key in sorted(questions):
        question = cast(object, questions[key])
        if isinstance(question, ChoiceQuestion):
            n = len(question.criteria)
            if not 1 <= n <= MAX_CHOICE_OPTIONS:
                raise ClassifierError(
                    f"classifier: question {key!r}: a choice needs 1..{MAX_CHOICE_OPTIONS} "
                    f"options, got {n}"
                )
        elif isinstance(question, ScoreQuestion):
            n = len(question.criteria)
            if not MIN_SCORE_LEVELS <= n <= MAX_SCORE_LEVELS:
                raise ClassifierError(
                    f"classifier: question {key!r}: a score needs "
                    f"{MIN_SCORE_LEVELS}..{MAX_SCORE_LEVELS} ordered levels, got {n}"
                )
        elif not isinstance(question, NoulQuestion):
            raise ClassifierError(
                f"classifier: question {key!r} is a {type(question).__name__}, not a question"
            )


def degenerate_reason(question: Question) -> str | None:
    """Why a choice's options cannot be told apart by their meanings, or ``None``.

    A single option is never degenerate (there is nothing to tell apart). With two or more:
    every meaning empty, every meaning only its own id, or every meaning the same.
    """
    if not isinstance(question, ChoiceQuestion) or len(question.criteria) < 2:
        return None
    meanings = list(question.criteria.values())
    if all(not m.strip() for m in meanings):
        return "every option's meaning is empty"
    if all(meaning == key for key, meaning in question.criteria.items()):
        return "every option's meaning only repeats its id"
    if len(set(meanings)) == 1:
        return "every option has the same meaning"
    return None
