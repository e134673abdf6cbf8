"""The MCP source: start-up with one stdio and one HTTP server, and per-call overhead.

Start-up: ``load_mcp`` over a config with the demo test server twice, once as a stdio child
and once over streamable HTTP (that server is started beforehand and not timed). "cold" is the
first load in a fresh interpreter (it includes importing the ``mcp`` SDK); "warm" loads run in
the same process afterwards; the stdio child's own start-up (a Python interpreter importing the
SDK, ~0.7 s here) dominates them, so the HTTP server is also timed alone. ``close`` is the time
to disconnect both and stop the child.

Per call: ``echo`` on the same connection, three ways, interleaved in rounds:

* ``sdk session``: ``ClientSession.call_tool`` on the session our source holds (the floor);
* ``sdk Client``: ``mcp.Client.call_tool`` on its own connection (what an SDK user writes);
* ``toolnexus``: our ``Tool.execute`` (idle timer, result mapping, ToolResult).

Each round runs the three once, in a rotating order; the overhead row is the median of the
per-round differences against the session floor.

    .venv/bin/python bench/bench_mcp.py            # ~20 s
    .venv/bin/python bench/bench_mcp.py --quick
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "tests" / "tools" / "mcp" / "servers" / "demo.py"


def start_http_server() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(DEMO), "--transport", "http"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise SystemExit(f"the demo HTTP server did not start: {line!r}")
    return proc, f"http://127.0.0.1:{int(line.split()[1])}/mcp"


def config(url: str) -> dict[str, Any]:
    return {
        "mcpServers": {
            "local": {"command": [sys.executable, str(DEMO)]},
            "remote": {"url": url},
        }
    }


async def startup(url: str, warm_runs: int) -> list[tuple[str, float]]:
    from toolnexus.tools.mcp import load_mcp

    rows: list[tuple[str, float]] = []
    started = time.perf_counter()
    source = await load_mcp(config(url))
    rows.append(("start-up, cold (imports the mcp SDK)", (time.perf_counter() - started) * 1e3))
    assert set(source.status().values()) == {"connected"}, source.errors()
    closing = time.perf_counter()
    await source.close()
    closes = [(time.perf_counter() - closing) * 1e3]
    warm: list[float] = []
    for _ in range(warm_runs):
        started = time.perf_counter()
        source = await load_mcp(config(url))
        warm.append((time.perf_counter() - started) * 1e3)
        closing = time.perf_counter()
        await source.close()
        closes.append((time.perf_counter() - closing) * 1e3)
    rows.append((f"start-up, warm (median of {warm_runs})", statistics.median(warm)))
    remote_only = {"mcpServers": {"remote": {"url": url}}}
    alone: list[float] = []
    for _ in range(warm_runs):
        started = time.perf_counter()
        source = await load_mcp(remote_only)
        alone.append((time.perf_counter() - started) * 1e3)
        await source.close()
    rows.append(("start-up, warm, HTTP server alone", statistics.median(alone)))
    rows.append(("close (both servers, child stopped)", statistics.median(closes)))
    return rows


Call = Callable[[], Awaitable[Any]]


async def per_call(url: str, rounds: int) -> list[tuple[str, float]]:
    import mcp
    from mcp.client.streamable_http import streamable_http_client

    from toolnexus.tools.mcp import load_mcp

    rows: list[tuple[str, float]] = []
    async with await load_mcp(config(url)) as source:
        links: dict[str, Any] = {
            link.name: link
            for link in source._links  # pyright: ignore[reportPrivateUsage]
        }
        for server in ("local", "remote"):
            session = links[server].session
            tool = next(t for t in source.tools if t.name == f"{server}_echo")
            transport = (
                mcp.stdio_client(
                    mcp.StdioServerParameters(command=sys.executable, args=[str(DEMO)])
                )
                if server == "local"
                else streamable_http_client(url)
            )
            async with mcp.Client(transport, cache=None) as client:
                calls: dict[str, Call] = {
                    "sdk session": partial(session.call_tool, "echo", {"text": "x"}),
                    "sdk Client": partial(client.call_tool, "echo", {"text": "x"}),
                    "toolnexus": partial(tool.execute, {"text": "x"}, None),
                }
                samples: dict[str, list[float]] = {k: [] for k in calls}
                for fn in calls.values():  # warm every path first
                    for _ in range(20):
                        await fn()
                order = list(calls)
                for round_no in range(rounds):
                    shift = round_no % len(order)  # rotate, so no path always goes first
                    for name in order[shift:] + order[:shift]:
                        started = time.perf_counter()
                        await calls[name]()
                        samples[name].append((time.perf_counter() - started) * 1e3)
            for name in calls:
                rows.append((f"{server}: {name} per call", statistics.median(samples[name])))
            paired = [
                ours - floor
                for ours, floor in zip(samples["toolnexus"], samples["sdk session"], strict=True)
            ]
            rows.append((f"{server}: toolnexus overhead per call", statistics.median(paired)))
    return rows


def show(rows: list[tuple[str, float]]) -> None:
    width = max(len(label) for label, _ in rows)
    for label, ms in rows:
        print(f"  {label:<{width}}  {ms:9.3f} ms")


async def main(quick: bool) -> None:
    proc, url = start_http_server()
    try:
        print("MCP source start-up (one stdio + one streamable-HTTP server)")
        show(await startup(url, warm_runs=2 if quick else 5))
        print("MCP tool call: echo, same server (median)")
        show(await per_call(url, rounds=100 if quick else 500))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))
