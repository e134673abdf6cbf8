"""The resume tests' setup: a refund tool that asks for approval and counts each refund it makes
in a ledger file (outside the process), and a client whose run halted on it.

Used by test_approval_binding, test_unreadable_resume and test_resume_stall.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from toolnexus import ToolContext, ToolResult, create_client, create_toolkit, pending
from toolnexus._types import Tool
from toolnexus.testing import ScriptedModel, call, text, tool_calls

SCHEMA = {
    "type": "object",
    "properties": {"order": {"type": "string"}, "amount": {"type": "integer"}},
    "required": ["order", "amount"],
}
MODELS = '{"order":"A-7","amount":5000}'
"""The model's arguments, as the model sends them (what the approval's digest is of)."""


def refund_tool(ledger: Path) -> Tool:
    """Asks for approval; with an ok answer, appends the refund it made to ``ledger``."""

    async def refund(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        answer = ctx.answer if ctx is not None else None
        if answer is None:
            return pending(kind="approval", prompt=f"Refund {args['amount']} on {args['order']}?")
        if not answer.ok:
            return ToolResult("not refunded")
        with ledger.open("a") as f:
            f.write(json.dumps(args, sort_keys=True) + "\n")
        return ToolResult(f"refunded {args['amount']} on {args['order']}")

    return Tool("refund", "Refund an order (needs approval).", SCHEMA, "native", refund)


def refunds(ledger: Path) -> list[dict[str, Any]]:
    """The ledger's lines (each refund made), parsed."""
    return [json.loads(line) for line in ledger.read_text().splitlines()] if ledger.exists() else []


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A real SQLite file, then the test's own Postgres schema."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    return str(request.getfixturevalue("pg_url"))


@dataclass
class Halted:
    """A client whose run halted on the refund's approval request."""

    client: Any
    toolkit: Any
    model: ScriptedModel
    request_id: str
    messages: list[dict[str, Any]]
    pending: Any


@asynccontextmanager
async def halted_refund(
    store: Any, ledger: Path, *, arguments: str = MODELS, tool: Tool | None = None
) -> AsyncGenerator[Halted]:
    """A client on ``store`` (a URL or a store object) whose run called ``tool`` (the refund
    tool of ``ledger`` unless given) with ``arguments`` and halted; the model says "done" to
    every later call."""
    tk = await create_toolkit(extra_tools=[tool or refund_tool(ledger)], builtins=False)
    async with ScriptedModel(default=text("done")) as model:
        model.add(tool_calls(call("refund", json.loads(arguments), id="c1")))
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            halted = await client.run("refund A-7", tk)
            assert halted.pending is not None
            yield Halted(client, tk, model, halted.pending.id, halted.messages, halted.pending)
