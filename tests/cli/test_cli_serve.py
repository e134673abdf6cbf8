"""``toolnexus serve --app module:factory`` as a real subprocess on a real port: the A2A card and
a task that halts into the store, MCP inbound listing the app's tools, the bearer token, a clean
stop on SIGTERM, and the flags and apps it refuses (exit code 2, one line, no traceback)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from proc_support import stop
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls

HERE = Path(__file__).parent
A2A_HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0"}


def brain(request: RecordedRequest) -> Reply:
    messages = request.body["messages"]
    if not [m for m in messages if m.get("role") == "tool"]:
        return tool_calls(call("refund", {"order": str(messages[-1]["content"]).split()[-1]}))
    return text("Done.")


@dataclass
class Served:
    url: str
    banner: str
    proc: asyncio.subprocess.Process


def app_env(model: ScriptedModel, tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "TN_STORE": f"sqlite:///{tmp_path / 'runs.db'}",
        "TN_BASE_URL": model.openai_base_url,
        "TN_LEDGER": str(tmp_path / "ledger.txt"),
    }


async def spawn(*args: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus",
        "serve",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=HERE,
    )


@asynccontextmanager
async def serving(*args: str, env: dict[str, str]) -> AsyncIterator[Served]:
    """``toolnexus serve --app cli_app:make --port 0 ARGS``, until SIGTERM on exit."""
    proc = await spawn("--app", "cli_app:make", "--port", "0", *args, env=env)
    assert proc.stdout is not None
    assert proc.stderr is not None
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
        if not line.startswith("serving "):
            err = await asyncio.wait_for(proc.stderr.read(), 10)
            raise AssertionError(f"serve did not start: {line!r} {err.decode()!r}")
        yield Served(line.split()[1], line.strip(), proc)
    finally:
        await stop(proc, 20, "toolnexus serve")


async def refused(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    proc = await spawn(*args, env=env)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def send_message(words: str) -> dict[str, Any]:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": words}]}
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


async def test_serve_a2a_shows_the_card_and_a_task_halts_into_the_apps_store(
    tmp_path: Path,
) -> None:
    from toolnexus.stores.url import resolve_store

    async with ScriptedModel(default=brain) as model:
        env = app_env(model, tmp_path)
        async with serving("--a2a", env=env) as served, aiohttp.ClientSession() as http:
            assert served.banner.endswith("(a2a)")
            async with http.get(f"{served.url}/.well-known/agent-card.json") as r:
                assert r.status == 200
                card = await r.json()
            assert card["name"] == "toolnexus-agent"
            assert card["url"].startswith(served.url)
            async with http.post(
                f"{served.url}/", json=send_message("refund order A-7"), headers=A2A_HEADERS
            ) as r:
                reply = await r.json()
            assert reply["result"]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        assert served.proc.returncode == 0
        assert not Path(env["TN_LEDGER"]).exists()  # nothing approved, nothing refunded
        async with resolve_store(env["TN_STORE"]) as runs:
            [entry] = await runs.list_pending()
        assert (entry.kind, entry.tool, entry.prompt) == ("approval", "refund", "Refund order A-7?")


async def test_serve_mcp_lists_the_apps_tools_at_slash_mcp(tmp_path: Path) -> None:
    from mcp import Client

    async with ScriptedModel(default=brain) as model:
        async with serving("--mcp", env=app_env(model, tmp_path)) as served:
            assert served.banner.endswith("(mcp)")
            async with Client(f"{served.url}/mcp") as mcp:
                names = [t.name for t in (await mcp.list_tools()).tools]
    assert names == ["refund"]


async def test_serve_token_guards_every_route(tmp_path: Path) -> None:
    async with ScriptedModel(default=brain) as model:
        env = {**app_env(model, tmp_path), "TOOLNEXUS_SERVE_TOKEN": "s3cret-token-0123456789"}
        async with serving("--a2a", env=env) as served, aiohttp.ClientSession() as http:
            card_url = f"{served.url}/.well-known/agent-card.json"
            async with http.get(card_url) as r:
                assert r.status == 401
            async with http.get(card_url, headers={"Authorization": "Bearer wrong"}) as r:
                assert r.status == 401
            async with http.post(f"{served.url}/", json=send_message("refund order B")) as r:
                assert r.status == 401
            async with http.get(
                card_url, headers={"Authorization": "Bearer s3cret-token-0123456789"}
            ) as r:
                assert r.status == 200
        _, err = await served.proc.communicate()
    assert b"s3cret-token-0123456789" not in err
    async with aiohttp.ClientSession() as http:  # stopped: the port no longer answers
        with pytest.raises(aiohttp.ClientConnectionError):
            await http.get(card_url)


async def test_serve_inbox_co_mounts_the_inbox_beside_a2a_outside_the_bearer_token(
    tmp_path: Path,
) -> None:
    from toolnexus.stores.url import resolve_store

    users = tmp_path / "users.json"
    users.write_text(json.dumps({"users": [{"name": "ana", "token": "ana-token-0123456789"}]}))
    inbox_auth = {"Authorization": "Bearer ana-token-0123456789"}
    async with ScriptedModel(default=brain) as model:
        env = {**app_env(model, tmp_path), "TOOLNEXUS_SERVE_TOKEN": "s3cret-token-0123456789"}
        args = ("--a2a", "--inbox", "--users", str(users))
        async with serving(*args, env=env) as served, aiohttp.ClientSession() as http:
            assert served.banner.endswith("(a2a, inbox at /inbox)")
            async with http.get(f"{served.url}/inbox/login") as r:
                assert r.status == 200
                assert "Sign in" in await r.text()
            async with http.post(
                f"{served.url}/",
                json=send_message("refund order C-3"),
                headers={**A2A_HEADERS, "Authorization": "Bearer s3cret-token-0123456789"},
            ) as r:
                assert r.status == 200
            async with http.get(f"{served.url}/inbox/api/pending", headers=inbox_auth) as r:
                assert r.status == 200
                listed = await r.json()
            [entry] = listed["requests"]
            assert (entry["tool"], entry["kind"]) == ("refund", "approval")
            rid = entry["id"]
            answer_url = f"{served.url}/inbox/api/requests/{rid}/answer"
            async with http.post(answer_url, json={"ok": True}, headers=inbox_auth) as r:
                assert r.status == 200, await r.text()
            async with http.get(f"{served.url}/inbox/api/pending", headers=inbox_auth) as r:
                assert (await r.json())["requests"] == []
        async with resolve_store(env["TN_STORE"]) as runs:
            record = await runs.answer_record(rid)
        assert record is not None
        assert (record.answer.ok, record.answered_by) == (True, "ana")


async def test_serve_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    async with ScriptedModel(default=brain) as model:
        async with serving("--a2a", env=app_env(model, tmp_path)) as served:
            _, err = await stop(served.proc, 20, "toolnexus serve")
    assert served.proc.returncode == 0
    assert "serve: stopped" in err.decode()
    assert "Traceback" not in err.decode()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--app", "cli_app"), "module:factory"),
        (("--app", "no_such_module_here:make", "--a2a"), "cannot import"),
        (("--app", "cli_app:nothing", "--a2a"), "no callable"),
        (("--app", "cli_app:SCHEMA", "--a2a"), "no callable"),
        (("--app", "cli_app:make"), "nothing to serve"),
        (("--app", "cli_app:make", "--a2a", "--users", "users.json"), "only with --inbox"),
        (("--app", "cli_app:make", "--inbox"), "--inbox needs --users"),
        (("--app", "cli_app:make", "--inbox", "--users", "/no/such/users.json"), "users file"),
        (("--app", "cli_app:make", "--a2a", "--port", "70000"), "port out of range"),
        (("--app", "cli_app:make", "--a2a", "--port", "many"), "--port"),
        (("--app", "cli_app:make", "--a2a", "--callers", "/no/such/callers.json"), "callers"),
        (
            ("--app", "cli_app:make", "--a2a", "--callers", "c.json", "--token", "t" * 20),
            "not both",
        ),
    ],
)
async def test_serve_refuses_bad_apps_and_flags_with_exit_code_2(
    args: tuple[str, ...], message: str, tmp_path: Path
) -> None:
    async with ScriptedModel(default=brain) as model:
        code, out, err = await refused(*args, env=app_env(model, tmp_path))
    assert code == 2, (out, err)
    assert message in err
    assert "Traceback" not in err
    assert out == ""


async def test_serve_on_a_port_already_taken_is_a_usage_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = str(taken.getsockname()[1])
        async with ScriptedModel(default=brain) as model:
            code, _, err = await refused(
                "--app", "cli_app:make", "--a2a", "--port", port, env=app_env(model, tmp_path)
            )
    assert code == 2
    assert "cannot listen" in err
    assert "Traceback" not in err


async def test_serve_help_names_every_option(tmp_path: Path) -> None:
    code, out, _ = await refused("--help", env={**os.environ, "COLUMNS": "200"})
    assert code == 0
    options = ("--app", "--a2a", "--mcp", "--inbox", "--users", "--host", "--port", "--token")
    for option in (*options, "--callers"):
        assert option in out
    words = " ".join(out.replace("│", " ").split())  # rich wraps the help inside a box
    assert "each seeing only the A2A tasks it created" in words


@pytest.mark.parametrize(
    "argv",
    [
        (),
        ("pending",),
        ("pending", "--store", "sqlite:///x.db", "--limit", "many"),
        ("answer", "--store", "sqlite:///x.db"),
        ("no-such-command",),
    ],
)
async def test_a_mistyped_command_line_is_exit_code_2_without_a_traceback(
    argv: tuple[str, ...],
) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus",
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=HERE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2
    assert b"Traceback" not in out + err
    assert b"Usage" in out + err


async def test_serve_callers_gives_each_caller_its_own_token_and_tasks(tmp_path: Path) -> None:
    import hashlib

    from toolnexus.stores.url import resolve_store

    alice, bob = "alice-token-0123456789", "bob-token-0123456789ab"
    callers = tmp_path / "callers.json"
    entries = [
        {"name": "alice", "token": alice},
        {"name": "bob", "token_sha256": hashlib.sha256(bob.encode()).hexdigest()},
    ]
    callers.write_text(json.dumps({"callers": entries}))

    def as_(token: str) -> dict[str, str]:
        return {**A2A_HEADERS, "Authorization": f"Bearer {token}"}

    async def call(http: aiohttp.ClientSession, url: str, token: str, body: Any) -> Any:
        async with http.post(f"{url}/", json=body, headers=as_(token)) as r:
            assert r.status == 200
            return await r.json()

    listing = {"jsonrpc": "2.0", "id": 2, "method": "ListTasks", "params": {}}
    async with ScriptedModel(default=brain) as model:
        env = app_env(model, tmp_path)
        args = ("--a2a", "--callers", str(callers))
        async with serving(*args, env=env) as served, aiohttp.ClientSession() as http:
            async with http.post(f"{served.url}/", json=listing, headers=as_("x" * 20)) as r:
                assert r.status == 401
            made = await call(http, served.url, alice, send_message("refund order D-1"))
            task = made["result"]["task"]
            assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
            theirs = await call(http, served.url, bob, listing)
            assert theirs["result"]["tasks"] == []
            getting = {"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": task["id"]}}
            assert (await call(http, served.url, bob, getting))["error"]["code"] == -32001
            mine = await call(http, served.url, alice, listing)
            assert [t["id"] for t in mine["result"]["tasks"]] == [task["id"]]
            yes = send_message("yes")
            yes["params"]["message"]["taskId"] = task["id"]
            done = await call(http, served.url, alice, yes)
            assert done["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        _, err = await served.proc.communicate()
    assert alice.encode() not in err
    assert Path(env["TN_LEDGER"]).read_text() == "refunded D-1\n"
    async with resolve_store(env["TN_STORE"]) as runs:
        [answered] = await runs.list_history()
    assert answered.answered_by == "alice"
