"""Serving over A2A: the round trip's overhead, concurrent tasks, the input-required cycle.

    .venv/bin/python bench/bench_serve.py            # ~30-60 s
    .venv/bin/python bench/bench_serve.py --quick    # ~10 s

The model is the common raw endpoint in a child process (``bench/common.py``), playing the
2-turn loop (one ``add`` call, then text). The A2A caller is a bare aiohttp session posting
A2A 1.0 ``SendMessage`` (blocking) to the served toolkit on 127.0.0.1 — the cheapest honest
caller, so what is measured is the server, not a client library.

1. **Round trip**: ``client.run`` called directly vs the same run as a served A2A task
   (SendMessage → completed), sequential, median ms; the difference is what serving adds
   (HTTP, JSON-RPC, the task's saves, the 1.0 rendering through a2a-sdk's types).
2. **Concurrent tasks**: 200 SendMessage at once (``asyncio.gather``) → tasks/s, beside 200
   direct ``client.run`` at once (runs/s) for scale.
3. **input-required → follow-up → completed**: ``add`` is gated on an approval; the task
   halts (input-required), the follow-up answers it and the run resumes to completed. Median
   ms of the follow-up leg (answer recorded, run resumed, task completed) and of the whole
   cycle, with the tasks and runs in memory and in one SQLite file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp
from common import add, endpoint, make_client

import toolnexus as tn


def gated_add() -> tn.Tool:
    """``add`` that asks for approval first (the input-required cycle)."""

    async def execute(args: dict[str, Any], ctx: tn.ToolContext | None = None) -> tn.ToolResult:
        if ctx is None or ctx.answer is None:
            return tn.pending(kind="approval", prompt="add these?")
        return tn.ToolResult(add(float(args["a"]), float(args["b"])))

    schema = {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    }
    return tn.Tool("add", "Add two numbers.", schema, "native", execute)


def send_body(text: str, task_id: str | None = None) -> bytes:
    message: dict[str, Any] = {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    if task_id:
        message["taskId"] = task_id
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    return json.dumps(body).encode()


HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}


async def send(http: aiohttp.ClientSession, url: str, body: bytes) -> dict[str, Any]:
    async with http.post(url, data=body, headers=HEADERS) as r:
        reply = await r.json()
    if "result" not in reply:
        raise RuntimeError(f"the served agent refused: {reply}")
    return reply["result"]["task"]


async def round_trip(model_url: str, n: int) -> tuple[float, float]:
    tk = await tn.create_toolkit(extra_tools=[tn.define_tool(add)], builtins=False)
    async with make_client(model_url, "openai", 2) as client:
        direct: list[float] = []
        for _ in range(n + 5):
            started = time.perf_counter()
            result = await client.run("add", tk)
            direct.append(time.perf_counter() - started)
            assert result.status == "done"
        async with await tk.serve("127.0.0.1:0", client=client, a2a=True) as served:
            url = served.url + "/"
            async with aiohttp.ClientSession() as http:
                over: list[float] = []
                for _ in range(n + 5):
                    started = time.perf_counter()
                    task = await send(http, url, send_body("add"))
                    over.append(time.perf_counter() - started)
                    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    return statistics.median(direct[5:]) * 1000, statistics.median(over[5:]) * 1000


async def concurrent(model_url: str, n: int) -> float:
    tk = await tn.create_toolkit(extra_tools=[tn.define_tool(add)], builtins=False)
    client = make_client(model_url, "openai", 2)
    async with client, await tk.serve("127.0.0.1:0", client=client, a2a=True) as served:
        url = served.url + "/"
        connector = aiohttp.TCPConnector(limit=0)
        async with aiohttp.ClientSession(connector=connector) as http:
            await asyncio.gather(*(send(http, url, send_body("warm")) for _ in range(20)))
            started = time.perf_counter()
            tasks = await asyncio.gather(*(send(http, url, send_body("add")) for _ in range(n)))
            elapsed = time.perf_counter() - started
    assert all(t["status"]["state"] == "TASK_STATE_COMPLETED" for t in tasks)
    return n / elapsed


async def concurrent_direct(model_url: str, n: int) -> float:
    tk = await tn.create_toolkit(extra_tools=[tn.define_tool(add)], builtins=False)
    async with make_client(model_url, "openai", 2) as client:
        await asyncio.gather(*(client.run("warm", tk) for _ in range(20)))
        started = time.perf_counter()
        results = await asyncio.gather(*(client.run("add", tk) for _ in range(n)))
        elapsed = time.perf_counter() - started
    assert all(r.status == "done" for r in results)
    return n / elapsed


async def cycle(model_url: str, n: int, store: str | None) -> tuple[float, float]:
    tk = await tn.create_toolkit(extra_tools=[gated_add()], builtins=False)
    client = tn.create_client(
        base_url=model_url + "/v1", model="loop-2", api_key="x", max_turns=3, store=store
    )
    async with client, await tk.serve("127.0.0.1:0", client=client, a2a=True) as served:
        url = served.url + "/"
        async with aiohttp.ClientSession() as http:
            legs: list[float] = []
            whole: list[float] = []
            for _ in range(n + 3):
                started = time.perf_counter()
                task = await send(http, url, send_body("add"))
                assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", task
                asked = time.perf_counter()
                done = await send(http, url, send_body("yes", task["id"]))
                assert done["status"]["state"] == "TASK_STATE_COMPLETED", done
                ended = time.perf_counter()
                legs.append(ended - asked)
                whole.append(ended - started)
    return statistics.median(legs[3:]) * 1000, statistics.median(whole[3:]) * 1000


async def main(quick: bool) -> None:
    n = 30 if quick else 200
    fan = 200
    async with endpoint("raw", separate=True) as model_url:
        direct_ms, served_ms = await round_trip(model_url, n)
        direct_rate = await concurrent_direct(model_url, fan)
        rate = await concurrent(model_url, fan)
        memory_leg, memory_whole = await cycle(model_url, n // 2, None)
        with tempfile.TemporaryDirectory() as folder:
            store = f"sqlite:///{Path(folder) / 'state.db'}"
            sqlite_leg, sqlite_whole = await cycle(model_url, n // 2, store)
    print("A2A serving (2-turn run, raw model endpoint in a child process)")
    print(f"  direct client.run                     {direct_ms:8.2f} ms")
    print(f"  served SendMessage -> completed       {served_ms:8.2f} ms")
    print(f"  overhead of serving                   {served_ms - direct_ms:8.2f} ms")
    print(f"  {fan} concurrent direct runs            {direct_rate:8.0f} runs/s")
    print(f"  {fan} concurrent served tasks           {rate:8.0f} tasks/s")
    print(f"  follow-up -> completed (memory)       {memory_leg:8.2f} ms")
    print(f"  whole input-required cycle (memory)   {memory_whole:8.2f} ms")
    print(f"  follow-up -> completed (SQLite)       {sqlite_leg:8.2f} ms")
    print(f"  whole input-required cycle (SQLite)   {sqlite_whole:8.2f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))
