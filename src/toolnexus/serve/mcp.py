"""MCP inbound: a toolkit's unified tools served over streamable HTTP at ``POST /mcp``.

::

    app = mcp_app(toolkit, MCPServeConfig("notes", "1.2.0", tools=["search", "add_note"]),
                  store="sqlite:///state.db", auth=os.environ["MCP_TOKEN"])
    # run it: uvicorn.run(app, ...), or mount it in your own ASGI app (see `McpApp.lifespan`)

Built on the ``mcp`` SDK's server side: the low-level ``Server`` (its ``tools/list`` and
``tools/call`` handlers are ours) behind the SDK's ``StreamableHTTPSessionManager``, which speaks
both eras of the protocol — the handshake era (``initialize``, sessions) and 2026-07-28 (one
self-contained POST per request). Every tool of the toolkit — native, HTTP, MCP, skills,
built-ins — is listed with its schema under its name verbatim (``MCPServeConfig.tools`` keeps
only the names it lists) and called through `Toolkit.execute`, the toolkit's normal path:
arguments are validated there, and a bad argument, a tool error or a raising tool comes back as
an ``isError`` result, never a server failure. An unknown tool is ``-32602 Unknown tool: <name>``.

**A tool that suspends** (returns ``pending(...)``) asks the MCP client, first match wins:

1. the host's own ``wait_for``, when one is given: answered on the server side, inline (the
   client never sees the question — the same posture as a client with a ``wait_for``);
2. a 2026-07-28 request whose client declares elicitation: the call *halts durably* in the run
   store and the reply is an input-required result carrying the elicitation and a
   ``requestState`` token; the client's retry resumes it exactly once, in this process or
   another one on the same store (`toolnexus.serve.mcp_halts`);
3. a handshake-era session whose client declares elicitation: ``elicitation/create`` on the
   call's own response stream, answered inline (accept / decline / cancel ⇒ the `Answer`);
4. otherwise an ``isError`` result ``input required: <prompt>``.

Sessions: the handshake era needs one for ``elicitation/create`` (the client's reply must reach
the process that asked), so ``/mcp`` keeps SDK sessions by default. ``MCPServeConfig(stateless=
True)`` gives the fresh-server-per-request, JSON-responses mode instead, where step 3 cannot
happen. 2026-07-28 requests are stateless either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeAlias, cast

import anyio

from .._extras import missing_extra

try:  # the MCP SDK is the mcp extra: without it, say so
    from mcp.server.lowlevel.server import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.shared.exceptions import MCPError
    from mcp.shared.message import ServerMessageMetadata
    from mcp_types import (
        INVALID_PARAMS,
        CallToolRequestParams,
        CallToolResult,
        ElicitResult,
        InputRequiredResult,
        ListToolsResult,
        PaginatedRequestParams,
        TextContent,
    )
    from mcp_types import Tool as WireTool
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
except ModuleNotFoundError as exc:
    if exc.name is None or exc.name.partition(".")[0] not in ("mcp", "mcp_types"):
        raise
    raise missing_extra("serving over MCP needs the mcp SDK", "mcp") from exc
from pydantic import ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from .._toolkit import Toolkit
from .._types import Tool, ToolContext, ToolResult
from ..errors import InvalidAnswer, UsageError
from ..intake import Decline, intake
from ..loop.engine import Slot
from ..loop.tool_engine import tool_engine
from ..security import JsonOnly, check_site, secure
from ..stores.requests import DEFAULT_LEASE_S, RunStore
from ..stores.runs import InMemoryRunStore
from ..suspend import pending_of
from ..suspension import Answer, Request, WaitFor, cancelled_answer, expired_decline, is_expired
from ..tools.mcp_elicit import ask_inline
from .mcp_ask import answer_from_reply, can_ask, elicit_request
from .mcp_halts import HaltedCalls, parse_reply

__all__ = [
    "DEFAULT_NAME",
    "DEFAULT_VERSION",
    "INVALID_PARAMS",
    "MCPServeConfig",
    "McpApp",
    "OnCall",
    "build_mcp_server",
    "exposed_mcp_tools",
    "mcp_app",
    "serve_mcp_http_request",
]

log = logging.getLogger("toolnexus")

DEFAULT_NAME = "toolnexus"
DEFAULT_VERSION = "0.1.0"
INPUT_KEY = "toolnexus"
"""The key of our one question in an input-required result's ``inputRequests``."""

OnCall: TypeAlias = Callable[[dict[str, Any]], Awaitable[None] | None]
"""Told of every ``tools/call``: ``{"name", "source", "ms", "is_error", "pending"}``."""


@dataclass(frozen=True, slots=True)
class MCPServeConfig:
    """What the served MCP server says about itself and which tools it exposes.

    Attributes:
        name: ``serverInfo.name`` (default ``toolnexus``).
        version: ``serverInfo.version`` (default ``0.1.0``).
        tools: the names to expose, exactly (unknown names are ignored); ``None`` exposes all.
        stateless: no SDK sessions, JSON responses (handshake-era clients then cannot be asked
            through ``elicitation/create``; see the module docstring).
    """

    name: str = DEFAULT_NAME
    version: str = DEFAULT_VERSION
    tools: Sequence[str] | None = None
    stateless: bool = False

    @classmethod
    def of(cls, value: MCPServeConfig | Mapping[str, Any] | None) -> MCPServeConfig:
        """Accept the config object, its dict form (``{name, version, tools}``) or ``None``.

        ``None`` values keep the defaults.

        Raises:
            UsageError: unknown keys or values of the wrong type.
        """
        if value is None:
            return cls()
        if isinstance(value, MCPServeConfig):
            return value
        if not isinstance(value, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UsageError(f"mcp config must be an MCPServeConfig or a dict, got {value!r}")
        unknown = sorted(set(value) - {"name", "version", "tools", "stateless"})
        if unknown:
            raise UsageError(f"mcp config has unknown keys: {', '.join(unknown)}")
        name, version = value.get("name"), value.get("version")
        tools, stateless = value.get("tools"), value.get("stateless")
        for key, text in (("name", name), ("version", version)):
            if text is not None and not isinstance(text, str):
                raise UsageError(f"mcp config {key} must be a string, got {text!r}")
        if tools is not None and (
            isinstance(tools, str)
            or not isinstance(tools, Sequence)
            or not all(isinstance(t, str) for t in cast(Sequence[Any], tools))
        ):
            raise UsageError(f"mcp config tools must be a list of names, got {tools!r}")
        return cls(
            name=name if name is not None else DEFAULT_NAME,
            version=version if version is not None else DEFAULT_VERSION,
            tools=list(cast(Sequence[str], tools)) if tools is not None else None,
            stateless=bool(stateless),
        )


def exposed_mcp_tools(
    tools: Toolkit | Sequence[Tool], cfg: MCPServeConfig | Mapping[str, Any] | None = None
) -> list[Tool]:
    """The tools the server lists: all of them, or exactly those ``cfg.tools`` names."""
    listed = tools.tools() if isinstance(tools, Toolkit) else list(tools)
    names = MCPServeConfig.of(cfg).tools
    if names is None:
        return listed
    wanted = set(names)
    return [t for t in listed if t.name in wanted]


def _text_result(result: ToolResult) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=result.output)], is_error=result.is_error
    )


def _seconds_left(request: Request) -> float | None:
    deadline = request.expires_at if request.expiresAt else None
    if deadline is None:
        return None
    return max(0.0, (deadline - datetime.now(UTC)).total_seconds())


class _Handlers:
    """The ``tools/list`` and ``tools/call`` handlers over one toolkit."""

    def __init__(
        self,
        toolkit: Toolkit,
        cfg: MCPServeConfig,
        *,
        on_call: OnCall | None,
        halts: HaltedCalls,
        wait_for: WaitFor | None,
    ) -> None:
        self.toolkit = toolkit
        self.exposed = {t.name: t for t in exposed_mcp_tools(toolkit, cfg)}
        self.on_call = on_call
        self.halts = halts
        self.wait_for = wait_for
        self._listing = ListToolsResult(
            tools=[
                WireTool(name=t.name, description=t.description, input_schema=t.input_schema)
                for t in self.exposed.values()
            ]
        )

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        """The exposed tool's schema (the SDK checks ``Mcp-Param-*`` headers against it), so
        a 2026-07-28 call does not re-run ``tools/list`` to find it."""
        tool = self.exposed.get(name)
        return tool.input_schema if tool is not None else None

    async def list_tools(self, ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        return self._listing

    async def call_tool(
        self, ctx: Any, params: CallToolRequestParams
    ) -> CallToolResult | InputRequiredResult:
        tool = self.exposed.get(params.name)
        if tool is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        args = dict(params.arguments or {})
        signal = asyncio.Event()
        started = time.perf_counter()
        outcome: CallToolResult | InputRequiredResult | None = None
        try:
            if params.request_state is not None:
                outcome = await self._retry(ctx, tool, args, params, signal)
            else:
                first = await self._run(tool, args, signal, None, None)
                outcome = await self._after_first(ctx, tool, args, first, signal)
            return outcome
        except asyncio.CancelledError:
            signal.set()  # the request was cancelled: a long tool may watch ctx.signal
            raise
        finally:
            await self._report(tool, started, outcome)

    async def _run(
        self,
        tool: Tool,
        args: dict[str, Any],
        signal: asyncio.Event,
        answer: Answer | None,
        request: Request | None,
    ) -> ToolResult:
        ctx = ToolContext(signal=signal, answer=answer, request=request)
        return await self.toolkit.execute(tool.name, args, ctx)

    async def _after_first(
        self,
        ctx: Any,
        tool: Tool,
        args: dict[str, Any],
        first: ToolResult,
        signal: asyncio.Event,
    ) -> CallToolResult | InputRequiredResult:
        request = pending_of(first)
        if request is None:
            return _text_result(first)
        ask = self._inline_asker(ctx, request)
        if ask is not None:
            return _text_result(await self._resolve_inline(tool, args, request, signal, ask))
        if self._modern(ctx) and can_ask(request, ctx.session.client_capabilities):
            token = await self.halts.halt(tool, args, request, self.toolkit.fingerprint())
            return self._input_required(ctx, request, token)
        return _text_result(ToolResult(f"input required: {first.output}", True))

    async def _resolve_inline(
        self,
        tool: Tool,
        args: dict[str, Any],
        request: Request,
        signal: asyncio.Event,
        ask: Callable[[Request], Awaitable[Answer]],
    ) -> ToolResult:
        """Answer the suspended call inline and resolve it by the loop's one rule
        (`Engine.resolve`, on a tools-only engine whose ``wait_for`` is ``ask``: a follow-up
        question is asked too); the answer goes through the intake first."""
        engine = tool_engine(redactor=self.toolkit.redactor, wait_for=ask)
        listed, by_name = self.toolkit.run_tools()
        state = engine.new_state(None, listed, [], by_name=by_name, cancel=signal)
        slot = Slot(0, f"mcp-{request.id}", tool.name, json.dumps(args))
        slot.args = args
        slot.suspend(request)
        answer = engine.accepted(state, slot, request, await engine.ask(state, request))
        await engine.resolve(state, slot, answer)
        result = slot.result
        assert result is not None  # with someone to ask, it never halts
        return result

    @staticmethod
    def _modern(ctx: Any) -> bool:
        return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS

    def _inline_asker(
        self, ctx: Any, request: Request
    ) -> Callable[[Request], Awaitable[Answer]] | None:
        """Who answers inline: the host's ``wait_for``, else a handshake-era client that can
        take ``elicitation/create`` on this request's stream; ``None`` when nobody can."""
        wait_for = self.wait_for
        if wait_for is not None:

            async def host(req: Request) -> Answer:
                return await ask_inline(wait_for, req)

            return host
        session = ctx.session
        caps = session.client_capabilities
        if self._modern(ctx) or not session.can_send_request or not can_ask(request, caps):
            return None

        async def client(req: Request) -> Answer:
            if not can_ask(req, caps):
                return cancelled_answer(req.id)
            if is_expired(req):
                return expired_decline(req.id)
            asked = elicit_request(req, caps, with_id=True)
            meta = ServerMessageMetadata(related_request_id=ctx.request_id)
            try:
                with anyio.fail_after(_seconds_left(req)):
                    reply = await session.send_request(asked, ElicitResult, metadata=meta)
            except TimeoutError:
                return expired_decline(req.id)
            except (MCPError, ValidationError) as exc:
                log.warning("toolnexus: MCP client could not answer %s: %s", req.id, exc)
                return cancelled_answer(req.id)
            try:
                return answer_from_reply(req, reply)
            except InvalidAnswer as exc:
                log.warning("toolnexus: elicitation %s declined: %s", req.id, exc)
                return intake(req, Decline())

        return client

    def _input_required(self, ctx: Any, request: Request, token: str) -> InputRequiredResult:
        asked = elicit_request(request, ctx.session.client_capabilities, with_id=False)
        result = InputRequiredResult(input_requests={INPUT_KEY: asked}, request_state=token)
        if request.expiresAt:
            result.meta = {"expiresAt": request.expiresAt}
        return result

    async def _retry(
        self,
        ctx: Any,
        tool: Tool,
        args: dict[str, Any],
        params: CallToolRequestParams,
        signal: asyncio.Event,
    ) -> CallToolResult | InputRequiredResult:
        """A 2026-07-28 retry carrying ``requestState``: resume the halted call it names."""
        halted = await self.halts.find(params.request_state, tool.name, args)
        request = halted.request
        reply = parse_reply(params.input_responses, INPUT_KEY)
        answer: Answer | None = None
        if reply is not None:
            try:
                answer = answer_from_reply(request, reply)
            except InvalidAnswer as exc:
                raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        got = await self.halts.resume(
            halted,
            self.toolkit.run_tools(),
            args,
            answer,
            _caller(ctx),
            redactor=self.toolkit.redactor,
            fingerprint=self.toolkit.fingerprint(),
        )
        if got is None:  # nobody answered yet: ask again, same token
            return self._input_required(ctx, request, cast(str, params.request_state))
        if isinstance(got, ToolResult):
            return _text_result(got)
        asked, token = got  # the re-run asks a new question: the call halts on it
        return self._input_required(ctx, asked, token)

    async def _report(
        self, tool: Tool, started: float, outcome: CallToolResult | InputRequiredResult | None
    ) -> None:
        if self.on_call is None:
            return
        event: dict[str, Any] = {
            "name": tool.name,
            "source": tool.source,
            "ms": (time.perf_counter() - started) * 1000,
            "is_error": outcome is None
            or (isinstance(outcome, CallToolResult) and outcome.is_error),
            "pending": isinstance(outcome, InputRequiredResult),
        }
        try:
            value = self.on_call(event)
            if inspect.isawaitable(value):
                await value
        except Exception:
            log.warning("toolnexus: on_call raised; ignored", exc_info=True)


def _caller(ctx: Any) -> str:
    """``mcp:<client name>`` for the answer record (who answered)."""
    params = ctx.session.client_params
    info = getattr(params, "client_info", None) if params is not None else None
    name = getattr(info, "name", None)
    return f"mcp:{name}" if isinstance(name, str) and name else "mcp"


def _run_store(store: RunStore | str | None, client: Any) -> tuple[RunStore, bool]:
    """The run store halted calls go to, and whether this app owns (closes) it."""
    if store is None:
        runs = getattr(client, "run_store", None) if client is not None else None
        return (runs, False) if isinstance(runs, RunStore) else (InMemoryRunStore(), True)
    if isinstance(store, str):
        if store == "memory":
            return InMemoryRunStore(), True
        from ..stores.url import resolve_store

        resolved = resolve_store(store)
        if not isinstance(resolved, RunStore):
            raise UsageError(f"store {store!r} cannot hold halted calls")
        return resolved, True
    if not isinstance(store, RunStore):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UsageError(f"store must be a RunStore or a store URL, got {type(store).__name__}")
    return store, False


def _toolkit_of(tools: Toolkit | Sequence[Tool]) -> Toolkit:
    return tools if isinstance(tools, Toolkit) else Toolkit(list(tools))


def build_mcp_server(
    tools: Toolkit | Sequence[Tool],
    cfg: MCPServeConfig | Mapping[str, Any] | None = None,
    on_call: OnCall | None = None,
    *,
    store: RunStore | None = None,
    wait_for: WaitFor | None = None,
    lease_s: float = DEFAULT_LEASE_S,
) -> Server[Any]:
    """The ``mcp`` SDK low-level ``Server`` serving ``tools`` (a toolkit or a tool list).

    ``store`` keeps durable halted calls (default: a private in-memory store); ``wait_for``
    answers suspensions on the server side; ``lease_s`` is how long a retry holds the call it
    resumes (see `mcp_app`). See the module docstring.
    """
    config = MCPServeConfig.of(cfg)
    runs = store if store is not None else InMemoryRunStore()
    halts = HaltedCalls(runs, config.name, lease_s=lease_s)
    handlers = _Handlers(
        _toolkit_of(tools), config, on_call=on_call, halts=halts, wait_for=wait_for
    )
    return Server(
        config.name,
        version=config.version,
        get_tool_input_schema=handlers.input_schema,
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
    )


class McpApp:
    """The ASGI app serving ``/mcp`` (other paths 404). Build it with `mcp_app`.

    Run it as an app of its own (its ASGI lifespan starts the SDK's session manager), or mount
    it in yours and enter `lifespan` from your app's lifespan — a mounted app's own lifespan is
    not run by Starlette::

        mcp = mcp_app(toolkit)
        app = Starlette(routes=[Mount("/", app=mcp)], lifespan=lambda _: mcp.lifespan())
    """

    def __init__(
        self,
        server: Server[Any],
        config: MCPServeConfig,
        *,
        auth: str | None,
        max_body_bytes: int | None,
        close: Callable[[], Awaitable[None]] | None,
        allowed_hosts: Iterable[str] | str | None = None,
        allowed_origins: Iterable[str] | str | None = None,
    ) -> None:
        self.server = server
        self.config = config
        self._close = close
        self._manager: StreamableHTTPSessionManager | None = None
        self._max_body = max_body_bytes
        inner: ASGIApp = self._route
        self._app: ASGIApp = secure(
            inner,
            token=auth,
            max_body=max_body_bytes,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
        )
        self._endpoint: ASGIApp = JsonOnly(self._handle)

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncGenerator[None]:
        """Start the session manager for as long as the block runs (then close owned stores)."""
        stateless = self.config.stateless
        options: dict[str, Any] = {}
        if self._max_body is not None:
            options["max_request_body_size"] = self._max_body
        manager = StreamableHTTPSessionManager(
            app=self.server, json_response=stateless, stateless=stateless, **options
        )
        try:
            async with manager.run():
                self._manager = manager
                try:
                    yield
                finally:
                    self._manager = None
        finally:
            if self._close is not None:
                await self._close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        await self._app(scope, receive, send)

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != "/mcp":
            await _plain(send, 404, b"not found")
            return
        await self._endpoint(scope, receive, send)

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self._manager
        if manager is None:
            await _plain(send, 503, b"mcp server not started")
            return
        await manager.handle_request(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        assert message["type"] == "lifespan.startup"
        async with contextlib.AsyncExitStack() as stack:
            try:
                await stack.enter_async_context(self.lifespan())
            except Exception as exc:
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})


async def _plain(send: Send, status: int, body: bytes, headers: Sequence[tuple[bytes, bytes]] = ()):
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


def mcp_app(
    toolkit: Toolkit | Sequence[Tool],
    config: MCPServeConfig | Mapping[str, Any] | None = None,
    *,
    on_call: OnCall | None = None,
    client: Any = None,
    store: RunStore | str | None = None,
    wait_for: WaitFor | None = None,
    auth: str | None = None,
    max_body_bytes: int | None = None,
    lease_s: float = DEFAULT_LEASE_S,
    allowed_hosts: Iterable[str] | str | None = None,
    allowed_origins: Iterable[str] | str | None = None,
) -> McpApp:
    """The ASGI app serving ``toolkit``'s tools at ``POST /mcp``.

    Args:
        toolkit: the toolkit (or a list of tools) to serve.
        config: an `MCPServeConfig` or its dict form.
        on_call: told of every call (see `OnCall`); sync or async, its errors are logged.
        client: a toolnexus client whose run store keeps halted calls (the same database as
            its runs), when ``store`` is not given.
        store: where halted calls wait: a run store, or a store URL (``"sqlite:///…"``,
            ``"postgresql://…"``, ``"memory"``); a URL's store is closed with the app.
            Default: ``client``'s run store, else a private in-memory one.
        wait_for: answer suspensions on the server side instead of asking the client.
        auth: a bearer token every request must carry (``401`` otherwise).
        max_body_bytes: the largest request body accepted (``413`` beyond it).
        lease_s: how long a retry holds the halted call it resumes (renewed every third of
            it while the tool runs). A retry whose process died mid-resume leaves its claim
            until the lease runs out: only then can another retry, here or in another
            process, resume the call (until then it is ``-32600 … being answered right
            now``). Default 300 s.
        allowed_hosts: the ``Host`` names it answers to besides loopback's (421 otherwise;
            name the public host when you mount it behind one).
        allowed_origins: browser origins whose pages may call it besides its own (403
            otherwise).

    Raises:
        UsageError: a bad config, store, token or cap.
    """
    cfg = MCPServeConfig.of(config)
    check_site(allowed_hosts, allowed_origins)
    runs, owned = _run_store(store, client)
    server = build_mcp_server(toolkit, cfg, on_call, store=runs, wait_for=wait_for, lease_s=lease_s)

    async def close() -> None:
        closer = getattr(runs, "aclose", None)
        if callable(closer):
            value = closer()
            if inspect.isawaitable(value):
                await value

    return McpApp(
        server,
        cfg,
        auth=auth,
        max_body_bytes=max_body_bytes,
        close=close if owned else None,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
    )


async def serve_mcp_http_request(
    server: Server[Any],
    method: str,
    path: str,
    req_headers: Sequence[tuple[bytes, bytes]],
    body: bytes,
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Serve one streamable-HTTP MCP request on ``server`` through a fresh stateless
    transport (JSON responses, no SSE) → ``(status, headers, body)`` for the caller to write
    (the reference's entry point for a host with its own HTTP server; `mcp_app` is the ASGI
    way). The SDK's stateless manager is started and stopped around the one request.
    """
    manager = StreamableHTTPSessionManager(app=server, json_response=True, stateless=True)
    target, _, query = path.partition("?")
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method.upper(),
        "scheme": "http",
        "path": target,
        "raw_path": target.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(bytes(k).lower(), bytes(v)) for k, v in req_headers],
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 0),
    }
    sent = False
    status = 500
    headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []

    async def receive() -> Any:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()  # the request was read whole: nothing more comes

    async def send(message: Any) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status = int(message["status"])
            headers = [(bytes(k), bytes(v)) for k, v in message.get("headers") or ()]
        elif message["type"] == "http.response.body":
            chunks.append(bytes(message.get("body") or b""))

    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return status, headers, b"".join(chunks)
