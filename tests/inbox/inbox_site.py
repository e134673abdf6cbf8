"""A served inbox for the browser tests and the bench: `inbox_app` on real uvicorn over a real
SQLite file or a Postgres schema, real runs halted through a client against a scripted model,
and ``toolnexus worker --app inbox_host:make`` in its own process to finish what is answered.

    async with open_site("sqlite", tmp_path) as site:
        rid = await site.halt("refund", {"order": "A-1", "amount": 30})
        await login(page, site, "ana")
        await page.goto(site.link(rid))
        async with site.worker():
            ...
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from browser_support import served
from inbox_host import brain, instruction, tools

from proc_support import stop
from toolnexus import create_client
from toolnexus.inbox import inbox_app
from toolnexus.stores.url import resolve_store
from toolnexus.testing import ScriptedModel

HERE = Path(__file__).parent

USERS = [
    {"name": "ana", "token": "tok-ana-browser-0123456789"},
    {"name": "cy", "token": "tok-cy-browser-0123456789"},
    {"name": "bob", "token": "tok-bob-browser-0123456789", "kinds": ["question"]},
]
TOKENS = {u["name"]: str(u["token"]) for u in USERS}


@dataclass
class Site:
    """A running inbox and what it runs over."""

    url: str
    store_url: str
    store: Any
    model: ScriptedModel
    ledger: Path
    client: Any

    def link(self, request_id: str) -> str:
        return f"{self.url}/requests/{quote(request_id, safe='')}"

    async def halt(
        self, tool: str, args: dict[str, Any], *, conversation: str | None = None
    ) -> str:
        """Run the host's ``tool`` with ``args`` through the client until it halts → request id."""
        prompt, toolset = instruction(tool, args), tools(self.ledger)
        if conversation is None:
            result = await self.client.run(prompt, toolset)
        else:
            result = await self.client.ask(prompt, toolset, id=conversation)
        assert result.status == "pending", result
        return str(result.pending.id)

    def ledger_lines(self) -> list[dict[str, Any]]:
        if not self.ledger.exists():
            return []
        return [json.loads(line) for line in self.ledger.read_text().splitlines() if line]

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "TN_STORE": self.store_url,
            "TN_BASE_URL": self.model.openai_base_url,
            "TN_LEDGER": str(self.ledger),
        }

    @asynccontextmanager
    async def worker(self) -> AsyncIterator[asyncio.subprocess.Process]:
        """``toolnexus worker --app inbox_host:make`` in its own process, ready on entry;
        SIGTERM on exit (it must stop cleanly)."""
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "toolnexus",
            "worker",
            "--app",
            "inbox_host:make",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env(),
            cwd=HERE,
        )
        assert proc.stderr is not None
        try:
            ready = await asyncio.wait_for(proc.stderr.readline(), 30)
            assert b"worker: ready" in ready, ready
            yield proc
        finally:
            _, err = await stop(proc, 20, "the worker")
        assert proc.returncode == 0, err


@asynccontextmanager
async def serve_process(site: Site, *args: str) -> AsyncIterator[str]:
    """``toolnexus serve --app inbox_host:make --port 0 ARGS`` over the site's store → its URL;
    SIGTERM on exit (it must stop cleanly)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus",
        "serve",
        "--app",
        "inbox_host:make",
        "--port",
        "0",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=site.env(),
        cwd=HERE,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        assert line.startswith("serving "), (line, await proc.stderr.read())
        yield line.split()[1]
    finally:
        _, err = await stop(proc, 20, "toolnexus serve")
    assert proc.returncode == 0, err


def write_users(path: Path) -> Path:
    """The browser tests' users as a users file."""
    path.write_text(json.dumps({"users": USERS}))
    return path


def store_url_for(backend: str, tmp_path: Path, pg_url: str | None) -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'inbox.db'}"
    assert pg_url is not None
    return pg_url


@asynccontextmanager
async def open_site(
    backend: str, tmp_path: Path, pg_url: str | None = None, **inbox_options: Any
) -> AsyncIterator[Site]:
    """An inbox served on 127.0.0.1 over a fresh store of ``backend`` (``sqlite``/``postgres``)."""
    url = store_url_for(backend, tmp_path, pg_url)
    async with AsyncExitStack() as stack:
        store: Any = await stack.enter_async_context(resolve_store(url))
        model = await stack.enter_async_context(ScriptedModel(default=brain))
        client = await stack.enter_async_context(
            create_client(base_url=model.openai_base_url, model="m-1", api_key="sk-t", store=store)
        )
        inbox_options.setdefault("users", USERS)
        inbox_options.setdefault("poll_interval", 0.1)
        app = inbox_app(store, **inbox_options)
        stack.push_async_callback(app.aclose)
        site_url = await stack.enter_async_context(served(app))
        yield Site(site_url, url, store, model, tmp_path / "ledger.jsonl", client)


async def login(page: Any, site: Site, name: str) -> None:
    """Sign ``name`` in through the login form (the session cookie is the context's)."""
    from playwright.async_api import expect

    await page.goto(f"{site.url}/login")
    await page.fill("#token", TOKENS[name])
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#user")).to_have_text(name)
