"""examples/serve_mcp.py runs as a user would run it: serves, lists, calls, asks for approval."""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from test_examples import EXAMPLES, run


def test_serve_mcp_lists_calls_and_asks_the_client_for_approval() -> None:
    out = run("serve_mcp.py")
    assert out.splitlines() == [
        "tools: convert, delete_bucket",
        "convert: 21.0 °C is 69.8 °F",
        "client asked: Delete bucket 'old-logs'? -> yes",
        "delete_bucket: bucket 'old-logs' deleted",
    ]


def test_serve_mode_refuses_a_request_without_the_token(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "serve_mcp.py"), "serve", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()  # printed once uvicorn listens
        assert banner.startswith("serving http://127.0.0.1:"), banner
        url = banner.split()[1]
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request(url, data=b"{}", method="POST"))
        with refused.value:
            assert refused.value.code == 401
            assert refused.value.headers["WWW-Authenticate"].startswith("Bearer")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
