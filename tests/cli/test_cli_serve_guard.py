"""``toolnexus serve`` and ``toolnexus inbox`` on the network, as real subprocesses: without
a token, ``serve`` listens on loopback only and says so on stderr; on another address it
refuses to start unless ``--insecure``; ``--allow-host`` / ``--allow-origin`` name the hosts
and browser origins it answers besides its own, and every other is refused."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from proc_support import stop
from toolnexus.testing import ScriptedModel, text

HERE = Path(__file__).parent
CARD = "/.well-known/agent-card.json"


def app_env(model: ScriptedModel, tmp_path: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "TN_STORE": f"sqlite:///{tmp_path / 'runs.db'}",
        "TN_BASE_URL": model.openai_base_url,
        "TN_LEDGER": str(tmp_path / "ledger.txt"),
    }
    env.pop("TOOLNEXUS_SERVE_TOKEN", None)
    return env


async def spawn(*args: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=HERE,
    )


@asynccontextmanager
async def running(*args: str, env: dict[str, str]) -> AsyncIterator[tuple[str, list[str]]]:
    """``toolnexus ARGS`` until SIGTERM on exit → (its URL, then its stderr lines once
    stopped)."""
    proc = await spawn(*args, env=env)
    assert proc.stdout is not None
    stderr: list[str] = []
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 50)).decode()
        found = re.search(r"(http://[^\s/]+)", line)
        assert found is not None, line
        yield found.group(1), stderr
    finally:
        _, err = await stop(proc, 20, " ".join(args[:1]))
        stderr.extend(err.decode().splitlines())


async def test_serve_without_a_token_on_a_non_loopback_host_refuses_to_start(
    tmp_path: Path,
) -> None:
    async with ScriptedModel(default=text("hi")) as model:
        proc = await spawn(
            "serve", "--app", "cli_app:make", "--a2a", "--host", "0.0.0.0", "--port", "0",
            env=app_env(model, tmp_path),
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 50)
    assert proc.returncode == 2
    assert out == b""
    assert "refusing to serve on '0.0.0.0:0' without a token" in err.decode()
    assert "--insecure" in err.decode()
    assert "Traceback" not in err.decode()


async def test_serve_insecure_starts_on_every_interface_and_warns_on_stderr(
    tmp_path: Path,
) -> None:
    async with ScriptedModel(default=text("hi")) as model:
        args = ("serve", "--app", "cli_app:make", "--a2a", "--host", "0.0.0.0", "--port", "0")
        async with running(*args, "--insecure", env=app_env(model, tmp_path)) as (url, err):
            async with httpx.AsyncClient() as http:
                assert (await http.get(url + CARD)).status_code == 200
    [warning] = [line for line in err if "WITHOUT A TOKEN" in line]
    port = url.rsplit(":", 1)[1]
    assert f"serving on 0.0.0.0:{port} WITHOUT A TOKEN (insecure=True)" in warning


async def test_serve_on_loopback_without_a_token_names_the_address_on_stderr(
    tmp_path: Path,
) -> None:
    async with ScriptedModel(default=text("hi")) as model:
        args = ("serve", "--app", "cli_app:make", "--a2a", "--port", "0")
        async with running(*args, env=app_env(model, tmp_path)) as (url, err):
            pass
    [warning] = [line for line in err if "WITHOUT A TOKEN" in line]
    assert warning.startswith(f"toolnexus: serving {url} WITHOUT A TOKEN")


async def test_serve_with_a_token_on_a_non_loopback_host_starts_without_a_warning(
    tmp_path: Path,
) -> None:
    async with ScriptedModel(default=text("hi")) as model:
        env = {**app_env(model, tmp_path), "TOOLNEXUS_SERVE_TOKEN": "serve-token-0123456789"}
        args = ("serve", "--app", "cli_app:make", "--a2a", "--host", "0.0.0.0", "--port", "0")
        async with running(*args, env=env) as (url, err):
            async with httpx.AsyncClient() as http:
                bearer = {"authorization": "Bearer serve-token-0123456789"}
                assert (await http.get(url + CARD, headers=bearer)).status_code == 200
    assert not [line for line in err if "WITHOUT A TOKEN" in line]


async def test_serve_answers_the_allowed_hosts_and_origins_and_refuses_others(
    tmp_path: Path,
) -> None:
    async with ScriptedModel(default=text("hi")) as model:
        args = (
            "serve", "--app", "cli_app:make", "--a2a", "--mcp", "--port", "0",
            "--allow-host", "agents.example", "--allow-host", "tools.example",
            "--allow-origin", "https://ui.example",
        )  # fmt: skip
        async with running(*args, env=app_env(model, tmp_path)) as (url, _):
            async with httpx.AsyncClient() as http:

                async def card(**headers: str) -> int:
                    return (await http.get(url + CARD, headers=headers)).status_code

                assert await card(host="agents.example") == 200
                assert await card(host="tools.example:8443") == 200
                assert await card(host="evil.example") == 421
                assert await card(origin="https://ui.example") == 200
                assert await card(origin="https://evil.example") == 403
                plain = await http.post(
                    url + "/", content=b"{}", headers={"content-type": "text/plain"}
                )
                assert plain.status_code == 415


async def test_the_inbox_answers_its_allowed_hosts_and_refuses_others(tmp_path: Path) -> None:
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"users": [{"name": "ana", "token": "ana-token-0123456789"}]}))
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    args = ("inbox", "--store", store, "--users", str(users), "--port", "0")
    async with running(*args, "--allow-host", "inbox.example", env=dict(os.environ)) as (url, _):
        async with httpx.AsyncClient() as http:
            named = await http.get(url + "/login", headers={"host": "inbox.example"})
            rebound = await http.get(url + "/login", headers={"host": "evil.example"})
            foreign = await http.post(
                url + "/login", data={"token": "x"}, headers={"origin": "https://evil.example"}
            )
    assert (named.status_code, rebound.status_code, foreign.status_code) == (200, 421, 403)


async def test_the_help_names_the_site_and_insecure_options() -> None:
    for command, options in (
        ("serve", ("--allow-host", "--allow-origin", "--insecure")),
        ("inbox", ("--allow-host", "--allow-origin")),
    ):
        proc = await spawn(command, "--help", env={**os.environ, "COLUMNS": "200"})
        out, _ = await asyncio.wait_for(proc.communicate(), 50)
        assert proc.returncode == 0
        for option in options:
            assert option in out.decode(), (command, option)
