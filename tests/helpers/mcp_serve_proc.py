"""A serving process for the MCP restart tests.

    python mcp_serve_proc.py <store url> <ledger>

Serves one tool, ``charge``, at ``/mcp`` on 127.0.0.1 (a free port, printed as ``PORT <n>``),
with halted calls in the given store. ``charge`` asks for approval first; every execution with
an answer appends a line to the ledger, so the parent can count how often the approved charge
really happened.

Environment: ``MCP_TEST_LEASE_S`` — the app's ``lease_s`` (default: the app's own);
``MCP_TEST_DIE_ONCE`` — a marker path: the first approved charge finds it missing, writes it
and kills the process (``os._exit``) before charging, mid-resume.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path

import uvicorn

from toolnexus import ToolContext, ToolResult, create_toolkit, define_tool, pending
from toolnexus.serve import mcp_app


def main(store: str, ledger: Path) -> None:
    @define_tool
    def charge(amount: int, ctx: ToolContext) -> str | ToolResult:
        """Charge the card (needs approval)."""
        if ctx.answer is None:
            return pending(kind="approval", prompt=f"Charge {amount} EUR?")
        die = os.environ.get("MCP_TEST_DIE_ONCE")
        if die and not Path(die).exists():
            Path(die).write_text("died")
            os._exit(3)  # the serving process dies mid-resume, its claim held, nothing charged
        with ledger.open("a") as out:
            out.write(f"charged {amount} ok={ctx.answer.ok}\n")
        return f"charged {amount} EUR"

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            print(f"PORT {self.servers[0].sockets[0].getsockname()[1]}", flush=True)

    async def serve() -> None:
        toolkit = await create_toolkit(extra_tools=[charge], builtins=False)
        lease = os.environ.get("MCP_TEST_LEASE_S")
        options = {"lease_s": float(lease)} if lease else {}
        app = mcp_app(toolkit, {"name": "billing"}, store=store, **options)
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
        await Announcing(config).serve()

    asyncio.run(serve())


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
