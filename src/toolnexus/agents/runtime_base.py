"""`RuntimeBase`: what `toolnexus.agents.AgentRuntime` provides to the pieces it is built from.

The runtime is assembled from `Stopping` (interrupt, close), `Turns` (one gated turn) and
`Resuming` (the durable cascade). Each piece uses a few of the runtime's attributes and
methods; they are declared once here, and `AgentRuntime` defines them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from .._types import Tool
from ..loop.engine import Engine, RunState
from ..resumption import Resumption
from ..stores.base import ConversationStore
from ..stores.runs import RunStore
from .budget import BudgetGuard
from .clock import Clock
from .engines import EngineFactory
from .handle import Handle
from .types import AgentDef, HandleState, TaskResult

__all__ = ["RuntimeBase"]


class RuntimeBase:
    """The runtime's attributes and methods its pieces rely on (defined by `AgentRuntime`)."""

    root: Handle
    registry: dict[str, AgentDef]
    runtime_id: str
    clock: Clock
    trace: list[str]
    shutdown_ms: int
    _background: set[asyncio.Task[None]]
    _runs: RunStore
    _resumption: Resumption
    _engines: EngineFactory
    _conversations: ConversationStore
    _hooks: Any

    def _def(self, h: Handle) -> AgentDef:
        raise NotImplementedError

    def _conv_id(self, h: Handle) -> str:
        raise NotImplementedError

    def _handle_of(self, handle_id: str) -> Handle | None:
        raise NotImplementedError

    def _tools_for(self, h: Handle) -> list[Tool]:
        raise NotImplementedError

    def _move(self, h: Handle, to: HandleState, why: str | None = None) -> None:
        raise NotImplementedError

    def _notify(self, h: Handle, result: TaskResult) -> None:
        raise NotImplementedError

    def _release_slot(self, h: Handle) -> None:
        raise NotImplementedError

    async def _persist(self, *handles: Handle, as_state: HandleState | None = None) -> None:
        raise NotImplementedError

    async def _settle(self, h: Handle, result: TaskResult) -> None:
        raise NotImplementedError

    async def _index(self, top: Handle) -> None:
        raise NotImplementedError

    async def _drive(
        self,
        h: Handle,
        engine: Engine,
        state: RunState,
        guard: BudgetGuard,
        resumed: list[Any] | None,
        fence: Callable[[], Awaitable[Any]] | None = None,
    ) -> TaskResult:
        raise NotImplementedError
