"""MCP inbound: per-call cost of our ``/mcp`` against the mcp SDK's own minimal server.

Both servers expose the same function, ``add(a: float, b: float) -> str``, over streamable HTTP
on loopback, each in its own child process (uvicorn, one worker), so server CPU does not share
the client's event loop:

* ``sdk``  — the floor: ``mcp.server.mcpserver.MCPServer`` with the function as a ``@tool``,
  its own ``streamable_http_app()``;
* ``ours`` — ``toolnexus.serve.mcp_app`` over a toolkit holding the same function as a native
  tool (argument validation, the toolkit's execute path, on_call not set).

One mcp SDK ``Client`` per server and era calls ``add`` sequentially; rounds alternate the two
servers, and the overhead row is the median of the per-round differences of the mean call time.
Eras: ``legacy`` (initialize + session, SSE responses) and ``2026-07-28`` (one self-contained
POST per call). A last row times our approval round trip on 2026-07-28 (input-required result →
the client's retry with its answer → the result; the halt in an in-memory or SQLite store).

    .venv/bin/python bench/bench_mcp_serve.py           # ~30 s
    .venv/bin/python bench/bench_mcp_serve.py --quick
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from toolnexus import ToolContext, ToolResult, define_tool, pending

ERAS = ("legacy", "2026-07-28")


@define_tool
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return str(a + b)


@define_tool
def approve(ctx: ToolContext) -> str | ToolResult:
    """Asks for approval, then answers ok."""
    if ctx.answer is None:
        return pending(kind="approval", prompt="Go?")
    return "ok"


def _serve(kind: str, store: str) -> None:
    import uvicorn

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            print(f"PORT {self.servers[0].sockets[0].getsockname()[1]}", flush=True)

    async def main() -> None:
        app: Any
        if kind == "sdk":
            from mcp.server.mcpserver import MCPServer

            server = MCPServer("sdk")

            @server.tool(name="add", structured_output=False)
            def sdk_add(a: float, b: float) -> str:  # pyright: ignore[reportUnusedFunction]
                """Add two numbers."""
                return str(a + b)

            @server.tool(name="approve", structured_output=False)
            def sdk_approve() -> str:  # pyright: ignore[reportUnusedFunction]
                """Unused here (keeps the tool lists the same length)."""
                return "ok"

            app = server.streamable_http_app()
        else:
            from toolnexus import create_toolkit
            from toolnexus.serve import mcp_app

            toolkit = await create_toolkit(extra_tools=[add, approve], builtins=False)
            app = mcp_app(toolkit, store=store)
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
        await Announcing(config).serve()

    asyncio.run(main())


def _start(kind: str, store: str = "memory") -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, __file__, "serve", kind, store],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,  # the SDK server logs every session at INFO
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise RuntimeError(f"{kind} server did not start: {line!r}")
    return proc, f"http://127.0.0.1:{int(line.split()[1])}/mcp"


async def _mean_call_ms(client: Any, calls: int) -> float:
    started = time.perf_counter()
    for i in range(calls):
        result = await client.call_tool("add", {"a": i, "b": 1})
        assert not result.is_error
    return (time.perf_counter() - started) * 1000 / calls


async def _per_call(urls: dict[str, str], era: str, rounds: int, calls: int) -> dict[str, Any]:
    from contextlib import AsyncExitStack

    from mcp import Client

    async with AsyncExitStack() as stack:
        clients = {k: await stack.enter_async_context(Client(u, mode=era)) for k, u in urls.items()}
        for c in clients.values():  # warm-up: connections, caches, first-call imports
            await _mean_call_ms(c, 20)
        samples: dict[str, list[float]] = {k: [] for k in clients}
        order = list(clients)
        for r in range(rounds):
            for k in order if r % 2 == 0 else reversed(order):
                samples[k].append(await _mean_call_ms(clients[k], calls))
    diffs = [o - s for o, s in zip(samples["ours"], samples["sdk"], strict=True)]
    return {
        "sdk": statistics.median(samples["sdk"]),
        "ours": statistics.median(samples["ours"]),
        "overhead": statistics.median(diffs),
    }


async def _round_trip_ms(url: str, cycles: int) -> float:
    from mcp import Client
    from mcp_types import ElicitResult

    async def yes(ctx: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={})

    async with Client(url, mode="2026-07-28", elicitation_callback=yes) as c:
        for _ in range(5):
            await c.call_tool("approve", {})
        started = time.perf_counter()
        for _ in range(cycles):
            result = await c.call_tool("approve", {})
            assert result.content[0].text == "ok"  # pyright: ignore[reportAttributeAccessIssue]
        return (time.perf_counter() - started) * 1000 / cycles


async def main(rounds: int, calls: int, cycles: int) -> None:
    procs: list[subprocess.Popen[str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            urls: dict[str, str] = {}
            for key, kind, store in (
                ("sdk", "sdk", "memory"),
                ("ours", "ours", "memory"),
                ("sqlite", "ours", f"sqlite:///{Path(tmp) / 'state.db'}"),
            ):
                proc, urls[key] = _start(kind, store)
                procs.append(proc)
            sqlite_url = urls.pop("sqlite")
            ours_url = urls["ours"]
            print(f"per call, ms (median of {rounds} rounds x {calls} sequential calls)")
            print(f"{'era':<12} {'sdk (floor)':>12} {'ours':>8} {'overhead':>9}")
            for era in ERAS:
                row = await _per_call(urls, era, rounds, calls)
                print(f"{era:<12} {row['sdk']:>12.3f} {row['ours']:>8.3f} {row['overhead']:>+9.3f}")
            print(f"\napproval round trip on 2026-07-28, ms (mean of {cycles} cycles)")
            print(f"  in-memory store {await _round_trip_ms(ours_url, cycles):8.3f}")
            print(f"  SQLite store    {await _round_trip_ms(sqlite_url, cycles):8.3f}")
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=10)


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        _serve(sys.argv[2], sys.argv[3])
    else:
        parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
        parser.add_argument("--quick", action="store_true")
        opts = parser.parse_args()
        if opts.quick:
            asyncio.run(main(rounds=4, calls=20, cycles=20))
        else:
            asyncio.run(main(rounds=12, calls=40, cycles=100))
