"""Helpers for the MCP source tests: config entries for the real test servers.

``demo(...)`` is a server entry that runs ``servers/demo.py`` over stdio, ``script(name)`` one
of the small misbehaving servers beside it. ``alive(pid)`` tells whether a process still runs
(a zombie left to a non-reaping init does not count).
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any

SERVERS = Path(__file__).parent / "servers"
DEMO = SERVERS / "demo.py"
SECRET = "s3cr3t-t0ken-value"


def demo(*args: str, **fields: Any) -> dict[str, Any]:
    """A stdio server entry running the demo server with ``args``."""
    return {"command": [sys.executable, str(DEMO), *args], **fields}


def script(name: str, **fields: Any) -> dict[str, Any]:
    """A stdio server entry running ``servers/<name>.py``."""
    return {"command": [sys.executable, str(SERVERS / f"{name}.py")], **fields}


def alive(pid: int) -> bool:
    """True while ``pid`` runs; an exited process (zombie or reaped) is not alive."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] != "Z"


def refused_url() -> str:
    """An http URL on a loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/mcp"


DEMO_TOOLS = frozenset(
    {
        "echo",
        "pid",
        "env",
        "cwd",
        "caps",
        "die",
        "spawn_child",
        "structured",
        "mixed",
        "fail",
        "bad_result",
        "sleep",
        "progress",
        "ask_form",
        "ask_url",
        "ask_twice",
        "ask_expiring",
        "whoami",
        "leak",
        "show_headers",
        "show_headers_error",
        "ask_forever",
        "ask_roots",
        "ask_sampling",
    }
)
"""Every tool the demo server offers, under its original name."""


async def load_connected(config: dict[str, Any], *, tries: int = 6, **options: Any) -> Any:
    """`load_mcp` for a fixture whose servers have short timeouts: a load where a server's
    start-up alone outran its timeout (a busy machine importing the SDK) is closed and
    loaded again, so the tests judge the behaviour, not the machine's speed. Any other
    failure is returned as it is, for the fixture's own check to report."""
    from toolnexus.tools.mcp import load_mcp

    for attempt in range(tries):
        source = await load_mcp(config, **options)
        slow = [e for e in source.errors().values() if "during initialize" in str(e)]
        if not slow or attempt == tries - 1:
            return source
        await source.close()
    raise AssertionError("unreachable")
