"""Signing out ends the session in every process: two ``toolnexus inbox`` processes on one SQLite
file (and on the real Postgres) share sessions through the store; signing out in one makes the
cookie worthless in the other, which then refuses it and cannot be made to answer with it."""

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
from inbox_support import TOKENS, USERS, halted

from proc_support import stop
from toolnexus.stores.url import resolve_store

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    return str(request.getfixturevalue("pg_url"))


@asynccontextmanager
async def inbox_process(store_url: str, users: Path) -> AsyncIterator[str]:
    """``toolnexus inbox`` on a free port over ``store_url`` → its URL; SIGTERM on exit."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus",
        "inbox",
        "--store",
        store_url,
        "--users",
        str(users),
        "--port",
        "0",
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


async def sign_in(http: httpx.AsyncClient) -> tuple[str, str]:
    """Sign ana in → (the session cookie, the CSRF token of her forms)."""
    form = await http.get("/login")
    nonce = CSRF.search(form.text)
    assert nonce is not None
    done = await http.post("/login", data={"csrf": nonce.group(1), "token": TOKENS["ana"]})
    assert done.status_code == 303, done.text
    home = await http.get("/")
    csrf = CSRF.search(home.text)
    assert csrf is not None
    return http.cookies["toolnexus_inbox"], csrf.group(1)


async def test_signing_out_in_one_process_ends_the_session_in_the_other(
    store_url: str, tmp_path: Path
) -> None:
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"users": USERS}))
    store: Any = resolve_store(store_url)
    async with store:
        await store.save_halt(halted("a-1"))
        async with (
            inbox_process(store_url, users) as first,
            inbox_process(store_url, users) as second,
        ):
            async with httpx.AsyncClient(base_url=first, timeout=30) as one:
                cookie, csrf = await sign_in(one)
                async with httpx.AsyncClient(
                    base_url=second, timeout=30, cookies={"toolnexus_inbox": cookie}
                ) as two:
                    shared = await two.get("/requests/a-1")
                    assert shared.status_code == 200  # the other process knows the session
                    assert f'value="{csrf}"' in shared.text  # and renders the same forms
                    out = await one.post("/logout", data={"csrf": csrf})
                    assert (out.status_code, out.headers["location"]) == (303, "/login")
                    refused = await two.get("/")
                    assert (refused.status_code, refused.headers["location"]) == (303, "/login")
                    answer = await two.post(
                        "/requests/a-1/answer", data={"csrf": csrf, "action": "approve"}
                    )
                    assert answer.status_code == 401
        assert await store.answer_record("a-1") is None
        assert [e.request_id for e in await store.list_pending()] == ["a-1"]
