"""An MCP server that echoes the credentials it was sent: the secret never leaves the process.

The demo server runs over streamable HTTP on loopback; ``show_headers`` returns the request
headers in a normal result, ``show_headers_error`` inside an ``isError`` result. The header
value comes from ``${TN_REDACT_TOKEN}`` in the server's config. The test grepped for the secret
afterwards: what the model was sent, the run's result, the DEBUG log of the ``toolnexus``
logger tree, every metric event, the SQLite file (and its WAL) and the Postgres rows.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from pg_support import pg_connect
from toolnexus import create_client, create_toolkit, define_tool, pending
from toolnexus.testing import ScriptedModel, call, text, tool_calls

VARIABLE = "TN_REDACT_TOKEN"


@define_tool
def read_token() -> str:
    """Fail with the token in the message (a careless tool; the trace goes to the DEBUG log)."""
    raise RuntimeError(f"token {os.environ[VARIABLE]} rejected")


@define_tool
def approve(change: str) -> Any:
    """Ask a human to approve ``change``."""
    return pending(kind="approval", prompt=f"approve {change}?")


def _config(http_url: str) -> dict[str, Any]:
    return {"mcpServers": {"web": {"url": http_url, "headers": {"X-Token": f"${{{VARIABLE}}}"}}}}


def _script(model: ScriptedModel) -> None:
    """Turn 1 calls both echo tools, turn 2 answers; a second run halts on an approval."""
    model.add(
        tool_calls(
            call("web_show_headers", {}), call("web_show_headers_error", {}), call("read_token")
        ),
        text("done"),
        tool_calls(call("web_show_headers_error", {}), call("approve", {"change": "x"})),
    )


async def _exercise(
    http_url: str, store: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> tuple[str, list[dict[str, Any]], ScriptedModel, Any, Any]:
    secret = f"tok-{uuid.uuid4().hex}"
    monkeypatch.setenv(VARIABLE, secret)
    events: list[dict[str, Any]] = []
    caplog.set_level(logging.DEBUG, logger="toolnexus")
    async with ScriptedModel() as model:
        _script(model)
        async with (
            await create_toolkit(
                _config(http_url), extra_tools=[approve, read_token], strict=True
            ) as tk,
            create_client(
                base_url=model.openai_base_url,
                model="m",
                api_key="sk-unrelated",
                store=store,
                on_metric=events.append,
            ) as client,
        ):
            first = await client.ask("look", tk, id="conv-1")
            second = await client.run("again", tk)
            model_saw = json.dumps([r.body for r in model.requests])
    assert second.status == "pending"
    return secret, events, model, first, (second, model_saw)


def _assert_echoed_and_masked(first: Any, secret: str) -> None:
    outputs = [c.output for c in first.tool_calls]
    # The server did receive the header (its echo reached us), and only the mask came through.
    assert '"x-token": "***"' in outputs[0]
    assert first.tool_calls[1].is_error
    assert outputs[1].startswith("denied for ")
    assert '"x-token": "***"' in outputs[1]
    assert first.tool_calls[2].output == "RuntimeError: token *** rejected"
    assert secret not in json.dumps(first.messages)


async def test_an_echoed_header_is_masked_everywhere_with_a_sqlite_store(
    http_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "runs.db"
    secret, events, _, first, (second, model_saw) = await _exercise(
        http_url, f"sqlite:///{path}", monkeypatch, caplog
    )
    _assert_echoed_and_masked(first, secret)
    assert '\\"x-token\\": \\"***\\"' in model_saw
    assert secret not in model_saw
    assert secret not in json.dumps([c.output for c in second.tool_calls])
    assert "RuntimeError: token *** rejected" in caplog.text  # the DEBUG traceback, masked
    assert secret not in caplog.text
    assert events
    assert secret not in json.dumps(events, default=str)
    files = sorted(tmp_path.glob("runs.db*"))
    assert files
    stored = b"".join(f.read_bytes() for f in files)
    # The grep reads real rows: the transcript's and the checkpoint's masked echoes are there.
    assert b"approve x?" in stored
    assert b"x-token" in stored
    assert b"token *** rejected" in stored
    assert secret.encode() not in stored


async def test_an_echoed_header_is_masked_in_postgres_rows(
    http_url: str, pg_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    secret, _, _, first, (second, _) = await _exercise(http_url, pg_url, monkeypatch, caplog)
    _assert_echoed_and_masked(first, secret)
    assert second.pending is not None
    rows: list[str] = []
    with pg_connect(pg_url) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchall()
        for (table,) in tables:
            rows += [r[0] for r in conn.execute(f'SELECT t::text FROM "{table}" t').fetchall()]
    dump = "\n".join(rows)
    assert "x-token" in dump  # transcripts and the checkpoint are really in these rows
    assert second.pending.id in dump
    assert secret not in dump
    assert secret not in caplog.text


async def test_a_toolkit_built_from_loaded_mcp_tools_learns_their_secrets(
    http_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolnexus import load_mcp

    secret = f"tok-{uuid.uuid4().hex}"
    monkeypatch.setenv(VARIABLE, secret)
    monkeypatch.setenv("TN_REDACT_COPY", secret)

    @define_tool
    def show_copy() -> str:
        """Print a variable that happens to hold the same token."""
        return os.environ["TN_REDACT_COPY"]

    async with await load_mcp(_config(http_url)) as mcp:
        tools = [*mcp.tools, show_copy]
        async with await create_toolkit(extra_tools=tools, builtins=False) as tk:
            echoed = await tk.execute("web_show_headers", {})
            copied = await tk.execute("show_copy", {})
    assert '"x-token": "***"' in echoed.output
    assert copied.output == "***"
