"""The ``llm``, ``custom`` and ``static`` backends of a classifier.

- ``llm``: one ``client.run`` of a fixed instruction (`llm_prompt`) that embeds the canonical
  state and questions and asks for one JSON object; the outermost ``{…}`` of the reply is
  decoded strictly. A language model's probabilities are not calibrated, so the decision says
  ``calibrated=False``; its usage is the run's.
- ``custom``: the host's ``evaluate(state, questions)``, sync or async, returning a `Decision`
  (or a response's wire form).
- ``static``: recorded decisions, keyed by the canonical request and the canonical state, so
  two recordings that differ only in state stay apart. A miss is an error, never a guess.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

from .._error_body import capped_error_body
from ..errors import ClassifierError
from .answers import ClassifierUsage, Decision, decision_from_wire, decision_wire
from .questions import Question, canonical_json, canonical_request, questions_wire

__all__ = [
    "Custom",
    "CustomEvaluate",
    "Llm",
    "RecordedDecision",
    "RunsPrompts",
    "Static",
    "llm_prompt",
    "static_key",
]

CustomEvaluate = Callable[[Any, dict[str, Question]], Any]
"""``evaluate(state, questions) -> Decision`` (or an awaitable of one); ``questions`` is a
fresh copy of the evaluation's question map."""


# -- llm ---------------------------------------------------------------------------------------


class RunsPrompts(Protocol):
    """What the ``llm`` style needs of a client: ``await client.run(prompt)`` (a `Client`)."""

    def run(self, prompt: Any, /) -> Awaitable[Any]: ...


_LLM_INSTRUCTIONS = """\
Act as a classifier. Judge the state below and answer every question about it. Your whole \
reply must be one JSON object, with no words before or after it and no code fence.

The state, as JSON:
{state}

The questions, as JSON, each under the key its answer goes under:
{questions}

How to answer each kind of question:
- "noul": how probable it is, from 0 to 1, that the question's instructions hold for the \
state. Answer {{"type": "noul", "noul": <probability>}}.
- "choice": pick the best option; "criteria" maps each option id to what it means. Answer \
{{"type": "choice", "choice": "<option id>", "probabilities": {{"<option id>": \
<probability>, ...}}, "confidence": <probability of the option you picked>}}, giving a \
probability for every option.
- "score": "criteria" lists ordered levels; the first is level 0. Answer {{"type": "score", \
"score": <the expected level, a number>, "legend": {{"0": "<first level>", ...}}, \
"probabilities": {{"0": <probability>, ...}}, "confidence": <probability of the likeliest \
level>}}.

Reply in exactly this shape: {{"answers": {{"<question key>": <its answer>, ...}}}}"""


def llm_prompt(state: object, questions: Mapping[str, Question]) -> str:
    """The instruction the ``llm`` style sends: the canonical state and questions, and the
    answer shapes, asking for JSON only."""
    return _LLM_INSTRUCTIONS.format(
        state=canonical_json(state).decode("utf-8"),
        questions=canonical_json(questions_wire(questions)).decode("utf-8"),
    )


def _outermost_object(text: str) -> str | None:
    start, end = text.find("{"), text.rfind("}")
    return text[start : end + 1] if 0 <= start < end else None


class Llm:
    """The ``llm`` backend over a client (see the module docstring)."""

    def __init__(self, client: RunsPrompts) -> None:
        self._client = client

    async def evaluate(self, state: object, questions: Mapping[str, Question]) -> Decision:
        try:
            prompt = llm_prompt(state, questions)
        except (TypeError, ValueError) as exc:
            raise ClassifierError(f"classifier: the state is not JSON: {exc}") from None
        try:
            result: Any = await self._client.run(prompt)
        except Exception as exc:
            raise ClassifierError(f"classifier: llm: {type(exc).__name__}: {exc}") from exc
        if getattr(result, "status", "done") == "pending":
            raise ClassifierError(
                "classifier: llm: the run halted on a request instead of answering"
            )
        text = getattr(result, "text", None)
        found = _outermost_object(text) if isinstance(text, str) else None
        try:
            payload: object = json.loads(found) if found is not None else None
        except (ValueError, RecursionError):
            payload = None
        if not isinstance(payload, dict):
            shown = capped_error_body(None, text if isinstance(text, str) else repr(text))
            raise ClassifierError(f"classifier: llm: the reply holds no JSON object: {shown!r}")
        reply = cast("dict[str, Any]", payload)
        if "model" not in reply:
            reply = {**reply, "model": str(getattr(result, "model", "") or "")}
        decision = decision_from_wire(
            {**reply, "usage": None, "calibrated": None}, calibrated=False
        )
        decision.usage = _run_usage(getattr(result, "usage", None))
        return decision


def _run_usage(usage: object) -> ClassifierUsage:
    if not isinstance(usage, Mapping):
        return ClassifierUsage()
    table = cast("Mapping[str, object]", usage)
    prompt, completion = table.get("prompt_tokens", 0), table.get("completion_tokens", 0)
    return ClassifierUsage(
        prompt if isinstance(prompt, int) else 0, completion if isinstance(completion, int) else 0
    )


# -- custom ------------------------------------------------------------------------------------


class Custom:
    """The ``custom`` backend: the host's function decides."""

    def __init__(self, evaluate: CustomEvaluate) -> None:
        self._evaluate = evaluate

    async def evaluate(self, state: object, questions: Mapping[str, Question]) -> Decision:
        try:
            value: object = self._evaluate(state, dict(questions))
            if inspect.isawaitable(value):
                value = await cast("Awaitable[object]", value)
        except ClassifierError:
            raise
        except Exception as exc:
            raise ClassifierError(
                f"classifier: custom: evaluate raised {type(exc).__name__}: {exc}"
            ) from exc
        if isinstance(value, Decision):
            return value
        if isinstance(value, Mapping):
            return decision_from_wire(cast("Mapping[str, object]", value))
        raise ClassifierError(
            f"classifier: custom: evaluate returned {type(value).__name__}, not a Decision"
        )


# -- static ------------------------------------------------------------------------------------


@dataclass(slots=True)
class RecordedDecision:
    """One recorded evaluation for the ``static`` style: the state, the questions, and the
    response (its wire form, or a `Decision`)."""

    state: Any
    questions: Mapping[str, Question]
    response: Mapping[str, Any] | Decision


def static_key(model: str, questions: Mapping[str, Question], state: object) -> bytes:
    """``canonical_request(model, questions) + b"\\0" + canonical_json(state)``."""
    try:
        return canonical_request(model, questions) + b"\0" + canonical_json(state)
    except (TypeError, ValueError) as exc:
        raise ClassifierError(f"classifier: the state is not JSON: {exc}") from None


class Static:
    """The ``static`` backend: answers only what was recorded (each response is checked
    when the corpus is built, and decoded afresh on every hit)."""

    def __init__(self, model: str, decisions: Iterable[RecordedDecision]) -> None:
        self._table: dict[bytes, dict[str, Any]] = {}
        for recorded in decisions:
            response = recorded.response
            wire = (
                decision_wire(response)
                if isinstance(response, Decision)
                else decision_wire(decision_from_wire(response))
            )
            self._table[static_key(model, recorded.questions, recorded.state)] = wire
        self._model = model

    async def evaluate(self, state: object, questions: Mapping[str, Question]) -> Decision:
        wire = self._table.get(static_key(self._model, questions, state))
        if wire is None:
            raise ClassifierError("classifier: static: no recorded decision for this request+state")
        return decision_from_wire(wire)
