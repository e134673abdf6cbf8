"""Throughput: 200 concurrent 3-turn runs (``asyncio.gather``), runs per second.

Each repetition times a few rounds of 200 concurrent runs with the floor, then with our client
(the order alternates per repetition). Runs/s = runs / seconds; reported as medians.

By default the server runs in a child process: with it in our process, the server's CPU shares
the client's event loop, which caps both sides at the same server cost and flatters the ratio
(see ``bench/README.md``). ``--same-process`` measures that way; ``--both`` prints both.

    .venv/bin/python bench/bench_throughput.py            # ~15 s
    .venv/bin/python bench/bench_throughput.py --quick    # ~5 s smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable

import floor
from common import (
    PROMPT,
    Row,
    ServerKind,
    check_ours,
    endpoint,
    make_client,
    make_toolkit,
    median,
    print_table,
    timed,
)

CONCURRENCY = 200
TURNS = 3
RATIO_TARGET = 0.70

Round = Callable[[], Awaitable[None]]


async def measure(
    *, quick: bool = False, kind: ServerKind = "raw", separate: bool = True
) -> tuple[list[Row], dict[str, float]]:
    """Runs/s (and client CPU per run) for the floor and our client: rows and raw medians."""
    reps = 3 if quick else 9
    rounds = 2 if quick else 3
    toolkit = await make_toolkit()
    async with (
        endpoint(kind, separate=separate) as url,
        floor.new_session() as session,
        make_client(url, "openai", TURNS) as client,
    ):

        async def floor_one() -> None:
            floor.check_floor(await floor.run(session, url, TURNS))

        async def ours_one() -> None:
            check_ours(await client.run(PROMPT, toolkit), TURNS)

        def rounds_of(one: Callable[[], Awaitable[None]]) -> Round:
            async def go() -> None:
                for _ in range(rounds):
                    await asyncio.gather(*(one() for _ in range(CONCURRENCY)))

            return go

        plays = {"floor": rounds_of(floor_one), "ours": rounds_of(ours_one)}
        for play in plays.values():  # warm up: open the pools, reach steady state
            await play()
        rps: dict[str, list[float]] = {name: [] for name in plays}
        cpu: dict[str, list[float]] = {name: [] for name in plays}
        runs = rounds * CONCURRENCY
        for rep in range(reps):
            order = ["floor", "ours"] if rep % 2 == 0 else ["ours", "floor"]
            for name in order:
                cpu_before = time.process_time()
                seconds = await timed(plays[name])
                cpu[name].append((time.process_time() - cpu_before) * 1e6 / runs)
                rps[name].append(runs / seconds)
    ratio = median([o / f for o, f in zip(rps["ours"], rps["floor"], strict=True)])
    cpu_ratio = median([f / o for o, f in zip(cpu["ours"], cpu["floor"], strict=True)])
    where = "server in child process" if separate else "server in same process"
    rows = [
        Row(
            metric=f"{CONCURRENCY} concurrent {TURNS}-turn runs, runs/s ({where})",
            floor=f"{median(rps['floor']):,.0f}",
            ours=f"{median(rps['ours']):,.0f}",
            delta=f"{ratio:.0%} of the floor",
            target=f">= {RATIO_TARGET:.0%}",
            ok=ratio >= RATIO_TARGET,
        ),
        Row(
            metric=f"  same, this process's CPU us/run ({where})",
            floor=f"{median(cpu['floor']):.0f}",
            ours=f"{median(cpu['ours']):.0f}",
            delta=f"floor/ours {cpu_ratio:.0%}",
            target="(info)",
            ok=None,
        ),
    ]
    raw = {
        "floor_rps": median(rps["floor"]),
        "ours_rps": median(rps["ours"]),
        "ratio": ratio,
        "floor_cpu_us": median(cpu["floor"]),
        "ours_cpu_us": median(cpu["ours"]),
    }
    return rows, raw


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a ~5 s smoke run")
    parser.add_argument("--server", choices=["raw", "scripted"], default="raw")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--same-process", action="store_true", help="server in this process")
    where.add_argument("--both", action="store_true", help="measure both placements")
    return parser.parse_args()


async def amain(args: argparse.Namespace) -> None:
    placements = [True, False] if args.both else [not args.same_process]
    rows: list[Row] = []
    for separate in placements:
        rows += (await measure(quick=args.quick, kind=args.server, separate=separate))[0]
    print_table(rows, f"throughput ({args.server} server; medians)")


if __name__ == "__main__":
    asyncio.run(amain(arguments()))
