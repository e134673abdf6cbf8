"""Routers: which agent should take a task, and which model should answer a request.

A router acts only on a sure pick (confidence above the bands' ``high`` and a distribution
that is not near-uniform); anything else — unsure, unanswered, a pick that is not one of the
options, a classifier error — is the caller's ``fallback``. So routers take no ``on_error``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

from .answers import ChoiceAnswer, Decision
from .battery import (
    ROLE_AGENT_ROUTER,
    ROLE_MODEL_ROUTER,
    Hook,
    NextHook,
    consult,
    field_text,
    latest_user_text,
    then_llm,
)
from .judge import DEFAULT_BANDS, Bands, Evaluates
from .questions import ChoiceQuestion, Question

__all__ = [
    "AGENT_INSTRUCTIONS",
    "MODEL_INSTRUCTIONS",
    "AgentRouterClassifier",
    "AgentVerdict",
    "ModelRouterClassifier",
    "ModelVerdict",
]

AGENT_INSTRUCTIONS: Final = "Which agent should handle `task`?"
MODEL_INSTRUCTIONS: Final = "Which model should answer `user_request`?"


def _sure_pick(
    decision: Decision, key: str, options: Mapping[str, object], bands: Bands
) -> tuple[str | None, ChoiceAnswer | None]:
    """The option a decision surely picks under ``key`` (else ``None``), and the answer."""
    answer = decision.answers.get(key)
    if not isinstance(answer, ChoiceAnswer):
        return None, None
    sure = bands.sure(answer.confidence, answer.near_uniform) and answer.choice in options
    return (answer.choice if sure else None), answer


# -- agents ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AgentVerdict:
    """Where a task goes.

    Attributes:
        agent: the picked agent, or the fallback.
        path: the sure picks from the top level down (a group, then its member…).
        sure: whether every level was sure (``agent`` is then not the fallback).
        probabilities: the last answered level's distribution (``None`` if none).
        calibrated: ``True`` only when every answered level was calibrated.
    """

    agent: str
    path: list[str] = field(default_factory=lambda: [])
    sure: bool = False
    probabilities: dict[str, float] | None = None
    calibrated: bool = True
    error: str | None = None
    decision: Decision | None = field(default=None, compare=False)


class AgentRouterClassifier:
    """Routes a task down a tree of agents, one choice per level: a node with ``agents`` is a
    group whose members are chosen among next. Where a level has two nodes of one name, the
    first counts."""

    def __init__(
        self, classifier: Evaluates, *, bands: Bands | None = None, role: str = ""
    ) -> None:
        self.classifier = classifier
        self.bands = bands or DEFAULT_BANDS
        self.role = role or ROLE_AGENT_ROUTER

    async def pick(self, task: object, agents: Sequence[object], fallback: str) -> AgentVerdict:
        """Pick an agent for ``task`` (nodes: mappings or objects with ``name``,
        ``description`` and optionally ``agents``). Never raises on a classifier error."""
        st = {"task": task, "role": self.role}
        path: list[str] = []
        probabilities: dict[str, float] | None = None
        calibrated = True
        decision: Decision | None = None
        level: Sequence[object] = agents
        while level:
            nodes: dict[str, object] = {}
            for node in level:
                nodes.setdefault(field_text(node, "name"), node)
            options = {name: field_text(node, "description") for name, node in nodes.items()}
            qs: dict[str, Question] = {"agent": ChoiceQuestion(AGENT_INSTRUCTIONS, options)}
            answered, error = await consult(self.classifier, st, qs)
            if answered is None:
                return AgentVerdict(fallback, path, False, probabilities, False, error, decision)
            decision = answered
            calibrated = calibrated and decision.calibrated
            picked, answer = _sure_pick(decision, "agent", options, self.bands)
            if answer is not None:
                probabilities = dict(answer.probabilities)
            if picked is None:
                return AgentVerdict(
                    fallback, path, False, probabilities, calibrated, None, decision
                )
            path.append(picked)
            members = _members(nodes[picked])
            if not members:
                return AgentVerdict(picked, path, True, probabilities, calibrated, None, decision)
            level = members
        return AgentVerdict(fallback, path, False, probabilities, calibrated, None, decision)


def _members(node: object) -> Sequence[object]:
    found: object = (
        cast("Mapping[str, object]", node).get("agents")
        if isinstance(node, Mapping)
        else getattr(node, "agents", None)
    )
    return cast("Sequence[object]", found) if isinstance(found, list | tuple) else ()


# -- models ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelVerdict:
    """Which model should answer: the pick when ``routed``, else the fallback."""

    model: str
    routed: bool = False
    sure: bool = False
    probabilities: dict[str, float] | None = None
    calibrated: bool = True
    error: str | None = None
    decision: Decision | None = field(default=None, compare=False)


class ModelRouterClassifier:
    """Picks the cheapest model that can answer a request well, among ``models``
    (``[{id, description}]``). Opt-in right-sizing: its hook overrides a turn's model only
    when it is sure of another one."""

    def __init__(
        self,
        classifier: Evaluates,
        models: Sequence[Mapping[str, str] | object] = (),
        *,
        bands: Bands | None = None,
        role: str = "",
    ) -> None:
        self.classifier = classifier
        self.bands = bands or DEFAULT_BANDS
        self.role = role or ROLE_MODEL_ROUTER
        self.models: dict[str, str] = {}
        for entry in models:
            self.models.setdefault(field_text(entry, "id"), field_text(entry, "description"))

    async def pick(self, prompt: str, fallback: str) -> ModelVerdict:
        """Pick a model for ``prompt``. Never raises on a classifier error."""
        if not self.models:
            return ModelVerdict(fallback)
        qs: dict[str, Question] = {"model": ChoiceQuestion(MODEL_INSTRUCTIONS, dict(self.models))}
        decision, error = await consult(
            self.classifier, {"user_request": prompt, "role": self.role}, qs
        )
        if decision is None:
            return ModelVerdict(fallback, calibrated=False, error=error)
        picked, answer = _sure_pick(decision, "model", self.models, self.bands)
        probabilities = dict(answer.probabilities) if answer is not None else None
        if picked is None:
            return ModelVerdict(
                fallback, False, False, probabilities, decision.calibrated, None, decision
            )
        return ModelVerdict(picked, True, True, probabilities, decision.calibrated, None, decision)

    def as_hook(self, next: NextHook | None = None) -> Hook:
        """A ``before_llm`` hook: the turn's configured model is the fallback; the override
        ``{"model": …}`` is returned only when routed to a different model."""

        async def before_llm(event: dict[str, Any]) -> dict[str, Any] | None:
            configured = event.get("model")
            fallback = configured if isinstance(configured, str) else ""
            text = latest_user_text(cast("list[object]", event.get("messages") or []))
            change: dict[str, Any] | None = None
            if text:
                verdict = await self.pick(text, fallback)
                if verdict.routed and verdict.model != fallback:
                    change = {"model": verdict.model}
            return await then_llm(change, event, next)

        return before_llm
