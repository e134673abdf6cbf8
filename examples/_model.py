"""Shared by the examples: a configured endpoint, or a scripted local model.

With ``OPENAI_BASE_URL`` (+ ``OPENAI_API_KEY``, ``OPENAI_MODEL``) or ``ANTHROPIC_BASE_URL``
(+ ``ANTHROPIC_API_KEY``, ``ANTHROPIC_MODEL``) set, the examples talk to that model. Otherwise
they start `toolnexus.testing.ScriptedModel` — a real OpenAI-compatible HTTP server on loopback
whose replies come from the ``brain`` function each example passes in.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

from toolnexus.testing import RecordedRequest, Reply, ScriptedModel


def tool_outputs(request: RecordedRequest) -> list[str]:
    """The tool results the model has seen so far, in order."""
    return [str(m.get("content")) for m in request.body["messages"] if m.get("role") == "tool"]


@contextlib.asynccontextmanager
async def llm(brain: Callable[[RecordedRequest], Reply]) -> AsyncIterator[dict[str, Any]]:
    """Keyword arguments for `create_client`: the configured endpoint or the scripted one."""
    if os.environ.get("OPENAI_BASE_URL"):
        yield {
            "base_url": os.environ["OPENAI_BASE_URL"],
            "style": "openai",
            "model": os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
        }
        return
    if os.environ.get("ANTHROPIC_BASE_URL"):
        yield {
            "base_url": os.environ["ANTHROPIC_BASE_URL"],
            "style": "anthropic",
            "model": os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5"),
        }
        return
    async with ScriptedModel(default=brain) as model:
        yield {
            "base_url": model.openai_base_url,
            "style": "openai",
            "model": "scripted",
            "api_key": "local",
        }
