"""Running one command for ``bash``: its own process group, capped output, a killable tree.

The child starts in a new session (so it leads a new process group) with stdin from
``/dev/null`` and stdout and stderr on one pipe, read as it arrives (so the child never blocks
on a full pipe) while only the first ``limit`` bytes are kept. A timeout or the stop event
sends ``SIGTERM`` to the whole group (the command, its children and their children), then
``SIGKILL`` to whatever is left once the command is gone or `KILL_GRACE_MS` has passed. A
descendant that left the group on purpose (``setsid``) is out of reach; so is anything after
the command exits normally — background jobs are left running, as in a terminal.

After the command exits, output still in flight is read until the pipe closes, for at most
`DRAIN_GRACE` seconds (a background job holding the pipe open does not hold the call). POSIX
only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = ["DRAIN_GRACE", "KILL_GRACE_MS", "Finished", "Stopped", "run_process"]

DRAIN_GRACE = 0.5
KILL_GRACE_MS = 2000
"""Milliseconds between SIGTERM and SIGKILL when a command's process group is stopped."""
_CHUNK = 65536

Stopped = Literal["exited", "timeout", "cancelled"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Finished:
    """How a command ended.

    Attributes:
        output: the first ``limit`` bytes of combined stdout and stderr.
        total: how many bytes it wrote in all.
        exit_code: the exit status (negative: killed by that signal).
        stopped: ``exited`` on its own, killed on ``timeout``, or killed when ``cancelled``.
    """

    output: bytes
    total: int
    exit_code: int
    stopped: Stopped


async def run_process(
    argv: list[str],
    *,
    cwd: Path | None,
    timeout: float,
    stop: asyncio.Event | None,
    limit: int,
    env: dict[str, str] | None = None,
) -> Finished:
    """Run ``argv`` to completion, or kill its process group on timeout or ``stop``.
    ``env`` is the child's whole environment (``None``: this process's).

    Raises:
        OSError: the program could not be started (not found, not executable).
    """
    read_fd, write_fd = os.pipe()
    sink = _PipeSink(read_fd, limit)
    try:
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=subprocess.DEVNULL,
                stdout=write_fd,
                stderr=write_fd,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        finally:
            os.close(write_fd)
        return await _supervise(proc, sink, timeout, stop)
    finally:
        sink.close()


async def _supervise(
    proc: asyncio.subprocess.Process,
    sink: _PipeSink,
    timeout: float,
    stop: asyncio.Event | None,
) -> Finished:
    exited = asyncio.ensure_future(proc.wait())
    stopper = asyncio.ensure_future(stop.wait()) if stop is not None else None
    try:
        waiting: set[asyncio.Future[Any]] = {exited}
        if stopper is not None:
            waiting.add(stopper)
        done, _ = await asyncio.wait(waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        stopped: Stopped = "exited"
        if exited not in done:
            stopped = "cancelled" if stopper is not None and stopper in done else "timeout"
            _signal_group(proc.pid, signal.SIGTERM)
            await asyncio.wait({exited}, timeout=KILL_GRACE_MS / 1000)
            _kill_group(proc.pid)  # stragglers too, even once the command itself is gone
        code = await exited
        await sink.drain(DRAIN_GRACE)
        return Finished(output=bytes(sink.head), total=sink.total, exit_code=code, stopped=stopped)
    finally:
        if stopper is not None:
            stopper.cancel()
        if not exited.done():  # we are being cancelled: take the tree down with us
            _kill_group(proc.pid)
            await exited


def _kill_group(pgid: int) -> None:
    _signal_group(pgid, signal.SIGKILL)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(pgid, sig)


class _PipeSink:
    """Reads a non-blocking pipe on the event loop, keeping the first ``limit`` bytes."""

    def __init__(self, fd: int, limit: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self._limit = limit
        self._loop = asyncio.get_running_loop()
        self._eof = asyncio.Event()
        self._closed = False
        self.head = bytearray()
        self.total = 0
        self._loop.add_reader(fd, self._on_readable)

    def _on_readable(self) -> None:
        try:
            chunk = os.read(self._fd, _CHUNK)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._stop_reading()
            return
        self.total += len(chunk)
        room = self._limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]

    def _stop_reading(self) -> None:
        if not self._eof.is_set():
            self._loop.remove_reader(self._fd)
            self._eof.set()

    async def drain(self, grace: float) -> None:
        """Wait for the end of the output, at most ``grace`` seconds."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._eof.wait(), grace)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop_reading()
        os.close(self._fd)
