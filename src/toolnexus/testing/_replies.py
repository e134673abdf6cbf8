"""What a scripted model can answer: plain data, one frozen dataclass per kind of reply.

Replies are style-neutral: the same `text("hi")` renders as an OpenAI ``chat.completion`` on
an OpenAI route and as an Anthropic ``message`` on an Anthropic route, as JSON or as SSE
depending on the request's ``stream`` flag. The constructor functions (`text`, `tool_calls`,
`http_error`, ...) are the public way to build them; they check their arguments so that a
mistake in a script fails where it is written, not at request time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

from ..errors import UsageError
from ._template import Template

__all__ = [
    "Call",
    "Completion",
    "CutStream",
    "Delayed",
    "EmptyChoices",
    "Garbage",
    "HTTPError",
    "Reply",
    "Reset",
    "ResetMidStream",
    "StreamError",
    "TokenCounts",
    "call",
    "cut_stream",
    "delayed",
    "empty_choices",
    "empty_reply",
    "garbage",
    "http_error",
    "reset",
    "reset_mid_stream",
    "stream_error",
    "text",
    "tool_calls",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenCounts:
    """Token usage a reply reports (rendered per style: ``prompt_tokens``/``input_tokens``...)."""

    prompt: int = 10
    completion: int = 5
    total: int = 15
    cache_read: int = 0
    """Anthropic routes only: ``cache_read_input_tokens`` (rendered when non-zero)."""
    cache_creation: int = 0
    """Anthropic routes only: ``cache_creation_input_tokens`` (rendered when non-zero)."""


_DEFAULT_USAGE = TokenCounts()


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One tool call inside a `Completion`. ``id`` ``None`` ⇒ the server assigns ``call_<n>``."""

    name: str
    args: Mapping[str, Any] | str
    id: str | None = None

    @property
    def arguments(self) -> str:
        """The arguments as the JSON text OpenAI sends (a ``str`` ``args`` verbatim)."""
        if isinstance(self.args, str):
            return self.args
        return json.dumps(self.args, ensure_ascii=False, separators=(",", ":"))

    @property
    def input(self) -> Any:
        """The arguments as Anthropic's ``input`` value.

        Anthropic always sends an object. For a ``str`` ``args`` (the malformed-arguments case)
        the parsed value is sent when the string is valid JSON, else the string itself, so a
        client that assumes an object fails visibly in both styles.
        """
        if not isinstance(self.args, str):
            return self.args
        try:
            return json.loads(self.args)
        except ValueError:
            return self.args


@dataclass(frozen=True, slots=True, kw_only=True)
class Completion:
    """An assistant message: text, tool calls, both or (for `empty_reply`) neither."""

    text: str | None = None
    calls: tuple[Call, ...] = ()
    usage: TokenCounts = _DEFAULT_USAGE
    finish_reason: str | None = None
    # Compiled wire templates, one per (style, stream, include_usage); filled per request.
    templates: dict[tuple[str, bool, bool], Template] = field(
        default_factory=lambda: {}, init=False, repr=False, compare=False
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class EmptyChoices:
    """A 200 without an answer: OpenAI ``choices: []``; Anthropic ``content: []``, no stop."""

    usage: TokenCounts = _DEFAULT_USAGE
    templates: dict[tuple[str, bool, bool], Template] = field(
        default_factory=lambda: {}, init=False, repr=False, compare=False
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class HTTPError:
    """An error status. ``body`` ``None`` ⇒ the style's own error JSON."""

    status: int
    body: bytes | None = None
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Garbage:
    """A 200 whose body is not what a provider would send."""

    body: bytes
    content_type: str = "application/json"


@dataclass(frozen=True, slots=True, kw_only=True)
class Reset:
    """Abort the TCP connection (RST) without a response."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CutStream:
    """An SSE stream that ends cleanly after ``after_events`` events, without its terminal one."""

    reply: Completion | EmptyChoices
    after_events: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ResetMidStream:
    """An SSE stream whose connection is aborted (RST) after ``after_events`` events."""

    reply: Completion | EmptyChoices
    after_events: int


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamError:
    """An in-stream error event, after the first ``after_events`` events of ``reply``."""

    type: str
    message: str
    reply: Completion | EmptyChoices | None = None
    after_events: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Delayed:
    """``reply``, answered after ``seconds``."""

    reply: Reply
    seconds: float


Reply: TypeAlias = (
    Completion
    | EmptyChoices
    | HTTPError
    | Garbage
    | Reset
    | CutStream
    | ResetMidStream
    | StreamError
    | Delayed
)
"""Any scripted answer. Build one with the constructor functions of this module."""

REPLY_TYPES = (
    Completion,
    EmptyChoices,
    HTTPError,
    Garbage,
    Reset,
    CutStream,
    ResetMidStream,
    StreamError,
    Delayed,
)


def _usage(usage: Mapping[str, int] | None) -> TokenCounts:
    if usage is None:
        return _DEFAULT_USAGE
    unknown = set(usage) - set(_USAGE_KEYS)
    if unknown:
        raise UsageError(f"usage keys are {', '.join(_USAGE_KEYS)}; got {sorted(unknown)}")
    prompt = usage.get("prompt_tokens", _DEFAULT_USAGE.prompt)
    completion = usage.get("completion_tokens", _DEFAULT_USAGE.completion)
    return TokenCounts(
        prompt=prompt,
        completion=completion,
        total=usage.get("total_tokens", prompt + completion),
        cache_read=usage.get("cache_read_input_tokens", 0),
        cache_creation=usage.get("cache_creation_input_tokens", 0),
    )


_USAGE_KEYS = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def text(
    content: str, *, usage: Mapping[str, int] | None = None, finish_reason: str | None = None
) -> Completion:
    """A final text answer.

    Args:
        content: the assistant's text.
        usage: ``prompt_tokens``/``completion_tokens`` (``total_tokens`` defaults to the sum);
            default 10/5/15. Anthropic routes render them as ``input_tokens``/``output_tokens``.
        finish_reason: sent verbatim as OpenAI ``finish_reason`` / Anthropic ``stop_reason``
            (e.g. ``"length"`` or ``"max_tokens"``); default ``stop`` / ``end_turn``.

    >>> text("3").text
    '3'
    """
    return Completion(text=content, usage=_usage(usage), finish_reason=finish_reason)


def call(name: str, args: Mapping[str, Any] | str | None = None, id: str | None = None) -> Call:
    """One tool call for `tool_calls`.

    A ``str`` ``args`` is sent verbatim as OpenAI's ``arguments`` string (for malformed-JSON
    tests); on Anthropic routes see `Call.input`. Without ``id`` the server numbers the call
    ``call_1``, ``call_2``, ... in the order it renders them.

    >>> call("add", {"a": 1, "b": 2}, id="c1").arguments
    '{"a":1,"b":2}'
    """
    if args is None:
        args = {}
    if not isinstance(cast(object, args), str | Mapping):
        raise UsageError(f"call args must be a dict or a str, not {type(args).__name__}")
    return Call(name=name, args=args, id=id)


def tool_calls(
    *calls: Call,
    text: str | None = None,
    usage: Mapping[str, int] | None = None,
    finish_reason: str | None = None,
) -> Completion:
    """An assistant turn that calls tools (optionally with some text before the calls).

    The finish reason defaults to ``tool_calls`` (OpenAI) / ``tool_use`` (Anthropic).

    >>> len(tool_calls(call("a"), call("b")).calls)
    2
    """
    if not calls:
        raise UsageError("tool_calls() needs at least one call(); use empty_reply() for none")
    return Completion(text=text, calls=calls, usage=_usage(usage), finish_reason=finish_reason)


def empty_reply(*, usage: Mapping[str, int] | None = None) -> Completion:
    """An assistant message with neither text nor tool calls (OpenAI ``content: null``)."""
    return Completion(usage=_usage(usage))


def empty_choices(*, usage: Mapping[str, int] | None = None) -> EmptyChoices:
    """A 200 with no answer in it: OpenAI ``choices: []``; Anthropic ``content: []`` and no
    ``stop_reason`` (and, streamed, no ``message_delta``)."""
    return EmptyChoices(usage=_usage(usage))


def _bytes(body: bytes | str) -> bytes:
    return body.encode() if isinstance(body, str) else body


def http_error(
    status: int,
    body: Mapping[str, Any] | str | bytes | None = None,
    headers: Mapping[str, str] | None = None,
    *,
    content_type: str | None = None,
) -> HTTPError:
    """An error status, e.g. ``http_error(429, headers={"Retry-After": "0"})``.

    Args:
        status: the HTTP status.
        body: a dict (sent as JSON), a str/bytes (sent as is), or ``None`` for the route's own
            provider-style error JSON (OpenAI ``{"error": {...}}``, Anthropic
            ``{"type": "error", "error": {...}}``).
        headers: extra response headers, names as given.
        content_type: defaults to ``application/json`` for a dict or ``None`` body, else
            ``text/plain``.
    """
    if not 100 <= status <= 999:
        raise UsageError(f"http_error status must be in 100..999, got {status}")
    if isinstance(body, Mapping):
        raw: bytes | None = json.dumps(body).encode()
    else:
        raw = None if body is None else _bytes(body)
    if content_type is None:
        content_type = "text/plain" if isinstance(body, str | bytes) else "application/json"
    return HTTPError(
        status=status,
        body=raw,
        content_type=content_type,
        headers=tuple((headers or {}).items()),
    )


def garbage(body: bytes | str, content_type: str = "application/json") -> Garbage:
    """A 200 whose body is not what a provider would send, e.g. ``garbage("{not json")``."""
    return Garbage(body=_bytes(body), content_type=content_type)


def reset() -> Reset:
    """Abort the connection without any response: the client sees a connection error."""
    return Reset()


def _events(after_events: int) -> int:
    if after_events < 0:
        raise UsageError(f"after_events must be >= 0, got {after_events}")
    return after_events


def _streamable(reply: object) -> Completion | EmptyChoices:
    if not isinstance(reply, Completion | EmptyChoices):
        raise UsageError(
            f"only text/tool_calls/empty_reply/empty_choices replies stream, "
            f"not {type(reply).__name__}"
        )
    return reply


def cut_stream(reply: Completion | EmptyChoices, *, after_events: int) -> CutStream:
    """Stream ``reply`` but end the response cleanly after ``after_events`` SSE events.

    The terminal event (``data: [DONE]`` / ``message_stop``) is never sent, however large
    ``after_events`` is. Answers only streaming requests.
    """
    return CutStream(reply=_streamable(reply), after_events=_events(after_events))


def reset_mid_stream(reply: Completion | EmptyChoices, *, after_events: int) -> ResetMidStream:
    """Stream ``after_events`` SSE events of ``reply``, then abort the connection (RST).

    Like `cut_stream`, never sends the terminal event. Answers only streaming requests.
    """
    return ResetMidStream(reply=_streamable(reply), after_events=_events(after_events))


def stream_error(
    type: str = "overloaded_error",
    message: str = "Overloaded",
    *,
    reply: Completion | EmptyChoices | None = None,
    after_events: int = 0,
) -> StreamError:
    """An in-stream error event, optionally after the first ``after_events`` events of
    ``reply``; the response then ends cleanly without a terminal event.

    Anthropic routes send ``event: error`` with ``{"type": "error", "error": {type, message}}``;
    OpenAI routes send ``data: {"error": {message, type, ...}}``. Answers only streaming
    requests.
    """
    if after_events and reply is None:
        raise UsageError("stream_error(after_events=...) needs the reply whose events come first")
    return StreamError(
        type=type,
        message=message,
        reply=None if reply is None else _streamable(reply),
        after_events=_events(after_events),
    )


def delayed(reply: Reply, seconds: float) -> Delayed:
    """Answer ``reply`` after ``seconds`` (for timeout and cancellation tests).

    A client that gives up meanwhile is counted in `ScriptedModel.disconnects`.
    """
    if seconds < 0:
        raise UsageError(f"delayed seconds must be >= 0, got {seconds}")
    if not isinstance(cast(object, reply), REPLY_TYPES):
        raise UsageError(f"delayed() wraps a reply, not {type(reply).__name__}")
    return Delayed(reply=reply, seconds=seconds)
