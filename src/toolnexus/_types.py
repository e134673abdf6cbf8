"""Core data types: Tool, ToolResult, ToolContext, RunResult and friends.

These are the types every tool source produces and the loop consumes. They are plain data:
a `Tool` is a name, a description, a JSON-Schema for its arguments, a source tag and an
`execute` coroutine; a `ToolResult` is the text handed back to the model.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, TypeAlias, TypeGuard

from ._compat import MappingRecord
from .suspension import Answer, Request

__all__ = [
    "LIMIT_COMPLETION",
    "LIMIT_MAX_TURNS",
    "LIMIT_TIMEOUT",
    "RUN_STATUSES",
    "RUN_STATUS_DONE",
    "RUN_STATUS_INCOMPLETE",
    "RUN_STATUS_PENDING",
    "JSONSchema",
    "Message",
    "PendingRunResult",
    "RunResult",
    "RunStatus",
    "Tool",
    "ToolCallRecord",
    "ToolContext",
    "ToolExecute",
    "ToolResult",
    "ToolSource",
    "Usage",
    "empty_usage",
    "is_pending",
    "sanitize",
]

ToolSource: TypeAlias = Literal[
    "mcp", "skill", "native", "http", "custom", "builtin", "a2a", "agent", "relay"
]
"""Where a tool came from. Unknown sources are reported as ``custom`` in metrics."""

JSONSchema: TypeAlias = dict[str, Any]
Message: TypeAlias = dict[str, Any]
"""One message of the canonical transcript (OpenAI chat shape)."""

Usage: TypeAlias = dict[str, int]
"""Token usage: ``prompt_tokens``, ``completion_tokens``, ``total_tokens``."""

RunStatus: TypeAlias = Literal["done", "pending", "incomplete"]

RUN_STATUS_DONE = "done"
RUN_STATUS_PENDING = "pending"
RUN_STATUS_INCOMPLETE = "incomplete"
RUN_STATUSES = (RUN_STATUS_DONE, RUN_STATUS_PENDING, RUN_STATUS_INCOMPLETE)
"""Every `RunResult.status`, in this order."""

LIMIT_MAX_TURNS = "maxTurns"
LIMIT_COMPLETION = "completion"
LIMIT_TIMEOUT = "timeout"
"""`RunResult.limit` values (canonical spellings)."""

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def sanitize(value: str) -> str:
    """Replace every character outside ``[a-zA-Z0-9_-]`` with ``_``.

    >>> sanitize("my server.v2")
    'my_server_v2'
    """
    return _UNSAFE.sub("_", value)


def empty_usage() -> Usage:
    """A fresh zeroed usage dict."""
    return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


@dataclass(slots=True)
class ToolResult:
    """What a tool hands back: ``output`` is the text the model sees.

    A result whose ``metadata["pending"]`` is a `Request` is a *suspension*, not an error
    (see `toolnexus.pending`). ``parts`` are content parts (images, files, audio, text; see
    `toolnexus.image`) the model sees after ``output``; ``None`` changes nothing.
    """

    output: str = ""
    is_error: bool = False
    metadata: dict[str, Any] | None = None
    parts: list[Any] | None = None
    """Content parts (`ContentPart` objects or part dicts); the loop keeps them as canonical
    dicts."""

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)


@dataclass(slots=True)
class ToolContext:
    """Per-call context passed to ``Tool.execute``.

    Attributes:
        signal: an `asyncio.Event` set when the run is cancelled; long tools may watch it.
        timeout: seconds left before the run's deadline, when one is set.
        answer: present **only** on the retry after a suspension was answered.
        call_id: the provider's id for this tool call, when the loop runs the tool.
        request: on the retry, the `Request` this call suspended with (so a tool can read back
            what it put in ``request.data``, e.g. a server's continuation token).
        idempotency_key: on the retry, ``"<request id>:<call id>"`` — the same for every
            resumer of this call, in any process: pass it to the external system whose side
            effect must happen once (a payment API's idempotency key), so that a retry after a
            crash in the last gap does not repeat it.
        fencing_token: on a durable resume, the claim's fencing token (larger for every later
            resumer of the request): an external system that remembers the largest token it saw
            can refuse a stale resumer's write. ``None`` on the inline path.
    """

    signal: asyncio.Event | None = None
    timeout: float | None = None
    answer: Answer | None = None
    call_id: str | None = None
    request: Request | None = None
    idempotency_key: str | None = None
    fencing_token: int | None = None


ToolExecute: TypeAlias = Callable[[dict[str, Any], "ToolContext | None"], Awaitable[ToolResult]]


@dataclass(slots=True)
class Tool:
    """One uniform tool over every source.

    ``execute(args, ctx)`` is a coroutine function returning a `ToolResult`. A synchronous
    callable, or one returning a plain string, is accepted too and normalised by the loop.
    ``validate_args`` turns schema validation of the model's arguments on (the default) or off.
    """

    name: str
    description: str
    input_schema: JSONSchema
    source: ToolSource
    execute: Callable[..., Any]
    validate_args: bool = True
    handles_declines: bool = False
    """True when ``execute`` maps a declined Answer itself (relay tools, delegation); otherwise
    the loop answers a decline with ``declined/expired: <prompt>`` and never re-runs the tool."""
    _validator: Any = field(default=None, init=False, repr=False, compare=False)

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)


@dataclass(slots=True, eq=False)
class ToolCallRecord(MappingRecord):
    """One executed tool call, as listed in `RunResult.tool_calls`.

    Also a read-only mapping over ``name``, ``args``, ``output``, ``is_error`` and
    ``metadata`` — the dict the existing package lists — equal to such a dict (COMPAT §0 G3):
    ``rec["name"]``, ``rec.get("metadata")``, ``dict(rec)``. ``id`` is an attribute only.
    """

    _mapping_keys: ClassVar[tuple[str, ...]] = ("name", "args", "output", "is_error", "metadata")

    name: str
    args: dict[str, Any]
    output: str
    is_error: bool
    metadata: dict[str, Any] | None = None
    id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "args": self.args,
            "output": self.output,
            "is_error": self.is_error,
            "metadata": self.metadata,
        }


@dataclass(slots=True)
class RunResult:
    """The outcome of one run.

    Attributes:
        text: the final assistant text (``pending.prompt`` when halted).
        messages: the full canonical transcript (OpenAI chat shape), the input to the next run.
        tool_calls: every executed tool call, in emission order.
        tool_call_count: ``len(tool_calls)``.
        turns: model calls made by this run.
        usage: summed token usage of this run.
        model: the model name sent on the wire.
        status: ``done`` | ``pending`` | ``incomplete``.
        limit: which limit stopped an ``incomplete`` run (e.g. ``"maxTurns"``).
        pending: the `Request` a ``pending`` run halted on.
        expired: on a durable resume, True when the answered request had already expired.
    """

    text: str
    messages: list[Message]
    tool_calls: list[ToolCallRecord] = field(default_factory=lambda: [])
    tool_call_count: int = 0
    turns: int = 0
    usage: Usage = field(default_factory=empty_usage)
    model: str = ""
    status: RunStatus = "done"
    limit: str | None = None
    pending: Request | None = None
    expired: bool = False

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)


class PendingRunResult(Protocol):
    """A `RunResult` whose ``status`` is ``"pending"``: ``pending`` is the `Request` it halted
    on, never ``None``. What `is_pending` narrows a result to::

        if is_pending(result):
            post_link(result.pending.id)      # no Optional check needed
    """

    @property
    def text(self) -> str: ...
    @property
    def messages(self) -> list[Message]: ...
    @property
    def tool_calls(self) -> list[ToolCallRecord]: ...
    @property
    def tool_call_count(self) -> int: ...
    @property
    def turns(self) -> int: ...
    @property
    def usage(self) -> Usage: ...
    @property
    def model(self) -> str: ...
    @property
    def status(self) -> Literal["pending"]: ...
    @property
    def limit(self) -> str | None: ...
    @property
    def pending(self) -> Request: ...
    @property
    def expired(self) -> bool: ...


def is_pending(result: RunResult) -> TypeGuard[PendingRunResult]:
    """Whether ``result`` halted on a request (``status == "pending"``); narrows it for type
    checkers to `PendingRunResult`, whose ``pending`` is not ``None``."""
    return result.status == "pending" and result.pending is not None
