"""The four loop hooks, normalised from whatever the host passed.

Hooks may be given as an object with methods, a mapping of callables, or a `Hooks` value; each
callable may be sync or async. A raising hook aborts the run with a `CallbackError`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from ..errors import CallbackError, UsageError

__all__ = ["HOOK_NAMES", "Hooks", "LlmChange", "as_hooks", "call_callback", "llm_change"]

HOOK_NAMES = ("before_llm", "after_llm", "before_tool", "after_tool")

Hook = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True, slots=True)
class Hooks:
    """``before_llm`` / ``after_llm`` / ``before_tool`` / ``after_tool`` callbacks.

    - ``before_llm({messages, tools, model, turn})`` may return ``{messages?, tools?}``.
    - ``after_llm({response, model, turn})`` observes the raw provider payload.
    - ``before_tool({name, args, id, turn})`` may return ``{result}`` (short-circuit; the tool
      never runs) or ``{args}`` (rewrite). On the retry after a suspension was answered, the
      info also carries ``answer``.
    - ``after_tool({name, args, result, id, turn})`` may return ``{result}`` to replace it.
    """

    before_llm: Hook | None = None
    after_llm: Hook | None = None
    before_tool: Hook | None = None
    after_tool: Hook | None = None

    @property
    def empty(self) -> bool:
        return not (self.before_llm or self.after_llm or self.before_tool or self.after_tool)


def as_hooks(value: object) -> Hooks:
    """Accept ``None``, a `Hooks`, a mapping or an object with hook attributes."""
    if value is None:
        return Hooks()
    if isinstance(value, Hooks):
        return value
    found: dict[str, Hook] = {}
    for name in HOOK_NAMES:
        fn: object = (
            cast(Mapping[str, object], value).get(name)
            if isinstance(value, Mapping)
            else getattr(value, name, None)
        )
        if fn is None:
            continue
        if not callable(fn):
            raise UsageError(f"hook {name} must be callable, got {type(fn).__name__}")
        found[name] = fn  # pyright: ignore[reportArgumentType]
    return Hooks(**found)


async def call_callback(what: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Call a host callback (sync or async); wrap whatever it raises in `CallbackError`."""
    try:
        value = fn(*args)
        if inspect.isawaitable(value):
            value = await value
    except CallbackError:
        raise
    except Exception as exc:
        raise CallbackError(f"{what} raised {type(exc).__name__}: {exc}") from exc
    return value


@dataclass(slots=True)
class LlmChange:
    """What a ``before_llm`` return asks for: ``None`` fields leave the working value as is."""

    messages: list[Any] | None = None
    tools: list[dict[str, Any]] | None = None
    model: str | None = None
    """A model for this turn only (a non-empty string; anything else is ignored)."""


def llm_change(value: object) -> LlmChange:
    """Read a ``before_llm`` hook's return (a mapping with ``messages`` / ``tools`` /
    ``model``, or anything else for "no change")."""
    if not isinstance(value, Mapping):
        return LlmChange()
    change = cast(Mapping[str, Any], value)
    messages, tools, model = change.get("messages"), change.get("tools"), change.get("model")
    return LlmChange(
        messages=list(messages) if messages is not None else None,
        tools=cast(list[dict[str, Any]], list(tools)) if tools is not None else None,
        model=model if isinstance(model, str) and model else None,
    )
