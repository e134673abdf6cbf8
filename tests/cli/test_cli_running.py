"""A command's process always ends: what its coroutine leaves behind (a task that swallows its
cancellation, a thread of the default executor or another non-daemon thread that never
returns) gets its grace, then is reported on stderr, and the process exits with the command's
own code. Each case runs in a real child interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

PRELUDE = """
import asyncio, threading, time
from toolnexus.cli.running import run_command
"""


def child(body: str, timeout: float = 60) -> tuple[int, str, str, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(body)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


def test_a_clean_command_returns_its_code_and_prints_nothing_extra() -> None:
    code, out, err, _ = child(
        """
        async def work():
            await asyncio.sleep(0)
            print("worked")
            return 3
        raise SystemExit(run_command(work(), grace=5))
        """
    )
    assert (code, out, err) == (3, "worked\n", "")


def test_leftover_tasks_that_end_on_cancel_are_awaited_quietly() -> None:
    code, out, err, _ = child(
        """
        ended = []
        async def lingering():
            try:
                await asyncio.sleep(3600)
            finally:
                ended.append(True)
        async def work():
            asyncio.get_running_loop().create_task(lingering())
            await asyncio.sleep(0)
            return 0
        run_command(work(), grace=5)
        print(ended)
        """
    )
    assert (code, out.strip(), err) == (0, "[True]", "")


def test_a_task_that_swallows_its_cancellation_is_reported_and_the_process_ends() -> None:
    code, _, err, took = child(
        """
        async def stubborn_waiter():
            while True:
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    pass  # the bug: it never lets go
        async def work():
            asyncio.get_running_loop().create_task(stubborn_waiter(), name="stubborn")
            await asyncio.sleep(0)
            return 0
        run_command(work(), grace=1)
        print("not reached")
        """
    )
    assert code == 0  # the command's own code
    assert "1 task(s) ignored their cancellation" in err
    assert "task stubborn" in err
    assert "stubborn_waiter" in err
    assert took < 30


def test_a_stuck_task_is_reported_down_to_the_coroutine_it_is_stuck_in() -> None:
    # The outermost frame alone (what Task.get_stack gives a suspended task) would say "lane".
    code, _, err, _ = child(
        """
        async def stuck_deep_inside():
            while True:
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    pass
        async def middle():
            await stuck_deep_inside()
        async def lane():
            await middle()
        async def work():
            asyncio.get_running_loop().create_task(lane(), name="lane-1")
            await asyncio.sleep(0)
            return 0
        run_command(work(), grace=1)
        """
    )
    assert code == 0
    where = err[err.index("task lane-1") :]
    names = ["in lane", "in middle", "in stuck_deep_inside"]
    assert all(name in where for name in names), err
    assert [where.index(name) for name in names] == sorted(where.index(n) for n in names)


def test_a_failing_command_with_a_stuck_task_exits_failed() -> None:
    code, _, err, _ = child(
        """
        async def stubborn():
            while True:
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    pass
        async def work():
            asyncio.get_running_loop().create_task(stubborn())
            await asyncio.sleep(0)
            raise RuntimeError("the command failed")
        run_command(work(), grace=1)
        """
    )
    assert code == 1
    assert "ignored their cancellation" in err


def test_a_default_executor_thread_that_never_returns_is_reported() -> None:
    code, _, err, took = child(
        """
        gate = threading.Event()
        def blocked_in_a_call():
            gate.wait()
        async def work():
            asyncio.get_running_loop().run_in_executor(None, blocked_in_a_call)
            await asyncio.sleep(0)
            return 4
        run_command(work(), grace=1)
        """
    )
    assert code == 4
    assert "the default executor's threads did not end" in err
    assert "blocked_in_a_call" in err
    assert took < 30


@pytest.mark.parametrize("daemon", [False, True])
def test_a_non_daemon_thread_is_given_its_grace_then_reported(daemon: bool) -> None:
    code, out, err, _ = child(
        f"""
        def forever():
            threading.Event().wait()
        async def work():
            threading.Thread(target=forever, name="forever", daemon={daemon}).start()
            return 5
        code = run_command(work(), grace=1)
        print("returned")
        raise SystemExit(code)
        """
    )
    assert code == 5
    if daemon:  # a daemon thread does not hold the process
        assert (out, err) == ("returned\n", "")
    else:
        assert "thread 'forever' did not end" in err
        assert "in forever" in err
