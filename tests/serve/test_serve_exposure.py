"""Serving without a token: on loopback it starts and warns, naming the address; on another
address it refuses to start unless the host says ``insecure=True`` — for a toolkit, an agent
tree and a host's own ``run_task`` alike."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a_support import Serve

from toolnexus import UsageError
from toolnexus.agents import agent
from toolnexus.serve import start_a2a_server
from toolnexus.testing import ScriptedModel

CARD = "/.well-known/agent-card.json"
TOKEN = "served-token-0123456789"


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "toolnexus.serve" and r.levelno == logging.WARNING
    ]


async def test_without_a_token_a_toolkit_is_not_served_on_every_interface(
    serve_refunds: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(UsageError) as refused:
        await serve_refunds(addr="0.0.0.0:0")
    assert "refusing to serve on '0.0.0.0:0' without a token" in str(refused.value)
    assert "insecure=True" in str(refused.value)
    assert warnings_of(caplog) == []


async def test_without_a_token_an_agent_tree_is_not_served_on_every_interface(
    tmp_path: Path,
) -> None:
    lead = agent("lead", does="handles customers")
    llm = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key": "k"}
    with pytest.raises(UsageError, match="without a token"):
        await lead.serve("0.0.0.0:0", llm=llm, store=f"sqlite:///{tmp_path / 'state.db'}")
    assert not (tmp_path / "state.db").exists()  # refused before the runtime was opened


async def test_without_a_token_a_run_task_is_not_served_on_every_interface() -> None:
    def run_task(text: str, context_id: str) -> Any:
        raise AssertionError("never runs")

    with pytest.raises(UsageError, match="without a token"):
        await start_a2a_server("0.0.0.0:0", True, [], run_task)


async def test_insecure_serves_on_every_interface_without_a_token_and_warns(
    serve_refunds: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    served = await serve_refunds(addr="0.0.0.0:0", insecure=True)
    async with httpx.AsyncClient() as http:
        assert (await http.get(served.url + CARD)).status_code == 200
    port = served.url.rsplit(":", 1)[1]
    [warning] = warnings_of(caplog)
    assert warning.startswith(f"toolnexus: serving on 0.0.0.0:{port} WITHOUT A TOKEN")
    assert "anyone who can reach this address can run its tools" in warning


async def test_on_loopback_without_a_token_it_serves_and_warns_naming_the_address(
    serve_refunds: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    served = await serve_refunds()
    [warning] = warnings_of(caplog)
    assert warning.startswith(f"toolnexus: serving {served.url} WITHOUT A TOKEN")
    assert "any program or user on this machine" in warning


async def test_a_run_task_on_loopback_without_a_token_warns_and_with_one_does_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def run_task(text: str, context_id: str) -> Any:
        raise AssertionError("never runs")

    async with await start_a2a_server("127.0.0.1:0", True, [], run_task) as served:
        assert warnings_of(caplog) == [
            f"toolnexus: serving {served.url} WITHOUT A TOKEN: any program or user on this "
            "machine can run its tools (pass token= / --token to require one)"
        ]
    caplog.clear()
    async with (
        await start_a2a_server("0.0.0.0:0", True, [], run_task, token=TOKEN) as served,
        httpx.AsyncClient() as http,
    ):
        assert (await http.get(served.url + CARD)).status_code == 401
        bearer = {"authorization": f"Bearer {TOKEN}"}
        assert (await http.get(served.url + CARD, headers=bearer)).status_code == 200
    assert warnings_of(caplog) == []


async def test_with_a_token_a_toolkit_serves_on_every_interface_without_a_warning(
    serve_refunds: Serve, model: ScriptedModel, caplog: pytest.LogCaptureFixture
) -> None:
    served = await serve_refunds(addr="0.0.0.0:0", token=TOKEN)
    async with httpx.AsyncClient() as http:
        bearer = {"authorization": f"Bearer {TOKEN}"}
        assert (await http.get(served.url + CARD, headers=bearer)).status_code == 200
    assert warnings_of(caplog) == []
