"""An in-process model: a host function stands in for the provider.

``generate(request)`` receives the OpenAI-shaped request body (``model``, ``messages``,
``tools``) and returns exactly one assistant message: ``{"content": str}`` or
``{"toolCalls": [{"id"?, "name", "arguments"}]}`` (``tool_calls`` is accepted too), with an
optional ``usage``. The library builds the provider envelope around it. Failures are final (no
retry) and streaming is not supported.

A model that needs a human first (an ACP agent's permission request) returns
``{"pending": Request}`` instead: the run halts at the model call like at a suspended tool
(`toolnexus.llm.model_halt`), and the call that resumes it gets the `Answer` as
``request["answer"]``.
"""

from __future__ import annotations

import inspect
import itertools
import json
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

from .._compat import no_stream_error
from ..errors import BadResponse, UsageError
from ..suspension import Request
from .base import SSEEvent
from .model_halt import ModelSuspended, model_answer

__all__ = ["Generate", "InProcessTransport"]

Generate = Callable[[dict[str, Any]], Any]


class InProcessTransport:
    """A `Transport` that calls ``generate`` instead of the network."""

    supports_stream = False

    def __init__(self, generate: Generate) -> None:
        if not callable(generate):
            raise UsageError("create_in_process_client: generate must be callable")
        self._generate = generate
        self._ids = itertools.count(1)

    async def post(
        self, url: str, headers: dict[str, str], body: dict[str, Any], *, timeout: float | None
    ) -> dict[str, Any]:
        del url, headers, timeout
        # The body's own keys (``model``, ``messages``, ``tools`` when there are any), plus
        # the existing package's request shape: ``tools`` always a list, and the ``body``.
        request = {**body, "tools": body.get("tools", []), "body": body}
        answer = model_answer()
        if answer is not None:
            request["answer"] = answer
        value = self._generate(request)
        if inspect.isawaitable(value):
            value = await value
        if isinstance(value, dict) and "pending" in value:
            asked: Any = cast("dict[str, Any]", value)["pending"]
            if not isinstance(asked, Request):
                raise BadResponse(
                    f"generate: pending must be a toolnexus Request, got {type(asked).__name__}"
                )
            raise ModelSuspended(asked)
        return self._envelope(body, value)

    def _envelope(self, body: dict[str, Any], value: Any) -> dict[str, Any]:
        if isinstance(value, str):
            value = {"content": value}
        if not isinstance(value, dict):
            raise BadResponse(
                f"generate must return a dict with content or toolCalls, got {type(value).__name__}"
            )
        reply: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
        raw_calls: Any = reply.get("toolCalls", reply.get("tool_calls")) or []
        if not isinstance(raw_calls, list):
            raise BadResponse("generate: toolCalls must be a list")
        calls: list[dict[str, Any]] = []
        for raw in raw_calls:  # pyright: ignore[reportUnknownVariableType]
            if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):  # pyright: ignore[reportUnknownMemberType]
                raise BadResponse("generate: every tool call needs a string name")
            call: dict[str, Any] = raw  # pyright: ignore[reportUnknownVariableType]
            arguments = call.get("arguments", {})
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, separators=(",", ":"))
            calls.append(
                {
                    "id": str(call.get("id") or f"call_{next(self._ids)}"),
                    "type": "function",
                    "function": {"name": call["name"], "arguments": arguments},
                }
            )
        content = reply.get("content")
        message: dict[str, Any] = {
            "role": "assistant",
            "content": content if isinstance(content, str) else None,
        }
        if calls:
            message["tool_calls"] = calls
        usage = _usage(reply.get("usage"))
        return {
            "object": "chat.completion",
            "model": body.get("model"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": usage,
        }

    def stream(
        self, url: str, headers: dict[str, str], body: dict[str, Any], *, timeout: float | None
    ) -> AsyncIterator[SSEEvent]:
        raise no_stream_error("run() or ask()")

    async def aclose(self) -> None:
        return None


_USAGE_KEYS = (
    ("prompt_tokens", "promptTokens"),
    ("completion_tokens", "completionTokens"),
    ("total_tokens", "totalTokens"),
)


def _usage(value: Any) -> dict[str, Any]:
    """``generate``'s usage, snake_case or camelCase; zeros when it gave none."""
    if not isinstance(value, dict):
        return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    given = cast("dict[str, Any]", value)
    out = dict(given)
    for snake, camel in _USAGE_KEYS:
        if snake not in out and camel in given:
            out[snake] = given[camel]
    return out
