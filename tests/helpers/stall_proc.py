"""A worker process for the stalled-resumer test (tests/test_resume_stall.py).

    python stall_proc.py <store> <model base_url> <ledger> <lease_s> [<hooked> <go>]

Drains the store's queue once with a worker of lease ``lease_s`` and prints
``{"resumed": n, "failed": n, "errors": {...}}``. With ``<hooked> <go>``, a ``before_tool`` hook
of the re-executed (answered) call writes the file ``hooked`` and then waits for the file
``go`` before it lets the call go on — the test stops this process (SIGSTOP) in there, past its
lease, while another process finishes the run. Every execution of the refund tool is appended
to ``ledger``, outside both processes.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from toolnexus import Tool, ToolContext, ToolResult, create_client, create_toolkit, pending


def refund_tool(ledger: Path) -> Tool:
    async def refund(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        answer = ctx.answer if ctx is not None else None
        if answer is None:
            return pending(kind="approval", prompt="Refund 50 on A-7?")
        with ledger.open("a") as f:
            seen = {"key": ctx.idempotency_key, "token": ctx.fencing_token}
            f.write(json.dumps(seen) + "\n")
        return ToolResult("refunded")

    schema = {"type": "object", "properties": {}}
    return Tool("refund", "Refund (needs approval).", schema, "native", refund)


async def main(store: str, base_url: str, ledger: Path, lease_s: float, gate: list[str]) -> None:
    hooks: dict[str, Any] = {}
    if gate:
        hooked, go = Path(gate[0]), Path(gate[1])

        async def before_tool(info: dict[str, Any]) -> None:
            if "answer" not in info:
                return
            hooked.write_text("in the hook")
            while not go.exists():  # noqa: ASYNC110  (a file from the test, which stops us here)
                await asyncio.sleep(0.01)

        hooks["before_tool"] = before_tool
    tk = await create_toolkit(extra_tools=[refund_tool(ledger)], builtins=False)
    async with create_client(
        base_url=base_url, model="m", api_key="k", store=store, hooks=hooks
    ) as client:
        worker = client.worker(tk, lease_s=lease_s, retry_s=lease_s)
        taken = 0
        while taken == 0:  # until the queue gives this process the run (its lease lapsed)
            taken = await worker.drain()
            if taken == 0:
                await asyncio.sleep(0.05)
        print(
            json.dumps(
                {"resumed": worker.resumed, "failed": worker.failed, "errors": worker.errors}
            )
        )


if __name__ == "__main__":
    asyncio.run(
        main(sys.argv[1], sys.argv[2], Path(sys.argv[3]), float(sys.argv[4]), sys.argv[5:7])
    )
