"""A server that ignores EOF and SIGTERM and never answers ``initialize`` is killed, with its
whole process group, when the toolkit (or the source) closes — alone and among good, disabled,
missing, remote, refused and silent servers, after it timed out and while it still connects.

Every check reads ``/proc`` (through ``alive``): no process of the stubborn pair may survive.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mcp_servers import DEMO, SERVERS, alive, demo, refused_url

import toolnexus as tn

STUBBORN = SERVERS / "stubborn_tree.py"


def stubborn(pidfile: Path, **fields: Any) -> dict[str, Any]:
    return {
        "command": [sys.executable, str(STUBBORN)],
        "env": {"DEMO_PIDFILE": str(pidfile)},
        **fields,
    }


def running(pid: int) -> bool:
    """``pid`` still runs *and* is one of the stubborn pair (not a reused pid)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return alive(pid) and (b"stubborn_tree" in cmdline or b"sleep(3600)" in cmdline)


def pids_of(pidfile: Path) -> list[int]:
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 2  # the server and its child
    return pids


async def started(pidfile: Path) -> list[int]:
    """The pair's pids, once the server wrote them (its Python start-up takes a while)."""
    while not pidfile.exists():  # noqa: ASYNC110 - a file appears; there is no event to wait on
        await asyncio.sleep(0.02)
    return pids_of(pidfile)


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, str(DEMO), "--transport", "http"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    try:
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()


@pytest_asyncio.fixture
async def silent_url() -> AsyncIterator[str]:
    """A TCP server that accepts, reads and never answers."""

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.close()
        await server.wait_closed()


def mix(pidfile: Path, http_url: str, silent_url: str, **stub_fields: Any) -> dict[str, Any]:
    return {
        "mcpServers": {
            "good": demo(),
            "off": {"command": ["never-started-binary"], "disabled": True},
            "missing": {"command": ["no-such-mcp-server-binary"]},
            "remote": {"url": http_url},
            "refused": {"url": refused_url()},
            "silent": {"url": silent_url, "timeout": 1000},
            "stub": stubborn(pidfile, **stub_fields),
        }
    }


async def test_alone_it_is_killed_with_its_child_on_close(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    source = await tn.load_mcp({"stub": stubborn(pidfile, timeout=1000)})
    assert source.status == {"stub": "failed"}
    pids = pids_of(pidfile)

    await source.close()

    assert [running(p) for p in pids] == [False, False]


async def test_in_the_mix_the_toolkit_close_kills_it_after_its_timeout(
    tmp_path: Path, http_url: str, silent_url: str
) -> None:
    pidfile = tmp_path / "pids"
    async with await tn.create_toolkit(
        mix(pidfile, http_url, silent_url, timeout=1000), builtins=False
    ) as toolkit:
        assert toolkit.mcp_status() == {
            "good": "connected",
            "off": "disabled",
            "missing": "failed",
            "remote": "connected",
            "refused": "failed",
            "silent": "failed",
            "stub": "failed",
        }
        pids = pids_of(pidfile)

    assert [running(p) for p in pids] == [False, False]


async def test_in_the_mix_closing_right_after_loading_still_kills_it(
    tmp_path: Path, http_url: str, silent_url: str
) -> None:
    # The server failed moments ago and is mid-teardown (EOF grace) when close() arrives: the
    # close must wait for that teardown, never cut it short and leave the pair running.
    pidfile = tmp_path / "pids"
    toolkit = await tn.create_toolkit(mix(pidfile, http_url, silent_url, timeout=1000))
    pids = pids_of(pidfile)

    await toolkit.close()

    assert [running(p) for p in pids] == [False, False]


async def test_cancelling_the_load_while_it_connects_kills_it(
    tmp_path: Path, http_url: str, silent_url: str
) -> None:
    pidfile = tmp_path / "pids"
    cancel = asyncio.Event()

    async def cancel_once_started() -> list[int]:
        pids = await started(pidfile)
        cancel.set()
        return pids

    setter = asyncio.ensure_future(cancel_once_started())
    with pytest.raises(tn.RunCancelled):
        await tn.create_toolkit(mix(pidfile, http_url, silent_url), cancel=cancel)
    pids = await setter

    assert [running(p) for p in pids] == [False, False]


async def test_list_mcp_tools_leaves_no_process_behind(
    tmp_path: Path, http_url: str, silent_url: str
) -> None:
    pidfile = tmp_path / "pids"

    inventory = await tn.list_mcp_tools(mix(pidfile, http_url, silent_url, timeout=1000))

    assert inventory.status["stub"] == "failed"
    assert sorted(inventory.tools) == ["good", "remote"]
    assert [running(p) for p in pids_of(pidfile)] == [False, False]
