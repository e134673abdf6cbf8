"""examples/answer_anywhere.py: halt, answer from a process with no toolkit, a worker finishes.

Four separate processes per backend (start, answer, a second answer, worker) on a SQLite file
and on the real Postgres.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "answer_anywhere.py"


def run(*args: str, cwd: Path, expect: int = 0) -> str:
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
    }
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=cwd,
        env=env,
        check=False,
    )
    assert proc.returncode == expect, proc.stdout + proc.stderr
    return proc.stdout


def check_answer_then_worker(store: str, cwd: Path) -> None:
    started = run("start", store, cwd=cwd)
    assert started.count("halted ") == 2
    inbox = [line.split()[0] for line in run("inbox", store, cwd=cwd).splitlines()]
    assert len(inbox) == 2
    first, second = inbox
    recorded = run("answer", first, "yes", store, cwd=cwd)
    assert f"recorded {first}: ok=True by ana" in recorded
    again = run("answer", first, "no", store, cwd=cwd, expect=1)
    assert f'error: request "{first}" was already answered by ana' in again
    unknown = run("answer", "nope", "yes", store, cwd=cwd, expect=1)
    assert 'no halted run waits on request "nope"' in unknown
    done = run("worker", store, cwd=cwd)
    assert f"resumed {first}: Done: refunded 42.00 EUR on order A-1001." in done
    assert "worker settled 1 of 1 answered run(s)" in done
    assert run("worker", store, cwd=cwd).strip() == "worker settled 0 of 0 answered run(s)"
    assert [line.split()[0] for line in run("inbox", store, cwd=cwd).splitlines()] == [second]


def test_an_answer_from_a_process_without_the_toolkit_is_finished_by_a_worker_on_sqlite(
    tmp_path: Path,
) -> None:
    check_answer_then_worker(str(tmp_path / "state.db"), tmp_path)


def test_the_same_on_postgres(pg_url: str, tmp_path: Path) -> None:
    check_answer_then_worker(pg_url, tmp_path)


@pytest.mark.parametrize("args", [[], ["answer"], ["bogus"]])
def test_bad_usage_prints_the_usage_and_exits_2(args: list[str], tmp_path: Path) -> None:
    out = run(*args, cwd=tmp_path, expect=2)
    assert "answer_anywhere.py answer <request-id> yes|no" in out
