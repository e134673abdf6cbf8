"""A process whose run parks on the store (``store_wait_for``), or a worker that finishes runs.

    python parked_proc.py park   <base_url> <store-url> <ledger>   # prints "halted <id>", waits
    python parked_proc.py worker <base_url> <store-url> <ledger>   # drains once, prints a summary

The approved action appends a line to the ledger file, so the parent counts executions outside
every process.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from toolnexus import (
    SqliteStore,
    Tool,
    ToolContext,
    ToolResult,
    create_client,
    pending,
    store_wait_for,
)

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def refund_tool(ledger: Path) -> Tool:
    async def refund(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        if ctx is None or ctx.answer is None:
            return pending(kind="approval", prompt="refund?")
        with ledger.open("a") as f:  # the side effect, counted outside the process
            f.write(f"refunded {ctx.request.id if ctx.request else '?'}\n")
        return ToolResult("refunded")

    return Tool("refund", "refund an order", SCHEMA, "native", refund)


def observed_store(url: str) -> Any:
    """The real store for ``url``, telling the parent (on stdout) each halt it saved."""
    base: Any
    if url.startswith("sqlite:///"):
        base, where = SqliteStore, url[len("sqlite:///") :]
    else:
        from toolnexus.stores.postgres import PostgresStore

        base, where = PostgresStore, url

    class Observed(base):  # type: ignore[misc, valid-type]
        async def save_halt(self, checkpoint: Any) -> None:
            await super().save_halt(checkpoint)
            print(f"halted {checkpoint.pending.id}", flush=True)

    return Observed(where)


async def park(base_url: str, url: str, ledger: Path) -> None:
    store = observed_store(url)
    async with create_client(
        base_url=base_url,
        model="m",
        api_key="k",
        store=store,
        wait_for=store_wait_for(store, lease_s=1.0),
    ) as client:
        result = await client.ask("refund it", [refund_tool(ledger)], id="order-1")
        print(f"finished {result.status}: {result.text}", flush=True)
    await store.aclose()


async def worker(base_url: str, url: str, ledger: Path) -> None:
    async with create_client(base_url=base_url, model="m", api_key="k", store=url) as client:
        worker = client.worker([refund_tool(ledger)], lease_s=1.0, poll_interval=0.05)
        taken = 0
        async with asyncio.timeout(20):  # a dead resumer's lease runs out within a second
            while worker.resumed == 0:
                taken += await worker.drain()
                await client.run_store.wait_for_queued(timeout=0.05)  # pyright: ignore[reportAttributeAccessIssue]
        print(f"worker took {taken}, settled {worker.resumed}", flush=True)


if __name__ == "__main__":
    mode, base, store_url, ledger_path = sys.argv[1:5]
    run = park if mode == "park" else worker
    asyncio.run(run(base, store_url, Path(ledger_path)))
