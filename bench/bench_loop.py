"""Sequential tool loops: milliseconds per turn, the floor against our client.

For a 3-turn and a 20-turn loop, each repetition plays a batch of sequential runs with the floor
(bare aiohttp) on the OpenAI wire, the floor on the Anthropic wire, and our client on each wire,
back to back (the order rotates per repetition so drift hits everyone alike). Per turn =
batch time / (runs x turns). Reported: medians over repetitions; the overhead is the median of
the per-repetition differences ours - floor.

    .venv/bin/python bench/bench_loop.py            # ~20 s
    .venv/bin/python bench/bench_loop.py --quick    # ~5 s smoke run
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import floor
from common import (
    PROMPT,
    RawServer,
    Row,
    ServerKind,
    Style,
    check_ours,
    endpoint,
    make_client,
    make_toolkit,
    median,
    print_table,
    timed,
)

LENGTHS = (3, 20)
OVERHEAD_TARGET_MS = 0.1
RATIO_TARGET = 2.0
# Each row compares one of our batches with the floor doing the same work: the OpenAI wire with
# the OpenAI floor, the Anthropic wire with the Anthropic floor (same bytes both). The in-process
# server's work differs by wire, so ours-anthropic against the OpenAI floor is printed for
# information only.
COMPARED: dict[str, tuple[str, str, bool]] = {
    "openai wire": ("openai", "floor", True),
    "anthropic wire": ("anthropic", "floor-anthropic", True),
    "anthropic vs the openai floor": ("anthropic", "floor", False),
}


async def check_same_bytes(style: Style) -> tuple[bool, str]:
    """Play one 3-turn run each way on ``style``'s wire on a fresh server; compare the bytes."""
    toolkit = await make_toolkit()
    play_floor = floor.run if style == "openai" else floor.run_anthropic
    seen: list[tuple[int, int, int]] = []
    for who in ("floor", "ours"):
        server = RawServer()
        url = await server.start()
        try:
            if who == "floor":
                async with floor.new_session() as session:
                    floor.check_floor(await play_floor(session, url, 3))
            else:
                async with make_client(url, style, 3) as client:
                    check_ours(await client.run(PROMPT, toolkit), 3)
        finally:
            await server.aclose()
        t = server.traffic
        seen.append((t.requests, t.bytes_in, t.bytes_out))
    same = seen[0] == seen[1]
    note = (
        f"one 3-turn run, {style} wire: floor {seen[0][0]} requests, {seen[0][1]} B sent, "
        f"{seen[0][2]} B received; ours {seen[1][0]}, {seen[1][1]} B, {seen[1][2]} B -> "
        f"{'same bytes' if same else 'DIFFERENT BYTES'}"
    )
    return same, note


Batch = Callable[[], Awaitable[None]]


def repeat(play: Callable[[], Awaitable[None]], runs: int) -> Batch:
    """A batch: ``runs`` sequential plays."""

    async def batch() -> None:
        for _ in range(runs):
            await play()

    return batch


async def measure(
    *, quick: bool = False, kind: ServerKind = "raw", separate: bool = False
) -> tuple[list[Row], dict[str, Any]]:
    """Measure every variant; return the table rows and the raw medians (ms per turn)."""
    reps = 3 if quick else 7
    turns_per_batch = 300 if quick else 600
    toolkit = await make_toolkit()
    per_turn: dict[tuple[str, int], float] = {}
    overhead: dict[tuple[str, int], float] = {}
    async with endpoint(kind, separate=separate) as url, floor.new_session() as session:
        clients = {
            style: {n: make_client(url, style, n) for n in LENGTHS}
            for style in ("openai", "anthropic")
        }
        try:
            for n in LENGTHS:
                runs = max(1, turns_per_batch // n)

                async def play_floor(n: int = n) -> None:
                    floor.check_floor(await floor.run(session, url, n))

                async def play_floor_anthropic(n: int = n) -> None:
                    floor.check_floor(await floor.run_anthropic(session, url, n))

                def play_ours(style: Style, n: int = n) -> Callable[[], Awaitable[None]]:
                    client = clients[style][n]

                    async def play() -> None:
                        check_ours(await client.run(PROMPT, toolkit), n)

                    return play

                batches: dict[str, Batch] = {
                    "floor": repeat(play_floor, runs),
                    "floor-anthropic": repeat(play_floor_anthropic, runs),
                    "openai": repeat(play_ours("openai"), runs),
                    "anthropic": repeat(play_ours("anthropic"), runs),
                }
                names = list(batches)
                for name in names:  # warm up: connections, caches, code paths
                    await batches[name]()
                samples: dict[str, list[float]] = {name: [] for name in names}
                for rep in range(reps):
                    order = names[rep % len(names) :] + names[: rep % len(names)]
                    for name in order:
                        seconds = await timed(batches[name])
                        samples[name].append(seconds * 1000 / (runs * n))
                for name in names:
                    per_turn[(name, n)] = median(samples[name])
                for name, (ours, base, _) in COMPARED.items():
                    diffs = [o - f for o, f in zip(samples[ours], samples[base], strict=True)]
                    overhead[(name, n)] = median(diffs)
        finally:
            for by_length in clients.values():
                for client in by_length.values():
                    await client.aclose()

    rows: list[Row] = []
    for n in LENGTHS:
        for name, (ours, base, targeted) in COMPARED.items():
            extra = overhead[(name, n)]
            rows.append(
                Row(
                    metric=f"{n}-turn loop, ms/turn, {name}",
                    floor=f"{per_turn[(base, n)]:.3f}",
                    ours=f"{per_turn[(ours, n)]:.3f}",
                    delta=f"{extra:+.3f} ms/turn",
                    target=f"<= +{OVERHEAD_TARGET_MS} ms" if targeted else "(info)",
                    ok=extra <= OVERHEAD_TARGET_MS if targeted else None,
                )
            )
    floor_ratio = per_turn[("floor", 20)] / per_turn[("floor", 3)]
    ours_ratio = per_turn[("openai", 20)] / per_turn[("openai", 3)]
    rows.append(
        Row(
            metric="20-turn / 3-turn per-turn cost",
            floor=f"{floor_ratio:.2f}x",
            ours=f"{ours_ratio:.2f}x",
            delta=f"{ours_ratio / floor_ratio:.2f}x the floor's",
            target=f"<= {RATIO_TARGET:.0f}x",
            ok=ours_ratio <= RATIO_TARGET,
        )
    )
    raw = {f"{name}/{n}": ms for (name, n), ms in per_turn.items()}
    return rows, raw


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a ~5 s smoke run")
    parser.add_argument("--server", choices=["raw", "scripted"], default="raw")
    parser.add_argument("--separate", action="store_true", help="run the server in a child process")
    return parser.parse_args()


async def amain(args: argparse.Namespace) -> None:
    checks = [await check_same_bytes(style) for style in ("openai", "anthropic")]
    rows, _ = await measure(quick=args.quick, kind=args.server, separate=args.separate)
    where = "child process" if args.separate else "same process"
    print_table(rows, f"sequential tool loops ({args.server} server, {where}; medians)")
    for _, note in checks:
        print(note)
    if not all(same for same, _ in checks):
        raise SystemExit("the floor and our client did not exchange the same bytes")


if __name__ == "__main__":
    asyncio.run(amain(arguments()))
