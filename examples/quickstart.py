"""Quickstart: an agent with two native tools, then a human-approval step that halts to SQLite.

Run it:  python examples/quickstart.py

With no endpoint configured, the agent talks to a scripted local model (a real OpenAI-compatible
HTTP server on loopback, from `toolnexus.testing`). Point it at a real model with
``OPENAI_BASE_URL`` + ``OPENAI_API_KEY`` (+ ``OPENAI_MODEL``), or ``ANTHROPIC_BASE_URL`` +
``ANTHROPIC_API_KEY`` (+ ``ANTHROPIC_MODEL``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from toolnexus import (
    Answer,
    ToolContext,
    Toolkit,
    ToolResult,
    create_client,
    create_toolkit,
    define_tool,
    pending,
)
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls

WEATHER = {"paris": 18.0, "oslo": -3.5, "lima": 24.0}


@define_tool
def get_weather(city: str) -> str:
    """Current temperature in a city, in degrees Celsius."""
    celsius = WEATHER.get(city.lower())
    return "unknown city" if celsius is None else f"{celsius} °C in {city}"


@define_tool
def celsius_to_fahrenheit(celsius: float) -> str:
    """Convert a temperature from Celsius to Fahrenheit."""
    return f"{celsius * 9 / 5 + 32:.1f} °F"


@define_tool
def refund_order(order_id: str, amount: float, ctx: ToolContext | None = None) -> str | ToolResult:
    """Refund an order. Needs a human's approval first."""
    answer = ctx.answer if ctx is not None else None
    if answer is None:
        return pending(kind="approval", prompt=f"Refund {amount:.2f} EUR on order {order_id}?")
    if not answer.ok:
        return "refund not approved"
    return f"refunded {amount:.2f} EUR on order {order_id}"


# --- the scripted local model: it decides by reading the transcript, like a model would ---


def _last_tool_output(request: RecordedRequest) -> str:
    tool_messages = [m for m in request.body["messages"] if m.get("role") == "tool"]
    return str(tool_messages[-1]["content"]) if tool_messages else ""


def scripted_brain(request: RecordedRequest) -> Reply:
    messages = request.body["messages"]
    question = next(m["content"] for m in messages if m["role"] == "user")
    done_tools = [m for m in messages if m.get("role") == "tool"]
    if "refund" in question.lower():
        if not done_tools:
            return tool_calls(call("refund_order", {"order_id": "4021", "amount": 35.5}))
        return text(f"Done: {_last_tool_output(request)}.")
    if not done_tools:
        return tool_calls(call("get_weather", {"city": "Paris"}))
    if len(done_tools) == 1:
        celsius = float(_last_tool_output(request).split(" ")[0])
        return tool_calls(call("celsius_to_fahrenheit", {"celsius": celsius}))
    weather = done_tools[0]["content"]
    return text(f"It is {weather} — that is {_last_tool_output(request)}.")


@contextlib.asynccontextmanager
async def endpoint() -> AsyncIterator[dict[str, Any]]:
    """A configured endpoint, or the scripted local model."""
    if os.environ.get("OPENAI_BASE_URL"):
        yield {
            "base_url": os.environ["OPENAI_BASE_URL"],
            "style": "openai",
            "model": os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
        }
    elif os.environ.get("ANTHROPIC_BASE_URL"):
        yield {
            "base_url": os.environ["ANTHROPIC_BASE_URL"],
            "style": "anthropic",
            "model": os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5"),
        }
    else:
        async with ScriptedModel(default=scripted_brain) as model:
            print(f"(no endpoint configured: using the scripted local model at {model.url})")
            yield {
                "base_url": model.openai_base_url,
                "style": "openai",
                "model": "scripted",
                "api_key": "local",
            }


async def weather(toolkit: Toolkit, llm: dict[str, Any]) -> None:
    async with create_client(**llm) as client:
        result = await client.run("What's the weather in Paris, in Fahrenheit?", toolkit)
    print(f"\n1) {result.text}")
    for c in result.tool_calls:
        print(f"   tool {c.name}({json.dumps(c.args)}) -> {c.output}")
    print(f"   status={result.status} turns={result.turns} tokens={result.usage['total_tokens']}")


async def approval(toolkit: Toolkit, llm: dict[str, Any], db: Path) -> None:
    store = f"sqlite:///{db}"
    # Phase 1: no wait_for, so the run halts and its checkpoint is stored in SQLite.
    async with create_client(**llm, store=store) as client:
        halted = await client.ask("Please refund order #4021.", toolkit, id="conv-4021")
        print(f"\n2) status={halted.status}: {halted.text}")
        if halted.pending is None:
            return
        waiting = await client.list_pending()
        print(f"   waiting in {db.name}: {[(p.kind, p.tool, p.prompt) for p in waiting]}")
        request = halted.pending.to_dict()
    # Phase 2: a brand-new client (another process would do the same) approves and resumes.
    async with create_client(**llm, store=store) as client:
        answer = Answer(id=request["id"], ok=True)
        done = await client.ask_with_answer(
            toolkit, "conv-4021", request, answer, answered_by="ops@example.com"
        )
        record = await client.run_store.answer_record(request["id"])
    print(f"   resumed: status={done.status}: {done.text}")
    if record is not None:
        print(f"   answered by {record.answered_by}")


async def main() -> None:
    toolkit = await create_toolkit(
        extra_tools=[get_weather, celsius_to_fahrenheit, refund_order], builtins=False
    )
    async with toolkit, endpoint() as llm:
        await weather(toolkit, llm)
        with tempfile.TemporaryDirectory() as tmp:
            await approval(toolkit, llm, Path(tmp) / "quickstart.db")


if __name__ == "__main__":
    asyncio.run(main())
