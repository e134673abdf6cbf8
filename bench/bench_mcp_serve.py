"""MCP inbound: per-call cost of our ``/mcp`` against the mcp SDK's own minimal server.

Both servers expose the same function, ``add(a: float, b: float) -> str``, over streamable HTTP
on loopback, each in its own child process (uvicorn, one worker), so server CPU does not share
the client's event loop:

* ``sdk``  — the floor: ``mcp.server.mcpserver.MCPServer`` with the function as a ``@tool``,
  its own ``streamable_http_app()``;
* ``ours`` — ``toolnexus.serve.mcp_app`` over a toolkit holding the same function as a native
  tool (argument validation, the toolkit's execute path, on_call not set).

One mcp SDK ``Client`` per server and era calls ``add`` sequentially; rounds alternate the two
servers, and the overhead column is the median of the per-round differences of the mean call
time. Wall time on a shared machine is noisy; the server processes' CPU time per call (from
``/proc``) is the steadier figure.
Eras: ``legacy`` (initialize + session, SSE responses) and ``2026-07-28`` (one self-contained
POST per call). A last row times our approval round trip on 2026-07-28 (input-required result →
the client's retry with its answer → the result; the halt in an in-memory or SQLite store).

    .venv/bin/python bench/bench_mcp_serve.py           # ~30 s
    .venv/bin/python bench/bench_mcp_serve.py --quick
"""

from __future__ import annotations

import argparse
import asyncio
import os
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


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds the process has used (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _per_call(
    urls: dict[str, str], pids: dict[str, int], era: str, rounds: int, calls: int
) -> dict[str, Any]:
    from contextlib import AsyncExitStack

    from mcp import Client

    async with AsyncExitStack() as stack:
        clients = {k: await stack.enter_async_context(Client(u, mode=era)) for k, u in urls.items()}
        for c in clients.values():  # warm-up: connections, caches, first-call imports
            await _mean_call_ms(c, 20)
        samples: dict[str, list[float]] = {k: [] for k in clients}
        cpu = dict.fromkeys(clients, 0.0)
        order = list(clients)
        for r in range(rounds):
            for k in order if r % 2 == 0 else reversed(order):
                before = _cpu_s(pids[k])
                samples[k].append(await _mean_call_ms(clients[k], calls))
                cpu[k] += _cpu_s(pids[k]) - before
    diffs = [o - s for o, s in zip(samples["ours"], samples["sdk"], strict=True)]
    per_call_cpu = {k: v * 1000 / (rounds * calls) for k, v in cpu.items()}
    return {
        "sdk": statistics.median(samples["sdk"]),
        "ours": statistics.median(samples["ours"]),
        "overhead": statistics.median(diffs),
        "sdk_best": min(samples["sdk"]),
        "ours_best": min(samples["ours"]),
        "sdk_cpu": per_call_cpu["sdk"],
        "ours_cpu": per_call_cpu["ours"],
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
            pids: dict[str, int] = {}
            for key, kind, store in (
                ("sdk", "sdk", "memory"),
                ("ours", "ours", "memory"),
                ("sqlite", "ours", f"sqlite:///{Path(tmp) / 'state.db'}"),
            ):
                proc, urls[key] = _start(kind, store)
                pids[key] = proc.pid
                procs.append(proc)
            sqlite_url = urls.pop("sqlite")
            ours_url = urls["ours"]
            print(f"per call, ms (median of {rounds} rounds x {calls} sequential calls;")
            print("best = the fastest round; cpu = the server process's user+system time per call)")
            print(
                f"{'era':<12} {'wall sdk':>9} {'wall ours':>10} {'overhead':>9}"
                f" {'best sdk':>9} {'best ours':>10} {'cpu sdk':>8} {'cpu ours':>9} {'cpu +':>7}"
            )
            for era in ERAS:
                row = await _per_call(urls, pids, era, rounds, calls)
                print(
                    f"{era:<12} {row['sdk']:>9.3f} {row['ours']:>10.3f} {row['overhead']:>+9.3f}"
                    f" {row['sdk_best']:>9.3f} {row['ours_best']:>10.3f}"
                    f" {row['sdk_cpu']:>8.3f} {row['ours_cpu']:>9.3f}"
                    f" {row['ours_cpu'] - row['sdk_cpu']:>+7.3f}"
                )
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
