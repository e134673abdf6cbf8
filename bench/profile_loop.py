"""Profile our client on a sequential tool loop: where the time goes, per turn, vs the floor.

The floor and our client are profiled alike (the floor always on the OpenAI wire), with the
server in a child process so that the profiles hold only the client. cProfile adds its own cost
per call, so compare the figures with each other rather than with the benchmarks.

    .venv/bin/python bench/profile_loop.py                          # 3-turn, OpenAI wire
    .venv/bin/python bench/profile_loop.py --style anthropic --turns 20
    .venv/bin/python bench/profile_loop.py --concurrency 200 --runs 2000
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
from collections import defaultdict

import floor
from common import PROMPT, Style, check_ours, endpoint, make_client, make_toolkit

SRC = os.sep + os.path.join("src", "toolnexus") + os.sep


async def profile(
    style: Style, turns: int, runs: int, *, of_floor: bool, concurrency: int = 1
) -> cProfile.Profile:
    """Profile ``runs`` runs (in waves of ``concurrency`` concurrent runs) after a warm-up."""
    toolkit = await make_toolkit()
    profiler = cProfile.Profile()
    async with (
        endpoint("raw", separate=True) as url,
        floor.new_session() as session,
        make_client(url, style, turns) as client,
    ):

        async def play() -> None:
            if of_floor:
                floor.check_floor(await floor.run(session, url, turns))
            else:
                check_ours(await client.run(PROMPT, toolkit), turns)

        async def wave() -> None:
            await asyncio.gather(*(play() for _ in range(concurrency)))

        waves = max(1, runs // concurrency)
        for _ in range(max(1, waves // 10)):
            await wave()
        profiler.enable()
        for _ in range(waves):
            await wave()
        profiler.disable()
    return profiler


def area_of(path: str, name: str) -> str:
    """Which part of the stack a profiled function belongs to."""
    if SRC in path:
        return "toolnexus/" + path.split(SRC, 1)[1]
    if "site-packages" + os.sep + "aiohttp" in path:
        return "aiohttp"
    if path == "~":
        if any(word in name for word in ("send", "recv", "poll", "select")):
            return "syscalls (send, recv, epoll)"
        return "C builtins (json C parts, dict, isinstance, ...)"
    if os.sep + "json" + os.sep in path:
        return "json (Python parts)"
    return "asyncio / stdlib / other"


def areas(profiler: cProfile.Profile) -> dict[str, float]:
    """Self time per area, in seconds."""
    by_area: defaultdict[str, float] = defaultdict(float)
    for (path, _, name), (_, _, tt, _, _) in pstats.Stats(profiler).stats.items():
        by_area[area_of(path, name)] += tt
    return by_area


def report(ours: cProfile.Profile, base: cProfile.Profile, turns_total: int, top: int) -> None:
    mine, theirs = areas(ours), areas(base)

    def us(seconds: float) -> str:
        return f"{seconds * 1e6 / turns_total:9.1f}"

    print("self time by area, us/turn (cProfile inflates every figure; compare them):")
    print(f"  {'floor':>9} {'ours':>9} {'ours-floor':>10}  area")
    for area in sorted(set(mine) | set(theirs), key=lambda a: -mine.get(a, 0.0)):
        a, b = theirs.get(area, 0.0), mine.get(area, 0.0)
        print(f"  {us(a)} {us(b)} {us(b - a)} {'':1} {area}")
    a, b = sum(theirs.values()), sum(mine.values())
    print(f"  {us(a)} {us(b)} {us(b - a)} {'':1} total")
    entries: list[tuple[float, float, int, str]] = []
    for (path, line, name), (_, calls, tt, ct, _) in pstats.Stats(ours).stats.items():
        if SRC in path:
            entries.append((tt, ct, calls, f"{path.split(SRC, 1)[1]}:{line}({name})"))
    print(f"\ntop {top} functions in src/toolnexus by self time, us/turn:")
    print(f"  {'self':>9} {'cumul.':>9} {'calls':>7}  function")
    for tt, ct, calls, where in sorted(entries, reverse=True)[:top]:
        print(f"  {us(tt)} {us(ct)} {calls:7d}  {where}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--style", choices=["openai", "anthropic"], default="openai")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--runs", type=int, default=0, help="default: ~1,500 turns")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--concurrency", type=int, default=1, help="concurrent runs per wave")
    args = parser.parse_args()
    concurrency = max(1, args.concurrency)
    runs = args.runs or max(1, 1500 // args.turns)
    runs = max(1, runs // concurrency) * concurrency
    style: Style = "anthropic" if args.style == "anthropic" else "openai"
    base = asyncio.run(profile(style, args.turns, runs, of_floor=True, concurrency=concurrency))
    ours = asyncio.run(profile(style, args.turns, runs, of_floor=False, concurrency=concurrency))
    report(ours, base, runs * args.turns, args.top)


if __name__ == "__main__":
    main()
