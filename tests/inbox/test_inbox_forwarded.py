"""``X-Forwarded-For`` is believed only from configured proxies: by default a client on loopback
that names a new address in every request is still counted as itself by the sign-in limit; with
the proxy configured (``start(trusted_proxies=)``, ``toolnexus inbox --trusted-proxy``) each
forwarded address is counted on its own. Real uvicorn on 127.0.0.1, real HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from inbox_support import USERS, make_app

from proc_support import stop
from toolnexus.errors import UsageError
from toolnexus.security import SignInLimit
from toolnexus.serve.server import start
from toolnexus.stores.runs import InMemoryStore

WRONG = {"authorization": "Bearer not-the-token-of-anyone"}


@asynccontextmanager
async def served_inbox(limit: int, **start_options: Any) -> AsyncIterator[tuple[Any, str]]:
    app = make_app(InMemoryStore())
    app.sign_ins = SignInLimit(limit, 60.0)
    handle = await start(app, "127.0.0.1:0", on_stop=app.aclose, **start_options)
    try:
        yield app, handle.url
    finally:
        await handle.stop()


async def guesses(url: str, forwarded: list[str]) -> list[int]:
    """A wrong bearer token per forwarded address, in turn → the status codes."""
    codes: list[int] = []
    async with httpx.AsyncClient(base_url=url) as http:
        for address in forwarded:
            headers = {**WRONG, "x-forwarded-for": address}
            codes.append((await http.get("/api/pending", headers=headers)).status_code)
    return codes


ROTATING = [f"198.51.100.{n}" for n in range(1, 7)]


async def test_a_forwarded_address_from_loopback_does_not_dodge_the_limit_by_default() -> None:
    async with served_inbox(3) as (app, url):
        assert await guesses(url, ROTATING) == [401, 401, 401, 429, 429, 429]
        assert app.sign_ins.retry_after("127.0.0.1") is not None
        assert app.sign_ins.retry_after(ROTATING[0]) is None


async def test_a_configured_proxy_is_believed() -> None:
    async with served_inbox(3, trusted_proxies=["127.0.0.1"]) as (app, url):
        assert await guesses(url, ROTATING) == [401] * 6  # six clients, one guess each
        assert await guesses(url, [ROTATING[0]] * 3) == [401, 401, 429]
        assert await guesses(url, [ROTATING[1]]) == [401]
        assert app.sign_ins.retry_after("127.0.0.1") is None


async def test_a_proxy_network_is_believed_and_another_network_is_not() -> None:
    async with served_inbox(2, trusted_proxies=["127.0.0.0/8"]) as (_, url):
        assert await guesses(url, ROTATING[:4]) == [401] * 4
    async with served_inbox(2, trusted_proxies=["10.0.0.0/8"]) as (_, url):
        assert await guesses(url, ROTATING[:4]) == [401, 401, 429, 429]


def test_a_trusted_proxy_that_is_not_an_address_is_a_usage_error() -> None:
    from toolnexus.security import check_proxies

    assert check_proxies(["10.0.0.5", " 10.1.0.0/16", "::1", "192.168.1.7/32"]) == (
        "10.0.0.5",
        "10.1.0.0/16",
        "::1",
        "192.168.1.7",
    )
    assert check_proxies(None) == ()
    for bad in ("*", "proxy.internal", "10.0.0.0/33", ""):
        with pytest.raises(UsageError, match="IP address or network"):
            check_proxies([bad])


@asynccontextmanager
async def inbox_process(tmp_path: Path, *args: str) -> AsyncIterator[str]:
    tmp_path.mkdir()
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"users": USERS}))
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus",
        "inbox",
        "--store",
        f"sqlite:///{tmp_path / 'runs.db'}",
        "--users",
        str(users),
        "--port",
        "0",
        "--max-failed-sign-ins",
        "3",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(os.environ),
    )
    assert proc.stdout is not None
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 50)).decode()
        url = re.fullmatch(r"inbox: (http://127\.0\.0\.1:\d+)/\n", line)
        assert url is not None, line
        yield url.group(1)
    finally:
        _, err = await stop(proc, 30, "toolnexus inbox")
    assert proc.returncode == 0, err


async def test_the_inbox_command_believes_only_the_proxies_it_is_given(tmp_path: Path) -> None:
    async with inbox_process(tmp_path / "a") as url:
        assert await guesses(url, ROTATING[:4]) == [401, 401, 401, 429]
    trusted = ("--trusted-proxy", "10.9.9.9", "--trusted-proxy", "127.0.0.1")
    async with inbox_process(tmp_path / "b", *trusted) as url:
        assert await guesses(url, ROTATING[:4]) == [401] * 4


def test_the_inbox_command_refuses_a_proxy_that_is_not_an_address(
    capsys: Any, tmp_path: Path
) -> None:
    from toolnexus.cli import main

    users = tmp_path / "users.json"
    users.write_text(json.dumps({"users": USERS}))
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    args = ["inbox", "--store", store, "--users", str(users), "--trusted-proxy", "*"]
    assert main(args) == 2
    assert "a trusted proxy must be an IP address or network" in capsys.readouterr().err
