"""``toolnexus serve --trusted-proxy`` (repeatable) is the proxy whose ``X-Forwarded-For`` the
served app believes; without it, none is (a real subprocess on a real port)."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from test_cli_serve import app_env, brain, refused, serving

from toolnexus.testing import ScriptedModel

TOKEN = "cli-serve-token-0123456789"


async def forwarded_guesses(url: str, count: int) -> list[int]:
    codes: list[int] = []
    async with aiohttp.ClientSession() as http:
        for n in range(count):
            headers = {"Authorization": "Bearer wrong-token", "X-Forwarded-For": f"192.0.2.{n}"}
            async with http.get(f"{url}/.well-known/agent-card.json", headers=headers) as r:
                codes.append(r.status)
    return codes


async def test_serve_believes_forwarded_addresses_only_from_its_trusted_proxies(
    tmp_path: Path,
) -> None:
    async with ScriptedModel(default=brain) as model:
        env = {**app_env(model, tmp_path), "TOOLNEXUS_SERVE_TOKEN": TOKEN}
        async with serving("--a2a", env=env) as served:
            assert await forwarded_guesses(served.url, 11) == [401] * 10 + [429]
        proxies = ("--trusted-proxy", "10.0.0.0/8", "--trusted-proxy", "127.0.0.1")
        async with serving("--a2a", *proxies, env=env) as served:
            assert await forwarded_guesses(served.url, 11) == [401] * 11


async def test_serve_refuses_a_trusted_proxy_that_is_not_an_address(tmp_path: Path) -> None:
    async with ScriptedModel(default=brain) as model:
        env = app_env(model, tmp_path)
        args = ("--app", "cli_app:make", "--a2a", "--trusted-proxy", "proxy.internal")
        code, _, err = await refused(*args, env=env)
    assert code == 2
    assert "a trusted proxy must be an IP address or network" in err
