"""examples/two_workers_race.py: two real worker processes, one answer, exactly one resume.

Needs PostgreSQL (``TOOLNEXUS_PG_URL``; ``bash scripts/pg.sh start`` prints one). Without it the
race test skips, except under CI (``CI`` set), where a missing URL or a missing psycopg fails:
CI must never pass by silently skipping Postgres.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "two_workers_race.py"


def run_example(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
        check=False,
    )


def scripted_env(**extra: str) -> dict[str, str]:
    """The environment minus a configured model (so the scripted one plays) and minus the URL."""
    dropped = ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "TOOLNEXUS_PG_URL")
    return {**{k: v for k, v in os.environ.items() if k not in dropped}, **extra}


def test_without_a_postgres_url_it_says_what_it_needs_and_exits_2() -> None:
    proc = run_example(scripted_env())
    assert proc.returncode == 2
    assert "needs PostgreSQL: set TOOLNEXUS_PG_URL" in proc.stderr
    assert proc.stdout == ""


def test_two_workers_get_the_same_answer_and_exactly_one_resumes(pg_url: str) -> None:
    proc = run_example(scripted_env(TOOLNEXUS_PG_URL=pg_url))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert re.search(
        r"^halted: status=pending, request \S+: Refund 35\.50 EUR on order 4021\?$", out, re.M
    )
    resumed = re.findall(
        r"^(worker-[ab]): resumed the run -> status=done: "
        r"Done: refunded 35\.50 EUR on order 4021 \(by (worker-[ab])\)\.$",
        out,
        re.M,
    )
    assert len(resumed) == 1, out
    winner, ran_the_tool = resumed[0]
    assert ran_the_tool == winner
    loser = "worker-b" if winner == "worker-a" else "worker-a"
    conflicts = re.findall(rf"^{loser}: AnswerConflict: (.*)$", out, re.M)
    assert len(conflicts) == 1, out
    assert winner in conflicts[0]  # the conflict names who won
    assert f"exactly one resume: {winner} (the store records the answer by {winner}," in out
    assert "refunded" not in conflicts[0]
    assert out.count("refunded 35.50 EUR") == 1
