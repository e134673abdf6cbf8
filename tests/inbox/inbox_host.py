"""The host app of the browser tests: tools that ask a human, a model brain that calls them, and
``make`` for ``toolnexus worker --app inbox_host:make`` (the worker in its own process).

Each approved execution of ``refund`` appends one JSON line to the ledger (``TN_LEDGER``), so a
test counts executions outside every process. The brain reads the tool and its arguments off
the user message (``call refund {"order": "A-1", "amount": 30}``) and, once the tool answered,
ends with ``Done: <the tool's output>``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from toolnexus import Client, Tool, ToolContext, ToolResult, create_client, pending
from toolnexus.stores.url import resolve_store
from toolnexus.testing import RecordedRequest, Reply, call, text, tool_calls

REFUND_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "order": {"type": "string"},
        "amount": {"type": "integer", "minimum": 1, "maximum": 500},
    },
    "required": ["order", "amount"],
    "additionalProperties": False,
}

SETUP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Service name"},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 9, "default": 2},
        "tier": {"type": "string", "enum": ["small", "large"]},
        "public": {"type": "boolean"},
    },
    "required": ["name", "replicas"],
}

REGION_QUESTIONS: list[dict[str, Any]] = [
    {"question": "Which region?", "options": ["eu-west", "us-east"]},
    {"question": "Which days may it run?", "options": ["mon", "tue", "wed"], "multiple": True},
    {"question": "Anything the operator should know?"},
]


def refund_tool(ledger: Path) -> Tool:
    """``refund(order, amount)``: asks for approval; once approved, writes the ledger line."""

    async def refund(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        answer = ctx.answer if ctx is not None else None
        if answer is None:
            prompt = str(args.get("prompt") or f"Refund {args.get('amount')} on {args['order']}?")
            return pending(kind="approval", prompt=prompt, expiresAt=args.get("expires"))
        # A declined approval never reaches the tool (the engine answers the model itself); if
        # it did, the ledger would show it.
        line = {"order": args["order"], "amount": args["amount"], "request": answer.id}
        with ledger.open("a") as f:
            f.write(json.dumps(line) + "\n")
        return ToolResult(f"refunded {args['amount']} on {args['order']}")

    schema = {**REFUND_SCHEMA, "properties": {**REFUND_SCHEMA["properties"], "prompt": {}}}
    schema["properties"]["expires"] = {}
    return Tool("refund", "Refund an order (needs approval).", schema, "native", refund)


def setup_tool() -> Tool:
    """``setup``: asks for a form (``kind="input"`` with ``data.schema``); echoes the values."""

    async def setup(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        answer = ctx.answer if ctx is not None else None
        if answer is None:
            return pending(
                kind="input", prompt="Describe the new service.", data={"schema": SETUP_SCHEMA}
            )
        return ToolResult(json.dumps(answer.data, sort_keys=True))

    return Tool(
        "setup", "Set up a service (asks for details).", {"type": "object"}, "native", setup
    )


def region_tool() -> Tool:
    """``region``: asks questions with options (``kind="question"``); echoes the answers."""

    async def region(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        answer = ctx.answer if ctx is not None else None
        if answer is None:
            return pending(
                kind="question",
                prompt="Where should it run?",
                data={"questions": REGION_QUESTIONS},
            )
        return ToolResult(json.dumps(answer.data, sort_keys=True))

    return Tool("region", "Pick a region (asks).", {"type": "object"}, "native", region)


def tools(ledger: Path) -> list[Tool]:
    return [refund_tool(ledger), setup_tool(), region_tool()]


def instruction(tool: str, args: dict[str, Any]) -> str:
    """The user message that makes `brain` call ``tool`` with ``args``."""
    return f"call {tool} {json.dumps(args)}"


def brain(request: RecordedRequest) -> Reply:
    messages = request.body["messages"]
    done = [m for m in messages if m.get("role") == "tool"]
    if done:
        return text(f"Done: {done[-1]['content']}")
    user = next(m for m in reversed(messages) if m.get("role") == "user")
    _, tool, args = str(user["content"]).split(" ", 2)
    return tool_calls(call(tool, json.loads(args)))


def make() -> tuple[Client, list[Tool]]:
    store = resolve_store(os.environ["TN_STORE"])
    client = create_client(
        base_url=os.environ["TN_BASE_URL"], model="m-1", api_key="sk-test", store=store
    )
    return client, tools(Path(os.environ["TN_LEDGER"]))
