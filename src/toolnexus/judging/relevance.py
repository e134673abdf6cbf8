"""Relevance batteries: which tools or skills a request needs, which parts of a tool's output
matter, and whether an answer completes its task.

Each asks one noul question per item and drops an item only on a confident *no*: an
uncertain, missing or yes answer keeps it, since dropping a needed tool costs more than
keeping an idle one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

from .._types import ToolResult
from ..suspend import pending_of
from .answers import Decision, NoulAnswer
from .battery import (
    ROLE_IS_COMPLETE,
    ROLE_SKILL_RELEVANCE,
    ROLE_TOOL_RELEVANCE,
    ROLE_TOOL_RESULT_FILTER,
    Battery,
    Hook,
    NextHook,
    call_next,
    consult,
    field_text,
    latest_user_text,
    then_llm,
)
from .judge import Band
from .questions import NoulCriteria, NoulQuestion, Question

__all__ = [
    "CHUNK_SEPARATOR",
    "CompleteVerdict",
    "FilterVerdict",
    "IsCompleteClassifier",
    "RelevanceVerdict",
    "SkillRelevanceClassifier",
    "ToolRelevanceClassifier",
    "ToolResultFilterClassifier",
]

CHUNK_SEPARATOR: Final = "\n\n"
"""Where the tool result filter's hook splits an output (exactly, no trimming)."""


@dataclass(frozen=True, slots=True)
class RelevanceVerdict:
    """The items kept (``selected``) and dropped, by name, in input order."""

    selected: list[str] = field(default_factory=lambda: [])
    dropped: list[str] = field(default_factory=lambda: [])
    calibrated: bool = True
    error: str | None = None
    decision: Decision | None = field(default=None, compare=False)


class _Relevance(Battery):
    """One noul per named item, keyed by its name (a repeated name is asked once): "Is the
    <noun> `<name>` <asks> the request in `user_request`? The <noun>: <description>"."""

    noun: str = "tool"
    asks: str = "needed for"
    default_role = ROLE_TOOL_RELEVANCE
    criteria = NoulCriteria(
        "the request cannot be done well without this tool",
        "the request can be done without this tool",
    )

    def _instructions(self, name: str, description: str) -> str:
        text = f"Is the {self.noun} `{name}` {self.asks} the request in `user_request`?"
        return f"{text} The {self.noun}: {description}" if description else text

    async def select(self, prompt: str, items: Sequence[object]) -> RelevanceVerdict:
        """Judge each item (a mapping or an object with ``name`` and ``description``) against
        ``prompt``. Never raises on a classifier error."""
        names = [field_text(item, "name") for item in items]
        if not names:
            return RelevanceVerdict()
        qs: dict[str, Question] = {}
        for name, item in zip(names, items, strict=True):
            if name not in qs:
                instructions = self._instructions(name, field_text(item, "description"))
                qs[name] = NoulQuestion(instructions, self.criteria)
        decision, error = await consult(
            self.classifier, {"user_request": prompt, "role": self.role}, qs
        )
        if decision is None:
            if self.on_error == "open":
                return RelevanceVerdict(names, [], False, error)
            return RelevanceVerdict([], names, False, error)
        selected: list[str] = []
        dropped: list[str] = []
        for name in names:
            answer = decision.answers.get(name)
            no = isinstance(answer, NoulAnswer) and self.bands.noul(answer.noul) == "no"
            (dropped if no else selected).append(name)
        return RelevanceVerdict(selected, dropped, decision.calibrated, decision=decision)


class ToolRelevanceClassifier(_Relevance):
    """Keeps the tools a request needs; its hook trims the tools sent to the model."""

    def as_hook(self, next: NextHook | None = None) -> Hook:
        """A ``before_llm`` hook: the provider tool entries (OpenAI ``{"function": {...}}`` or
        Anthropic ``{name, description, input_schema}``) the latest user text does not need
        are left out of the request; with nothing dropped, no override."""

        async def before_llm(event: dict[str, Any]) -> dict[str, Any] | None:
            text = latest_user_text(cast("list[object]", event.get("messages") or []))
            tools = cast("list[object]", event.get("tools") or [])
            change: dict[str, Any] | None = None
            if text and tools:
                items = [_provider_tool(entry) for entry in tools]
                verdict = await self.select(text, items)
                if verdict.dropped:
                    out = set(verdict.dropped)
                    change = {
                        "tools": [
                            e for e, i in zip(tools, items, strict=True) if i["name"] not in out
                        ]
                    }
            return await then_llm(change, event, next)

        return before_llm


def _provider_tool(entry: object) -> dict[str, str]:
    """``{name, description}`` of a provider tool entry (a non-string field reads ``""``)."""
    inner: object = entry
    if isinstance(entry, Mapping):
        function = cast("Mapping[str, object]", entry).get("function")
        if isinstance(function, Mapping):
            inner = cast("Mapping[str, object]", function)
    return {"name": field_text(inner, "name"), "description": field_text(inner, "description")}


class SkillRelevanceClassifier(_Relevance):
    """Keeps the skills a request needs (no hook: the host picks what it loads)."""

    noun = "skill"
    asks = "relevant to"
    default_role = ROLE_SKILL_RELEVANCE
    criteria = NoulCriteria(
        "the skill's instructions would help with this request",
        "the skill is unrelated to this request",
    )


# -- tool results ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FilterVerdict:
    """The chunks kept and dropped, by index, in order."""

    kept: list[int] = field(default_factory=lambda: [])
    dropped: list[int] = field(default_factory=lambda: [])
    calibrated: bool = True
    error: str | None = None
    decision: Decision | None = field(default=None, compare=False)


class ToolResultFilterClassifier(Battery):
    """Keeps the parts of a tool's output that help answer a query."""

    default_role = ROLE_TOOL_RESULT_FILTER
    criteria = NoulCriteria(
        "this part helps answer the query", "this part does not help answer the query"
    )

    async def filter(self, query: object, chunks: Sequence[str]) -> FilterVerdict:
        """Judge each chunk against ``query`` (text or any JSON). Never raises on a classifier
        error."""
        if not chunks:
            return FilterVerdict()
        everything = list(range(len(chunks)))
        qs: dict[str, Question] = {
            str(i): NoulQuestion(f"Is `chunks.{i}` relevant to `query`?", self.criteria)
            for i in everything
        }
        st = {
            "query": query,
            "chunks": {str(i): c for i, c in enumerate(chunks)},
            "role": self.role,
        }
        decision, error = await consult(self.classifier, st, qs)
        if decision is None:
            if self.on_error == "open":
                return FilterVerdict(everything, [], False, error)
            return FilterVerdict([], everything, False, error)
        kept: list[int] = []
        dropped: list[int] = []
        for i in everything:
            answer = decision.answers.get(str(i))
            no = isinstance(answer, NoulAnswer) and self.bands.noul(answer.noul) == "no"
            (dropped if no else kept).append(i)
        return FilterVerdict(kept, dropped, decision.calibrated, decision=decision)

    def as_hook(self, next: NextHook | None = None) -> Hook:
        """An ``after_tool`` hook: a successful text result of two or more ``\\n\\n``-separated
        chunks keeps only the relevant ones (the query is the call: ``{tool, arguments}``).
        Error results, results with parts and suspensions are left alone."""

        async def after_tool(event: dict[str, Any]) -> dict[str, Any] | None:
            result = event.get("result")
            if (
                isinstance(result, ToolResult)
                and not result.is_error
                and not result.parts
                and pending_of(result) is None
            ):
                chunks = result.output.split(CHUNK_SEPARATOR)
                if len(chunks) >= 2:
                    query = {"tool": event.get("name"), "arguments": event.get("args")}
                    verdict = await self.filter(query, chunks)
                    if verdict.dropped:
                        kept = CHUNK_SEPARATOR.join(chunks[i] for i in verdict.kept)
                        trimmed = dataclasses.replace(result, output=kept)
                        later = await call_next(next, {**event, "result": trimmed})
                        if isinstance(later, Mapping) and "result" in later:
                            return cast("dict[str, Any]", later)
                        return {"result": trimmed}
            return cast("dict[str, Any] | None", await call_next(next, event))

        return after_tool


# -- completion --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompleteVerdict:
    """Whether the answer completes the task: only a confident yes is ``complete``."""

    complete: bool
    p: float | None = None
    band: Band = "uncertain"
    calibrated: bool = True
    error: str | None = None
    decision: Decision | None = field(default=None, compare=False)


class IsCompleteClassifier(Battery):
    """Checks a final answer against its task (standalone; no hook)."""

    default_role = ROLE_IS_COMPLETE
    question = NoulQuestion(
        "Does `answer` fully complete the request in `task`?",
        NoulCriteria(
            "every part of the task is done and nothing asked for is missing",
            "part of the task is missing, wrong or only promised",
        ),
    )

    async def check(self, task: object, answer: object) -> CompleteVerdict:
        """Judge ``answer`` against ``task``. Never raises on a classifier error: ``open``
        counts a failure as complete, ``closed`` as not."""
        st = {"task": task, "answer": answer, "role": self.role}
        decision, error = await consult(self.classifier, st, {"complete": self.question})
        if decision is None:
            return CompleteVerdict(self.on_error == "open", calibrated=False, error=error)
        reply = decision.answers.get("complete")
        if not isinstance(reply, NoulAnswer):
            return CompleteVerdict(False, calibrated=decision.calibrated, decision=decision)
        band = self.bands.noul(reply.noul)
        return CompleteVerdict(
            band == "yes", reply.noul, band, decision.calibrated, decision=decision
        )
