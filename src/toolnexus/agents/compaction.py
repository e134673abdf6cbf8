"""Context compaction (CONTRACT §7F): a ``before_llm`` hook that summarizes the older transcript.

::

    async def summarize(older: list[dict]) -> str:
        return await cheap_model.ask("Summarize:\\n" + render(older))

    client = create_client(..., hooks={"before_llm": compactor(max_tokens=60_000,
                                                               summarize=summarize)})

While the transcript's estimate stays at or under ``max_tokens`` the hook returns ``None`` and
the request goes out byte-identical. Above it, the hook sends instead::

    [leading system message (verbatim, when there is one),
     {"role": "system", "content": "[Summary of earlier conversation]\\n" + summary},
     (the flush reminder, with flush_to_memory=True),
     ...tail]

**Tool-pair safety.** The tail always starts at a ``user`` message that carries no tool result,
so an assistant's tool calls are never separated from their results. Such a message counts as
a *boundary* only when something precedes it to summarize (the leading system message aside):
a single prompt followed by a long tool loop has no boundary. The tail is the largest one
starting at a boundary whose count fits in ``keep_tail``; when even the shortest is too big, it
is the shortest; when there is no boundary at all, everything is summarized and the tail is
empty. (A transcript holding nothing but its leading system message is left as it is.) A
``user`` message counts as carrying a tool result when it has a ``tool_call_id`` or a
content block of type ``tool_result`` (the Anthropic shape); ``tool`` messages are never
boundaries. A leading ``developer`` message is kept like a ``system`` one.

The hook is pure: it never modifies the transcript it was given (so a runtime turn that rewinds
after a suspension restores the full transcript, §3.7), and the library never calls a model on
its own — ``summarize`` is the host's. An exception from ``summarize`` (or ``count_tokens``)
propagates: the loop wraps it in `CallbackError` and the run stops, rather than carrying on
with a transcript over budget.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias, cast

from .._types import Message
from ..errors import UsageError

__all__ = [
    "FLUSH_REMINDER",
    "SUMMARY_PREFIX",
    "BeforeLLMHook",
    "CountTokens",
    "Summarize",
    "compactor",
    "estimate_tokens",
]

SUMMARY_PREFIX = "[Summary of earlier conversation]\n"

FLUSH_REMINDER = (
    "Before continuing: if anything from earlier is worth keeping, save it with the memory "
    "tool now — the earlier transcript is about to be summarized."
)

Summarize: TypeAlias = Callable[[list[Message]], str | Awaitable[str]]
"""``summarize(older) -> str``, sync or async."""

CountTokens: TypeAlias = Callable[[Sequence[Message]], int]
"""``count_tokens(messages) -> int``; must not shrink when messages are added."""

BeforeLLMHook: TypeAlias = Callable[[Mapping[str, Any]], Awaitable[dict[str, Any] | None]]

_SYSTEM_ROLES = frozenset({"system", "developer"})


def estimate_tokens(messages: Sequence[Message]) -> int:
    """A rough token count: the sum over messages of ``ceil(chars / 4)``.

    ``chars`` is the length of the message's ``json.dumps`` text with the *default* settings:
    separators ``", "`` and ``": "``, and ``ensure_ascii=True`` (so ``é`` counts as the six
    characters of ``\\u00e9``). A value JSON cannot encode counts as its ``str()``.

    Example:
        >>> estimate_tokens([{"role": "user", "content": "hi"}])  # 33 chars
        9
    """
    return sum(-(-len(json.dumps(message, default=str)) // 4) for message in messages)


def compactor(
    *,
    max_tokens: int,
    summarize: Summarize,
    keep_tail: int | None = None,
    count_tokens: CountTokens | None = None,
    flush_to_memory: bool = False,
) -> BeforeLLMHook:
    """Build a ``before_llm`` hook that compacts the transcript once it exceeds ``max_tokens``.

    Args:
        max_tokens: compact only when the count exceeds this.
        summarize: turns the older messages into summary text; may be async and may call a
            model. It receives a new list; the messages in it are the transcript's own.
        keep_tail: the token budget of the verbatim tail (default ``max_tokens // 2``).
        count_tokens: the counter for both limits (default `estimate_tokens`).
        flush_to_memory: add a system message asking the agent to save what matters with
            the ``memory`` tool before the earlier transcript is gone.

    Returns:
        An async hook: ``await hook({"messages": [...], ...})`` is ``None`` (no change) or
        ``{"messages": compacted}``.

    Raises:
        UsageError: a limit is not a non-negative integer (``max_tokens`` must be positive),
            or ``summarize`` / ``count_tokens`` is not callable.

    Example::

        hook = compactor(max_tokens=1000, summarize=lambda older: "the user asked about tea")
        change = await hook({"messages": transcript, "tools": [], "model": "m", "turn": 3})
    """
    if not _is_count(max_tokens) or max_tokens <= 0:
        raise UsageError(f"max_tokens must be a positive integer, got {max_tokens!r}")
    tail_budget = max_tokens // 2 if keep_tail is None else keep_tail
    if not _is_count(tail_budget) or tail_budget < 0:
        raise UsageError(f"keep_tail must be an integer >= 0, got {keep_tail!r}")
    if not callable(summarize):
        raise UsageError("summarize must be callable")
    if count_tokens is not None and not callable(count_tokens):
        raise UsageError("count_tokens must be callable")
    count: CountTokens = count_tokens or estimate_tokens

    async def before_llm(info: Mapping[str, Any]) -> dict[str, Any] | None:
        messages = _messages_of(info)
        if count(messages) <= max_tokens:
            return None
        head: list[Message] = []
        body = messages
        if messages and _role(messages[0]) in _SYSTEM_ROLES:
            head, body = [messages[0]], messages[1:]
        start = _tail_start(body, tail_budget, count)
        if start == 0:
            return None  # nothing but the leading system message: nothing to summarize
        summary = await _summary_of(summarize, list(body[:start]))
        out = [*head, {"role": "system", "content": SUMMARY_PREFIX + summary}]
        if flush_to_memory:
            out.append({"role": "system", "content": FLUSH_REMINDER})
        out.extend(body[start:])
        return {"messages": out}

    return before_llm


async def _summary_of(summarize: Summarize, older: list[Message]) -> str:
    summary: Any = summarize(older)  # Any: a host's callable may return anything at all
    if inspect.isawaitable(summary):
        summary = await summary
    if not isinstance(summary, str):
        raise UsageError(f"summarize must return a str, got {type(summary).__name__}")
    return summary


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _messages_of(info: Mapping[str, Any]) -> list[Message]:
    messages: object = info.get("messages")
    if not isinstance(messages, list):
        raise UsageError("the before_llm info must carry a list of messages")
    return cast(list[Message], messages)


def _role(message: object) -> object:
    return cast(Mapping[str, object], message).get("role") if isinstance(message, dict) else None


def _tail_start(body: list[Message], budget: int, count: CountTokens) -> int:
    """Where the verbatim tail begins; ``len(body)`` means an empty tail."""
    boundaries = [i for i in range(1, len(body)) if _is_boundary(body[i])]
    if not boundaries:
        return len(body)
    chosen = boundaries[-1]  # the shortest tail, kept even when it exceeds the budget
    for start in reversed(boundaries):
        if count(body[start:]) > budget:
            break  # counts only grow with more messages: no earlier boundary fits either
        chosen = start
    return chosen


def _is_boundary(message: object) -> bool:
    """A ``user`` message that carries no tool result (either dialect)."""
    if _role(message) != "user":
        return False
    fields = cast(Mapping[str, object], message)
    if "tool_call_id" in fields:
        return False
    content = fields.get("content")
    if isinstance(content, list):
        return not any(_is_tool_result(block) for block in cast(list[object], content))
    return True


def _is_tool_result(block: object) -> bool:
    return (
        isinstance(block, dict) and cast(Mapping[str, object], block).get("type") == "tool_result"
    )
