"""The sub-agent runtime: fan-out cost, memory per parked tree, restore + resume from SQLite.

Every agent here talks to one `toolnexus.testing.ScriptedModel` on loopback; the role an agent
plays is its model name (``fan-<n>``, ``child``, ``top``, ``mid``, ``leaf``), so one stateless
server answers the runtime and the plain client alike.

* **Fan-out.** A coordinator with a team of one (``child``) calls ``task`` n times in one turn
  (n = 2, 8); each child answers with text in one model call; the coordinator then answers.
  That is n + 2 model calls: 1, then n concurrently, then 1. Compared with the client's own
  loop doing the same calls in the same shape: a ``create_client`` coordinator whose native
  ``task`` tool awaits a nested ``client.run`` (the loop runs the n tool calls concurrently).
  Overhead per child turn = (agents − client, same shape) / n. For scale, the same n + 2
  single-call ``client.run`` in series is printed too. Agents run as `Agent.run` does (a fresh
  runtime per run); both sides share one pooled aiohttp session.
* **Long-lived runtime.** The same n = 2 fan-out, every run on ONE runtime: ms per run over the
  first runs and again after a few hundred runs.
* **Parked trees.** In a fresh child process: park 1,000 trees (coordinator ``mid`` + child
  ``leaf`` whose tool needs approval, no ``wait_for``: both handles suspended) in one runtime
  (default in-memory store), ``gc.collect()``, RSS Δ (``VmRSS``) / 1,000. For scale, the same
  for 1,000 halted single-agent ``client.run`` results.
* **Restore + resume.** A 3-level tree (``top`` → ``mid`` → ``leaf`` needing approval) parked in
  a fresh SQLite file; then `AgentRuntime.restore` (opens the file, rebuilds the tree) and
  ``resume`` (answers the leaf and cascades up: 3 model calls) are timed; medians over N files.

    .venv/bin/python bench/bench_agents.py            # ~4 min (parking 1,000 trees: ~3)
    .venv/bin/python bench/bench_agents.py --quick    # ~40 s smoke run (parks 300 trees)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from common import median, timed

from toolnexus import (
    Answer,
    SqliteStore,
    Tool,
    ToolContext,
    ToolResult,
    create_client,
    create_toolkit,
    pending,
)
from toolnexus.agents import Agent, AgentDef, AgentRuntime, Handle, agent
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls

PROMPT = "Split the work, delegate it, combine the answers."
CHILD_TEXT = "part done"
COMBINED_TEXT = "all parts combined"
API_KEY = "x"
_SELF = os.path.abspath(__file__)


# -- the scripted model ----------------------------------------------------------------------


def script(role: str, answered: bool) -> Reply:
    """What the agent playing ``role`` says, before and after it has seen a tool result."""
    if role.startswith("fan-"):
        if answered:
            return text(COMBINED_TEXT)
        n = int(role[len("fan-") :])
        calls = [
            call("task", {"agent": "child", "prompt": f"part {i}"}, id=f"t{i}") for i in range(n)
        ]
        return tool_calls(*calls)
    if role == "child":
        return text(CHILD_TEXT)
    below = {"top": "mid", "mid": "leaf"}
    if role in below:
        if answered:
            return text(f"{role} done")
        return tool_calls(call("task", {"agent": below[role], "prompt": "go on"}, id="t1"))
    if role == "leaf":
        return text("leaf done") if answered else tool_calls(call("check_secret", {}, id="c1"))
    return text(f"unknown role {role!r}")


class AgentsModel:
    """A `ScriptedModel` playing every role; replies are built once per (role, answered)."""

    def __init__(self) -> None:
        self.server = ScriptedModel(default=self._step)
        self.calls = 0
        self._replies: dict[tuple[str, bool], Reply] = {}

    def _step(self, recorded: RecordedRequest) -> Reply:
        self.server.requests.clear()  # keep the server flat: nothing reads them
        self.calls += 1
        body = recorded.body
        role = str(body.get("model"))
        answered = any(m.get("role") == "tool" for m in body.get("messages", []))
        reply = self._replies.get((role, answered))
        if reply is None:
            reply = self._replies[(role, answered)] = script(role, answered)
        return reply

    async def __aenter__(self) -> AgentsModel:
        await self.server.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.server.aclose()

    @property
    def base_url(self) -> str:
        return self.server.openai_base_url


def llm_of(base_url: str) -> dict[str, Any]:
    return {"base_url": base_url, "style": "openai", "model": "child", "api_key": API_KEY}


def new_session() -> aiohttp.ClientSession:
    """One pooled session, shared by every runtime and client of a measurement."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=256), timeout=aiohttp.ClientTimeout(total=None)
    )


async def check_secret(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
    if ctx is not None and ctx.answer is not None and ctx.answer.ok:
        return ToolResult("secret-token")
    return pending(kind="approval", prompt="approve secret access?")


CHECK_SECRET = Tool(
    "check_secret", "needs approval", {"type": "object", "properties": {}}, "custom", check_secret
)
LEVELS = {
    "top": AgentDef(name="top", description="top", model="top", task_targets=["mid"]),
    "mid": AgentDef(name="mid", description="mid", model="mid", task_targets=["leaf"]),
    "leaf": AgentDef(name="leaf", description="leaf", model="leaf", tools=[CHECK_SECRET]),
}
TWO_LEVELS = {name: LEVELS[name] for name in ("mid", "leaf")}


def fan_team(n: int) -> Agent:
    child = agent("child", does="does one part", model="child")
    return agent("coord", does="coordinates", model=f"fan-{n}", team=[child])


# -- fan-out ---------------------------------------------------------------------------------


@dataclass(slots=True)
class FanOut:
    n: int
    agents_ms: float
    same_shape_ms: float
    series_ms: float
    overhead_per_child_ms: float
    concurrent_turns: int


Play = Callable[[], Awaitable[None]]


async def measure_fan_out(base_url: str, n: int, runs: int, reps: int) -> FanOut:
    """ms per run for the three variants (interleaved batches; medians over repetitions)."""
    team = fan_team(n)
    llm = llm_of(base_url)
    seen_concurrency: list[int] = []
    empty = await create_toolkit(builtins=False)
    async with new_session() as session:
        coordinator = create_client(
            base_url=base_url, model=f"fan-{n}", api_key=API_KEY, http_transport=session
        )
        worker = create_client(
            base_url=base_url, model="child", api_key=API_KEY, http_transport=session
        )

        async def delegate(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
            return ToolResult((await worker.run(str(args["prompt"]), empty)).text)

        task = Tool(
            "task",
            "Delegate a subtask.",
            {
                "type": "object",
                "properties": {"agent": {"type": "string"}, "prompt": {"type": "string"}},
                "required": ["agent", "prompt"],
            },
            "native",
            delegate,
        )
        toolkit = await create_toolkit(extra_tools=[task], builtins=False)

        async def play_agents() -> None:
            result = await team.run(PROMPT, llm=llm, transport=session)
            if result.status != "done" or result.text != COMBINED_TEXT:
                raise RuntimeError(f"agents ended with {result.status}: {result.text}")
            assert result.runtime is not None
            seen_concurrency.append(result.runtime.max_observed_concurrent_turns)

        async def play_same_shape() -> None:
            result = await coordinator.run(PROMPT, toolkit)
            if result.text != COMBINED_TEXT or len(result.tool_calls) != n:
                raise RuntimeError(f"client ended with {result.status}: {result.text}")
            if any(c.output != CHILD_TEXT for c in result.tool_calls):
                raise RuntimeError("a nested client run did not answer")

        async def play_series() -> None:
            for _ in range(n + 2):
                result = await worker.run(PROMPT, empty)
                if result.text != CHILD_TEXT:
                    raise RuntimeError(f"client ended with {result.status}: {result.text}")

        plays: dict[str, Play] = {
            "agents": play_agents,
            "same_shape": play_same_shape,
            "series": play_series,
        }

        def batch(play: Play) -> Play:
            async def run_batch() -> None:
                for _ in range(runs):
                    await play()

            return run_batch

        samples: dict[str, list[float]] = {name: [] for name in plays}
        try:
            for name in plays:  # warm up: connections, caches, code paths
                await batch(plays[name])()
            names = list(plays)
            for rep in range(reps):
                for name in names[rep % 3 :] + names[: rep % 3]:
                    samples[name].append(await timed(batch(plays[name])) * 1000 / runs)
        finally:
            await coordinator.aclose()
            await worker.aclose()
    diffs = [a - c for a, c in zip(samples["agents"], samples["same_shape"], strict=True)]
    return FanOut(
        n=n,
        agents_ms=median(samples["agents"]),
        same_shape_ms=median(samples["same_shape"]),
        series_ms=median(samples["series"]),
        overhead_per_child_ms=median(diffs) / n,
        concurrent_turns=max(seen_concurrency),
    )


async def measure_long_lived(base_url: str, block: int, skip: int) -> tuple[float, float]:
    """ms per run (n = 2 fan-out) on one runtime: the first ``block`` runs, and ``block`` runs
    after ``skip`` more."""
    registry = fan_team(2).registry()
    async with (
        new_session() as session,
        AgentRuntime(registry=registry, llm=llm_of(base_url), transport=session) as rt,
    ):

        async def play(count: int) -> float:
            started = time.perf_counter()
            for _ in range(count):
                h = rt.spawn(rt.root, "coord")
                assert isinstance(h, Handle), h
                result = await rt.run_turn(h, PROMPT)
                if result.status != "done":
                    raise RuntimeError(f"agents ended with {result.status}: {result.text}")
            return (time.perf_counter() - started) * 1000 / count

        first = await play(block)
        await play(skip)
        later = await play(block)
    return first, later


# -- parked trees (run in a child process: its RSS is the runtime's alone) ---------------------


def rss_kib() -> int:
    """This process's resident set size (``VmRSS``), KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


async def park(base_url: str, kind: str, count: int, chunk: int) -> dict[str, Any]:
    """Park ``chunk`` (warm-up) then ``count`` trees or halted runs; measure RSS around the
    ``count``. Returns RSS figures and ms per item for the first and the last chunk."""
    kept: list[Any] = []
    rt: AgentRuntime | None = None
    async with contextlib.AsyncExitStack() as stack:
        if kind == "tree":
            rt = AgentRuntime(registry=TWO_LEVELS, llm=llm_of(base_url))
            await stack.enter_async_context(rt)

            async def one() -> None:
                assert rt is not None
                h = rt.spawn(rt.root, "mid")
                assert isinstance(h, Handle), h
                rt.wake(h, PROMPT)
                result = await rt.wait(h)
                if result.status != "pending":
                    raise RuntimeError(f"the tree did not park: {result.status} {result.text}")

        else:
            client = create_client(base_url=base_url, model="leaf", api_key=API_KEY)
            await stack.enter_async_context(client)
            toolkit = await create_toolkit(extra_tools=[CHECK_SECRET], builtins=False)

            async def one() -> None:
                result = await client.run(PROMPT, toolkit)
                if result.status != "pending":
                    raise RuntimeError(f"the run did not halt: {result.status} {result.text}")
                kept.append(result)

        async def park_chunk(size: int) -> float:
            started = time.perf_counter()
            await asyncio.gather(*(one() for _ in range(size)))
            return (time.perf_counter() - started) * 1000 / size

        await park_chunk(chunk)  # warm up: connections, caches, the allocator's arenas
        gc.collect()
        before = rss_kib()
        per_chunk: list[float] = []
        done = 0
        while done < count:
            size = min(chunk, count - done)
            per_chunk.append(await park_chunk(size))
            done += size
        gc.collect()
        after = rss_kib()
        if rt is not None:
            suspended = sum(1 for v in rt.list() if v.state == "suspended")
            if suspended != 2 * (count + chunk):
                raise RuntimeError(f"{suspended} handles suspended, not {2 * (count + chunk)}")
        return {
            "before_kib": before,
            "after_kib": after,
            "kib_per_item": (after - before) / count,
            "first_chunk_ms": per_chunk[0],
            "last_chunk_ms": per_chunk[-1],
        }


async def park_in_child(base_url: str, kind: str, count: int, chunk: int) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        _SELF,
        "park",
        "--url",
        base_url,
        "--kind",
        kind,
        "--count",
        str(count),
        "--chunk",
        str(chunk),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"the park process failed: {err.decode()}")
    figures: dict[str, Any] = json.loads(out)
    return figures


# -- restore + resume ------------------------------------------------------------------------


async def measure_restore_resume(
    model: AgentsModel, samples: int
) -> tuple[list[float], list[float], list[float]]:
    """Per fresh SQLite file: park the 3-level tree, then time restore and resume. Also times
    the resume's 3 model calls made as 3 single-call ``client.run`` in series."""
    llm = llm_of(model.base_url)
    restore_ms: list[float] = []
    resume_ms: list[float] = []
    calls_ms: list[float] = []
    empty = await create_toolkit(builtins=False)
    with tempfile.TemporaryDirectory() as tmp:
        async with new_session() as session:
            client = create_client(
                base_url=model.base_url, model="child", api_key=API_KEY, http_transport=session
            )
            for i in range(samples + 1):  # the first is a warm-up
                path = Path(tmp) / f"tree-{i}.db"
                store = SqliteStore(path)
                async with AgentRuntime(
                    registry=LEVELS, llm=llm, store=store, transport=session
                ) as rt:
                    h = rt.spawn(rt.root, "top")
                    assert isinstance(h, Handle), h
                    rt.wake(h, PROMPT)
                    parked = await rt.wait(h)
                await store.aclose()
                if parked.pending is None:
                    raise RuntimeError(f"the tree did not park: {parked.status} {parked.text}")

                store = SqliteStore(path)
                gc.collect()
                started = time.perf_counter()
                rt = await AgentRuntime.restore(
                    registry=LEVELS, store=store, llm=llm, transport=session
                )
                restored = time.perf_counter()
                states = [v.state for v in rt.list()]
                if states != ["suspended"] * 3:
                    raise RuntimeError(f"restored states {states}")
                calls_before = model.calls
                gc.collect()
                resumed_at = time.perf_counter()
                await rt.resume(Answer(id=parked.pending.id, ok=True))
                finished = time.perf_counter()
                top = rt.handle("root/top.1")
                assert top is not None
                final = await rt.wait(top)
                if final.status != "done" or model.calls - calls_before != 3:
                    raise RuntimeError(f"resume ended with {final.status}: {final.text}")
                await rt.aclose()
                await store.aclose()

                async def three_calls() -> None:
                    for _ in range(3):
                        await client.run(PROMPT, empty)

                series = await timed(three_calls)
                if i:
                    restore_ms.append((restored - started) * 1000)
                    resume_ms.append((finished - resumed_at) * 1000)
                    calls_ms.append(series * 1000)
            await client.aclose()
    return restore_ms, resume_ms, calls_ms


# -- the table -------------------------------------------------------------------------------


def print_table(header: tuple[str, ...], rows: list[tuple[str, ...]], title: str) -> None:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    print(title)
    for i, line in enumerate([header, *rows]):
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))


async def amain(quick: bool) -> None:
    runs, reps = (20, 3) if quick else (50, 7)
    block, skip = (20, 80) if quick else (25, 175)
    # Parking is quadratic in the trees already parked (see the long-lived row), so the quick
    # run parks fewer: 1,000 take about three minutes here.
    count, chunk = (300, 100) if quick else (1000, 100)
    samples = 5 if quick else 21
    rows: list[tuple[str, ...]] = []
    async with AgentsModel() as model:
        for n in (2, 8):
            f = await measure_fan_out(model.base_url, n, runs, reps)
            rows.append(
                (
                    f"fan-out, {n} children ({n + 2} model calls), ms/run",
                    f"{f.agents_ms:.2f}",
                    f"{f.same_shape_ms:.2f} client, same shape",
                    f"+{f.overhead_per_child_ms:.3f} ms/child turn",
                    f"series {f.series_ms:.2f} ms; max concurrent turns {f.concurrent_turns}",
                )
            )
        first, later = await measure_long_lived(model.base_url, block, skip)
        rows.append(
            (
                f"one long-lived runtime, fan-out 2, ms/run at runs {block + skip + 1}-"
                f"{2 * block + skip}",
                f"{later:.2f}",
                f"{first:.2f} at runs 1-{block}",
                f"{later / first:.1f}x",
                "per-handle rows: a save writes only what changed",
            )
        )
        tree = await park_in_child(model.base_url, "tree", count, chunk)
        run = await park_in_child(model.base_url, "run", count, chunk)
        rows.append(
            (
                f"{count:,} parked trees (2 handles suspended), KiB/tree",
                f"{tree['kib_per_item']:.1f}",
                f"{run['kib_per_item']:.1f} per halted client.run",
                f"{tree['kib_per_item'] / max(run['kib_per_item'], 0.1):.1f}x",
                f"park ms/tree: first {chunk} {tree['first_chunk_ms']:.1f}, "
                f"last {chunk} {tree['last_chunk_ms']:.1f}",
            )
        )
        restore, resume, calls = await measure_restore_resume(model, samples)
        rows.append(
            (
                f"restore 3-level tree from SQLite, ms (median of {samples})",
                f"{median(restore):.2f}",
                "-",
                "-",
                "AgentRuntime.restore on a fresh SqliteStore",
            )
        )
        rows.append(
            (
                f"resume it (answer leaf, cascade up), ms (median of {samples})",
                f"{median(resume):.2f}",
                f"{median(calls):.2f} 3x client.run in series",
                f"+{median(resume) - median(calls):.2f} ms",
                "3 model calls, no call repeated",
            )
        )
    print_table(
        ("benchmark", "agents", "baseline", "overhead", "note"),
        rows,
        f"toolnexus.agents on a scripted loopback model; medians{' (quick)' if quick else ''}",
    )
    print(
        "client, same shape = a create_client coordinator whose native `task` tool awaits a "
        "nested client.run: the same n+2 model calls, the n children concurrent.\n"
        "overhead per child turn = (agents - client, same shape) / n, medians of per-repetition "
        "differences; agents = Agent.run (fresh runtime per run), one shared aiohttp session.\n"
        "series = the same n+2 model calls as single-call client.run one after another.\n"
        "KiB/tree = RSS delta (VmRSS, after gc.collect) / trees parked, in a fresh process."
    )


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("mode", nargs="?", choices=["all", "park"], default="all")
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--url", help="park: the model's base URL")
    parser.add_argument("--kind", choices=["tree", "run"], default="tree")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--chunk", type=int, default=100)
    return parser.parse_args()


def main() -> None:
    args = arguments()
    if args.mode == "park":
        figures = asyncio.run(park(args.url, args.kind, args.count, args.chunk))
        print(json.dumps(figures))
        return
    asyncio.run(amain(args.quick))


if __name__ == "__main__":
    main()
