"""The stdio transport for local MCP servers: one child process, newline-delimited JSON-RPC.

We run the child ourselves (rather than through the SDK's ``stdio_client``) for three things
the contract needs: the child's pid and exit code (to say why a server failed), the tail of its
stderr (kept in memory for the error message, never logged), and a guaranteed kill of the whole
process *tree* on close. The child starts in its own session, so its process group holds every
descendant; closing sends EOF, waits briefly, then signals the group until nothing is left.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from anyio.abc import Process
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.shared.message import SessionMessage

__all__ = ["StdioChannel", "open_stdio"]

log = logging.getLogger("toolnexus")

EXIT_GRACE = 2.0
"""Seconds a server may take to exit on its own after its stdin closes."""
KILL_GRACE = 1.0
"""Seconds between SIGTERM and SIGKILL for whatever is left of the process group."""
MAX_LINE = 32 * 1024 * 1024
"""A single message larger than this is refused (a hostile server cannot exhaust memory)."""
_STDERR_TAIL = 4096
_POLL = 0.02


@dataclass(slots=True)
class StdioChannel:
    """A running child: its streams for the SDK session, its pid and what it said on stderr."""

    pid: int
    read: MemoryObjectReceiveStream[SessionMessage | Exception]
    write: MemoryObjectSendStream[SessionMessage]
    process: Process
    stderr_tail: bytearray = field(default_factory=bytearray)

    @property
    def returncode(self) -> int | None:
        """The exit code once the child has exited."""
        return self.process.returncode

    async def exit_reason(self, wait: float = 0.5) -> str | None:
        """Why the child is gone (``exited with code N: <last stderr line>``), if it is."""
        with anyio.move_on_after(wait):
            await self.process.wait()
        code = self.process.returncode
        if code is None:
            return None
        reason = f"server process exited with code {code}"
        last = _last_line(self.stderr_tail)
        return f"{reason}: {last}" if last else reason


@asynccontextmanager
async def open_stdio(
    command: Sequence[str], *, env: Mapping[str, str] | None, cwd: str | None
) -> AsyncGenerator[StdioChannel]:
    """Start ``command`` and yield its `StdioChannel`; on exit, stop it and its descendants.

    Raises:
        OSError: the command cannot be started (not found, not executable, bad cwd).
    """
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    process = await anyio.open_process(
        list(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    channel = StdioChannel(pid=process.pid, read=read_recv, write=write_send, process=process)

    async def pump_stdout() -> None:
        assert process.stdout is not None
        buffer = b""
        async with read_send:
            with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                async for chunk in process.stdout:
                    buffer += chunk
                    if b"\n" not in buffer:
                        if len(buffer) > MAX_LINE:
                            await read_send.send(ValueError("MCP message over the size limit"))
                            buffer = b""
                        continue
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if not line.strip():
                            continue
                        try:
                            message: Any = jsonrpc_message_adapter.validate_json(
                                line, by_name=False
                            )
                        except ValueError as exc:
                            await read_send.send(exc)
                            continue
                        await read_send.send(SessionMessage(message))

    async def pump_stdin() -> None:
        assert process.stdin is not None
        async with write_recv:
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for outgoing in write_recv:
                    wire = outgoing.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(wire.encode() + b"\n")

    async def pump_stderr() -> None:
        assert process.stderr is not None
        with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            async for chunk in process.stderr:
                channel.stderr_tail += chunk
                del channel.stderr_tail[:-_STDERR_TAIL]

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(pump_stdout)
            group.start_soon(pump_stdin)
            group.start_soon(pump_stderr)
            try:
                yield channel
            finally:
                with anyio.CancelScope(shield=True):
                    try:
                        await _stop(process)
                    except BaseException:
                        _kill_now(process)  # interrupted mid-stop: no grace, but no survivor
                        raise
                group.cancel_scope.cancel()
    finally:
        for stream in (read_send, read_recv, write_send, write_recv):
            stream.close()


async def _stop(process: Process) -> None:
    """EOF, a short wait, then SIGTERM / SIGKILL to the whole process group."""
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    with anyio.move_on_after(EXIT_GRACE):
        await process.wait()
    group = process.pid
    if sys.platform == "win32":  # pragma: no cover - no process groups to signal
        if process.returncode is None:
            process.kill()
    elif _group_alive(group):
        _signal_group(group, signal.SIGTERM)
        with anyio.move_on_after(KILL_GRACE):
            while _group_alive(group):  # noqa: ASYNC110 - no event tells us a group emptied
                await anyio.sleep(_POLL)
        if _group_alive(group):
            _signal_group(group, signal.SIGKILL)
            # SIGKILL is delivered asynchronously: wait until the group is really gone, so
            # that close() returning means no process of the server is left running.
            with anyio.move_on_after(EXIT_GRACE):
                while _group_alive(group):  # noqa: ASYNC110 - no event tells us a group emptied
                    await anyio.sleep(_POLL)
    with anyio.move_on_after(EXIT_GRACE):
        await process.aclose()
    if process.returncode is None:
        log.warning("toolnexus: MCP server process %d survived SIGKILL", process.pid)


def _kill_now(process: Process) -> None:
    """SIGKILL the child's whole process group at once."""
    if sys.platform == "win32":  # pragma: no cover - no process groups to signal
        with suppress(OSError):
            process.kill()
        return
    _signal_group(process.pid, signal.SIGKILL)


def _group_alive(group: int) -> bool:
    """Whether any process of ``group`` still runs (zombies left to a non-reaping init don't)."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _has_running_member(group)


def _has_running_member(group: int) -> bool:
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the parenthesised command name: state, ppid, pgrp, ...
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(group) and fields[0] != "Z":
            return True
    return False


def _signal_group(group: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def _last_line(tail: bytearray) -> str:
    text = bytes(tail).decode("utf-8", errors="replace").strip()
    return text.splitlines()[-1].strip()[:500] if text else ""
