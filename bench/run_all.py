"""Every benchmark, one combined table: metric, floor, ours, overhead/ratio, target, result.

    .venv/bin/python bench/run_all.py            # ~45 s
    .venv/bin/python bench/run_all.py --quick    # ~15 s smoke run

Placements (see ``bench/README.md``): sequential loops with the server in this process,
throughput with the server in a child process, the raw aiohttp server for both.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys

import bench_import
import bench_loop
import bench_throughput
from common import Row, print_table


async def measure(quick: bool) -> tuple[list[Row], str]:
    rows = bench_import.measure(quick=quick)[0]
    notes: list[str] = []
    for style in ("openai", "anthropic"):
        same, note = await bench_loop.check_same_bytes(style)
        if not same:
            raise SystemExit(f"the floor and our client did not exchange the same bytes: {note}")
        notes.append(note)
    rows += (await bench_loop.measure(quick=quick))[0]
    rows += (await bench_throughput.measure(quick=quick, separate=True))[0]
    return rows, "\n".join(notes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    args = parser.parse_args()
    rows, note = asyncio.run(measure(args.quick))
    title = (
        f"toolnexus vs the floor (bare aiohttp), Python {platform.python_version()}, "
        f"{sys.platform}; medians{' (quick)' if args.quick else ''}"
    )
    print_table(rows, title)
    print(note)
    failed = [r.metric.strip() for r in rows if r.ok is False]
    print("all targets met" if not failed else f"targets missed: {'; '.join(failed)}")


if __name__ == "__main__":
    main()
