"""``toolnexus run`` in a real pseudo-terminal (pexpect): typed approvals, declines, edited
arguments, "always", a question answered field by field, Ctrl-C during a turn, and end of input
during an approval. No endpoint is configured, so the scripted local model drives the tools."""

from __future__ import annotations

import ctypes
import os
import platform
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest

PROMPT = "\r\n> "


def spawn_repl(folder: Path, **options: Any) -> pexpect.spawn:
    """``toolnexus run`` in ``folder`` on a 40x200 terminal, on the scripted local model (no
    ``*_BASE_URL`` passed on); ``options`` go to `pexpect.spawn`."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_BASE_URL")}
    env["COLUMNS"] = "200"
    return pexpect.spawn(
        sys.executable,
        ["-m", "toolnexus", "run"],
        cwd=str(folder),
        env=env,
        encoding="utf-8",
        timeout=40,
        dimensions=(40, 200),
        **options,
    )


@pytest.fixture
def repl(tmp_path: Path) -> Iterator[pexpect.spawn]:
    child = spawn_repl(tmp_path)
    child.expect_exact("scripted local model")
    child.expect_exact("> ")
    yield child
    child.close(force=True)


def wait_started(folder: Path) -> None:
    """Until the approved command has made ``started`` (it is running now)."""
    deadline = time.monotonic() + 30
    while not (folder / "started").exists():
        assert time.monotonic() < deadline, "the approved command never started"
        time.sleep(0.02)


def gate(child: pexpect.spawn, command: str) -> None:
    child.sendline(f'bash {{"command": "{command}"}}')
    child.expect_exact("[y]es [n]o [a]lways [e]dit: ")


def test_an_approved_call_runs_and_the_model_sees_its_output(repl: pexpect.spawn) -> None:
    gate(repl, "echo approved-$((6*7))")
    repl.sendline("y")
    repl.expect_exact("The tool said: approved-42")
    repl.expect_exact("> ")


def test_a_declined_call_never_runs(repl: pexpect.spawn, tmp_path: Path) -> None:
    gate(repl, "touch made.txt")
    repl.sendline("n")
    repl.expect_exact("the user declined bash")
    repl.expect_exact("> ")
    assert not (tmp_path / "made.txt").exists()


def test_edited_arguments_are_what_runs(repl: pexpect.spawn, tmp_path: Path) -> None:
    gate(repl, "touch original.txt")
    repl.sendline("e")
    repl.expect_exact("new arguments for bash (JSON object): ")
    repl.sendline('{"command": 42}')  # fails the tool's schema: asked again
    repl.expect_exact("[y]es [n]o [a]lways [e]dit: ")
    repl.sendline("e")
    repl.expect_exact("(JSON object): ")
    repl.sendline('{"command": "touch edited.txt && echo edited-ok"}')
    repl.expect_exact("The tool said: edited-ok")
    assert (tmp_path / "edited.txt").exists()
    assert not (tmp_path / "original.txt").exists()


def test_always_allows_the_tool_for_the_rest_of_the_session(repl: pexpect.spawn) -> None:
    gate(repl, "echo first")
    repl.sendline("a")
    repl.expect_exact("The tool said: first")
    repl.expect_exact("> ")
    repl.sendline('bash {"command": "echo second"}')
    index = repl.expect_exact(["The tool said: second", "[y]es [n]o"])
    assert index == 0  # not asked again


def test_a_question_is_answered_in_the_terminal(repl: pexpect.spawn) -> None:
    repl.sendline(
        'question {"questions": [{"question": "Which colour?", "options": ["red", "blue"]}]}'
    )
    repl.expect_exact("[y]es [n]o [a]lways [e]dit: ")
    repl.sendline("y")
    repl.expect_exact("Which colour?")
    repl.expect_exact("2. blue")
    repl.expect_exact("answer: ")
    repl.sendline("2")
    repl.expect_exact('The tool said: {"answers": ["blue"]}')


def test_ctrl_c_cancels_the_turn_and_the_repl_goes_on(repl: pexpect.spawn, tmp_path: Path) -> None:
    gate(repl, "touch started && sleep 30")
    repl.sendline("y")
    wait_started(tmp_path)  # the tool is running
    repl.sendintr()
    repl.expect_exact("(cancelled)", timeout=25)
    repl.expect_exact("> ")
    gate(repl, "echo still-alive")
    repl.sendline("y")
    repl.expect_exact("The tool said: still-alive")


def test_end_of_input_at_an_approval_declines_and_at_the_prompt_exits(
    repl: pexpect.spawn, tmp_path: Path
) -> None:
    gate(repl, "touch never.txt")
    repl.sendeof()
    repl.expect_exact("the user declined bash")
    repl.expect_exact("> ")
    repl.sendeof()
    repl.expect(pexpect.EOF)
    repl.close()
    assert repl.exitstatus == 0
    assert not (tmp_path / "never.txt").exists()
    assert "Traceback" not in (repl.before or "")


def test_once_answers_one_prompt_and_exits(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_BASE_URL")}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "toolnexus", "run", "--once", "hello there", "--no-builtins"],
        cwd=str(tmp_path),
        env=env,
        encoding="utf-8",
        timeout=40,
    )
    child.expect_exact("You said: 'hello there'")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def unreachable(port: int) -> list[str]:
    return ["--base-url", f"http://127.0.0.1:{port}/v1", "--model", "m", "--api-key", "k"]


def test_once_against_an_unreachable_endpoint_says_so_and_exits_1(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            *(sys.executable, "-m", "toolnexus", "run", "--once", "hi", "--no-builtins"),
            *unreachable(closed_port()),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done
    assert "toolnexus: the turn failed: POST http://127.0.0.1:" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("toolnexus:") == 1


def test_a_failed_turn_is_reported_and_the_repl_goes_on(tmp_path: Path) -> None:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "toolnexus", "run", "--no-builtins", *unreachable(closed_port())],
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=40,
    )
    try:
        child.expect_exact("> ")
        child.sendline("first")
        child.expect_exact("toolnexus: the turn failed:")
        child.expect_exact("> ")
        child.sendline("second")
        child.expect_exact("toolnexus: the turn failed:")
        child.expect_exact("> ")
        child.sendeof()
        child.expect(pexpect.EOF)
        assert "Traceback" not in (child.before or "")
    finally:
        child.close(force=True)
    assert child.exitstatus == 0


_TGKILL = {"x86_64": 234, "aarch64": 131}.get(platform.machine())


def _signal_thread(pid: int, tid: int, sig: int) -> None:
    """Send ``sig`` to one thread of another process (``tgkill``)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(_TGKILL, pid, tid, sig) != 0:
        raise OSError(ctypes.get_errno(), "tgkill failed")


@pytest.mark.skipif(_TGKILL is None or sys.platform != "linux", reason="tgkill on Linux only")
def test_a_ctrl_c_the_kernel_hands_to_another_thread_still_cancels_the_turn(
    repl: pexpect.spawn, tmp_path: Path
) -> None:
    """The kernel may deliver a terminal's SIGINT to any thread of the process; the REPL's
    main thread must see it while it waits for the turn."""
    gate(repl, "touch started && sleep 30")
    repl.sendline("y")
    wait_started(tmp_path)  # the tool is running
    others = [int(t) for t in os.listdir(f"/proc/{repl.pid}/task") if int(t) != repl.pid]
    assert others, "the REPL runs its loop on a thread of its own"
    _signal_thread(repl.pid, max(others), signal.SIGINT)
    repl.expect_exact("(cancelled)", timeout=20)
    repl.expect_exact("> ")


def test_ctrl_c_cancels_the_turn_even_when_the_repl_started_with_sigint_ignored(
    tmp_path: Path,
) -> None:
    """A shell's background job (no job control) starts with SIGINT ignored, and so does
    everything it runs; the REPL still answers Ctrl-C."""
    child = spawn_repl(tmp_path, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        child.expect_exact("> ")
        gate(child, "touch started && sleep 30")
        child.sendline("y")
        wait_started(tmp_path)
        child.sendintr()
        child.expect_exact("(cancelled)", timeout=20)
        child.expect_exact("> ")
    finally:
        child.close(force=True)
