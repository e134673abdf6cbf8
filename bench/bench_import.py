"""``import toolnexus`` wall time in fresh interpreters, against ``python -c pass``.

Each sample is one fresh subprocess of the venv's interpreter, timed from spawn to exit, so it
includes interpreter start-up; the ``pass`` row is that start-up alone, and the overhead is
the median of the paired differences. Samples alternate between the two commands.

Two rows are judged against the target. ``import toolnexus`` alone loads only the package's
``__init__`` (every name loads its module on first use), so it guards that laziness; ``from
toolnexus import create_client`` loads the client's whole stack (asyncio, the engine, the
OpenAI dialect; aiohttp still waits for the first request) and is what a program that talks to
a model pays before its first line runs. The second is the honest import cost, so it is held to
the same target.

Bytecode: an installed package has its ``.pyc`` files, so the headline row ("warm") lets the
interpreter cache bytecode under a private ``PYTHONPYCACHEPREFIX`` in a temporary directory
(nothing is written next to the sources). The "cold" row keeps ``PYTHONDONTWRITEBYTECODE=1``
with no cache: every module of ours is compiled on each import, as in a checkout where bytecode
writing is off.

    .venv/bin/python bench/bench_import.py            # ~5 s
    .venv/bin/python bench/bench_import.py --quick
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

from common import Row, median, print_table

TARGET_MS = 150.0
IMPORT = "import toolnexus"
CREATE_CLIENT = "from toolnexus import create_client"
HEAVY = ("aiohttp", "mcp", "starlette", "psycopg", "pydantic", "jsonschema", "yaml")


def environment(cache: str | None) -> dict[str, str]:
    """The child's environment: bytecode cached under ``cache``, or never written."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPROFILEIMPORTTIME",)}
    if cache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache
    return env


def spawn_ms(code: str, env: dict[str, str]) -> float:
    """Milliseconds for a fresh interpreter to run ``code`` and exit."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    return (time.perf_counter() - started) * 1000


def heavy_modules() -> list[str]:
    """Which of the heavy dependencies ``import toolnexus`` pulls in."""
    listed = ",".join(HEAVY)
    probe = (
        f"import sys, toolnexus; "
        f"print(','.join(m for m in '{listed}'.split(',') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout.strip()
    return [m for m in out.split(",") if m]


def interleaved(codes: list[str], samples: int, env: dict[str, str]) -> list[list[float]]:
    """``samples`` timings of each of ``codes``, rotating the order, after one warm-up each."""
    for code in codes:  # warm the OS file cache (and the bytecode cache, when there is one)
        spawn_ms(code, env)
    timings: list[list[float]] = [[] for _ in codes]
    for i in range(samples):
        for j in range(len(codes)):
            k = (i + j) % len(codes)
            timings[k].append(spawn_ms(codes[k], env))
    return timings


def row(label: str, bare: list[float], ours: list[float], judged: bool) -> Row:
    extra = median([o - b for o, b in zip(ours, bare, strict=True)])
    return Row(
        metric=label,
        floor=f"{median(bare):.0f}",
        ours=f"{median(ours):.0f}",
        delta=f"+{extra:.0f} ms",
        target=f"<= {TARGET_MS:.0f} ms" if judged else "(info)",
        ok=median(ours) <= TARGET_MS if judged else None,
    )


def measure(*, quick: bool = False) -> tuple[list[Row], dict[str, float]]:
    samples = 5 if quick else 11
    with tempfile.TemporaryDirectory(prefix="tn-bench-pyc-") as cache:
        codes = ["pass", IMPORT, CREATE_CLIENT, "import asyncio"]
        warm_bare, warm, client, stdlib = interleaved(codes, samples, environment(cache))
    cold_bare, cold = interleaved(["pass", IMPORT], samples, environment(None))
    heavy = heavy_modules()
    rows = [
        row("import toolnexus, ms, bytecode cached (floor: -c pass)", warm_bare, warm, True),
        row(f"{CREATE_CLIENT}, ms, bytecode cached", warm_bare, client, True),
        row("  import asyncio alone (part of the above), ms", warm_bare, stdlib, False),
        row("import toolnexus, ms, no bytecode (floor: -c pass)", cold_bare, cold, False),
        Row(
            metric="  heavy modules imported by 'import toolnexus'",
            floor="-",
            ours=",".join(heavy) or "none",
            delta="",
            target="(info)",
            ok=None,
        ),
    ]
    figures = {
        "pass_ms": median(warm_bare),
        "import_ms": median(warm),
        "create_client_ms": median(client),
        "cold_ms": median(cold),
    }
    return rows, figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    args = parser.parse_args()
    rows, _ = measure(quick=args.quick)
    print_table(rows, "import time (fresh subprocesses; medians)")


if __name__ == "__main__":
    main()
