"""examples/inbox_approvals.py runs as a user would run it, against the scripted local model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_inbox_example_approves_with_an_edit_declines_and_finishes_both_runs(
    tmp_path: Path,
) -> None:
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
    }
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "inbox_approvals.py")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "inbox lists 2 pending requests" in out
    assert "approve A-1001 with amount 40: HTTP 303" in out
    assert "decline A-1002 again: HTTP 409 (the first answer stands)" in out
    assert "worker resumed 2 runs" in out
    assert (
        "A-1001: done, approved with edits by ana — Done: refunded 40.00 EUR on order A-1001."
    ) in out
    assert "A-1002: done, declined by ana" in out
    assert "history: 2 rows" in out
