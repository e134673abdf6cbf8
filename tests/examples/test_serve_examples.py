"""The serving examples run as a user would run them, against the scripted local model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(name: str, *args: str) -> str:
    """Run an example as a user would, against the scripted local model."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
    }
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_served_approval_asks_the_a2a_caller_and_finishes_after_the_follow_up(
    tmp_path: Path,
) -> None:
    out = run("served_approval.py", str(tmp_path / "state.db"))
    assert out.splitlines() == [
        "task TASK_STATE_INPUT_REQUIRED: Refund order #4021? Reply approve or deny.",
        "task TASK_STATE_COMPLETED: Done: refunded order #4021.",
    ]


def test_a2a_asks_back_halts_on_the_remote_question_and_resumes_with_the_answer(
    tmp_path: Path,
) -> None:
    out = run("a2a_asks_back.py", str(tmp_path / "state.db")).splitlines()
    assert out[0] == "status=pending: the remote asks 'Where should the lamp go?' (input)"
    assert out[1].startswith("remote task: ")
    assert out[2] == "status=done: The shipper says: Shipping: lamp shipped to 1 Harbour Rd"
