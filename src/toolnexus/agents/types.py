"""The data of the agent runtime: definitions, budgets, inbox items, results and views."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, Protocol, TypeAlias

from .._types import Tool
from ..suspension import Answer, Request, WaitFor

__all__ = [
    "DEFAULT_MAX_CONCURRENT",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_TURNS",
    "LIMITS",
    "LIMIT_COMPLETION",
    "LIMIT_MAX_CHILDREN",
    "LIMIT_MAX_CONCURRENT",
    "LIMIT_MAX_DEPTH",
    "LIMIT_MAX_TOKENS",
    "LIMIT_MAX_TOOL_CALLS",
    "LIMIT_MAX_TURNS",
    "LIMIT_MAX_WALL_MS",
    "LIMIT_TIMEOUT",
    "TASK_STATUSES",
    "TASK_STATUS_CLOSED",
    "TASK_STATUS_DONE",
    "TASK_STATUS_ERROR",
    "TASK_STATUS_INCOMPLETE",
    "TASK_STATUS_INTERRUPTED",
    "TASK_STATUS_PENDING",
    "TASK_STATUS_TIMEOUT",
    "AgentDef",
    "Budget",
    "CloseReason",
    "HandleState",
    "HandleView",
    "InboxItem",
    "PostResult",
    "ResultRuntime",
    "SpawnError",
    "TaskResult",
    "TaskStatus",
]

HandleState: TypeAlias = Literal["idle", "running", "suspended", "closed"]
TaskStatus: TypeAlias = Literal[
    "done", "pending", "incomplete", "interrupted", "closed", "timeout", "error"
]
CloseReason: TypeAlias = Literal["closed", "interrupted", "budget", "error"]

DEFAULT_MAX_TURNS = 6
DEFAULT_MAX_DEPTH = 3
DEFAULT_MAX_CONCURRENT = 8
"""The runtime's default ``max_concurrent_turns``."""

TASK_STATUS_DONE = "done"
TASK_STATUS_PENDING = "pending"
TASK_STATUS_INCOMPLETE = "incomplete"
TASK_STATUS_INTERRUPTED = "interrupted"
TASK_STATUS_CLOSED = "closed"
TASK_STATUS_TIMEOUT = "timeout"
TASK_STATUS_ERROR = "error"
TASK_STATUSES = (
    TASK_STATUS_DONE,
    TASK_STATUS_PENDING,
    TASK_STATUS_INCOMPLETE,
    TASK_STATUS_INTERRUPTED,
    TASK_STATUS_CLOSED,
    TASK_STATUS_TIMEOUT,
    TASK_STATUS_ERROR,
)
"""Every `TaskResult.status`, in the package's order."""

LIMIT_MAX_TURNS = "maxTurns"
LIMIT_MAX_TOKENS = "maxTokens"
LIMIT_MAX_TOOL_CALLS = "maxToolCalls"
LIMIT_MAX_WALL_MS = "maxWallMs"
LIMIT_MAX_CHILDREN = "maxChildren"
LIMIT_MAX_CONCURRENT = "maxConcurrent"
LIMIT_MAX_DEPTH = "maxDepth"
LIMIT_COMPLETION = "completion"
LIMIT_TIMEOUT = "timeout"
LIMITS = (
    LIMIT_MAX_TURNS,
    LIMIT_MAX_TOKENS,
    LIMIT_MAX_TOOL_CALLS,
    LIMIT_MAX_WALL_MS,
    LIMIT_MAX_CHILDREN,
    LIMIT_MAX_CONCURRENT,
    LIMIT_MAX_DEPTH,
    LIMIT_COMPLETION,
    LIMIT_TIMEOUT,
)
"""Every canonical `TaskResult.limit` name, in the package's order."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    """Limits for one handle and everything below it; ``None`` means unlimited.

    At spawn a child's budget is carved as ``min(own, parent remaining)`` per dimension; before
    every turn and every spawn the live ancestor chain is checked, so siblings share a pool.
    """

    max_turns: int | None = None
    max_tokens: int | None = None
    max_tool_calls: int | None = None
    max_wall_ms: int | None = None
    max_children: int | None = None
    max_concurrent: int | None = None
    max_depth: int | None = None

    def to_json(self) -> dict[str, int]:
        return {f.name: v for f in fields(self) if (v := getattr(self, f.name)) is not None}

    @classmethod
    def from_json(cls, data: Any) -> Budget:
        if not isinstance(data, dict):
            return cls()
        known = {f.name for f in fields(cls)}
        return cls(
            **{
                k: int(v)
                for k, v in data.items()  # pyright: ignore[reportUnknownVariableType]
                if k in known and isinstance(v, int)
            }
        )

    def merged(self, other: Budget | None) -> Budget:
        """Per dimension, ``other``'s value where it is set, else ours."""
        if other is None:
            return self
        return replace(
            self, **{f.name: v for f in fields(other) if (v := getattr(other, f.name)) is not None}
        )


@dataclass(slots=True)
class AgentDef:
    """One kind of agent in the registry (a dict name → AgentDef).

    The positional order is the package's: ``AgentDef(name, description, system_prompt, model,
    budget, tools, wait_for, on_spawn, on_close, task_targets, hooks, on_metric, completion)``.

    Attributes:
        name: the registry key; also the id segment of its handles.
        description: what it does (the ``task`` tool advertises it to teammates).
        system_prompt: its soul.
        model: the model to use; ``None`` (or ``"inherit"``) ⇒ the runtime's.
        budget: its limits.
        tools: its own tools (``None``: none).
        wait_for: answers its suspensions inline (nearest interpreter wins).
        on_spawn / on_close: lifecycle callbacks (``on_close(handle, reason)``).
        task_targets: the names of agents it may delegate to (its team ⇒ a ``task`` tool;
            ``None`` or empty: no ``task`` tool).
        hooks / on_metric: the §8 seams for its runs (override the runtime's, per field).
        completion: a `toolnexus.agents.Completion` gating every turn: a turn that does not
            verify is sent back with the verdict's reason (see `run_gated`).
    """

    name: str
    description: str = ""
    system_prompt: str = ""
    model: str | None = None
    budget: Budget | None = None
    tools: Sequence[Tool] | None = ()
    wait_for: WaitFor | None = None
    on_spawn: Callable[..., Any] | None = None
    on_close: Callable[..., Any] | None = None
    task_targets: Sequence[str] | None = ()
    hooks: Any = None
    on_metric: Callable[[dict[str, Any]], Any] | None = None
    completion: Any = None


@dataclass(frozen=True, slots=True)
class InboxItem:
    """An unsolicited message for a handle: who sent it, on which channel, what it says."""

    from_: str = "external"
    channel: str = "message"
    text: str = ""

    def to_json(self) -> dict[str, str]:
        return {"from": self.from_, "channel": self.channel, "text": self.text}

    @classmethod
    def from_json(cls, data: Any) -> InboxItem:
        d: dict[str, Any] = data if isinstance(data, dict) else {}  # pyright: ignore[reportUnknownVariableType]
        return cls(
            str(d.get("from", "external")), str(d.get("channel", "")), str(d.get("text", ""))
        )


class ResultRuntime(Protocol):
    """The runtime a `TaskResult` came from (``result.runtime``), as its holder uses it: answer
    a ``pending`` result and wait again, look at the tree, close it.

    `toolnexus.agents.AgentRuntime` is one. It is named here by that use, not imported: the
    runtime stands on this module. Handles are typed `Any` for the same reason (they are the
    runtime's `toolnexus.agents.Handle`).
    """

    async def resume(
        self, answer: Answer | Mapping[str, Any], *, answered_by: str | None = None
    ) -> TaskResult: ...

    def handle(self, id: str) -> Any: ...

    async def wait(
        self, h: Any, timeout_ms: float | None = None, *, waiter: Any = None
    ) -> TaskResult: ...

    def list(self, h: Any = None) -> list[HandleView]: ...

    async def close(
        self, h: Any, *, force: bool = False, reason: CloseReason | None = None
    ) -> list[InboxItem]: ...

    async def aclose(self) -> None: ...


@dataclass(slots=True)
class TaskResult:
    """What a handle's turn came to. ``status`` is from a closed vocabulary (`TASK_STATUSES`); a
    failed run is ``error`` with ``is_error`` set, never ``done``.

    The positional order is the package's: ``TaskResult(text, is_error, status, pending, turns,
    total_tokens, own_tokens, limit, runtime)``. ``turns`` is the handle's lifetime model calls,
    ``total_tokens`` the cumulative tokens of its whole subtree (never shrinking between two
    results), ``own_tokens`` its own share.
    """

    text: str = ""
    is_error: bool = False
    status: TaskStatus = "done"
    pending: Request | None = None
    turns: int = 0
    total_tokens: int = 0
    own_tokens: int = 0
    limit: str | None = None
    runtime: ResultRuntime | None = field(default=None, repr=False, compare=False)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "text": self.text,
            "status": self.status,
            "is_error": self.is_error,
            "turns": self.turns,
            "total_tokens": self.total_tokens,
            "own_tokens": self.own_tokens,
        }
        if self.pending is not None:
            out["pending"] = self.pending.to_dict()
        if self.limit is not None:
            out["limit"] = self.limit
        return out

    @classmethod
    def from_json(cls, data: Any) -> TaskResult:
        d: dict[str, Any] = data if isinstance(data, dict) else {}  # pyright: ignore[reportUnknownVariableType]
        status = d.get("status", "done")
        return cls(
            text=str(d.get("text", "")),
            status=status if status in TASK_STATUSES else "error",
            is_error=bool(d.get("is_error")),
            pending=Request.from_dict(d["pending"]) if isinstance(d.get("pending"), dict) else None,
            turns=int(d.get("turns") or 0),
            total_tokens=int(d.get("total_tokens") or 0),
            own_tokens=int(d.get("own_tokens") or 0),
            limit=d.get("limit") if isinstance(d.get("limit"), str) else None,
        )


@dataclass(frozen=True, slots=True)
class SpawnError:
    """A refused spawn (never raised): ``error`` says why."""

    error: str


@dataclass(frozen=True, slots=True)
class PostResult:
    """The outcome of ``post`` / ``wake``: ``ok``, or ``error`` saying why not."""

    ok: bool
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HandleView:
    """A read-only view of one handle.

    ``tokens`` is the lifetime total rolled up from the whole subtree; ``turns`` counts the
    handle's own model calls over its lifetime.
    """

    id: str
    agent: str
    state: HandleState
    tokens: int
    turns: int
    inbox: int
    pending_kind: str | None
    pending: Request | None
    children: tuple[str, ...]
