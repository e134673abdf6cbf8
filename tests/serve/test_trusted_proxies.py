"""A served app believes ``X-Forwarded-For`` only from the proxies it is given: by default a
client on loopback naming a new address per request is still counted as itself by the bearer
check's sign-in limit (10 wrong tokens a minute); with ``serve(trusted_proxies=)`` each
forwarded address counts on its own. Real uvicorn on 127.0.0.1, real HTTP."""

from __future__ import annotations

import httpx
import pytest

from toolnexus import create_toolkit, define_tool
from toolnexus.errors import UsageError
from toolnexus.serve import serve

TOKEN = "served-token-0123456789"


@define_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def guesses(url: str, count: int) -> list[int]:
    """A wrong bearer token from a new forwarded address each time → the status codes."""
    codes: list[int] = []
    async with httpx.AsyncClient(base_url=url) as http:
        for n in range(count):
            headers = {
                "authorization": "Bearer not-the-served-token",
                "x-forwarded-for": f"203.0.113.{n + 1}",
            }
            codes.append((await http.post("/mcp", json={}, headers=headers)).status_code)
    return codes


async def test_a_forwarded_address_from_loopback_is_not_believed_by_default() -> None:
    toolkit = await create_toolkit(extra_tools=[add], builtins=False)
    async with await serve(toolkit, "127.0.0.1:0", mcp={"name": "t"}, token=TOKEN) as served:
        assert await guesses(served.url, 11) == [401] * 10 + [429]


async def test_a_configured_proxy_is_believed() -> None:
    toolkit = await create_toolkit(extra_tools=[add], builtins=False)
    options = {"mcp": {"name": "t"}, "token": TOKEN, "trusted_proxies": ["127.0.0.1"]}
    async with await serve(toolkit, "127.0.0.1:0", **options) as served:
        assert await guesses(served.url, 12) == [401] * 12


async def test_a_trusted_proxy_that_is_not_an_address_refuses_to_start() -> None:
    toolkit = await create_toolkit(extra_tools=[add], builtins=False)
    with pytest.raises(UsageError, match="IP address or network"):
        await serve(toolkit, "127.0.0.1:0", mcp={"name": "t"}, trusted_proxies=["a-host"])
