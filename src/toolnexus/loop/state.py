"""The data a run is made of: the engine's configuration, its state and its seams."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from .._types import Message, RunResult, Tool, ToolCallRecord, ToolResult, Usage
from ..llm.base import Dialect, Transport
from ..llm.retry import RetryPolicy
from ..redaction import Redactor
from ..suspension import Answer, Request, WaitFor
from .checkpoint import Checkpoint, tool_fingerprint
from .hooks import Hooks

if TYPE_CHECKING:
    from ..tracing import Tracing

__all__ = [
    "BodyBuilder",
    "CallState",
    "EngineConfig",
    "Fence",
    "Finished",
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
    tracing: Tracing | None = None
    """The client's spans (`toolnexus.tracing`); ``None`` when untraced."""
    agent_name: str | None = None
    """The agent whose runs these are (the ``invoke_agent`` span's name), if any."""
    redactor: Redactor = field(default_factory=Redactor)
    """The client's secrets (API key, credential headers): masked in everything that enters."""

    max_part_bytes: int | None = None
    """Decoded-byte ceiling per content part (``None``: the process-wide limit)."""
    on_unsupported_part: str | None = None
    """``None`` (by provenance), ``"error"`` or ``"text"``: a part the wire cannot carry."""
    warned: set[str] = field(default_factory=lambda: set[str](), repr=False, compare=False)
    """The ``request_params`` keys already reported as ignored (each is reported once per
    config: keyed on the object, not on an ``id`` a freed config hands to the next one)."""


CallState = Literal["not_run", "suspended", "done"]
"""Where one tool call of a turn stands (the checkpoint's `Outstanding.state`)."""


@dataclass(slots=True)
class Slot:
    """One tool call of the current turn while it executes.

    Its state is one value, ``outcome``, as in the checkpoint: ``None`` (not run yet), the
    `Request` it suspended on, or its `ToolResult`. ``suspend`` and ``finish`` move it on.
    """

    index: int
    id: str
    name: str
    arguments: str
    args: dict[str, Any] = field(default_factory=lambda: {})
    outcome: ToolResult | Request | None = None

    @property
    def state(self) -> CallState:
        """``not_run``, ``suspended`` or ``done``."""
        outcome = self.outcome
        if outcome is None:
            return "not_run"
        return "suspended" if isinstance(outcome, Request) else "done"

    @property
    def result(self) -> ToolResult | None:
        """The call's result once it is done."""
        outcome = self.outcome
        return outcome if isinstance(outcome, ToolResult) else None

    @property
    def request(self) -> Request | None:
        """The question the call waits on while it is suspended."""
        outcome = self.outcome
        return outcome if isinstance(outcome, Request) else None

    def suspend(self, request: Request) -> None:
        """The call waits on ``request``."""
        self.outcome = request

    def finish(self, result: ToolResult) -> None:
        """The call is done with ``result``."""
        self.outcome = result


@dataclass(slots=True)
class Finished:
    """How the engine's loop ended: the run's result and, when it halted, the checkpoint to
    save (the halt travels on the loop's last step, never on the run state)."""

    result: RunResult
    checkpoint: Checkpoint | None = None


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


class Fence(Protocol):
    """A durable resume's claim, as the engine sees it while it applies the answer."""

    @property
    def token(self) -> int:
        """The claim's fencing token (`toolnexus.ToolContext.fencing_token`)."""
        ...

    async def confirm(self) -> None:
        """Renew the claim right before the approved tool runs.

        Raises:
            LeaseLost: another resumer took the request over: the tool must not run.
        """
        ...


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
    guard: TurnGuard | None = None
    turn_slots: Sequence[Slot] = ()
    bodies: BodyBuilder | None = None  # what earlier turns rendered, reused by the next one
    span: Any = None  # the run's ``invoke_agent`` span while it is traced and recording
    redactor: Redactor | None = None  # the client's and the toolkit's secrets, for tool results
    sent_model: str = ""  # the model of the last body sent ("" before the first call)
    model_answer: Answer | None = None  # for the next model call, which halted asking (model_halt)
    # The ids answered in this model call: a tuple, empty in the common run, not a list of its
    # own [parked-run memory].
    model_asked: tuple[str, ...] = ()
    fence: Fence | None = None  # a durable resume's claim, while it applies the answer

    def tool_fingerprint(self) -> str:
        """The digest of this run's tool set (cached)."""
        if not self.fingerprint:
            self.fingerprint = tool_fingerprint(self.tools)
        return self.fingerprint
