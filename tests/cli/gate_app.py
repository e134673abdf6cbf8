"""The host app ``toolnexus worker --app gate_app:make`` loads in the worker-stop tests.

Its ``ship`` tool, once approved, appends ``started <order>`` to the ledger (``TN_LEDGER``),
connects to the test's gate (``TN_GATE``, ``host:port``), says its order and waits there until
the test answers; then it appends ``shipped <order>``. The ledger counts, outside every
process, which calls began and which finished.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from toolnexus import Client, Tool, ToolContext, ToolResult, create_client, pending
from toolnexus.stores.url import resolve_store

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"order": {"type": "string"}}}


async def ship(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
    order = str(args.get("order"))
    if ctx is None or ctx.answer is None:
        return pending(kind="approval", prompt=f"Ship order {order}?")
    ledger = Path(os.environ["TN_LEDGER"])
    with ledger.open("a") as f:
        f.write(f"started {order}\n")
    host, _, port = os.environ["TN_GATE"].rpartition(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(f"{order}\n".encode())
        await writer.drain()
        await reader.readline()  # the test opens the gate
    finally:
        writer.close()
    with ledger.open("a") as f:
        f.write(f"shipped {order}\n")
    return ToolResult(f"shipped {order}")


TOOL = Tool("ship", "Ship an order (needs approval).", SCHEMA, "native", ship)


def make() -> tuple[Client, list[Tool]]:
    store = resolve_store(os.environ["TN_STORE"])
    client = create_client(
        base_url=os.environ["TN_BASE_URL"], model="m-1", api_key="sk-test-0123456789", store=store
    )
    return client, [TOOL]
