"""The serving examples run as a user would run them, against the scripted local model."""

from __future__ import annotations

from pathlib import Path

from test_examples import run


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
