"""Stopping the real ``toolnexus`` processes the tests start (workers, servers, the inbox).

`stop` sends SIGTERM and collects what the process printed. A process that outlives the
deadline gets SIGABRT — with ``PYTHONFAULTHANDLER`` set (the tests' conftest sets it for every
child) Python then prints every thread's stack — and SIGKILL if even that does not end it; the
failure quotes its stderr. Reading goes on through the signals (the pipes close with the
process), so nothing it printed is lost to a cancelled read.
"""

from __future__ import annotations

import asyncio
import signal


async def stop(
    proc: asyncio.subprocess.Process, timeout: float = 30.0, what: str = "the process"
) -> tuple[bytes, bytes]:
    """SIGTERM ``proc`` (unless it has ended) and return its ``(stdout, stderr)``.

    Raises:
        AssertionError: ``proc`` was still running ``timeout`` seconds after SIGTERM (it is
            aborted first; the message holds its stderr, stacks included).
    """
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
    reading = asyncio.ensure_future(proc.communicate())
    done, _ = await asyncio.wait({reading}, timeout=timeout)
    if not done:
        proc.send_signal(signal.SIGABRT)  # the faulthandler's stacks: where it was stuck
        done, _ = await asyncio.wait({reading}, timeout=10)
        if not done:
            proc.kill()
        _, err = await reading
        raise AssertionError(
            f"{what} outlived SIGTERM by {timeout:g} s and was aborted; its stderr:\n"
            + (err or b"").decode(errors="replace")
        )
    out, err = reading.result()
    return out or b"", err or b""
