"""The confinement race at scale: 10,000 tries per built-in against a directory ↔ symlink
swapper in a second process (issue 10, item 2). Prints escapes per built-in; 0 is the bar.

    .venv/bin/python bench/bench_confine_race.py            # 10,000 tries each (~30 s)
    .venv/bin/python bench/bench_confine_race.py --quick    # 1,000 tries each
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "tools" / "builtins"))

from race_support import race


async def main() -> None:
    tries = 1_000 if "--quick" in sys.argv else 10_000
    print(f"{'built-in':<12} {'tries':>7} {'escapes':>8} {'ok':>7} {'refused':>8} {'s':>6}")
    for kind in ("read", "write", "apply_patch", "edit", "grep"):
        with tempfile.TemporaryDirectory() as base:
            started = time.perf_counter()
            tally = await race(Path(base), tries, kinds=(kind,))
            took = time.perf_counter() - started
        print(
            f"{kind:<12} {tally.tries:>7} {tally.escapes:>8} {tally.succeeded:>7} "
            f"{tally.refused:>8} {took:>6.1f}"
        )


if __name__ == "__main__":
    asyncio.run(main())
