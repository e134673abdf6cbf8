"""What every battery shares: the default roles, the ``on_error`` rule, the text the
``before_llm`` hooks judge, and the way a battery's hook composes with the host's own.

A battery is advisory: its standalone method never raises on a classifier error; the verdict
carries ``error``, and ``on_error`` (``"open"`` or ``"closed"``, required where a failure must
pick a side) says which way it falls. The routers need none: their fallback is the outcome
of a failure.

The hooks compose with a ``next`` hook: a ``before_llm`` battery hands ``next`` the event as
it left it (its override applied), and ``next``'s non-absent fields win; a ``before_tool`` or
``after_tool`` battery calls ``next`` when it lets the call through.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar, Final, Literal, TypeAlias, cast

from ..errors import ClassifierError, UsageError
from .answers import Decision
from .judge import DEFAULT_BANDS, Bands, Evaluates
from .questions import Question

__all__ = [
    "RISK_RUBRIC",
    "ROLE_AGENT_ROUTER",
    "ROLE_CONTENT_GUARD",
    "ROLE_IS_COMPLETE",
    "ROLE_MODEL_ROUTER",
    "ROLE_SKILL_RELEVANCE",
    "ROLE_TOOL_GUARD",
    "ROLE_TOOL_RELEVANCE",
    "ROLE_TOOL_RESULT_FILTER",
    "Battery",
    "Hook",
    "NextHook",
    "OnFailure",
    "call_next",
    "check_on_error",
    "consult",
    "field_text",
    "latest_user_text",
    "then_llm",
]

ROLE_TOOL_GUARD: Final = (
    "You review one tool call an AI agent is about to make and rate how risky it is to run it "
    "without a human approving it."
)
ROLE_TOOL_RELEVANCE: Final = (
    "You decide which tools an AI agent needs for the user's request, so the tools it does not "
    "need can be left out."
)
ROLE_SKILL_RELEVANCE: Final = (
    "You decide which agent skills are relevant to the user's request, so the skills it does "
    "not need can be left out."
)
ROLE_TOOL_RESULT_FILTER: Final = (
    "You decide which parts of a tool's output are relevant to the query, so the irrelevant "
    "parts can be dropped."
)
ROLE_IS_COMPLETE: Final = (
    "You check whether an AI agent's final answer completes the task it was given."
)
ROLE_AGENT_ROUTER: Final = "You route a task to the agent best suited to do it."
ROLE_CONTENT_GUARD: Final = "You screen text that is about to enter or leave an AI agent."
ROLE_MODEL_ROUTER: Final = "You pick the cheapest model that can handle the user's request well."

RISK_RUBRIC: Final = (
    "harmless: it only reads or looks something up and changes nothing",
    "reversible: it changes local or draft state that is easy to undo",
    "consequential: it sends, publishes, deploys or changes shared state that is hard to undo",
    "destructive: it deletes data, moves money, touches credentials or cannot be undone",
)
"""The tool guard's four risk levels, 0 to 3."""

OnFailure: TypeAlias = Literal["open", "closed"]
Hook: TypeAlias = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]
"""A loop hook as a battery returns it (async)."""
NextHook: TypeAlias = Callable[[dict[str, Any]], Any]
"""The host's hook a battery hook hands over to (sync or async)."""


def check_on_error(battery: str, on_error: object) -> OnFailure:
    """``on_error`` as given, or the pinned refusal.

    Raises:
        UsageError: (a ``ValueError``) it is neither ``"open"`` nor ``"closed"``.
    """
    if on_error == "open" or on_error == "closed":
        return cast("OnFailure", on_error)
    raise UsageError(f'{battery}: on_error (onError) is required and must be "open" or "closed"')


class Battery:
    """What a battery that must pick a side holds: its classifier, its bands, its role (the
    state's ``role``; ``default_role`` when empty) and ``on_error``.

    Raises:
        UsageError: (a ``ValueError``) ``on_error`` is neither ``"open"`` nor ``"closed"``.
    """

    default_role: ClassVar[str] = ""

    def __init__(
        self,
        classifier: Evaluates,
        *,
        on_error: str | None = None,
        bands: Bands | None = None,
        role: str = "",
    ) -> None:
        self.on_error = check_on_error(type(self).__name__, on_error)
        self.classifier = classifier
        self.bands = bands or DEFAULT_BANDS
        self.role = role or self.default_role


async def consult(
    classifier: Evaluates, state: object, questions: Mapping[str, Question]
) -> tuple[Decision | None, str | None]:
    """``(decision, None)``, or ``(None, error text)`` when the classifier failed."""
    try:
        return await classifier.evaluate(state, questions), None
    except ClassifierError as exc:
        return None, str(exc)


def field_text(item: object, name: str) -> str:
    """A text field of a mapping or an object; anything that is not a string reads as ``""``."""
    value: object = (
        cast("Mapping[str, object]", item).get(name)
        if isinstance(item, Mapping)
        else getattr(item, name, None)
    )
    return value if isinstance(value, str) else ""


def latest_user_text(messages: Sequence[object]) -> str:
    """The text of the last user message that has any: a string content, or the ``text`` of
    its text parts joined by newlines. A user message holding only tool results is skipped;
    none at all gives ``""``.

    >>> latest_user_text([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "?"}])
    'hi'
    """
    for message in reversed(messages):
        if not isinstance(message, Mapping):
            continue
        entry = cast("Mapping[str, object]", message)
        if entry.get("role") != "user":
            continue
        content = entry.get("content")
        if isinstance(content, str):
            if content:
                return content
            continue
        if isinstance(content, list):
            parts = [
                cast("Mapping[str, object]", part)
                for part in cast("list[object]", content)
                if isinstance(part, Mapping)
            ]
            texts = [field_text(part, "text") for part in parts if part.get("type") == "text"]
            if texts:
                return "\n".join(texts)
    return ""


async def call_next(next_hook: NextHook | None, event: dict[str, Any]) -> Any:
    """The host's hook on ``event`` (awaited when it is async), or ``None`` without one."""
    if next_hook is None:
        return None
    value: object = next_hook(event)
    if inspect.isawaitable(value):
        value = await cast("Awaitable[object]", value)
    return value


async def then_llm(
    change: dict[str, Any] | None, event: dict[str, Any], next_hook: NextHook | None
) -> dict[str, Any] | None:
    """A ``before_llm`` battery's ``change`` composed with ``next``: ``next`` sees the event
    with the change applied, and its non-absent fields win."""
    if next_hook is None:
        return change
    later = await call_next(next_hook, {**event, **change} if change else event)
    if not isinstance(later, Mapping):
        return change
    merged = dict(change or {})
    merged.update({k: v for k, v in cast("Mapping[str, Any]", later).items() if v is not None})
    return merged or None
