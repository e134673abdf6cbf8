"""Hierarchical budgets: carve at spawn; walk the live ancestor chain at each turn's admission
(a wake) and each spawn; cap the model calls of one wake before each call.

CONTRACT §3.5's "before each turn" is an agent turn — a wake — as the seeds' budgets fixture
(S7) shows: a child admitted with 20 tokens left in its parent's pool finishes its wake, even if
the pool goes below zero on the way; the next wake is refused. ``maxTurns`` stays per model call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields

from .._types import Usage
from ..loop.engine import RunState
from .handle import Handle
from .types import DEFAULT_MAX_DEPTH, DEFAULT_MAX_TURNS, Budget

__all__ = ["BudgetGuard", "carve", "exhausted", "limit_text"]


def carve(own: Budget, parent: Handle) -> Budget:
    """``min(own, parent remaining)`` per dimension (remaining for pools, the value otherwise)."""
    pb = parent.budget
    remaining_tokens = None if pb.max_tokens is None else max(0, pb.max_tokens - parent.tokens)
    values: dict[str, int | None] = {}
    for f in fields(Budget):
        mine = getattr(own, f.name)
        theirs = remaining_tokens if f.name == "max_tokens" else getattr(pb, f.name)
        if f.name in ("max_children", "max_concurrent"):
            values[f.name] = mine  # per-handle structure limits are not inherited
        elif mine is None:
            values[f.name] = theirs
        elif theirs is None:
            values[f.name] = mine
        else:
            values[f.name] = min(mine, theirs)
    return Budget(**values)


def exhausted(handle: Handle, now: float) -> str | None:
    """The first pooled limit spent along ``handle``'s live ancestor chain, or ``None``."""
    for node in handle.ancestors():
        b = node.budget
        if b.max_tokens is not None and node.tokens >= b.max_tokens:
            return "maxTokens"
        if b.max_tool_calls is not None and node.tool_calls >= b.max_tool_calls:
            return "maxToolCalls"
        if (
            b.max_wall_ms is not None
            and node.started_at is not None
            and (now - node.started_at) * 1000 >= b.max_wall_ms
        ):
            return "maxWallMs"
    return None


def limit_text(limit: str) -> str:
    """The loud text of a limit stop."""
    if limit in ("maxTurns", "completion"):
        return f"hit {limit} without a final answer"
    return f"budget exhausted ({limit}); partial work preserved"


def max_turns_of(budget: Budget) -> int:
    return budget.max_turns if budget.max_turns is not None else DEFAULT_MAX_TURNS


def max_depth_of(budget: Budget) -> int:
    return budget.max_depth if budget.max_depth is not None else DEFAULT_MAX_DEPTH


class BudgetGuard:
    """The engine's `TurnGuard` for one handle's run: checks before, rolls up after."""

    def __init__(self, handle: Handle, now: Callable[[], float]) -> None:
        self.handle = handle
        self.now = now
        self.state: RunState | None = None
        self._records_at_start = 0

    def bind(self, state: RunState) -> None:
        self.state = state
        self._records_at_start = len(state.records)

    def _live_tool_calls(self) -> int:
        if self.state is None:
            return 0
        return len(self.state.records) - self._records_at_start

    def admit(self) -> str | None:
        """At a turn's admission: the first pooled limit (tokens, tool calls, wall time) spent
        along the live ancestor chain, else what `before_call` says."""
        return exhausted(self.handle, self.now()) or self.before_call()

    def before_call(self) -> str | None:
        """Before each model call of the turn: ``maxTurns`` (the calls of one wake) only."""
        h = self.handle
        return "maxTurns" if h.run_turns >= max_turns_of(h.budget) else None

    def after_call(self, usage: Usage) -> None:
        h = self.handle
        h.turns += 1
        h.run_turns += 1
        spent = usage.get("total_tokens", 0) or (
            usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
        )
        h.own_tokens += spent
        for node in h.ancestors():
            node.tokens += spent

    def settle(self) -> None:
        """Fold the run's tool calls into the handle's lifetime count."""
        self.handle.tool_calls += self._live_tool_calls()
        if self.state is not None:
            self._records_at_start = len(self.state.records)
