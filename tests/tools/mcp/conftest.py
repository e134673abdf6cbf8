"""Fixtures for the MCP source tests: the demo server over HTTP and SSE, once per module."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from mcp_servers import DEMO, SECRET


def _serve(*args: str) -> Iterator[int]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, str(DEMO), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    try:
        assert line.startswith("PORT "), f"demo server did not start: {line!r}"
        yield int(line.split()[1])
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The demo server over streamable HTTP; it expects ``X-Token: <SECRET>`` in whoami."""
    for port in _serve("--transport", "http", "--expect-header", f"X-Token={SECRET}"):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def sse_url() -> Iterator[str]:
    """The demo server over the legacy SSE transport (no streamable HTTP endpoint)."""
    for port in _serve("--transport", "sse"):
        yield f"http://127.0.0.1:{port}/sse"
