"""The engines the runtime drives: one per agent definition, sharing one gated transport.

Each agent runs the same loop engine as `Client`, built from a client made by the same validated
constructor as ``create_client`` — from the runtime's ``llm`` settings (any `create_client`
option), or by the host's client factory — so a missing API key or a bad option fails the same
way (and, as there, no key is needed on a transport the host injected or a loopback endpoint).
On top of that client the agent gets its soul, model, ``wait_for`` and the runtime's turn gate;
``hooks`` / ``on_metric`` resolve per field (definition, then runtime, then the client's own,
never merged); everything else the client was built with (``request_params``,
``body_transform``, retries, timeouts, ``max_turns``) is kept.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..client import Client, create_client
from ..errors import UsageError
from ..factory import resolve_api_key
from ..llm.base import SSEEvent, Transport
from ..llm.dialects import dialect_for
from ..llm.retry import OnError
from ..llm.transport import as_transport
from ..loop.engine import Engine
from ..loop.hooks import as_hooks
from .types import AgentDef

__all__ = ["EngineFactory", "GatedTransport", "LlmConfig"]

Gate = Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]]
Emit = Callable[[dict[str, Any], Callable[[dict[str, Any]], Any] | None], None]

ClientFactory = Callable[[AgentDef], "Client"]
"""Builds the client whose endpoint, model and transport an agent's runs use."""

_MANY_TURNS = 1_000_000  # the runtime's budget guard enforces the real (lifetime) turn cap


@dataclass(frozen=True, slots=True, kw_only=True)
class LlmConfig:
    """Where the runtime's agents talk to a model: the options of `create_client`.

    ``model`` is the default for agents whose definition names none. ``max_turns`` caps the
    model calls of one wake of an agent (``None``: only the agent's budget caps them).
    """

    base_url: str = "http://127.0.0.1"
    style: str = "openai"
    model: str = ""
    api_key: str | None = None
    headers: Mapping[str, str] | None = None
    retries: int = 2
    retry_base_ms: int = 500
    timeout_ms: float | None = None
    max_turns: int | None = None
    hooks: Any = None
    on_metric: Callable[[dict[str, Any]], Any] | None = None
    request_params: Mapping[str, Any] | None = None
    body_transform: Callable[[dict[str, Any]], Any] | None = None
    on_error: OnError | None = None
    pending_ttl: float | None = None
    tracing: Any = None
    trace_content: bool = False


class GatedTransport:
    """A `Transport` whose every call holds the runtime's global turn gate."""

    def __init__(self, inner: Transport, gate: Gate) -> None:
        self._inner = inner
        self._gate = gate
        self.supports_stream = bool(getattr(inner, "supports_stream", True))

    async def post(
        self, url: str, headers: dict[str, str], body: dict[str, Any], *, timeout: float | None
    ) -> dict[str, Any]:
        async def call() -> dict[str, Any]:
            return await self._inner.post(url, headers, body, timeout=timeout)

        result: dict[str, Any] = await self._gate(call)
        return result

    async def stream(
        self, url: str, headers: dict[str, str], body: dict[str, Any], *, timeout: float | None
    ) -> AsyncIterator[SSEEvent]:
        events: list[SSEEvent] = []

        async def call() -> None:
            async for event in self._inner.stream(url, headers, body, timeout=timeout):
                events.append(event)

        await self._gate(call)
        for event in events:
            yield event

    async def aclose(self) -> None:
        await self._inner.aclose()


class EngineFactory:
    """Builds (and caches) one `Engine` per agent definition."""

    def __init__(
        self,
        *,
        llm: LlmConfig | Mapping[str, Any] | ClientFactory | None,
        transport: Any,
        gate: Gate,
        emit: Emit,
        runtime_metric: bool = False,
    ) -> None:
        self._gate = gate
        self._factory: ClientFactory | None = None
        self._clients: list[Client] = []
        if callable(llm):
            self._factory = llm
            llm = None
        if llm is None:
            self.llm = LlmConfig()
        elif isinstance(llm, LlmConfig):
            self.llm = llm
        else:
            known = set(LlmConfig.__dataclass_fields__)
            unknown = sorted(set(llm) - known)
            if unknown:
                raise UsageError(f"unknown llm option(s): {', '.join(unknown)}")
            self.llm = LlmConfig(**dict(llm))
        self.dialect = dialect_for(self.llm.style)
        self._injected = transport is not None
        self._inner = as_transport(transport)
        self.transport = GatedTransport(self._inner, gate)
        self._emit = emit
        self._runtime_metric = runtime_metric
        self._cache: dict[str, Engine] = {}
        self._sinks: dict[str, Callable[[dict[str, Any]], None]] = {}

    def emit_for(self, agent: AgentDef, event: dict[str, Any]) -> None:
        """Send ``event`` where ``agent``'s engine sends its own (the runtime's ``run`` events)."""
        sink = self._sinks.get(agent.name)
        if sink is not None:
            sink(event)

    def engine_for(self, agent: AgentDef, runtime_hooks: Any) -> Engine:
        cached = self._cache.get(agent.name)
        if cached is not None:
            return cached
        if self._factory is not None:
            client = self._factory(agent)
            if not isinstance(client, Client):  # pyright: ignore[reportUnnecessaryIsInstance]
                got = type(client).__name__
                raise UsageError(
                    f"the llm client factory must return a toolnexus Client, got {got}"
                )
            self._clients.append(client)
            cap = client.engine_config.max_turns
        else:
            client = self._client_for(agent)
            cap = self.llm.max_turns or _MANY_TURNS
        engine = self._engine(client, agent, runtime_hooks, cap)
        self._cache[agent.name] = engine
        return engine

    def _client_for(self, agent: AgentDef) -> Client:
        """The client of ``agent`` from the runtime's settings, through `create_client`.

        Raises:
            UsageError: no model for the agent, no API key (for a network endpoint on our own
                transport), or a bad option — what `create_client` says.
        """
        llm = self.llm
        model = agent.model if agent.model and agent.model != "inherit" else llm.model
        if not model:
            raise UsageError(f"agent {agent.name!r} has no model: set AgentDef.model or llm.model")
        style: Any = llm.style
        key = resolve_api_key(style, llm.api_key, llm.base_url, injected=self._injected)
        return create_client(
            base_url=llm.base_url,
            style=style,
            model=model,
            api_key=key,
            headers=llm.headers,
            retries=llm.retries,
            retry_base_ms=llm.retry_base_ms,
            timeout_ms=llm.timeout_ms,
            hooks=llm.hooks,
            on_metric=llm.on_metric,
            request_params=llm.request_params,
            body_transform=llm.body_transform,
            on_error=llm.on_error,
            pending_ttl=llm.pending_ttl,
            http_transport=self._inner,
            tracing=llm.tracing,
            trace_content=llm.trace_content,
        )

    def _engine(self, client: Client, agent: AgentDef, runtime_hooks: Any, cap: int) -> Engine:
        """An engine on ``client``'s endpoint, model, transport and options; the agent's soul,
        seams and ``wait_for`` and the runtime's turn gate on top."""
        base = client.engine_config
        on_metric = agent.on_metric
        if on_metric is None and not self._runtime_metric:
            on_metric = base.on_metric  # the client's own, when neither agent nor runtime has one

        def emit(event: dict[str, Any]) -> None:
            self._emit(event, on_metric)

        self._sinks[agent.name] = emit

        hooks = agent.hooks if agent.hooks is not None else runtime_hooks
        config = replace(
            base,
            transport=GatedTransport(base.transport, self._gate),
            system_prompt=agent.system_prompt or None,
            max_turns=cap,
            hooks=as_hooks(hooks) if hooks is not None else base.hooks,
            wait_for=agent.wait_for,
            on_metric=None,
            agent_name=agent.name,
        )
        return Engine(config, emit)

    async def aclose(self) -> None:
        for client in self._clients:
            await client.aclose()
        await self.transport.aclose()
