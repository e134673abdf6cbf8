"""Single-turn translation (§11), the I/O half: one provider call through the engine's own
model-call step (`Engine.finish_body`, `Engine.send`), no loop, nothing executed. The pure half
(the result type, tool merging, the system prompt) is `toolnexus.translate`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, cast

from ._types import Message
from .llm.anthropic import tools_from_openai
from .llm.convert import normalize_history
from .llm.parts_wire import transcript_parts
from .loop.engine import Engine
from .loop.hooks import call_callback, llm_change
from .translate import TranslateResult, merge_tools, to_translate_result, with_system

__all__ = ["translate_once"]


async def translate_once(
    engine: Engine,
    messages: Sequence[Message],
    *,
    declared: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    tool_choice: Any,
    system: str | None,
    max_tokens: int,
    cancel: asyncio.Event | None,
) -> TranslateResult:
    """Send ``messages`` once and return the provider's reply, dialect-neutral.

    ``before_llm`` and ``after_llm`` fire exactly once; tool hooks never fire. Retries,
    ``request_params``, ``body_transform`` and the ``llm`` metric are shared with the loop.
    """
    cfg = engine.cfg
    working = with_system(normalize_history(list(messages)), system)
    wire_tools = merge_tools(declared, tools)
    model = cfg.model
    if cfg.hooks.before_llm is not None:
        info = {"messages": working, "tools": wire_tools, "model": cfg.model, "turn": 0}
        change = llm_change(await call_callback("before_llm hook", cfg.hooks.before_llm, info))
        if change.messages is not None:
            working = cast(list[Message], change.messages)
        if change.tools is not None:
            wire_tools = change.tools
        if change.model is not None:
            model = change.model
    if cfg.dialect.style == "anthropic":
        wire_tools = tools_from_openai(wire_tools)
    body = cfg.dialect.build_body(
        model=model,
        messages=working,
        tools=wire_tools,
        stream=False,
        max_tokens=max_tokens or None,
        tool_choice=tool_choice if wire_tools else None,
        translating=True,
    )
    body = await engine.finish_body(body)
    deadline = None
    if cfg.timeout_ms is not None:
        deadline = asyncio.get_running_loop().time() + cfg.timeout_ms / 1000
    parts = transcript_parts(working)
    turn = await engine.send(body, cancel=cancel, deadline=deadline, turn=0, parts=parts)
    sent = body.get("model")
    return to_translate_result(turn, sent if isinstance(sent, str) else model)
