"""An engine that runs tools only: the one rule for a suspended call, with no model behind it.

A served MCP call is one tool call, not a conversation: when it halts and is resumed, the call
is resolved with the answer exactly as a run's call is (`Engine.resolve`: re-executed with
``ctx.answer``, a decline becomes ``declined/expired: <prompt>``, the same question again
``unresolved: <prompt>``, a new question a fresh suspension) and recorded through the one
resumption — so it needs the engine, but never a model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from ..errors import UsageError
from ..llm.base import SSEEvent
from ..llm.openai import OpenAIDialect
from ..redaction import Redactor
from ..suspension import WaitFor
from .engine import Engine, EngineConfig

__all__ = ["TOOLS_ONLY", "tool_engine"]

TOOLS_ONLY = "tools"
"""The style of a tools-only engine's checkpoints."""


class _NoModel:
    """The transport of a tools-only engine: there is no model to call."""

    async def post(
        self, url: str, headers: dict[str, str], body: dict[str, Any], *, timeout: float | None
    ) -> dict[str, Any]:
        raise UsageError("toolnexus: a tools-only engine has no model to call")

    def stream(
        self, url: str, headers: dict[str, str], body: dict[str, Any], *, timeout: float | None
    ) -> AsyncIterator[SSEEvent]:
        raise UsageError("toolnexus: a tools-only engine has no model to call")

    async def aclose(self) -> None:
        return None


def tool_engine(
    *,
    redactor: Redactor | None = None,
    wait_for: WaitFor | None = None,
    style: str = TOOLS_ONLY,
) -> Engine:
    """An engine whose runs only resolve tool calls (see the module docs).

    Args:
        redactor: the secrets masked in the tools' results (the toolkit's).
        wait_for: answers a resolved call's follow-up question inline (``None``: the call
            halts on it).
        style: the style its checkpoints carry (a served MCP call's: ``"mcp"``).
    """
    config = EngineConfig(
        dialect=OpenAIDialect(),
        transport=_NoModel(),
        url="",
        headers={},
        model="",
        style=style,
        wait_for=wait_for,
        redactor=redactor if redactor is not None else Redactor(),
    )
    return Engine(config, _ignore)


def _ignore(event: dict[str, Any]) -> None:
    """A tools-only engine's metric events go nowhere (the served surface reports its own)."""
