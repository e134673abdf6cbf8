"""Command-line start-up: ``toolnexus --help`` and ``toolnexus pending --store sqlite:///…``
in fresh processes, beside two floors: ``python -c pass`` (the interpreter alone) and a bare
typer app with two commands printing its ``--help`` (what typer + rich cost by themselves).

Each sample is one fresh subprocess timed from spawn to exit (wall ms). The commands rotate
order sample by sample, after one warm-up run each, so drift on a shared machine hits all alike;
bytecode is cached under a private ``PYTHONPYCACHEPREFIX``. ``pending`` reads a SQLite file
holding 50 halted runs (saved through the store API beforehand) and prints its table.

    .venv/bin/python bench/bench_cli.py            # ~20 s
    .venv/bin/python bench/bench_cli.py --quick
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_import import environment
from common import Row, median, print_table

BARE_TYPER = '''
import typer
app = typer.Typer(add_completion=False)
@app.command()
def pending(store: str) -> None:
    """List."""
@app.command()
def answer(request_id: str, store: str) -> None:
    """Answer."""
app()
'''

PENDING_ROWS = 50


def spawn_ms(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"{argv[1:]} exited {done.returncode}: {done.stderr.decode()[-400:]}")
    return elapsed


def interleaved(commands: list[list[str]], samples: int, env: dict[str, str]) -> list[list[float]]:
    for argv in commands:
        spawn_ms(argv, env)
    timings: list[list[float]] = [[] for _ in commands]
    for i in range(samples):
        for j in range(len(commands)):
            k = (i + j) % len(commands)
            timings[k].append(spawn_ms(commands[k], env))
    return timings


async def fill_store(path: Path) -> str:
    """A SQLite file with ``PENDING_ROWS`` halted runs (one real halt, cloned) → its URL."""
    from halted import brain, clones, one_real_halt

    from toolnexus.stores.sqlite import SqliteStore
    from toolnexus.testing import ScriptedModel

    async with ScriptedModel(default=brain) as model, SqliteStore(path) as store:
        template = await one_real_halt(model.openai_base_url, store)
        for checkpoint in clones(template, PENDING_ROWS):
            await store.save_halt(checkpoint)
    return f"sqlite:///{path}"


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) >= 2 else values[0]


def measure(*, quick: bool = False) -> list[Row]:
    samples = 5 if quick else 15
    toolnexus = [sys.executable, "-m", "toolnexus"]
    with tempfile.TemporaryDirectory(prefix="tn-bench-cli-") as tmp:
        url = asyncio.run(fill_store(Path(tmp) / "runs.db"))
        script = Path(tmp) / "bare_typer.py"
        script.write_text(BARE_TYPER)
        env = environment(str(Path(tmp) / "pyc"))
        env["COLUMNS"] = "120"
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "bare typer app --help": [sys.executable, str(script), "--help"],
            "toolnexus --help": [*toolnexus, "--help"],
            "toolnexus pending --store sqlite:///… (50 rows)": [
                *toolnexus,
                "pending",
                "--store",
                url,
            ],
            "toolnexus pending --json": [*toolnexus, "pending", "--store", url, "--json"],
        }
        timings = dict(
            zip(commands, interleaved(list(commands.values()), samples, env), strict=True)
        )
    bare = timings["python -c pass"]
    typer_floor = timings["bare typer app --help"]
    rows: list[Row] = []
    for label, values in timings.items():
        floor = typer_floor if label.startswith("toolnexus") else bare
        floor_name = "typer" if label.startswith("toolnexus") else "pass"
        rows.append(
            Row(
                metric=f"{label}, ms (p90 {p90(values):.0f})",
                floor=f"{median(floor):.0f} ({floor_name})" if label != "python -c pass" else "-",
                ours=f"{median(values):.0f}",
                delta=(
                    f"+{median(values) - median(floor):.0f} ms" if label != "python -c pass" else ""
                ),
                target="(info)",
                ok=None,
            )
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples")
    args = parser.parse_args()
    if "" not in sys.path:
        sys.path.insert(0, "")
    rows = measure(quick=args.quick)
    print_table(rows, f"CLI start-up (fresh processes; medians; {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
