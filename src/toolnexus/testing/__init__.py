"""A scripted OpenAI- and Anthropic-compatible model server, for tests and benchmarks.

`ScriptedModel` serves real HTTP on loopback; only the model's choices are scripted. Point any
client at it (ours, the vendors' SDKs, a bare ``aiohttp`` session) and assert on what it sent::

    from toolnexus.testing import ScriptedModel, call, text, tool_calls

    async with ScriptedModel([tool_calls(call("add", {"a": 1, "b": 2}, id="c1")), text("3")]) as m:
        ...  # POST {m.openai_base_url}/chat/completions or {m.anthropic_base_url}/v1/messages
        assert m.requests[1].body["messages"][-1]["tool_call_id"] == "c1"

Faults are replies too: `http_error`, `garbage`, `empty_choices`, `empty_reply`, `reset`,
`cut_stream`, `reset_mid_stream`, `stream_error` and `delayed`.

This module imports ``aiohttp.web``; ``import toolnexus`` does not import it.
"""

from ._replies import (
    Reply,
    call,
    cut_stream,
    delayed,
    empty_choices,
    empty_reply,
    garbage,
    http_error,
    reset,
    reset_mid_stream,
    stream_error,
    text,
    tool_calls,
)
from .scripted import RecordedRequest, ScriptedModel, Step

__all__ = [
    "RecordedRequest",
    "Reply",
    "ScriptedModel",
    "Step",
    "call",
    "cut_stream",
    "delayed",
    "empty_choices",
    "empty_reply",
    "garbage",
    "http_error",
    "reset",
    "reset_mid_stream",
    "stream_error",
    "text",
    "tool_calls",
]
