"""A classifier's answers, the `Decision` that holds them, and the strict wire decoder.

The wire bodies are ``{type: "noul", noul}``, ``{type: "choice", choice, probabilities,
confidence}`` and ``{type: "score", score, legend, probabilities, confidence}``. A decoded
choice also says whether its distribution is `near_uniform` — derived here, never read from the
wire. A malformed answer is an error, never repaired: a guess at what a broken reply meant
would be a decision nobody made.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, TypeVar, cast

from ..errors import ClassifierError

__all__ = [
    "NEAR_UNIFORM_TOLERANCE",
    "ChoiceAnswer",
    "ClassifierUsage",
    "Decision",
    "DecisionAnswer",
    "NoulAnswer",
    "ScoreAnswer",
    "answer_wire",
    "decision_from_wire",
    "decision_wire",
    "near_uniform",
]

NEAR_UNIFORM_TOLERANCE = 0.05
"""A choice is near-uniform when no probability strays more than this from ``1/n``."""


@dataclass(slots=True)
class NoulAnswer:
    """The probability that the question's instructions hold."""

    noul: float

    @property
    def type(self) -> Literal["noul"]:
        return "noul"


@dataclass(slots=True)
class ChoiceAnswer:
    """The chosen option, every option's probability, and the confidence in the choice.

    ``near_uniform`` is derived when a reply is decoded (see `near_uniform`): a confident-looking
    pick out of a flat distribution is a coin toss.
    """

    choice: str
    probabilities: dict[str, float]
    confidence: float
    near_uniform: bool = False

    @property
    def type(self) -> Literal["choice"]:
        return "choice"


@dataclass(slots=True)
class ScoreAnswer:
    """The expected level on the scale, the legend of levels (``"0"`` → the first level), each
    level's probability, and the confidence."""

    score: float
    legend: dict[str, str]
    probabilities: dict[str, float]
    confidence: float

    @property
    def type(self) -> Literal["score"]:
        return "score"

    def levels(self) -> list[str]:
        """The legend's texts in level order (``"2"`` before ``"10"``)."""
        return [self.legend[key] for key in sorted(self.legend, key=lambda k: (len(k), k))]


DecisionAnswer: TypeAlias = NoulAnswer | ChoiceAnswer | ScoreAnswer
"""Any of the three answer kinds."""

_A = TypeVar("_A", NoulAnswer, ChoiceAnswer, ScoreAnswer)


@dataclass(slots=True)
class ClassifierUsage:
    """What one evaluation cost. An absent ``cost`` stays ``None``: "the backend does not say"
    is not "free"."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None


@dataclass(slots=True)
class Decision:
    """A classifier's answers to one evaluation, keyed as the questions were.

    Read them typed: ``d.noul("is_refund").noul``, ``d.choice("department").choice``,
    ``d.score("urgency").score``. ``calibrated`` is ``False`` when the probabilities are a
    language model's guesses rather than a calibrated classifier's.
    """

    model: str = ""
    answers: dict[str, DecisionAnswer] = field(default_factory=lambda: {})
    usage: ClassifierUsage = field(default_factory=ClassifierUsage)
    calibrated: bool = True

    def _typed(self, key: str, kind: type[_A], name: str) -> _A:
        answer = self.answers.get(key)
        if answer is None:
            raise ClassifierError(f"classifier: no answer {key!r} in this decision")
        if not isinstance(answer, kind):
            raise ClassifierError(
                f"classifier: answer {key!r} is a {answer.type} answer, not {name}"
            )
        return answer

    def noul(self, key: str) -> NoulAnswer:
        """The noul answer under ``key``.

        Raises:
            ClassifierError: there is none, or it is of another type.
        """
        return self._typed(key, NoulAnswer, "noul")

    def choice(self, key: str) -> ChoiceAnswer:
        """The choice answer under ``key`` (errors as `noul`)."""
        return self._typed(key, ChoiceAnswer, "choice")

    def score(self, key: str) -> ScoreAnswer:
        """The score answer under ``key`` (errors as `noul`)."""
        return self._typed(key, ScoreAnswer, "score")


def near_uniform(probabilities: Mapping[str, float]) -> bool:
    """Whether ``max |p − 1/n| ≤ 0.05`` over the values as given (not renormalised).

    One option is uniform whatever its value; no options are not.

    >>> near_uniform({"a": 0.52, "b": 0.48}), near_uniform({"a": 0.9, "b": 0.1})
    (True, False)
    """
    n = len(probabilities)
    if n == 0:
        return False
    if n == 1:
        return True
    even = 1.0 / n
    return max(abs(p - even) for p in probabilities.values()) <= NEAR_UNIFORM_TOLERANCE


# -- the wire --------------------------------------------------------------------------------


def answer_wire(answer: DecisionAnswer) -> dict[str, Any]:
    """An answer's wire body (``near_uniform`` is derived, so it is not part of it)."""
    if isinstance(answer, NoulAnswer):
        return {"type": "noul", "noul": answer.noul}
    if isinstance(answer, ChoiceAnswer):
        return {
            "type": "choice",
            "choice": answer.choice,
            "probabilities": dict(answer.probabilities),
            "confidence": answer.confidence,
        }
    return {
        "type": "score",
        "score": answer.score,
        "legend": dict(answer.legend),
        "probabilities": dict(answer.probabilities),
        "confidence": answer.confidence,
    }


def decision_wire(decision: Decision) -> dict[str, Any]:
    """A decision as the systemone response it could have come from (`decision_from_wire`
    reads it back to an equal decision)."""
    usage: dict[str, Any] = {
        "input_tokens": decision.usage.input_tokens,
        "output_tokens": decision.usage.output_tokens,
    }
    if decision.usage.cost is not None:
        usage["cost"] = decision.usage.cost
    return {
        "model": decision.model,
        "answers": {key: answer_wire(a) for key, a in decision.answers.items()},
        "usage": usage,
        "calibrated": decision.calibrated,
    }


# A probability a hair outside 0..1 is rounding, not a malformed reply; it is kept as sent.
_SLACK = 1e-9


class _Malformed(Exception):
    """What is wrong with one field; `decision_from_wire` names where."""


def _number(value: object, what: str, *, unit: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Malformed(f"{what} must be a number, got {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number) or (unit and not -_SLACK <= number <= 1.0 + _SLACK):
        raise _Malformed(f"{what} must be {'in 0..1' if unit else 'finite'}, got {value!r}")
    return number


def _string(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise _Malformed(f"{what} must be a string, got {type(value).__name__}")
    return value


def _object(value: object, what: str) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise _Malformed(f"{what} must be an object, got {type(value).__name__}")
    return cast("Mapping[str, object]", value)


def _probabilities(value: object) -> dict[str, float]:
    table = _object(value, "probabilities")
    return {str(k): _number(p, f"probability {k!r}", unit=True) for k, p in table.items()}


def _answer(body: object) -> DecisionAnswer:
    wire = _object(body, "an answer")
    kind = wire.get("type")
    if kind == "noul":
        return NoulAnswer(_number(wire.get("noul"), "noul", unit=True))
    if kind == "choice":
        probabilities = _probabilities(wire.get("probabilities"))
        return ChoiceAnswer(
            _string(wire.get("choice"), "choice"),
            probabilities,
            _number(wire.get("confidence"), "confidence", unit=True),
            near_uniform(probabilities),
        )
    if kind == "score":
        level = _number(wire.get("score"), "score")
        legend = _object(wire.get("legend"), "legend")
        return ScoreAnswer(
            level,
            {str(k): _string(v, f"legend {k!r}") for k, v in legend.items()},
            _probabilities(wire.get("probabilities")),
            _number(wire.get("confidence"), "confidence", unit=True),
        )
    raise _Malformed(f"unknown answer type {kind!r}")


def _usage(value: object) -> ClassifierUsage:
    if value is None:
        return ClassifierUsage()
    usage = _object(value, "usage")
    tokens: list[int] = []
    for name in ("input_tokens", "output_tokens"):
        count = usage.get(name, 0)
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise _Malformed(f"usage.{name} must be a whole number ≥ 0, got {count!r}")
        tokens.append(count)
    cost = usage.get("cost")
    return ClassifierUsage(
        tokens[0], tokens[1], None if cost is None else _number(cost, "usage.cost")
    )


def decision_from_wire(wire: object, *, calibrated: bool | None = None) -> Decision:
    """Decode a response ``{model, answers, usage?, calibrated?}`` into a `Decision`.

    An absent (or null) ``calibrated`` means ``True``; ``calibrated=`` overrides what the
    reply says (the ``llm`` style is never calibrated).

    Raises:
        ClassifierError: anything malformed, naming the field (``answer 'urgency': score must
            be a number, got str``).
    """
    try:
        response = _object(wire, "the response")
        model = response.get("model", "")
        answers_wire = _object(response.get("answers"), "answers")
        answers: dict[str, DecisionAnswer] = {}
        for key, body in answers_wire.items():
            try:
                answers[str(key)] = _answer(body)
            except _Malformed as exc:
                raise _Malformed(f"answer {key!r}: {exc}") from None
        usage = _usage(response.get("usage"))
        said = response.get("calibrated")
        if said is not None and not isinstance(said, bool):
            raise _Malformed(f"calibrated must be true or false, got {said!r}")
    except _Malformed as exc:
        raise ClassifierError(f"classifier: malformed response: {exc}") from None
    return Decision(
        model=model if isinstance(model, str) else str(model),
        answers=answers,
        usage=usage,
        calibrated=(said is not False) if calibrated is None else calibrated,
    )
