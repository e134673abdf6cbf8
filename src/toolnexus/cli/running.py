"""Running one command's coroutine so that the process always ends.

`asyncio.run` cancels the tasks a command left behind and then waits for them, and for the
default executor's threads, without a deadline; the interpreter then waits for every
non-daemon thread. A task that swallows its cancellation, or a thread stuck in a system call,
would keep a stopped worker or server alive until someone sends SIGKILL. Here what is left
gets ``grace`` seconds at each of those steps; past that, what was stuck is printed to stderr
(task stacks, thread stacks) and the process exits at once with the command's own code.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
import traceback
from collections.abc import Coroutine
from typing import Any, NoReturn

from . import codes

__all__ = ["run_command", "task_stack"]

LEFTOVER_GRACE_S = 10.0
"""How long a finished command's leftover tasks and threads get to end."""


def run_command(work: Coroutine[Any, Any, int], grace: float = LEFTOVER_GRACE_S) -> int:
    """Run ``work`` in a new event loop; its exit code (its exception propagates).

    Leftover tasks are cancelled and awaited, the default executor shut down, and the other
    non-daemon threads joined, each within ``grace`` seconds; whatever outlives that is
    reported on stderr and the process ends with ``os._exit``.
    """
    code = asyncio.run(_bounded(work, grace))
    deadline = time.monotonic() + grace
    for thread in threading.enumerate():
        if thread is threading.current_thread() or thread.daemon:
            continue
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            _exit_stuck(code, f"thread {thread.name!r} did not end", _thread_stacks())
    return code


async def _bounded(work: Coroutine[Any, Any, int], grace: float) -> int:
    code: int | None = None
    try:
        code = await work
        return code
    finally:
        await _leftovers(codes.FAILED if code is None else code, grace)


async def _leftovers(code: int, grace: float) -> None:
    this = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not this]
    for task in tasks:
        task.cancel()
    if tasks:
        _, pending = await asyncio.wait(tasks, timeout=grace)
        if pending:
            stacks = [task_stack(task) for task in pending]
            _exit_stuck(code, f"{len(pending)} task(s) ignored their cancellation", stacks)
    # Not `wait_for`: cancelling it would join the shutdown's thread, blocking right here.
    loop = asyncio.get_running_loop()
    shutdown = asyncio.ensure_future(loop.shutdown_default_executor())
    done, _ = await asyncio.wait({shutdown}, timeout=grace)
    if not done:
        _exit_stuck(code, "the default executor's threads did not end", _thread_stacks())


def task_stack(task: asyncio.Task[Any]) -> str:
    """Where a task stands: its coroutine and every coroutine it awaits, outermost first.

    (`asyncio.Task.get_stack` gives a suspended task's outermost frame only, which for a
    worker's lane or a server's handler says nothing about what it waits on.)
    """
    lines = [f"task {task.get_name()} ({task.get_coro()!r}):\n"]
    link: Any = task.get_coro()
    while link is not None:
        frame = getattr(link, "cr_frame", None) or getattr(link, "gi_frame", None)
        frame = frame or getattr(link, "ag_frame", None)
        if frame is None:  # a future, or a coroutine that has finished
            break
        lines += traceback.format_stack(frame, limit=1)
        link = (
            getattr(link, "cr_await", None)
            or getattr(link, "gi_yieldfrom", None)
            or getattr(link, "ag_await", None)
        )
    return "".join(lines)


def _thread_stacks() -> list[str]:
    frames = sys._current_frames()  # pyright: ignore[reportPrivateUsage]
    out: list[str] = []
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or -1)
        if frame is not None and thread is not threading.current_thread():
            out.append(f"thread {thread.name!r}:\n" + "".join(traceback.format_stack(frame)))
    return out


def _exit_stuck(code: int, what: str, stacks: list[str]) -> NoReturn:
    sys.stderr.write(f"toolnexus: exiting while {what} after the command ended:\n")
    for stack in stacks:
        sys.stderr.write(stack)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
