"""The host app the inbox process tests' worker loads (``--app inbox_worker_app:make``).

Its ``refund`` tool appends one line per approved execution to the ledger (``TN_LEDGER``),
with the order it ran for, so a test counts executions — and sees edited arguments —
outside every process.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from toolnexus import Client, Tool, ToolContext, ToolResult, create_client, pending
from toolnexus.stores.url import resolve_store

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"order": {"type": "string", "pattern": "^[A-Z]-[0-9]+$"}},
    "required": ["order"],
    "additionalProperties": False,
}


def refund_tool(ledger: Path) -> Tool:
    async def refund(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        if ctx is None or ctx.answer is None:
            return pending(kind="approval", prompt=f"Refund order {args.get('order')}?")
        if not ctx.answer.ok:
            return ToolResult("refund declined")
        with ledger.open("a") as f:
            f.write(f"refunded {args.get('order')}\n")
        return ToolResult(f"refunded {args.get('order')}")

    return Tool("refund", "Refund an order (needs approval).", SCHEMA, "native", refund)


def make() -> tuple[Client, list[Tool]]:
    store = resolve_store(os.environ["TN_STORE"])
    client = create_client(
        base_url=os.environ["TN_BASE_URL"], model="m-1", api_key="sk-test", store=store
    )
    return client, [refund_tool(Path(os.environ["TN_LEDGER"]))]
