"""The inbox as the real thing: ``toolnexus inbox`` serving on loopback (uvicorn), a person
answering over HTTP, and ``toolnexus worker`` in another process finishing the run — over a
SQLite file and the real Postgres. The refund's ledger, written by the worker's tool, counts
executions outside every process."""

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
from inbox_support import USERS
from inbox_worker_app import refund_tool

from proc_support import stop
from toolnexus import create_client
from toolnexus.stores.url import resolve_store
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls

HERE = Path(__file__).parent
ANA = "tok-ana-0123456789"


def brain(request: RecordedRequest) -> Reply:
    messages = request.body["messages"]
    done = [m for m in messages if m.get("role") == "tool"]
    if not done:
        order = str(messages[-1]["content"]).split()[-1]
        return tool_calls(call("refund", {"order": order}))
    return text(f"Done: {done[-1]['content']}.")


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    return str(request.getfixturevalue("pg_url"))


async def halt(model: ScriptedModel, store_url: str, ledger: Path, order: str) -> str:
    store: Any = resolve_store(store_url)
    async with (
        store,
        create_client(
            base_url=model.openai_base_url, model="m-1", api_key="sk-test", store=store
        ) as client,
    ):
        result = await client.run(f"refund order {order}", [refund_tool(ledger)])
    assert result.status == "pending"
    assert result.pending is not None
    return result.pending.id


@asynccontextmanager
async def toolnexus(*args: str, env: dict[str, str] | None = None) -> AsyncIterator[Any]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
        cwd=HERE,
    )
    try:
        yield proc
    finally:
        await stop(proc, 30, f"toolnexus {args[0]}")


async def signed_in(http: httpx.AsyncClient) -> str:
    page = await http.get("/login")
    nonce = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert nonce is not None
    done = await http.post("/login", data={"csrf": nonce.group(1), "token": ANA})
    assert done.status_code == 303
    home = await http.get("/")
    found = re.search(r'name="csrf" value="([^"]+)"', home.text)
    assert found is not None
    return found.group(1)


async def test_an_edited_approval_from_the_page_is_finished_by_a_worker_exactly_once(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"users": USERS}))
    async with ScriptedModel(default=brain) as model:
        rid = await halt(model, store_url, ledger, "A-1")
        inbox = toolnexus("inbox", "--store", store_url, "--users", str(users), "--port", "0")
        async with inbox as served:
            assert served.stdout is not None
            line = (await asyncio.wait_for(served.stdout.readline(), 50)).decode()
            url = re.fullmatch(r"inbox: (http://127\.0\.0\.1:\d+/)\n", line)
            assert url is not None, line
            async with httpx.AsyncClient(base_url=url.group(1), timeout=30) as http:
                csrf = await signed_in(http)
                listed = await http.get("/")
                assert f'data-request-id="{rid}"' in listed.text
                bad = await http.post(
                    f"/requests/{rid}/answer",
                    data={"csrf": csrf, "action": "approve_edited", "arguments": '{"order": "b2"}'},
                )
                assert bad.status_code == 400  # fails the tool's pattern
                done = await http.post(
                    f"/requests/{rid}/answer",
                    data={
                        "csrf": csrf,
                        "action": "approve_edited",
                        "arguments": '{"order": "B-2"}',
                    },
                )
                assert done.status_code == 303
                again = await http.post(
                    f"/requests/{rid}/answer", data={"csrf": csrf, "action": "decline"}
                )
                assert again.status_code == 409
                queued = await http.get(f"/requests/{rid}")
                assert 'data-status="answered"' in queued.text
                assert not ledger.exists()  # answering ran nothing

                env = {
                    "TN_STORE": store_url,
                    "TN_BASE_URL": model.openai_base_url,
                    "TN_LEDGER": str(ledger),
                }
                worker_cmd = ("worker", "--app", "inbox_worker_app:make")
                async with toolnexus(*worker_cmd, env=env) as worker:
                    assert worker.stdout is not None
                    finished = await asyncio.wait_for(worker.stdout.readline(), 50)
                    assert finished.decode().strip() == f"{rid}: done"
                status = (await http.get(f"/requests/{rid}/status")).json()
                assert status["status"] == "done"
                assert status["decision"] == "approved with edits"
                assert status["outcome"]["text"] == "Done: refunded B-2."
                page = await http.get(f"/requests/{rid}")
                assert '<pre id="final-text">Done: refunded B-2.</pre>' in page.text
                history = await http.get("/history.jsonl", params={"by": "ana"})
                [row] = [json.loads(x) for x in history.text.splitlines()]
                assert (row["request_id"], row["status"], row["answered_by"]) == (
                    rid,
                    "done",
                    "ana",
                )
        assert served.returncode == 0
    assert ledger.read_text() == "refunded B-2\n"
