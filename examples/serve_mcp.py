"""Serve a toolkit over MCP; a tool that needs approval asks the MCP client.

    python examples/serve_mcp.py              # serve and call it once, as a client would
    python examples/serve_mcp.py serve 8765   # serve on 127.0.0.1:8765 until Ctrl-C
                                              # (halted calls in ./serve_mcp.db)

The toolkit has two tools: ``convert`` answers at once; ``delete_bucket`` asks for approval
first. Served at ``POST /mcp``, the approval reaches the MCP client as an elicitation — on a
2026-07-28 connection the call halts in the SQLite store between the question and the answer, so
the answer may come to a restarted server. Every request needs the bearer token.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ElicitResult

from toolnexus import ToolContext, ToolResult, create_toolkit, define_tool, pending
from toolnexus.serve import MCPServeConfig, mcp_app

TOKEN = os.environ.get("MCP_TOKEN", "change-me-to-a-long-random-secret")


@define_tool
def convert(celsius: float) -> str:
    """Convert a temperature from Celsius to Fahrenheit."""
    return f"{celsius:.1f} °C is {celsius * 9 / 5 + 32:.1f} °F"


@define_tool
def delete_bucket(name: str, ctx: ToolContext) -> str | ToolResult:
    """Delete a storage bucket (a human approves first)."""
    if ctx.answer is None:
        return pending(kind="approval", prompt=f"Delete bucket {name!r}?")
    return f"bucket {name!r} deleted"


class Server(uvicorn.Server):
    """uvicorn, telling us the port it bound (port 0 picks a free one)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        self.listening.set()


async def approve(ctx: Any, params: Any) -> ElicitResult:
    """The MCP client's side: show the question, say yes."""
    print(f"client asked: {params.message} -> yes")
    return ElicitResult(action="accept", content={})


async def main(mode: str, port: int, state: Path) -> None:
    toolkit = await create_toolkit(extra_tools=[convert, delete_bucket], builtins=False)
    app = mcp_app(
        toolkit,
        MCPServeConfig("ops-tools", "1.0.0"),
        store=f"sqlite:///{state}",
        auth=TOKEN,
        max_body_bytes=1 << 20,
    )
    server = Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    serving = asyncio.create_task(server.serve())
    await server.listening.wait()
    url = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}/mcp"
    if mode == "serve":
        print(f"serving {url} (bearer token from MCP_TOKEN)", flush=True)
        await serving
        return
    try:
        import httpx2

        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
        transport = streamable_http_client(url, http_client=http)
        async with http, Client(transport, elicitation_callback=approve) as client:
            print("tools:", ", ".join(t.name for t in (await client.list_tools()).tools))
            converted = await client.call_tool("convert", {"celsius": 21})
            print("convert:", converted.content[0].text)  # pyright: ignore[reportAttributeAccessIssue]
            deleted = await client.call_tool("delete_bucket", {"name": "old-logs"})
            print("delete_bucket:", deleted.content[0].text)  # pyright: ignore[reportAttributeAccessIssue]
    finally:
        server.should_exit = True
        await serving


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "serve":
        asyncio.run(main("serve", int(args[1]) if len(args) > 1 else 8765, Path("serve_mcp.db")))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(main("demo", 0, Path(tmp) / "state.db"))
