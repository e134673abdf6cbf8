"""Loop overhead in CPU instructions, for a machine too noisy for `bench_loop.py`'s timings.

Each variant (the floor and our client, on each wire) plays K and then 3K runs of an N-turn loop
under valgrind's callgrind, against the raw server in a child process that callgrind does not
follow; the difference of the two counts, over 2K x N turns, is the client's instructions per
turn, start-up and warm-up cancelled out. Repeated runs agree to well under 1 %. Instructions are
not time (cache misses and allocation are not in them), so compare these figures with each
other, and read milliseconds from `bench_loop.py` on a quiet machine.

    .venv/bin/python bench/bench_instructions.py                 # 20-turn loops, ~4 min
    .venv/bin/python bench/bench_instructions.py --turns 3 --runs 30
    .venv/bin/python bench/bench_instructions.py --cycle          # halt -> SQLite -> resume

``--cycle`` counts, the same way, one halt -> SQLite -> resume cycle of `bench_durable.py`'s
live worker against its same-job floor (per cycle, not per turn; SQLite's own C code, the
same statements on both sides, is counted in both). ``BENCH_CYCLE_MODE=memory`` (or
``conversation``) counts our side in that `bench_durable.py` variant instead.

Needs ``valgrind`` (Debian: ``apt-get install valgrind``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import floor
from common import PROMPT, Row, check_ours, endpoint, make_client, make_toolkit, print_table

VARIANTS = {
    "openai wire": ("openai", "floor"),
    "anthropic wire": ("anthropic", "floor-anthropic"),
}


async def play(who: str, turns: int, runs: int) -> None:
    """Five warm-up runs, then ``runs`` more, of ``who`` (a floor, or our client's style)."""
    if who.startswith("cycle-"):
        await play_cycles(who, runs)
        return
    toolkit = await make_toolkit()
    async with endpoint("raw", separate=True) as url, floor.new_session() as session:
        client = None if who.startswith("floor") else make_client(url, who, turns)
        for _ in range(5 + runs):
            if who == "floor":
                floor.check_floor(await floor.run(session, url, turns))
            elif who == "floor-anthropic":
                floor.check_floor(await floor.run_anthropic(session, url, turns))
            else:
                assert client is not None
                check_ours(await client.run(PROMPT, toolkit), turns)
        if client is not None:
            await client.aclose()


async def play_cycles(who: str, runs: int) -> None:
    """``runs`` live-worker halt -> resume cycles through SQLite (after one warm-up)."""
    import bench_durable  # the cycles themselves; imported here, only the child needs them

    async with endpoint("raw", separate=True) as url:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "cycles.db"
            if who == "cycle-floor":
                await bench_durable.floor_cycles(url, path, runs, "live", same=True)
            else:
                mode = os.environ.get("BENCH_CYCLE_MODE", "live")  # or memory, conversation
                await bench_durable.ours_cycles(url, path, runs, mode)


def instructions(who: str, turns: int, runs: int) -> int:
    """Instructions callgrind collected over one `play` process."""
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={os.path.join(tmp, 'out')}",
                sys.executable,
                os.path.abspath(__file__),
                "play",
                who,
                str(turns),
                str(runs),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind failed for {who}: {done.stderr[-2000:]}")
    return int(found.group(1))


def per_turn(who: str, turns: int, runs: int) -> float:
    """Thousands of instructions per turn: the difference of ``runs`` and ``3 x runs`` runs."""
    few, many = instructions(who, turns, runs), instructions(who, turns, 3 * runs)
    return (many - few) / (2 * runs * turns) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode")
    child = sub.add_parser("play")
    child.add_argument("who")
    child.add_argument("turns", type=int)
    child.add_argument("runs", type=int)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--runs", type=int, default=10, help="K (the long play is 3K)")
    parser.add_argument(
        "--cycle", action="store_true", help="halt -> SQLite -> resume cycles instead (K=40)"
    )
    args = parser.parse_args()
    if args.mode == "play":
        asyncio.run(play(args.who, args.turns, args.runs))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    if args.cycle:
        runs = 40 if args.runs == 10 else args.runs
        f, o = per_turn("cycle-floor", 1, runs), per_turn("cycle-ours", 1, runs)
        row = Row(
            "live-worker cycle, k instructions/cycle",
            f"{f:.1f}",
            f"{o:.1f}",
            f"+{o - f:.1f}k ({o / f:.2f}x)",
            "-",
            None,
        )
        print_table([row], "one halt -> SQLite -> resume cycle (callgrind; server in a child)")
        return
    rows: list[Row] = []
    for name, (ours, base) in VARIANTS.items():
        f, o = per_turn(base, args.turns, args.runs), per_turn(ours, args.turns, args.runs)
        rows.append(
            Row(
                f"{args.turns}-turn loop, {name}, k instructions/turn",
                f"{f:.1f}",
                f"{o:.1f}",
                f"+{o - f:.1f}k ({o / f:.2f}x)",
                "-",
                None,
            )
        )
    print_table(rows, "the client's instructions per turn (callgrind; server in a child process)")


if __name__ == "__main__":
    main()
