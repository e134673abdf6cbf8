"""Single-turn translation (§11): one provider call, no loop, nothing executed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any, cast

from ._types import Message
from .llm.abort import run_abortable
from .llm.anthropic import tools_from_openai
from .llm.convert import normalize_history
from .llm.retry import call_with_retries
from .loop.engine import Engine
from .loop.hooks import call_callback
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
    if cfg.hooks.before_llm is not None:
        info = {"messages": working, "tools": wire_tools, "model": cfg.model, "turn": 0}
        change = await call_callback("before_llm hook", cfg.hooks.before_llm, info)
        if isinstance(change, Mapping):
            if change.get("messages") is not None:  # pyright: ignore[reportUnknownMemberType]
                working = cast(list[Message], list(change["messages"]))  # pyright: ignore[reportUnknownArgumentType]
            if change.get("tools") is not None:  # pyright: ignore[reportUnknownMemberType]
                wire_tools = cast(list[dict[str, Any]], list(change["tools"]))  # pyright: ignore[reportUnknownArgumentType]
    if cfg.dialect.style == "anthropic":
        wire_tools = tools_from_openai(wire_tools)
    body = cfg.dialect.build_body(
        model=cfg.model,
        messages=working,
        tools=wire_tools,
        stream=False,
        max_tokens=max_tokens or None,
        tool_choice=tool_choice if wire_tools else None,
    )
    if cfg.request_params:
        for key, value in cfg.request_params.items():
            if key not in ("messages", "tools", "stream"):
                body[key] = value
    if cfg.body_transform is not None:
        changed = await call_callback("body_transform", cfg.body_transform, body)
        if isinstance(changed, dict):
            body = changed  # pyright: ignore[reportUnknownVariableType]
    transport, url, headers = cfg.transport, cfg.url, cfg.headers
    final_body: dict[str, Any] = body  # pyright: ignore[reportUnknownVariableType]

    async def attempt() -> dict[str, Any]:
        return await transport.post(url, headers, final_body, timeout=None)

    started = time.perf_counter()
    deadline = None
    if cfg.timeout_ms is not None:
        deadline = asyncio.get_running_loop().time() + cfg.timeout_ms / 1000
    try:
        payload = await run_abortable(
            call_with_retries(attempt, cfg.retry),
            cancel=cancel,
            deadline=deadline,
            timeout_ms=cfg.timeout_ms,
        )
        turn = cfg.dialect.parse_reply(payload)
    except BaseException:
        engine.emit_llm_error(started)
        raise
    await engine.finish_call(turn, started, turn_index=0)
    return to_translate_result(turn, cfg.model)
