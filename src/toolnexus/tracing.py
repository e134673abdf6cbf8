"""OpenTelemetry traces after the GenAI semantic conventions (extra ``otel``).

Only ``opentelemetry-api`` is used: without an SDK (a ``TracerProvider``) installed by the host,
every span is OpenTelemetry's own no-op, and without the API installed there is no tracing at
all (``create_client(tracing=None)``, the default, then costs nothing; ``tracing=True`` raises
an `ImportError` naming the extra).

The spans of one run::

    invoke_agent {agent}          one per run (a client run, or one activation of an agent)
    ├── chat {model}              one per model call (kind CLIENT)
    ├── execute_tool {tool}       one per tool execution (also the re-execution with the answer)
    └── await_human {kind}        one per suspension: the inline wait for ``wait_for``, or —
                                  on a durable resume — from the halt to the resume

A wait may cross processes: the halted run's ``traceparent`` is stored in its checkpoint
(`toolnexus.loop.checkpoint.Checkpoint.trace`), and whichever process resumes it parents the
``await_human`` span and the resumed ``invoke_agent`` span under the halted run's span (the
latter also *links* to it), so one trace shows ask → wait → answer → resume. A declined answer
is an ``OK`` wait: the human answered.

Message content (prompts, completions, tool arguments and results) is recorded only with
``trace_content=True``.

Each engine step calls in here only when its client has a `Tracing`; spans are started with an
explicit parent (never attached across the run loop's ``yield``), and the tool span is the
current span while the tool runs, so a tool's own instrumented calls nest under it.

A2A calls cross processes in one trace::

    execute_tool {tool}           the remote agent's tool, in the calling run
    └── a2a {method}              one per outbound JSON-RPC call (kind CLIENT); its
        │                         ``traceparent`` header goes with the request
        └── a2a {method}          the served side (kind SERVER), parented on that header
            └── invoke_agent      the run the request started (a follow-up's resumed run
                                  stays under the halted run, as above)

The client span uses the tracer of the run whose tool makes the call (`current_tracing`), else
the global provider's; the server span the served client's tracer (`tracer_for`). The context
travels through OpenTelemetry's configured propagator (W3C ``traceparent`` by default).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Generator, Mapping, MutableMapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from ._extras import missing_extra

if TYPE_CHECKING:
    from ._types import ToolResult
    from .llm.base import ModelTurn
    from .suspension import Answer, Request

__all__ = [
    "Halted",
    "Tracing",
    "a2a_client_span",
    "a2a_server_span",
    "current_tracing",
    "end_span",
    "parse_traceparent",
    "rpc_failed",
    "rpc_method",
    "tracer_for",
    "tracing_for",
]


class Halted(Protocol):
    """What `Tracing.record_wait` reads of a halted run (a `toolnexus.loop.checkpoint.Checkpoint`,
    which the loop, standing on this module, hands in)."""

    @property
    def trace(self) -> str:
        """The halted run's W3C ``traceparent`` (``""`` untraced)."""
        ...

    @property
    def pending(self) -> Request:
        """The request it halted on."""
        ...

    @property
    def created_at(self) -> float:
        """When it halted (epoch seconds)."""
        ...


_PROVIDERS = {"openai": "openai", "anthropic": "anthropic"}

_CURRENT: ContextVar[Tracing | None] = ContextVar("toolnexus_tracing", default=None)
"""The `Tracing` of the run whose tool is executing (set by `Tracing.tool`)."""


def tracing_for(
    option: object, *, style: str, url: str, model: str, content: bool = False
) -> Tracing | None:
    """The client's `Tracing`: ``None`` when ``option`` is ``False``, or when it is ``None`` and
    ``opentelemetry-api`` is not installed. ``option`` may also be a ``TracerProvider`` (any
    object with ``get_tracer``): the spans go there instead of the global provider.

    Raises:
        ImportError: ``option`` is ``True`` (or a provider) and ``opentelemetry-api`` is
            missing.
        UsageError: ``option`` is none of these.
    """
    tracer = tracer_for(option)
    if tracer is None:
        return None
    return Tracing(
        tracer,
        provider=_PROVIDERS.get(style, style),
        url=url,
        model=model,
        content=content,
    )


def tracer_for(option: object) -> Any:
    """The OpenTelemetry tracer for a ``tracing=`` option (``None``, ``True``, ``False`` or a
    ``TracerProvider``): ``None`` for ``False``, and for ``None`` when the API is missing.

    Raises:
        ImportError: ``option`` is ``True`` (or a provider) and ``opentelemetry-api`` is
            missing.
        UsageError: ``option`` is none of these.
    """
    if option is False:
        return None
    provider = getattr(option, "get_tracer", None)
    if not (option is None or option is True or callable(provider)):
        from .errors import UsageError

        raise UsageError(
            f"tracing must be None, True, False or a TracerProvider, got {type(option).__name__}"
        )
    try:
        from opentelemetry import trace
    except ImportError:
        if option:
            raise missing_extra("tracing=True needs OpenTelemetry's API", "otel") from None
        return None
    from ._version import __version__

    if callable(provider):
        return provider("toolnexus", __version__)
    return trace.get_tracer("toolnexus", __version__)


def current_tracing() -> Tracing | None:
    """The `Tracing` of the run whose tool is executing right now (``None`` outside one, or
    when that run is not traced)."""
    return _CURRENT.get()


def _rpc_attributes(method: str, url: str, rpc_id: object) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "rpc.system": "jsonrpc",
        "rpc.method": method,
        "rpc.jsonrpc.version": "2.0",
    }
    if isinstance(rpc_id, str | int) and not isinstance(rpc_id, bool):
        attributes["rpc.jsonrpc.request_id"] = str(rpc_id)
    parts = urlsplit(url)
    if parts.hostname:
        attributes["server.address"] = parts.hostname
    if parts.port is not None:
        attributes["server.port"] = parts.port
    return attributes


@contextlib.contextmanager
def a2a_client_span(
    method: str, url: str, headers: MutableMapping[str, str], *, rpc_id: object = None
) -> Generator[Any]:
    """The ``a2a {method}`` CLIENT span of one outbound A2A call, under the current span;
    the trace context is written into ``headers``. Yields ``None`` when nothing traces.

    The calling run's tracer is used (`current_tracing`), else the global provider's."""
    tracing = _CURRENT.get()
    tracer = tracing.tracer if tracing is not None else tracer_for(None)
    if tracer is None:
        yield None
        return
    from opentelemetry import propagate, trace

    span = tracer.start_span(
        f"a2a {method}",
        kind=trace.SpanKind.CLIENT,
        attributes=_rpc_attributes(method, url, rpc_id),
    )
    propagate.inject(headers, context=trace.set_span_in_context(span))
    try:
        yield span
    except GeneratorExit:  # a stream closed by its reader once it had what it needed
        _end_span(span, None)
        raise
    except BaseException as exc:
        _end_span(span, exc)
        raise
    _end_span(span, None)


def a2a_server_span(tracer: Any, url: str, headers: Mapping[str, str]) -> Any:
    """The SERVER span of one inbound A2A request (``a2a``; `rpc_method` names it), parented
    on the trace context its ``headers`` carry — a new trace when they carry none, or a
    malformed one. Make it current (``trace.use_span``) while the request starts its work, so
    the runs it starts nest under it; end it with `end_span`."""
    from opentelemetry import propagate, trace

    return tracer.start_span(
        "a2a",
        context=propagate.extract(headers),
        kind=trace.SpanKind.SERVER,
        attributes=_rpc_attributes("", url, None),
    )


def rpc_method(span: Any, method: str, rpc_id: object) -> None:
    """Name an inbound A2A span after its JSON-RPC method, once the request is read."""
    span.update_name(f"a2a {method}")
    for key, value in _rpc_attributes(method, "", rpc_id).items():
        span.set_attribute(key, value)


def rpc_failed(span: Any, code: int) -> None:
    """Mark an A2A span failed with the JSON-RPC error code answered."""
    from opentelemetry import trace

    span.set_attribute("rpc.jsonrpc.error_code", code)
    span.set_attribute("error.type", str(code))
    span.set_status(trace.Status(trace.StatusCode.ERROR))


def end_span(span: Any, error: BaseException | None = None) -> None:
    """End an A2A span (failed with ``error`` when given)."""
    _end_span(span, error)


def _end_span(span: Any, error: BaseException | None) -> None:
    if error is not None:
        from opentelemetry import trace

        span.set_attribute("error.type", type(error).__qualname__)
        span.record_exception(error)
        span.set_status(trace.Status(trace.StatusCode.ERROR, str(error)))
    span.end()


def parse_traceparent(value: str) -> tuple[int, int, int] | None:
    """``(trace id, span id, flags)`` of a W3C ``traceparent``; ``None`` when malformed."""
    parts = value.split("-")
    if len(parts) != 4 or parts[0] != "00" or len(parts[1]) != 32 or len(parts[2]) != 16:
        return None
    try:
        trace_id, span_id, flags = int(parts[1], 16), int(parts[2], 16), int(parts[3], 16)
    except ValueError:
        return None
    if not trace_id or not span_id:
        return None
    return trace_id, span_id, flags


class Tracing:
    """Starts and ends the spans of one client's runs (see the module docstring)."""

    __slots__ = (
        "_address",
        "_dormant",
        "_port",
        "_trace",
        "content",
        "model",
        "provider",
        "tracer",
    )

    def __init__(self, tracer: Any, *, provider: str, url: str, model: str, content: bool) -> None:
        from opentelemetry import trace

        self._trace = trace
        self.tracer = tracer
        # The global tracer, taken before any provider was set: its spans are no-ops until
        # one is (`_idle`).
        self._dormant = isinstance(tracer, trace.ProxyTracer)
        self.provider = provider
        self.model = model
        self.content = content
        parts = urlsplit(url)
        self._address = parts.hostname or ""
        self._port = parts.port

    # -- the run -------------------------------------------------------------------------

    def start_run(
        self, agent: str | None, *, conversation_id: str | None, resumed_from: str = ""
    ) -> Any:
        """The ``invoke_agent`` span of a run; a resumed run's parent (and link) is the halted
        run's span, named by its ``traceparent``."""
        if self._dormant and self._idle():
            return self._trace.INVALID_SPAN
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": self.provider,
            "gen_ai.request.model": self.model,
        }
        if agent:
            attributes["gen_ai.agent.name"] = agent
        if conversation_id:
            attributes["gen_ai.conversation.id"] = conversation_id
        context = None
        links: list[Any] = []
        halted = self._remote(resumed_from)
        if halted is not None:
            context = self._trace.set_span_in_context(self._trace.NonRecordingSpan(halted))
            links.append(self._trace.Link(halted, {"toolnexus.link": "resumed_from"}))
            attributes["toolnexus.resumed"] = True
        name = f"invoke_agent {agent}" if agent else "invoke_agent"
        return self.tracer.start_span(
            name,
            context=context,
            kind=self._trace.SpanKind.INTERNAL,
            attributes=attributes,
            links=links,
        )

    def end_run(self, span: Any, *, status: str | None, error: BaseException | None) -> None:
        """End a run's span: its outcome (``done``/``pending``/``incomplete``) or its error."""
        if status is not None:
            span.set_attribute("toolnexus.run.status", status)
        self._end(span, error)

    def traceparent(self, span: Any) -> str:
        """The W3C ``traceparent`` of ``span`` (``""`` for an invalid span context)."""
        if span is None:
            return ""
        ctx = span.get_span_context()
        if not ctx.is_valid:
            return ""
        return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"

    # -- model calls ---------------------------------------------------------------------

    def start_chat(self, parent: Any, body: Mapping[str, Any]) -> Any:
        """The ``chat {model}`` span of one model call, under the run's span."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self.provider,
            "gen_ai.request.model": self.model,
            "server.address": self._address,
        }
        if self._port is not None:
            attributes["server.port"] = self._port
        if self.content:
            attributes["gen_ai.input.messages"] = _dumps(body.get("messages"))
        return self.tracer.start_span(
            f"chat {self.model}",
            context=self._under(parent),
            kind=self._trace.SpanKind.CLIENT,
            attributes=attributes,
        )

    def end_chat(self, span: Any, turn: ModelTurn | None, error: BaseException | None) -> None:
        """End a model call's span with the reply's model, id, finish reason and tokens."""
        if turn is not None:
            raw = turn.raw
            model = raw.get("model")
            if isinstance(model, str):
                span.set_attribute("gen_ai.response.model", model)
            reply_id = raw.get("id")
            if isinstance(reply_id, str):
                span.set_attribute("gen_ai.response.id", reply_id)
            span.set_attribute("gen_ai.response.finish_reasons", [turn.finish_reason])
            span.set_attribute("gen_ai.usage.input_tokens", turn.usage.get("prompt_tokens", 0))
            span.set_attribute("gen_ai.usage.output_tokens", turn.usage.get("completion_tokens", 0))
            if self.content:
                calls = [{"name": c.name, "arguments": c.arguments} for c in turn.tool_calls]
                span.set_attribute(
                    "gen_ai.output.messages", _dumps({"text": turn.text, "tool_calls": calls})
                )
        self._end(span, error)

    # -- tools ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def tool(self, parent: Any, name: str, call_id: str, args: Any) -> Generator[Any]:
        """The ``execute_tool {name}`` span, current while the tool runs."""
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
        }
        if self.content:
            attributes["gen_ai.tool.call.arguments"] = _dumps(args)
        span = self.tracer.start_span(
            f"execute_tool {name}",
            context=self._under(parent),
            kind=self._trace.SpanKind.INTERNAL,
            attributes=attributes,
        )
        token = _CURRENT.set(self)  # the tool's own A2A calls trace with this tracer
        try:
            with self._trace.use_span(span, end_on_exit=False):
                yield span
        except BaseException as exc:
            self._end(span, exc)
            raise
        finally:
            _CURRENT.reset(token)

    def end_tool(self, span: Any, result: ToolResult, source: str, request: Request | None) -> None:
        """End a tool's span: its source, and an error type when it failed."""
        span.set_attribute("toolnexus.tool.source", source)
        if request is not None:
            span.set_attribute("toolnexus.request.id", request.id)
            span.set_attribute("toolnexus.request.kind", request.kind)
        elif result.is_error:
            span.set_attribute("error.type", "tool_error")
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR))
        if self.content and request is None:
            span.set_attribute("gen_ai.tool.call.result", _dumps(result.output))
        span.end()

    # -- waiting for a human -------------------------------------------------------------

    def start_wait(self, parent: Any, request: Request) -> Any:
        """The ``await_human {kind}`` span of an inline wait (``wait_for``)."""
        return self.tracer.start_span(
            f"await_human {request.kind}",
            context=self._under(parent),
            kind=self._trace.SpanKind.INTERNAL,
            attributes=_request_attributes(request),
        )

    def end_wait(self, span: Any, answer: Answer | None, error: BaseException | None) -> None:
        """End a wait: ``OK`` whatever the human decided (a decline is an answer too)."""
        if answer is not None:
            span.set_attribute("toolnexus.answer.ok", answer.ok)
            if answer.reason:
                span.set_attribute("toolnexus.answer.reason", answer.reason)
        self._end(span, error)

    def record_wait(self, checkpoint: Halted, answer: Answer, answered_by: str | None) -> None:
        """The durable wait, from the halt to now, under the halted run's span."""
        halted = self._remote(checkpoint.trace)
        if halted is None:
            return
        context = self._trace.set_span_in_context(self._trace.NonRecordingSpan(halted))
        request = checkpoint.pending
        attributes = _request_attributes(request)
        attributes["toolnexus.answer.ok"] = answer.ok
        if answer.reason:
            attributes["toolnexus.answer.reason"] = answer.reason
        if answered_by:
            attributes["toolnexus.answer.by"] = answered_by
        span = self.tracer.start_span(
            f"await_human {request.kind}",
            context=context,
            kind=self._trace.SpanKind.INTERNAL,
            attributes=attributes,
            start_time=int(checkpoint.created_at * 1e9),
        )
        span.end(end_time=time.time_ns())

    # -- helpers -------------------------------------------------------------------------

    def _under(self, parent: Any) -> Any:
        return None if parent is None else self._trace.set_span_in_context(parent)

    def _idle(self) -> bool:
        """Whether the global tracer still has no provider behind it, so that every span it
        starts is a no-op (the test OpenTelemetry's `ProxyTracer` makes for each span; a
        provider, once set, stays). Untraced runs then skip building their spans."""
        if getattr(self._trace, "_TRACER_PROVIDER", self) is None:
            return True
        self._dormant = False
        return False

    def _remote(self, traceparent: str) -> Any:
        parsed = parse_traceparent(traceparent) if traceparent else None
        if parsed is None:
            return None
        trace_id, span_id, flags = parsed
        return self._trace.SpanContext(
            trace_id, span_id, is_remote=True, trace_flags=self._trace.TraceFlags(flags & 0xFF)
        )

    def _end(self, span: Any, error: BaseException | None) -> None:
        _end_span(span, error)


def _request_attributes(request: Request) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "toolnexus.request.id": request.id,
        "toolnexus.request.kind": request.kind,
    }
    if request.expiresAt:
        attributes["toolnexus.request.expires_at"] = request.expiresAt
    return attributes


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)
