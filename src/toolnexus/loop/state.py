"""The data a run is made of: the engine's configuration, its state and its seams."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .._types import Message, Tool, ToolCallRecord, ToolResult, Usage
from ..llm.base import Dialect, Transport
from ..llm.retry import RetryPolicy
from ..suspension import Answer, Request, WaitFor
from .checkpoint import Checkpoint, tool_fingerprint
from .hooks import Hooks

__all__ = [
    "BodyBuilder",
    "EngineConfig",
    "ParkingWaitFor",
    "RunState",
    "Slot",
    "TranscriptDialect",
    "TurnGuard",
]


@dataclass(slots=True)
class EngineConfig:
    """Everything a client fixes at construction."""

    dialect: Dialect
    transport: Transport
    url: str
    headers: dict[str, str]
    model: str
    style: str
    system_prompt: str | None = None
    max_turns: int = 10
    hooks: Hooks = field(default_factory=Hooks)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout_ms: float | None = None
    on_metric: Callable[[dict[str, Any]], Any] | None = None
    wait_for: WaitFor | None = None
    request_params: Mapping[str, Any] | None = None
    body_transform: Callable[[dict[str, Any]], Any] | None = None
    pending_ttl: float | None = None
    supports_stream: bool = True
    max_part_bytes: int | None = None
    """Decoded-byte ceiling per content part (``None``: the process-wide limit)."""
    on_unsupported_part: str | None = None
    """``None`` (by provenance), ``"error"`` or ``"text"``: a part the wire cannot carry."""


@dataclass(slots=True)
class Slot:
    """One tool call of the current turn while it executes."""

    index: int
    id: str
    name: str
    arguments: str
    args: dict[str, Any] = field(default_factory=lambda: {})
    result: ToolResult | None = None
    request: Request | None = None


class TurnGuard(Protocol):
    """Watches a run's model calls (budgets, roll-ups). Used by the agent runtime."""

    def before_call(self) -> str | None:
        """The name of a limit that stops the run now (``incomplete``), or ``None``."""
        ...

    def after_call(self, usage: Usage) -> None:
        """One model call finished with ``usage``."""
        ...


class BodyBuilder(Protocol):
    """Builds the request bodies of one run's successive turns (a dialect's ``new_transcript``)."""

    def build_body(
        self,
        *,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        stream: bool,
        tool_choice: Any = None,
    ) -> dict[str, Any]: ...


@runtime_checkable
class TranscriptDialect(Protocol):
    """A dialect that can render a run's growing transcript incrementally (ours both can)."""

    def new_transcript(self) -> BodyBuilder: ...


@runtime_checkable
class ParkingWaitFor(Protocol):
    """A ``wait_for`` that wants the run's checkpoint while it waits (see `store_wait_for`)."""

    async def park(self, request: Request, checkpoint: Checkpoint) -> Answer: ...

    async def expire(self, request: Request) -> Answer:
        """Settle a request whose deadline passed before the host could be asked."""
        ...


@dataclass(slots=True)
class RunState:
    """The mutable state of one run."""

    messages: list[Message]
    tools: list[Tool]
    by_name: dict[str, Tool]
    wire_tools: list[dict[str, Any]]
    cancel: asyncio.Event | None = None
    deadline: float | None = None
    turns: int = 0
    usage: Usage = field(
        default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    )
    records: list[ToolCallRecord] = field(default_factory=lambda: [])
    fingerprint: str = ""  # computed on first use: only halts and resumes need it
    conversation_id: str | None = None
    wait_for: WaitFor | None = None
    expired: bool = False
    checkpoint: Checkpoint | None = None
    guard: TurnGuard | None = None
    turn_slots: Sequence[Slot] = ()
    bodies: BodyBuilder | None = None  # what earlier turns rendered, reused by the next one
    sent_model: str = ""  # the model of the last body sent ("" before the first call)

    def tool_fingerprint(self) -> str:
        """The digest of this run's tool set (cached)."""
        if not self.fingerprint:
            self.fingerprint = tool_fingerprint(self.tools)
        return self.fingerprint
