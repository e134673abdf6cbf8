"""Every example runs, as a user would run it, against the scripted local model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(name: str, *args: str, stdin: str = "", cwd: Path | None = None) -> str:
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
    }
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=cwd,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_quickstart_answers_through_the_loop_and_resumes_an_approval_from_sqlite() -> None:
    out = run("quickstart.py")
    assert "1) It is 18.0 °C in Paris — that is 64.4 °F." in out
    assert "2) status=pending: Refund 35.50 EUR on order 4021?" in out
    assert "resumed: status=done: Done: refunded 35.50 EUR on order 4021." in out
    assert "answered by ops@example.com" in out


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("y\n", "status=done: Result: refunded order #4021."),
        ("n\n", "status=done: Result: declined/expired: Refund order #4021?."),
    ],
)
def test_approval_gate_asks_on_the_terminal(typed: str, expected: str) -> None:
    out = run("approval_gate.py", stdin=typed)
    assert "Refund order #4021? [y/N]" in out
    assert expected in out


def test_approval_gate_with_stdin_closed_declines_instead_of_crashing() -> None:
    out = run("approval_gate.py", stdin="")  # EOF at once, as from /dev/null
    assert "(no input: declined)" in out
    assert (
        "status=done: Result: declined/expired: Refund order #4021?\nreason: no one to ask." in out
    )


def test_login_url_delivers_the_link_and_retries_after_login() -> None:
    out = run("login_url.py")
    assert "open https://bank.example/login?t=abc" in out
    assert "status=done: Your balance: 67,417 INR." in out


def test_chat_webhook_resolves_the_parked_run_through_http() -> None:
    out = run("chat_webhook.py")
    assert "chat> Deploy to staging or production?" in out
    assert '"reply": "tomorrow"} (400)' in out  # not an option: refused by the intake
    assert "(200)" in out
    assert "status=done: Deploying: user chose staging." in out


def test_durable_halt_is_answered_by_a_new_process_exactly_once(tmp_path: Path) -> None:
    db = str(tmp_path / "state.db")
    started = run("durable_halt.py", "start", db)
    assert "status=pending" in started
    inbox = run("durable_halt.py", "pending", db).split()
    request_id = inbox[0]
    assert inbox[1:3] == ["approval", "delete_bucket"]
    done = run("durable_halt.py", "answer", request_id, "yes", db)
    assert "status=done: Outcome: bucket 'old-logs' deleted." in done
    assert run("durable_halt.py", "pending", db).strip() == ""
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "durable_halt.py"), "answer", request_id, "yes", db],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert "already answered by cli" in proc.stdout


def test_image_prompt_sends_the_picture_and_the_tool_snapshot() -> None:
    out = run("image_prompt.py")
    assert "1) I see a 2×2 PNG (1 image(s) so far)." in out
    assert "2) I see a 2×2 PNG (2 image(s) so far)." in out
    assert "transcript keeps: [{'type': 'image', 'mimeType': 'image/png', 'bytes': 73}]" in out


def test_image_prompt_reads_the_picture_given_on_the_command_line(tmp_path: Path) -> None:
    from png_support import make_png

    (tmp_path / "wide.png").write_bytes(make_png(7, 3))
    out = run("image_prompt.py", str(tmp_path / "wide.png"))
    assert "1) I see a 7×3 PNG (1 image(s) so far)." in out


def test_code_written_for_the_021_package_runs_unchanged() -> None:
    out = run("from_021.py")
    assert "21 °C is 69.8 °F (answered by scripted)." in out
    assert "convert {'celsius': 21} -> 69.8 False" in out
    assert "retried statuses: [408]" in out
    assert "models per turn: ['small-model', 'scripted']" in out
