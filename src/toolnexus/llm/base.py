"""The seams of the LLM path: what a dialect parses into and what a transport sends.

A *dialect* (``openai``, ``anthropic``) turns the canonical transcript into a request body and
a provider reply back into a `ModelTurn`. A *transport* moves JSON bodies and SSE streams over
the network. Both are small Protocols so that tests and hosts can inject doubles.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias

from .._types import Message, Tool, Usage, empty_usage

__all__ = [
    "Dialect",
    "FinishReason",
    "ModelToolCall",
    "ModelTurn",
    "SSEEvent",
    "StreamAssembler",
    "Style",
    "Transport",
]

Style: TypeAlias = Literal["openai", "anthropic"]
FinishReason: TypeAlias = Literal["stop", "tool_calls", "length", "content_filter"]


@dataclass(slots=True)
class ModelToolCall:
    """One tool call the model emitted. ``arguments`` is the raw JSON text as received
    (object-form arguments are serialised compactly)."""

    id: str
    name: str
    arguments: str


@dataclass(slots=True)
class ModelTurn:
    """One assistant reply, dialect-neutral."""

    text: str | None
    tool_calls: list[ModelToolCall] = field(default_factory=lambda: [])
    usage: Usage = field(default_factory=empty_usage)
    finish_reason: FinishReason = "stop"
    raw: dict[str, Any] = field(default_factory=lambda: {})


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One server-sent event: ``event`` is the ``event:`` field (``None`` when absent)."""

    data: str
    event: str | None = None


class StreamAssembler(Protocol):
    """Folds a provider's SSE events into one `ModelTurn`."""

    def feed(self, event: SSEEvent) -> str | None:
        """Consume one event; return the text delta it carried, if any.

        Raises `toolnexus.errors.ProviderError` for an in-stream error event and
        `toolnexus.errors.BadResponse` for an event that cannot be read.
        """
        ...

    @property
    def complete(self) -> bool:
        """True once the terminal event (``[DONE]`` / ``message_stop``) was seen."""
        ...

    def finish(self) -> ModelTurn:
        """The assembled turn. Raises `BadResponse` when the stream ended early."""
        ...


class Dialect(Protocol):
    """Renders the canonical transcript for one provider style and parses its replies."""

    style: Style

    def endpoint(self, base_url: str) -> str: ...

    def auth_headers(self, api_key: str | None) -> dict[str, str]: ...

    def render_tools(self, tools: Sequence[Tool]) -> list[dict[str, Any]]: ...

    def build_body(
        self,
        *,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        stream: bool,
        max_tokens: int | None = None,
        tool_choice: Any = None,
        translating: bool = False,
    ) -> dict[str, Any]: ...

    def parse_reply(self, payload: dict[str, Any]) -> ModelTurn: ...

    def new_stream(self) -> StreamAssembler: ...


class Transport(Protocol):
    """Moves one request to the model endpoint. One attempt, no retries (those live above).

    Implementations raise `toolnexus.errors.ProviderError` for a non-2xx status (with
    ``status``, ``body`` and a parsed ``retry_after``), `BadResponse` for an unreadable 2xx
    body and `TransportError` for network failures. Cancellation of the awaiting task must
    abort the in-flight request.
    """

    async def post(
        self, url: str, headers: dict[str, str], body: dict[str, Any], *, timeout: float | None
    ) -> dict[str, Any]: ...

    def stream(
        self, url: str, headers: dict[str, str], body: dict[str, Any], *, timeout: float | None
    ) -> AsyncIterator[SSEEvent]: ...

    async def aclose(self) -> None: ...
