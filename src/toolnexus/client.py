"""The unified LLM client: ``run`` / ``ask`` / ``stream`` over OpenAI- and Anthropic-style APIs,
and the factories that build it (`create_client`, `create_in_process_client`).

::

    client = create_client(base_url="https://api.openai.com/v1", style="openai", model="gpt-4o")
    async with client:
        result = await client.run("What is 2 + 3?", toolkit)
        print(result.text)

Without a ``wait_for``, a tool that suspends halts the run with ``status="pending"``; with one,
the host answers inline and the run goes on.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Unpack

from ._compat import UsageTypeError, no_stream_error
from ._error_body import (
    MAX_ERROR_BODY,
    REDACTED,
    capped_error_body,
    redact_identifiers,
    safe_error_body,
)
from ._lazy import lazy_names as _lazy_names
from ._toolkit import Toolkit, ToolSet
from ._types import (
    LIMIT_COMPLETION,
    LIMIT_MAX_TURNS,
    LIMIT_TIMEOUT,
    RUN_STATUS_DONE,
    RUN_STATUS_INCOMPLETE,
    RUN_STATUS_PENDING,
    RUN_STATUSES,
    Message,
    RunResult,
    Tool,
)
from .client_answers import Answering, text_to
from .errors import ProviderError, RunCancelled, RunTimeout, UsageError
from .factory import NO_WIRE, ClientOptions, known_options, setup_client
from .llm.base import Style as ClientStyle
from .llm.inprocess import Generate, InProcessTransport
from .llm.openai import OpenAIDialect
from .llm.retry import ErrorClassifier, ErrorInfo, ErrorTier, OnError
from .loop.engine import Engine, EngineConfig, Finished, RunState, Slot
from .loop.hooks import Hooks
from .observability import MetricEvent, Metrics, OnMetric, emitter, run_event
from .observability import Metrics as MetricsRegistry
from .redaction import Redactor
from .stores.base import ConversationStore
from .stores.memory import InMemoryConversationStore
from .stores.runs import InMemoryRunStore, PendingEntry, RunStore
from .suspension import WaitFor

if TYPE_CHECKING:
    from .llm.urllib_transport import HttpTransport, UrllibTransport
    from .translate import TranslateResult

__all__ = [
    "HTTP_DEFAULT_TIMEOUT",
    "LIMIT_COMPLETION",
    "LIMIT_MAX_TURNS",
    "LIMIT_TIMEOUT",
    "MAX_ERROR_BODY",
    "REDACTED",
    "RUN_STATUSES",
    "RUN_STATUS_DONE",
    "RUN_STATUS_INCOMPLETE",
    "RUN_STATUS_PENDING",
    "Client",
    "ClientStyle",
    "Conversation",
    "ConversationStore",
    "ErrorClassifier",
    "ErrorInfo",
    "ErrorTier",
    "Hooks",
    "HttpTransport",
    "InMemoryConversationStore",
    "InProcessTransport",
    "MetricEvent",
    "MetricsRegistry",
    "OnMetric",
    "ProviderError",
    "RunCancelled",
    "RunResult",
    "RunTimeout",
    "ToolSet",
    "UrllibTransport",
    "WaitFor",
    "capped_error_body",
    "create_client",
    "create_in_process_client",
    "redact_identifiers",
    "safe_error_body",
]
"""The existing package's ``toolnexus.client`` names (COMPAT §1), the same objects as the
top level's; the urllib transport loads on first use."""

HTTP_DEFAULT_TIMEOUT = 30.0
"""The existing package's default HTTP timeout, in seconds."""

_LAZY = {
    "HttpTransport": ".llm.urllib_transport",
    "UrllibTransport": ".llm.urllib_transport",
}


if not TYPE_CHECKING:
    __getattr__, __dir__ = _lazy_names(globals(), _LAZY)


Prompt = str | Sequence[Any]
"""A user message: text, or a list of content parts (`toolnexus.image`, part dicts, strings)."""


class Conversation:
    """A multi-turn conversation held in memory: ``await conv.send(prompt)``.

    ``cancel`` (an `asyncio.Event`) applies to every ``send``.
    """

    def __init__(
        self, client: Client, toolkit: ToolSet, cancel: asyncio.Event | None = None
    ) -> None:
        self._client = client
        self._toolkit = toolkit
        self._cancel = cancel
        self.messages: list[Message] = []

    async def send(self, prompt: Prompt) -> RunResult:
        """Send one user message (text or content parts); the transcript carries over to the
        next ``send``."""
        result = await self._client.run(
            prompt, self._toolkit, history=self.messages, cancel=self._cancel
        )
        self.messages = result.messages
        return result

    def reset(self) -> None:
        """Forget the transcript."""
        self.messages = []


class Client(Answering):
    """Runs the tool-calling loop against one model endpoint.

    ``Client(**options)`` takes `create_client`'s options (``Client(base_url=..., model=...)``
    ≡ ``create_client(base_url=..., model=...)``; ``in_process=generate`` ≡
    `create_in_process_client`). The options read back as attributes (``client.max_turns``,
    ``client.retryable_statuses``, ...), read-only. ``Client(engine_config, store=...)`` is the
    internal form; giving both is a `UsageError`.
    """

    def __init__(
        self,
        config: EngineConfig | None = None,
        *,
        in_process: Any = False,
        owns_store: bool = False,
        **options: Unpack[ClientOptions],
    ) -> None:
        if config is None:
            unknown = sorted(set(options) - known_options())
            if unknown:
                raise UsageTypeError(f"toolnexus: unknown client option(s): {', '.join(unknown)}")
            if "model" not in options:
                raise UsageTypeError("toolnexus: a client needs `model` (the model name sent)")
            generate = None if in_process is False or in_process is None else in_process
            config, store, in_process, owns_store, given = setup_client(
                in_process=generate, **options
            )
        elif extra := sorted(set(options) - {"store"}):
            raise UsageError(
                "Client takes either an EngineConfig or create_client options, not both "
                f"(got {', '.join(extra)})"
            )
        elif not isinstance(config, EngineConfig):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UsageTypeError(
                f"Client() takes create_client keyword options, got a positional "
                f"{type(config).__name__}"
            )
        else:
            store = options.get("store")
            given = _options_of(config, store)
        if not isinstance(store, ConversationStore):
            raise UsageError(f"store must be a ConversationStore, got {type(store).__name__}")
        self._options = given
        self._cfg = config
        self._metrics = Metrics()
        self._metric_tasks: set[asyncio.Future[Any]] = set()
        self._emit = emitter(self._metrics, config.on_metric, self._metric_tasks)
        self._engine = Engine(config, self._emit)
        self._store = store
        self._in_process = bool(in_process)
        self._runs: RunStore = store if isinstance(store, RunStore) else InMemoryRunStore()
        self._owns_store = owns_store
        parking = self._parking()
        self._parks = parking is not None
        if parking is not None:
            # A run parked on a store halts into that store: it is where the answer arrives.
            self._runs = parking.store

    # -- properties ----------------------------------------------------------------------

    @property
    def model(self) -> str:
        """The configured model (``before_llm`` may override it for one turn)."""
        return self._cfg.model

    @property
    def style(self) -> str:
        """``"openai"`` or ``"anthropic"``."""
        return self._cfg.style

    @property
    def base_url(self) -> str | None:
        """The ``base_url`` given (``None`` for an in-process model)."""
        return self._options.get("base_url")

    @property
    def api_key(self) -> str | None:
        """The ``api_key`` given (``None`` when it came from the environment)."""
        return self._options.get("api_key")

    @property
    def headers(self) -> dict[str, str] | None:
        """The extra ``headers`` given."""
        return self._options.get("headers")

    @property
    def system_prompt(self) -> str | None:
        return self._cfg.system_prompt

    @property
    def max_turns(self) -> int:
        return self._cfg.max_turns

    @property
    def hooks(self) -> Any:
        """The ``hooks`` as given."""
        return self._options.get("hooks")

    @property
    def retries(self) -> int:
        return self._cfg.retry.retries

    @property
    def retry_base_ms(self) -> float:
        return self._cfg.retry.base_ms

    @property
    def retryable_statuses(self) -> frozenset[int] | None:
        """The statuses added to the default retryable set, or ``None``."""
        return self._options.get("retryable_statuses")

    @property
    def timeout_ms(self) -> float | None:
        return self._cfg.timeout_ms

    @property
    def request_params(self) -> Mapping[str, Any] | None:
        return self._cfg.request_params

    @property
    def body_transform(self) -> Callable[[dict[str, Any]], Any] | None:
        return self._cfg.body_transform

    @property
    def on_error(self) -> OnError | None:
        return self._cfg.retry.on_error

    @property
    def on_unsupported_part(self) -> str | None:
        return self._cfg.on_unsupported_part

    @property
    def max_part_bytes(self) -> int | None:
        return self._cfg.max_part_bytes

    @property
    def store(self) -> Any:
        """The ``store`` option as given (`conversation_store` is the resolved store)."""
        return self._options.get("store")

    @property
    def wait_for(self) -> WaitFor | None:
        return self._cfg.wait_for

    @property
    def on_metric(self) -> Callable[[dict[str, Any]], Any] | None:
        return self._cfg.on_metric

    def __repr__(self) -> str:
        return f"Client(style={self.style!r}, model={self.model!r}, base_url={self.base_url!r})"

    @property
    def engine_config(self) -> EngineConfig:
        """The loop configuration this client runs with (the agent runtime builds on it)."""
        return self._cfg

    @property
    def redactor(self) -> Redactor:
        """This client's secrets (its API key, credential headers, the provider key variables);
        add the host's own with ``client.redactor.add(value)`` (see `toolnexus.redaction`)."""
        return self._cfg.redactor

    @property
    def conversation_store(self) -> ConversationStore:
        """The `ConversationStore` behind ``ask(id=...)``."""
        return self._store

    async def list_pending(
        self,
        *,
        kind: str | None = None,
        tool: str | None = None,
        conversation_id: str | None = None,
        older_than: float | None = None,
        newer_than: float | None = None,
        limit: int = 100,
    ) -> list[PendingEntry]:
        """Requests still waiting for an answer, oldest first (the approvals inbox).

        ``older_than`` / ``newer_than`` are ages in seconds.
        """
        return await self._runs.list_pending(
            kind=kind,
            tool=tool,
            conversation_id=conversation_id,
            older_than=older_than,
            newer_than=newer_than,
            limit=limit,
        )

    def metrics(self) -> str:
        """Prometheus text for every LLM call, tool call and run so far."""
        return self._metrics.render()

    # -- state ---------------------------------------------------------------------------

    def _state(
        self,
        prompt: Prompt | None,
        toolkit: ToolSet,
        history: Sequence[Message] | None,
        cancel: asyncio.Event | None,
    ) -> RunState:
        by_name: dict[str, Tool] | None = None
        redactor = self._cfg.redactor
        if isinstance(toolkit, Toolkit):
            toolkit.warn_exposure(self._cfg.url)
            redactor = toolkit.run_redactor(redactor)
            tools, by_name = toolkit.run_tools()
            wire = toolkit.to_anthropic() if self._cfg.style == "anthropic" else toolkit.to_openai()
            skills_prompt = toolkit.skills_prompt()
        elif toolkit is None:
            tools, wire, skills_prompt = [], [], ""
        else:
            tools = list(toolkit)
            for t in tools:
                if not isinstance(t, Tool):  # pyright: ignore[reportUnnecessaryIsInstance]
                    raise UsageError(
                        f"toolkit must be a Toolkit or a list of toolnexus.Tool, got a "
                        f"{type(t).__name__} in the list"
                    )
            wire = self._cfg.dialect.render_tools(tools)
            skills_prompt = ""
        state = self._engine.new_state(
            prompt,
            tools,
            wire,
            skills_prompt=skills_prompt,
            history=history,
            cancel=cancel,
            by_name=by_name,
        )
        state.redactor = redactor
        if self._parks:
            state.wait_for = None  # the run halts; `_park` waits on the store and resumes it
        return state

    async def _drive(
        self,
        state: RunState,
        *,
        stream: bool,
        resumed: list[Slot] | None = None,
        started: float | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        started = time.perf_counter() if started is None else started
        try:
            async for step in self._engine.drive(state, stream=stream, resumed=resumed):
                if isinstance(step, Finished):
                    if step.checkpoint is not None:
                        await self._runs.save_halt(step.checkpoint)
                    yield {"type": "done", "result": step.result}
                else:
                    yield step
        except BaseException as exc:
            self._run_event(state, started, error=exc)
            raise
        self._run_event(state, started, error=None)

    def _run_event(self, state: RunState, started: float, error: BaseException | None) -> None:
        cfg = self._cfg
        self._emit(
            run_event(state, model=cfg.model, started=started, error=error, mask=cfg.redactor.text)
        )

    async def _final(
        self, state: RunState, resumed: list[Slot] | None = None, started: float | None = None
    ) -> Finished:
        """`_drive` without streaming: no events to pass through, just the last step (its
        halt saved)."""
        started = time.perf_counter() if started is None else started
        try:
            finished = await self._engine.complete(state, resumed=resumed)
            if finished.checkpoint is not None:
                await self._runs.save_halt(finished.checkpoint)
        except BaseException as exc:
            self._run_event(state, started, error=exc)
            raise
        self._run_event(state, started, error=None)
        return finished

    # -- the loop ------------------------------------------------------------------------

    async def run(
        self,
        prompt: Prompt,
        toolkit: ToolSet = None,
        history: Sequence[Message] | None = None,
        cancel: asyncio.Event | None = None,
    ) -> RunResult:
        """Run the tool-calling loop on ``prompt`` until the model answers.

        Args:
            prompt: the user message: text, or a list of content parts (``[tn.text("What
                is this?"), tn.image("cat.png")]``; COMPAT §6).
            toolkit: a `Toolkit` (or a list of tools, or ``None`` for none).
            history: an earlier transcript (``RunResult.messages``) to continue.
            cancel: an `asyncio.Event`; setting it aborts the in-flight request
                (`toolnexus.errors.RunCancelled`).

        Returns:
            A `RunResult`; ``status`` is ``done``, ``pending`` (a tool suspended and there is
            no ``wait_for``) or ``incomplete`` (``max_turns`` ran out).
        """
        # [parked-run memory] `_final`, inlined: a run parked on a human keeps one coroutine
        # frame fewer, and its ``run`` metric is a ``try`` here, not an object it keeps (see
        # `toolnexus.loop.engine`).
        state = self._state(prompt, toolkit, history, cancel)
        started = time.perf_counter()
        try:
            finished = await self._engine.complete(state)
            if finished.checkpoint is not None:
                await self._runs.save_halt(finished.checkpoint)
        except BaseException as exc:
            self._run_event(state, started, error=exc)
            raise
        self._run_event(state, started, error=None)
        if self._parks:
            return await self._park(finished, toolkit, state)
        return finished.result

    async def ask(
        self,
        prompt: Prompt,
        toolkit: ToolSet = None,
        *,
        id: str | None = None,
        on_text: Callable[[str], Any] | None = None,
        cancel: asyncio.Event | None = None,
    ) -> RunResult:
        """``run`` with memory: with ``id`` the transcript is loaded before and saved after.

        ``on_text`` receives text deltas as they stream; a `RunResult` is still returned.
        """
        history = await self._load(id)
        state = self._state(prompt, toolkit, history, cancel)
        state.conversation_id = id
        if on_text is None:
            finished = await self._final(state)
        else:
            if self._in_process:
                raise no_stream_error("ask() without on_text")
            result = await text_to(on_text, self._drive(state, stream=True))
            finished = Finished(result)  # its halt is saved; parking reloads it
        if self._parks:
            result = await self._park(finished, toolkit, state)
        else:
            result = finished.result
        if id is not None:
            await self._store.save(id, result.messages)
        return result

    async def stream(
        self,
        prompt: Prompt,
        toolkit: ToolSet = None,
        *,
        id: str | None = None,
        cancel: asyncio.Event | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Stream one run as event dicts.

        Per turn: ``text`` deltas; then either ``usage`` + ``done`` (no tool calls), or one
        ``tool_call`` per call followed, per call in order, by ``pending`` (before
        ``wait_for`` runs) and/or ``tool_result``. The last event is always
        ``{"type": "done", "result": RunResult}``. With ``id`` the transcript is loaded
        before and saved on ``done``.
        """
        if self._in_process:
            raise no_stream_error("run() or ask()")
        history = await self._load(id)
        state = self._state(prompt, toolkit, history, cancel)
        state.conversation_id = id
        parked: RunResult | None = None
        async for event in self._drive(state, stream=True):
            if event["type"] == "done":
                if self._parks and event["result"].status == "pending":
                    parked = event["result"]  # halted: wait on the store, stream the rest
                    continue
                if id is not None:
                    await self._store.save(id, event["result"].messages)
            yield event
        if parked is not None:
            async for event in self._park_stream(Finished(parked), toolkit, state):
                if event["type"] == "done" and id is not None:
                    await self._store.save(id, event["result"].messages)
                yield event

    def conversation(
        self, toolkit: ToolSet = None, cancel: asyncio.Event | None = None
    ) -> Conversation:
        """An in-memory multi-turn conversation over ``toolkit``; ``cancel`` aborts a send."""
        return Conversation(self, toolkit, cancel)

    async def translate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        toolkit: ToolSet = None,
        tool_choice: Any = None,
        system: str | None = None,
        max_tokens: int = 0,
        cancel: asyncio.Event | None = None,
    ) -> TranslateResult:
        """One provider call, no loop, no tool execution: OpenAI-shaped in, result out."""
        if isinstance(toolkit, Toolkit):
            declared = toolkit.to_openai()
        elif toolkit is None:
            declared = []
        else:
            declared = OpenAIDialect().render_tools(list(toolkit))
        from .translate_io import translate_once  # loaded on the first translate

        return await translate_once(
            self._engine,
            messages,
            declared=declared,
            tools=list(tools or ()),
            tool_choice=tool_choice,
            system=system,
            max_tokens=max_tokens,
            cancel=cancel,
        )

    async def _load(self, id: str | None) -> list[Message] | None:
        if id is None:
            return None
        return await self._store.get(id)

    # -- lifecycle -------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the pooled HTTP session (and a store the client opened from a URL)."""
        await self._cfg.transport.aclose()
        closer = getattr(self._store, "aclose", None)
        if closer is not None and self._owns_store:
            await closer()

    async def __aenter__(self) -> Client:
        # A store opened from a URL connects here, so a wrong URL fails at ``async with``.
        opener = getattr(self._store, "open", None)
        if self._owns_store and inspect.iscoroutinefunction(opener):
            try:
                await opener()
            except BaseException:
                await self.aclose()
                raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def create_client(**options: Unpack[ClientOptions]) -> Client:
    """Create a `Client` for an OpenAI- or Anthropic-style endpoint.

    ``Client(**options)`` takes the same options and builds the same client.

    Args:
        base_url: e.g. ``https://api.openai.com/v1`` or ``https://api.anthropic.com``.
        style: ``"openai"`` (``POST {base}/chat/completions``) or ``"anthropic"``
            (``POST {base}/v1/messages``).
        model: sent verbatim on every request (``before_llm`` may override it per turn).
        api_key: falls back to ``OPENROUTER_API_KEY``, then the style's own key
            (``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``), then the other one.
        headers: extra request headers (they win over the auth headers).
        system_prompt: joined with the toolkit's skills prompt by a blank line.
        max_turns: model calls per run (default 10).
        hooks: ``before_llm`` / ``after_llm`` / ``before_tool`` / ``after_tool``.
        retries: extra attempts on retryable failures (default 2).
        retry_base_ms: backoff base (default 500 ms); ``Retry-After`` seconds win.
        retryable_statuses: HTTP statuses retried **in addition to** 429, 500, 502, 503,
            504 and 529 (it can only widen the set); ``on_error`` still has the last word.
        timeout_ms: whole-run deadline for model calls; the in-flight request is aborted.
        store: conversation store for ``ask(id=)``: an object, ``"memory"`` or
            ``"sqlite:///path.db"``.
        on_metric: receives ``llm`` / ``tool`` / ``run`` event dicts.
        wait_for: answers suspensions inline; without it a suspension halts the run.
        request_params: merged into every request body (wins on collision).
        body_transform: ``body -> body``, runs last before the wire.
        http_transport: our `Transport`, or any object with a sync
            ``post(url, headers, payload, timeout) -> dict``, called in a worker thread with
            ``timeout`` in seconds (what is left of ``timeout_ms``, else 120.0).
        on_error: ``info -> "retry" | "fail"`` for failed model calls.
        on_unsupported_part: ``None`` (by provenance), ``"error"`` or ``"text"``: what a
            content part the wire style cannot carry becomes.
        max_part_bytes: decoded-byte ceiling per content part (else the process-wide one).
        pending_ttl: seconds; stamps ``expiresAt`` on suspensions that carry none.
        tracing: OpenTelemetry spans (`toolnexus.tracing`): ``None`` (default) traces when
            ``opentelemetry-api`` is installed, ``True`` requires it, ``False`` never traces;
            a ``TracerProvider`` sends the spans there rather than to the global provider.
        trace_content: also record prompts, replies and tool arguments/results on the spans.
    """
    return Client(**options)


def create_in_process_client(*, model: str, generate: Generate, **options: Any) -> Client:
    """A `Client` whose "model" is a host function (tests, local rules, a model in memory).

    ``generate(request)`` gets the OpenAI-shaped body and returns one assistant message:
    ``{"content": "..."}`` or ``{"toolCalls": [{"name": ..., "arguments": {...}}]}``. No URL,
    key or HTTP is involved. Every other `create_client` option is accepted (``retries``
    defaults to 0 here); ``base_url``, ``api_key``, ``style`` and ``http_transport`` are a
    `TypeError` (an in-process model has no wire). Streaming raises `UsageError` (also a
    `NotImplementedError`).
    """
    for name in NO_WIRE:
        if name in options:
            raise UsageTypeError(
                f"toolnexus: create_in_process_client does not take `{name}` — an in-process "
                "model has no wire to configure. Use create_client for a network-backed model."
            )
    if "in_process" in options:
        raise UsageTypeError(
            "toolnexus: create_in_process_client takes `generate`, not `in_process`"
        )
    if not callable(generate):
        raise UsageTypeError("toolnexus: create_in_process_client requires a callable `generate`")
    return Client(model=model, in_process=generate, **options)


def _options_of(config: EngineConfig, store: Any) -> dict[str, Any]:
    """The attribute view of a client built from an `EngineConfig` (the internal form)."""
    return {"hooks": config.hooks, "store": store}
