"""A worker process for the cross-process resume tests.

    python resume_proc.py halt   <base_url> <state.json> <ledger> [store]
    python resume_proc.py resume <base_url> <state.json> <ledger> [store]

``halt`` runs until the approval gate suspends and writes the halted run (messages + pending)
as JSON; ``resume`` is a brand-new process that reads it and resumes with an approval.
Every execution of a tool is appended to the ledger file, so the parent can count them.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from toolnexus import (
    Answer,
    Tool,
    ToolContext,
    ToolResult,
    create_client,
    create_toolkit,
    pending,
)

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def toolkit_tools(ledger: Path) -> list[Tool]:
    def note(line: str) -> None:
        with ledger.open("a") as f:
            f.write(line + "\n")

    async def gate(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        answer = ctx.answer if ctx is not None else None
        note(f"gate answer={None if answer is None else answer.ok}")
        if answer is not None and answer.ok:
            return ToolResult("approved")
        return pending(kind="approval", prompt="approve?")

    async def sibling(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        note("sibling")
        return ToolResult("sibling ran")

    return [
        Tool("gate", "needs approval", SCHEMA, "native", gate),
        Tool("sibling", "plain", SCHEMA, "native", sibling),
    ]


async def main(mode: str, base_url: str, state: Path, ledger: Path, store: str | None) -> int:
    tk = await create_toolkit(extra_tools=toolkit_tools(ledger), builtins=False)
    async with create_client(base_url=base_url, model="m", api_key="k", store=store) as client:
        if mode == "halt":
            halted = await client.ask("go", tk, id="conv-x")
            assert halted.pending is not None
            state.write_text(
                json.dumps({"messages": halted.messages, "pending": halted.pending.to_dict()})
            )
            return 0
        saved = json.loads(state.read_text())
        answer = Answer(id=saved["pending"]["id"], ok=True)
        if store is None:
            done = await client.run_with_answer(tk, saved["messages"], saved["pending"], answer)
        else:
            done = await client.ask_with_answer(tk, "conv-x", saved["pending"], answer)
        print(json.dumps({"status": done.status, "text": done.text, "turns": done.turns}))
        return 0


if __name__ == "__main__":
    store_arg = sys.argv[5] if len(sys.argv) > 5 else None
    sys.exit(
        asyncio.run(main(sys.argv[1], sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]), store_arg))
    )
