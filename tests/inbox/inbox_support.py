"""What the inbox tests share: halted checkpoints of every kind, a signed-in browser-like
client over httpx, and the stores (memory, SQLite, Postgres) to run the inbox over."""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from toolnexus._types import empty_usage
from toolnexus.inbox import InboxApp, inbox_app
from toolnexus.loop.checkpoint import Checkpoint, Outstanding
from toolnexus.suspension import Request

__all__ = ["ARGS", "USERS", "Visitor", "halted", "make_store", "visitor"]

ARGS = '{"env": "prod", "replicas": 2}'
USERS = [
    {"name": "ana", "token": "tok-ana-0123456789"},
    {"name": "bob", "token": "tok-bob-0123456789", "kinds": ["question"]},
]
TOKENS = {"ana": "tok-ana-0123456789", "bob": "tok-bob-0123456789"}


def halted(
    rid: str = "req-1",
    *,
    kind: str = "approval",
    tool: str = "deploy",
    prompt: str = "Deploy to prod?",
    arguments: str = ARGS,
    data: dict[str, Any] | None = None,
    url: str | None = None,
    expires: str | None = None,
    conversation_id: str | None = "conv-1",
    created_at: float | None = None,
    user_text: str = "ship it",
    input_schema: dict[str, Any] | None = None,
) -> Checkpoint:
    """A checkpoint halted on one request of ``kind``, raised by a call of ``tool``."""
    request = Request(id=rid, kind=kind, prompt=prompt, url=url, data=data, expiresAt=expires)
    return Checkpoint(
        model="m-1",
        style="openai",
        messages=[
            {"role": "user", "content": user_text},
            {
                "role": "assistant",
                "content": "Let me do that.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": tool, "arguments": arguments},
                    }
                ],
            },
        ],
        turn=1,
        usage=empty_usage(),
        tool_calls=[],
        outstanding=[
            Outstanding(
                call_id="call_1",
                name=tool,
                arguments=arguments,
                state="suspended",
                request=request,
                input_schema=input_schema,
            )
        ],
        pending=request,
        fingerprint="fp",
        conversation_id=conversation_id,
        created_at=time.time() if created_at is None else created_at,
    )


_CSRF = re.compile(r'name="csrf" value="([^"]*)"')


class Visitor:
    """An httpx client that signs in through the login form and posts forms with CSRF."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.csrf = ""

    async def login(self, name: str = "ana") -> None:
        page = await self.client.get("/login")
        nonce = _CSRF.search(page.text)
        assert nonce is not None
        done = await self.client.post(
            "/login", data={"csrf": nonce.group(1), "token": TOKENS[name]}
        )
        assert done.status_code == 303, done.text
        await self.refresh_csrf()

    async def refresh_csrf(self) -> None:
        home = await self.client.get("/")
        found = _CSRF.search(home.text)
        assert found is not None
        self.csrf = found.group(1)

    async def get(self, path: str, **kw: Any) -> httpx.Response:
        return await self.client.get(path, **kw)

    async def post(
        self, path: str, data: dict[str, Any], *, csrf: str | None = None
    ) -> httpx.Response:
        body = {"csrf": self.csrf if csrf is None else csrf, **data}
        return await self.client.post(path, data=body)

    async def answer(self, rid: str, **data: Any) -> httpx.Response:
        return await self.post(f"/requests/{rid}/answer", data)


@asynccontextmanager
async def visitor(app: InboxApp, name: str | None = "ana") -> AsyncIterator[Visitor]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://inbox.test") as client:
        v = Visitor(client)
        if name is not None:
            await v.login(name)
        yield v


async def make_store(kind: str, tmp_path: Path, pg_url: str | None = None) -> Any:
    """A fresh run store of ``kind`` (``memory``, ``sqlite``, ``postgres``)."""
    if kind == "memory":
        from toolnexus.stores.runs import InMemoryStore

        return InMemoryStore()
    if kind == "sqlite":
        from toolnexus.stores.sqlite import SqliteStore

        return SqliteStore(tmp_path / "inbox.db", poll_interval=0.02)
    from toolnexus.stores.postgres import PostgresStore

    assert pg_url is not None
    return PostgresStore(pg_url, max_size=4)


def make_app(store: Any, **options: Any) -> InboxApp:
    options.setdefault("users", USERS)
    options.setdefault("allowed_hosts", ["inbox.test"])  # the name `visitor` reaches it by
    return inbox_app(store, **options)


def answer_json(record: Any) -> dict[str, Any]:
    return json.loads(json.dumps(record.answer.to_dict()))
