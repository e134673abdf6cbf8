"""Helpers shared by the built-in tool tests (imported as ``builtin_support``)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

from toolnexus._types import Tool

Builtin = Callable[..., Tool]
"""``builtin(name, **options)`` (the fixture): the built-in ``name`` under those options."""


class Fifo:
    """A named pipe a subprocess writes to when it reaches a point the test waits for.

    The read end is opened (non-blocking) at creation, so ``echo ready > path`` in a command
    never blocks; `wait` returns what arrived, driven by the event loop, not by polling.
    """

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self._fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)

    async def wait(self, timeout: float = 10.0) -> bytes:
        loop = asyncio.get_running_loop()
        arrived = asyncio.Event()
        loop.add_reader(self._fd, arrived.set)
        try:
            await asyncio.wait_for(arrived.wait(), timeout)
        finally:
            loop.remove_reader(self._fd)
        return os.read(self._fd, 4096)

    def close(self) -> None:
        os.close(self._fd)


async def process_gone(pid: int, within: float = 5.0) -> bool:
    """Whether process ``pid`` has terminated (or does within ``within`` seconds), observed
    through a pidfd rather than by polling."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    loop = asyncio.get_running_loop()
    ended = asyncio.Event()
    loop.add_reader(fd, ended.set)
    try:
        await asyncio.wait_for(ended.wait(), within)
        return True
    except TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)
        os.close(fd)
