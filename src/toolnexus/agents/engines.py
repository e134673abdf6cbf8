"""The engines the runtime drives: one per agent definition, sharing one gated transport.

Each agent runs the same loop engine as `Client`, configured from the runtime's LLM settings
and the definition's soul, model and seams (``hooks`` / ``on_metric`` resolved per field,
definition over runtime, never merged). Every model call passes the runtime's global turn gate.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..client import Client
from ..errors import UsageError
from ..llm.base import SSEEvent, Transport
from ..llm.dialects import api_key_from_env, dialect_for
from ..llm.retry import RetryPolicy
from ..llm.transport import as_transport
from ..loop.engine import Engine, EngineConfig
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
    """Where the runtime's agents talk to a model."""

    base_url: str = "http://127.0.0.1"
    style: str = "openai"
    model: str = ""
    api_key: str | None = None
    headers: Mapping[str, str] | None = None
    retries: int = 2
    retry_base_ms: int = 500
    timeout_ms: float | None = None


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
        self.transport = GatedTransport(as_transport(transport), gate)
        self._emit = emit
        self._cache: dict[str, Engine] = {}

    def engine_for(self, agent: AgentDef, runtime_hooks: Any) -> Engine:
        cached = self._cache.get(agent.name)
        if cached is not None:
            return cached
        if self._factory is not None:
            return self._from_client(agent, runtime_hooks)
        llm = self.llm
        model = agent.model if agent.model and agent.model != "inherit" else llm.model
        if not model:
            raise UsageError(f"agent {agent.name!r} has no model: set AgentDef.model or llm.model")
        headers = {
            **self.dialect.auth_headers(llm.api_key or api_key_from_env(self.dialect.style)),
            **dict(llm.headers or {}),
        }
        on_metric = agent.on_metric

        def emit(event: dict[str, Any]) -> None:
            self._emit(event, on_metric)

        config = EngineConfig(
            dialect=self.dialect,
            transport=self.transport,
            url=self.dialect.endpoint(llm.base_url),
            headers=headers,
            model=model,
            style=self.dialect.style,
            system_prompt=agent.system_prompt or None,
            max_turns=_MANY_TURNS,
            hooks=as_hooks(agent.hooks if agent.hooks is not None else runtime_hooks),
            retry=RetryPolicy(retries=llm.retries, base_ms=llm.retry_base_ms),
            timeout_ms=llm.timeout_ms,
            wait_for=agent.wait_for,
        )
        engine = Engine(config, emit)
        self._cache[agent.name] = engine
        return engine

    def _from_client(self, agent: AgentDef, runtime_hooks: Any) -> Engine:
        """An engine on the endpoint, model and transport of the host's client for ``agent``;
        the agent's soul, seams and ``wait_for`` and the runtime's turn gate on top."""
        assert self._factory is not None
        client = self._factory(agent)
        if not isinstance(client, Client):  # pyright: ignore[reportUnnecessaryIsInstance]
            got = type(client).__name__
            raise UsageError(f"the llm client factory must return a toolnexus Client, got {got}")
        self._clients.append(client)
        base = client.engine_config
        on_metric = agent.on_metric

        def emit(event: dict[str, Any]) -> None:
            self._emit(event, on_metric)

        config = replace(
            base,
            transport=GatedTransport(base.transport, self._gate),
            system_prompt=agent.system_prompt or None,
            max_turns=_MANY_TURNS,
            hooks=as_hooks(agent.hooks if agent.hooks is not None else runtime_hooks),
            wait_for=agent.wait_for,
            on_metric=None,
        )
        engine = Engine(config, emit)
        self._cache[agent.name] = engine
        return engine

    async def aclose(self) -> None:
        for client in self._clients:
            await client.aclose()
        await self.transport.aclose()
