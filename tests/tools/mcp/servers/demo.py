"""A real MCP server for the tests, built with the ``mcp`` SDK's server side.

Run as a script: ``python demo.py [--transport stdio|http|sse] [--legacy] [--page-size N]``.

- ``stdio`` (default) speaks both protocol eras; ``--legacy`` serves the 2025 handshake era only
  (so elicitation travels as a mid-call ``elicitation/create`` request).
- ``http`` / ``sse`` bind 127.0.0.1 on a free port and print ``PORT <n>`` on stdout first.
- ``--page-size N`` paginates ``tools/list`` (``nextCursor``) N tools per page.
- ``--expect-header NAME=VALUE`` makes ``whoami`` report whether that header arrived.
- ``--json-response`` answers streamable-HTTP requests with plain JSON bodies (no SSE stream).
- ``DEMO_PIDFILE`` in the environment: the server writes its pid there on start.

Every tool is deterministic; the ones that elicit answer in whichever era the client chose.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import sys
from typing import Any

import anyio
import mcp_types as t
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

MODERN = "2026-07-28"
FORM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name"],
}
PIXEL = base64.b64encode(b"\x89PNG fake").decode()

server = MCPServer("demo")
options = argparse.Namespace(page_size=0, expect_header=None, json_response=False)


def _outcome(result: t.ElicitResult) -> str:
    return f"{result.action}:{json.dumps(result.content, sort_keys=True)}"


async def _elicit(
    ctx: Context, key: str, params: t.ElicitRequestParams
) -> str | t.InputRequiredResult:
    """Ask once, in the era the client negotiated; report what came back."""
    if ctx.protocol_version == MODERN:
        responses = ctx.input_responses or {}
        answer = responses.get(key)
        if isinstance(answer, t.ElicitResult):
            return _outcome(answer)
        return t.InputRequiredResult(
            input_requests={key: t.ElicitRequest(params=params)}, request_state=f"asked:{key}"
        )
    session = ctx.request_context.session
    if isinstance(params, t.ElicitRequestURLParams):
        result = await session.elicit_url(params.message, params.url, "e-1", ctx.request_id)
    else:
        result = await session.elicit_form(params.message, params.requested_schema, ctx.request_id)
    return _outcome(result)


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool(structured_output=False)
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


@server.tool(structured_output=False)
def env(name: str) -> str:
    """One environment variable of the server process ("<unset>" when missing)."""
    return os.environ.get(name, "<unset>")


@server.tool(structured_output=False)
def cwd() -> str:
    """The server's working directory."""
    return os.getcwd()


@server.tool(structured_output=False)
def caps(ctx: Context) -> str:
    """Whether the client advertised the elicitation capability."""
    advertised = ctx.client_capabilities
    return "elicitation" if advertised is not None and advertised.elicitation else "none"


@server.tool(structured_output=False)
def die() -> str:
    """Exit the server process at once (a dead connection mid-call)."""
    sys.stderr.write("dying on purpose\n")
    sys.stderr.flush()
    os._exit(7)


@server.tool(structured_output=False)
def spawn_child() -> str:
    """Start a long-lived grandchild process and return its pid."""
    import subprocess

    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return str(child.pid)


@server.tool()
def structured() -> t.CallToolResult:
    """Structured content beside a text part."""
    return t.CallToolResult(
        content=[t.TextContent(type="text", text="ignored text")],
        structured_content={"b": [1, 2], "a": "ü"},
    )


@server.tool()
def mixed() -> t.CallToolResult:
    """Text parts around an image and an audio clip."""
    return t.CallToolResult(
        content=[
            t.TextContent(type="text", text="before"),
            t.ImageContent(type="image", data=PIXEL, mime_type="image/png"),
            t.AudioContent(type="audio", data=PIXEL, mime_type="audio/wav"),
            t.TextContent(type="text", text="after"),
        ]
    )


@server.tool()
def fail() -> t.CallToolResult:
    """A tool-level error with two text parts."""
    return t.CallToolResult(
        content=[t.TextContent(type="text", text="boom"), t.TextContent(type="text", text="again")],
        is_error=True,
    )


@server.tool(structured_output=False)
def bad_result() -> str:
    """Answered with a non-conforming result by the middleware below."""
    return "never seen"


@server.tool(structured_output=False)
async def sleep(seconds: float) -> str:
    """Sleep without reporting progress."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool(structured_output=False)
async def progress(steps: int, interval: float, ctx: Context) -> str:
    """Report progress every ``interval`` seconds, ``steps`` times, then finish."""
    for step in range(steps):
        await anyio.sleep(interval)
        await ctx.report_progress(step + 1, steps)
    return f"finished {steps} steps"


@server.tool(structured_output=False)
async def ask_form(ctx: Context) -> Any:
    """Ask the user for a name (form elicitation)."""
    params = t.ElicitRequestFormParams(message="Who are you?", requested_schema=FORM_SCHEMA)
    return await _elicit(ctx, "who", params)


@server.tool(structured_output=False)
async def ask_url(ctx: Context) -> Any:
    """Send the user to a login page (URL elicitation)."""
    params = t.ElicitRequestURLParams(
        message="Log in to continue", url="https://login.example/auth?x=1", elicitation_id="e-1"
    )
    return await _elicit(ctx, "login", params)


@server.tool(structured_output=False)
async def ask_twice(ctx: Context) -> Any:
    """Ask two questions, one round after the other (modern era only)."""
    state = ctx.request_state
    responses = ctx.input_responses or {}
    if state is None:
        first = t.ElicitRequestFormParams(message="First?", requested_schema=FORM_SCHEMA)
        return t.InputRequiredResult(
            input_requests={"first": t.ElicitRequest(params=first)}, request_state="first"
        )
    if state == "first":
        answer = responses["first"]
        assert isinstance(answer, t.ElicitResult)
        second = t.ElicitRequestFormParams(message="Second?", requested_schema=FORM_SCHEMA)
        return t.InputRequiredResult(
            input_requests={"second": t.ElicitRequest(params=second)},
            request_state=f"second:{_outcome(answer)}",
        )
    answer = responses["second"]
    assert isinstance(answer, t.ElicitResult)
    return f"{state.removeprefix('second:')} then {_outcome(answer)}"


@server.tool(structured_output=False)
async def ask_forever(ctx: Context) -> Any:
    """Never satisfied: asks the same question again on every round (modern era only)."""
    params = t.ElicitRequestFormParams(message="Again?", requested_schema=FORM_SCHEMA)
    return t.InputRequiredResult(
        input_requests={"again": t.ElicitRequest(params=params)}, request_state="again"
    )


@server.tool(structured_output=False)
async def ask_roots(ctx: Context) -> Any:
    """Ask the client for its roots (modern era only); report how many came back."""
    answer = (ctx.input_responses or {}).get("roots")
    if isinstance(answer, t.ListRootsResult):
        return f"roots:{len(answer.roots)}"
    return t.InputRequiredResult(
        input_requests={"roots": t.ListRootsRequest()}, request_state="roots"
    )


@server.tool(structured_output=False)
async def ask_sampling(ctx: Context) -> Any:
    """Ask the client to sample a model (modern era only)."""
    message = t.SamplingMessage(role="user", content=t.TextContent(type="text", text="hi"))
    request = t.CreateMessageRequest(
        params=t.CreateMessageRequestParams(messages=[message], max_tokens=5)
    )
    return t.InputRequiredResult(input_requests={"llm": request}, request_state="llm")


@server.tool(structured_output=False)
async def ask_expiring(ctx: Context) -> Any:
    """Like ask_form, but the input-required result names when its state expires."""
    result = await _elicit(
        ctx, "who", t.ElicitRequestFormParams(message="Who are you?", requested_schema=FORM_SCHEMA)
    )
    if isinstance(result, t.InputRequiredResult):
        result.meta = {"expiresAt": "2099-01-01T00:00:00Z"}
    return result


@server.tool(structured_output=False)
def leak(ctx: Context) -> str:
    """Fail with an MCP error that echoes the X-Token header (a careless server)."""
    headers = ctx.headers or {}
    raise MCPError(code=t.INVALID_REQUEST, message=f"rejected token {headers.get('x-token')}")


@server.tool(structured_output=False)
def show_headers(ctx: Context) -> str:
    """Echo every request header back (a careless server quoting the credentials it got)."""
    return json.dumps(dict(ctx.headers or {}), sort_keys=True)


@server.tool()
def show_headers_error(ctx: Context) -> t.CallToolResult:
    """The same echo, as a tool-level error (``isError``) result."""
    text = f"denied for {json.dumps(dict(ctx.headers or {}), sort_keys=True)}"
    return t.CallToolResult(content=[t.TextContent(type="text", text=text)], is_error=True)


@server.tool(structured_output=False)
def whoami(ctx: Context) -> str:
    """Whether the expected header arrived (never echoes its value)."""
    if options.expect_header is None:
        return "no expectation"
    name, _, value = options.expect_header.partition("=")
    headers = ctx.headers or {}
    return "header ok" if headers.get(name.lower()) == value else "header missing"


async def shape_results(ctx: Any, call_next: Any) -> Any:
    """Paginate tools/list and corrupt bad_result's answer (a hostile server)."""
    result = await call_next(ctx)
    params: dict[str, Any] = dict(ctx.params or {})
    if ctx.method == "tools/call" and params.get("name") == "bad_result":
        return {"content": "not a list", "isError": "sometimes"}
    if ctx.method == "tools/list" and options.page_size:
        tools = list(result["tools"])
        start = int(params.get("cursor") or 0)
        page = {**result, "tools": tools[start : start + options.page_size]}
        if start + options.page_size < len(tools):
            page["nextCursor"] = str(start + options.page_size)
        return page
    return result


server.middleware.append(shape_results)


async def serve_legacy_stdio() -> None:
    low = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]
    async with stdio_server() as (read, write), low.lifespan(low) as state:
        await serve_loop(low, read, write, lifespan_state=state)


async def serve_http(kind: str) -> None:
    import uvicorn

    class Announcing(uvicorn.Server):
        """Prints the port it bound once listening (port 0 picks a free one)."""

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            print(f"PORT {self.servers[0].sockets[0].getsockname()[1]}", flush=True)

    app = (
        server.sse_app()
        if kind == "sse"
        else server.streamable_http_app(json_response=options.json_response)
    )
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    await Announcing(config).serve()


def main() -> None:
    pidfile = os.environ.get("DEMO_PIDFILE")
    if pidfile:
        with open(pidfile, "w") as out:
            out.write(str(os.getpid()))
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", default="stdio", choices=["stdio", "http", "sse"])
    parser.add_argument("--legacy", action="store_true")
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--expect-header", default=None)
    parser.add_argument("--json-response", action="store_true")
    parser.parse_args(namespace=options)
    if options.transport != "stdio":
        anyio.run(serve_http, options.transport)
    elif options.legacy:
        anyio.run(serve_legacy_stdio)
    else:
        server.run()


if __name__ == "__main__":
    main()
