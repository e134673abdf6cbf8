"""The sub-agent examples run as a user would run them, against the scripted local model."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(name: str, *args: str, cwd: Path, expect: int = 0) -> str:
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
    }
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=cwd,
        check=False,
    )
    assert proc.returncode == expect, proc.stdout + proc.stderr
    return proc.stdout


def test_durable_resume_parks_the_handle_and_resume_finishes_it(tmp_path: Path) -> None:
    out = run("agents_durable_resume.py", cwd=tmp_path)
    assert "wait: status=pending state=suspended pending_kind=approval" in out
    assert "approve secret access? path=['root', 'asker.1']" in out
    assert "after resume: state=idle" in out
    assert "final: status=done: approved and done" in out
    assert "lifetime: turns=2 tokens=30" in out
    assert (
        "trace: spawned (depth 1, tokens inf), idle→running (wake), "
        'running→suspended DURABLE (pending "approval", path preserved), '
        "resume with Answer(ok=true) at checkpoint (turns so far: 1), "
        "suspended→idle (Answer accepted, checkpoint restored), idle→running, "
        "running→idle (done, turns=2, tokens=30)"
    ) in out


def test_a_declined_answer_still_completes_the_run(tmp_path: Path) -> None:
    out = run("agents_declined.py", cwd=tmp_path)
    assert "wait: status=pending state=suspended" in out
    assert "final: status=done: understood — access was declined" in out


def test_inspect_shows_the_parked_handle_and_wait_returns_the_cached_pending(
    tmp_path: Path,
) -> None:
    lines = run("agents_inspect.py", cwd=tmp_path).splitlines()
    assert lines[0].split() == [
        "list:",
        "root/asker.1",
        "state=suspended",
        "pending_kind=approval",
        "turns=1",
        "tokens=15",
        "inbox=0",
    ]
    request_id = re.fullmatch(r"inspect: request (\S+): approve secret access\?", lines[1])
    assert request_id is not None
    assert lines[2].startswith("wait again: status=pending in ")
    assert lines[3] == "settled: suspended -> done: approved and done"
    assert lines[4].split()[1:4] == ["root/asker.1", "state=idle", "pending_kind=-"]
    assert lines[4].split()[4:6] == ["turns=2", "tokens=30"]


def test_fan_out_runs_the_two_children_concurrently_and_combines_them(tmp_path: Path) -> None:
    out = run("agents_fan_out.py", cwd=tmp_path)
    assert (
        "result: status=done turns=2: Combined: Postgres 17 adds incremental backups. "
        "Risk: restores need every increment." in out
    )
    handles = [line.split() for line in out.splitlines() if "state=" in line]
    assert handles == [
        ["root/lead.1", "state=idle", "turns=2", "tokens=60"],
        ["root/lead.1/researcher.1", "state=closed", "turns=1", "tokens=15"],
        ["root/lead.1/reviewer.2", "state=closed", "turns=1", "tokens=15"],
    ]
    assert "children overlapped: True" in out
    assert "max_observed_concurrent_turns=2" in out


def test_restart_parks_the_tree_in_sqlite_and_fresh_processes_answer_it(tmp_path: Path) -> None:
    db = str(tmp_path / "tree.db")
    started = run("agents_restart.py", "start", db, cwd=tmp_path).splitlines()
    assert started[0] == "status=pending"
    parked = [line.split()[:2] for line in started[1:3]]
    assert parked == [["root/ops.1", "suspended"], ["root/ops.1/keeper.1", "suspended"]]
    match = re.fullmatch(r"request (\S+): Rotate the payments API key\?", started[3])
    assert match is not None
    request_id = match.group(1)
    assert started[4] == "path=root/ops.1"

    status = run("agents_restart.py", "status", db, cwd=tmp_path).splitlines()
    assert [line.split()[:2] for line in status] == parked
    assert all(f"approval {request_id}:" in line for line in status)

    mismatch = run("agents_restart.py", "answer", "not-the-id", "yes", db, cwd=tmp_path, expect=1)
    assert "does not echo the pending request id" in mismatch

    done = run("agents_restart.py", "answer", request_id, "yes", db, cwd=tmp_path)
    assert "status=done: Ops report — Done: the payments key was rotated." in done
    assert "root/ops.1: task replay → REATTACH to root/ops.1/keeper.1" in done
    assert "root/ops.1/keeper.2" not in done  # reattached, never spawned again

    again = run("agents_restart.py", "answer", request_id, "yes", db, cwd=tmp_path, expect=1)
    assert f'error: request "{request_id}" was already answered by cli' in again
    after = run("agents_restart.py", "status", db, cwd=tmp_path).splitlines()
    assert [line.split()[:2] for line in after] == [
        ["root/ops.1", "idle"],
        ["root/ops.1/keeper.1", "closed"],
    ]


def test_restart_with_a_declined_answer_reports_the_decline(tmp_path: Path) -> None:
    db = str(tmp_path / "tree.db")
    started = run("agents_restart.py", "start", db, cwd=tmp_path)
    match = re.search(r"request (\S+): ", started)
    assert match is not None
    done = run("agents_restart.py", "answer", match.group(1), "no", db, cwd=tmp_path)
    assert "status=done: Ops report — Done: declined/expired: Rotate the payments API key?." in done


def test_the_harness_sends_unfinished_work_back_and_resumes_a_halt_inside_the_gate(
    tmp_path: Path,
) -> None:
    out = run("agent_harness.py", cwd=tmp_path)
    assert "turn 1: pending — Ship the fix to production? (completion attempt 2)" in out
    assert "completion check failed (attempt 1/3): 1 item(s) still open: ship it" in out
    assert "resumed in a new runtime: done — Shipped: the fix is live." in out
    assert "denied: deletes need a human" in out
    assert out.count("| shipped |") == 1
