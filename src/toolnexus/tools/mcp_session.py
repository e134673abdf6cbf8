"""One MCP server connection: connect, negotiate, list tools, call, close.

Each `ServerLink` is owned by one background task, because the SDK's sessions and transports
are anyio task groups that must be entered and left by the same task. The owner connects in
three phases (start/connect, initialize, tools/list), each with a fresh ``timeout`` budget,
reports ready (connected or failed) *before* any slow cleanup, then parks until `close`.
Calls run in the caller's task; their timeout is an idle timeout that every progress
notification resets and that is paused while a human answers an elicitation.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
from collections.abc import Generator
from contextlib import AsyncExitStack, contextmanager
from typing import TYPE_CHECKING, Any, cast

import anyio

from .._env import expand_env, expand_env_headers
from ..redaction import Redactor
from ..suspension import WaitFor
from ._shims import warn_stderr
from .mcp_config import MAX_LIST_PAGES, McpStatus, ServerConfig, ToolInfo
from .mcp_elicit import MCP_EXTRA_HINT, answer_to_elicit_result, ask_inline, elicitation_to_request
from .mcp_held import HeldCalls
from .mcp_stdio import StdioChannel, open_stdio

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.client.session import ClientRequestContext
    from mcp_types import CallToolResult, ElicitRequestParams, ElicitResult, InputRequiredResult
    from mcp_types import InputResponses as McpInputResponses

__all__ = ["CallFailed", "ServerLink"]

log = logging.getLogger("toolnexus")


class CallFailed(Exception):
    """A tools/call that produced no result; ``message`` is safe to show (secrets redacted)."""

    def __init__(self, message: str, *, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class ServerLink:
    """The connection to one configured server (see the module docstring)."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        wait_for: WaitFor | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.config = config
        self.redactor = redactor if redactor is not None else Redactor()
        for header, raw in config.headers.items():
            self.redactor.add_setting(header, raw)
        for variable, raw in config.environment.items():
            self.redactor.add_setting(variable, raw)
        for argument in config.command:
            self.redactor.add_setting(None, argument)
        self.name = config.name
        self.status: McpStatus = "failed" if config.enabled else "disabled"
        self.error: str | None = None
        self.tools: list[ToolInfo] = []
        self.session: ClientSession | None = None
        self.channel: StdioChannel | None = None
        self.wait_for = wait_for
        self.halts = wait_for is None and config.elicitation == "halt"
        """Whether a server's elicitation halts the run (`toolnexus.tools.mcp_held`)."""
        self.held = HeldCalls()
        self._budget = config.timeout / 1000
        self._phase = "start"
        self._guard = anyio.CancelScope()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._settled = False
        self._active: set[_IdleClock] = set()
        self._paused = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> asyncio.Future[None]:
        """Start connecting in the background; the future resolves once connected or failed."""
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._own(ready), name=f"mcp:{self.name}")
        return ready

    async def close(self) -> None:
        """Disconnect and stop the child process tree (if any). Idempotent."""
        self.held.drop_all()
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        if not self._settled:
            # Still connecting: cut it short. A server that already failed is past that point
            # and busy stopping its process tree; cancelling it there could leave the tree alive.
            self._fail("connection cancelled")
            task.cancel()
        await asyncio.wait([task])

    async def _own(self, ready: asyncio.Future[None]) -> None:
        try:
            # One scope around everything the connection enters: anyio forbids leaving a
            # timeout scope while a task group opened inside it is still open, so each phase
            # moves this scope's deadline instead of opening a scope of its own.
            with self._guard:
                async with AsyncExitStack() as stack:
                    try:
                        session = await self._connect(stack)
                        tools = await self._list_tools(session)
                    except anyio.get_cancelled_exc_class():
                        if self._guard.cancel_called:
                            self._fail(self._timed_out())
                            self._announce(ready)
                        raise
                    except Exception as exc:
                        self._fail(await self._describe(exc))
                        self._announce(ready)
                        return
                    self._guard.deadline = math.inf
                    self.session, self.tools, self.status = session, tools, "connected"
                    self._announce(ready)
                    await self._stop.wait()
        except asyncio.CancelledError:
            if not ready.done():
                self._fail("connection cancelled")
            raise
        except Exception as exc:
            self._fail(await self._describe(exc))
        finally:
            self.session = None
            self._announce(ready)

    def _announce(self, ready: asyncio.Future[None]) -> None:
        """Connected or failed: from here on `close` waits for the teardown, never cuts it."""
        self._settled = True
        _resolve(ready)

    def _begin(self, phase: str) -> None:
        """Enter a connection phase: a fresh ``timeout`` budget starts now."""
        self._phase = phase
        self._guard.deadline = anyio.current_time() + self._budget

    def _timed_out(self) -> str:
        return f"timed out after {self.config.timeout} ms during {self._phase}"

    def _fail(self, reason: str) -> None:
        if self.error is not None:
            return
        reason = self.redact(reason)
        self.status, self.error = "failed", reason
        shown = "timed out" if reason.startswith("timed out") else reason  # the package's line
        warn_stderr(f'MCP server "{self.name}" failed: {shown}')

    # -- connecting --------------------------------------------------------------------------

    async def _connect(self, stack: AsyncExitStack) -> ClientSession:
        config = self.config
        if config.type == "local":
            env = {**os.environ, **self._expanded_env()}
            self._begin("start")
            command = tuple(expand_env(part) for part in config.command)
            self.channel = await stack.enter_async_context(
                open_stdio(command, env=env, cwd=config.cwd)
            )
            return await self._handshake(stack, self.channel.read, self.channel.write)
        headers = expand_env_headers(config.headers)
        if config.sse:
            return await self._open_remote(stack, headers, sse=True)
        import httpx2
        from mcp.shared.exceptions import MCPError

        try:
            return await self._open_remote(stack, headers, sse=False)
        except Exception as first:
            if not isinstance(_root_cause(first), MCPError | httpx2.HTTPStatusError):
                raise
            log.info("toolnexus: MCP server %r: streamable HTTP refused, trying SSE", self.name)
            try:
                return await self._open_remote(stack, headers, sse=True)
            except Exception:
                raise first from None

    async def _open_remote(
        self, stack: AsyncExitStack, headers: dict[str, str], *, sse: bool
    ) -> ClientSession:
        import httpx2
        from mcp.client.sse import sse_client
        from mcp.client.streamable_http import streamable_http_client

        url = self.config.url
        assert url is not None
        self._begin("connect")
        async with AsyncExitStack() as attempt:
            if sse:
                read, write = await attempt.enter_async_context(
                    sse_client(url, headers=headers, timeout=self._budget)
                )
            else:
                # The SDK's defaults: a response stream may stay open, so reads wait longer.
                client = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300))
                await attempt.enter_async_context(client)
                read, write = await attempt.enter_async_context(
                    streamable_http_client(url, http_client=client)
                )
            session = await self._handshake(attempt, read, write)
            stack.push_async_exit(attempt.pop_all())
        return session

    async def _handshake(
        self,
        stack: AsyncExitStack,
        read: Any,
        write: Any,
    ) -> ClientSession:
        try:
            from mcp import ClientSession
            from mcp_types import Implementation
        except ImportError as exc:  # pragma: no cover - exercised only without the extra
            raise ImportError(MCP_EXTRA_HINT) from exc
        from .._version import __version__

        session = ClientSession(
            read,
            write,
            elicitation_callback=self._elicit if self.wait_for is not None or self.halts else None,
            client_info=Implementation(name="toolnexus", version=__version__),
        )
        session = await stack.enter_async_context(session)
        self._begin("initialize")
        await _negotiate(session)
        return session

    async def _list_tools(self, session: ClientSession) -> list[ToolInfo]:
        from mcp_types import PaginatedRequestParams

        infos: list[ToolInfo] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_LIST_PAGES):
            params = PaginatedRequestParams(cursor=cursor) if cursor is not None else None
            self._begin("tools/list")
            page = await session.list_tools(params=params)
            infos.extend(
                ToolInfo(
                    name=t.name,
                    description=t.description or t.title or "",
                    input_schema=dict(t.input_schema),
                )
                for t in page.tools
            )
            cursor = page.next_cursor
            if not cursor:
                return infos
            if cursor in seen:
                break
            seen.add(cursor)
        log.warning("toolnexus: MCP server %r: tools/list did not end; listing cut", self.name)
        return infos

    def _expanded_env(self) -> dict[str, str]:
        return {k: expand_env(v) for k, v in self.config.environment.items()}

    def redact(self, text: str) -> str:
        """``text`` with every secret the redactor knows masked (see `toolnexus.redaction`)."""
        return self.redactor.text(text)

    async def _describe(self, exc: BaseException) -> str:
        """One line saying why the server failed (secrets redacted)."""
        import httpx2
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        cause = _root_cause(exc)
        closed = isinstance(cause, anyio.ClosedResourceError | anyio.EndOfStream) or (
            isinstance(cause, MCPError) and cause.code == CONNECTION_CLOSED
        )
        if isinstance(cause, TimeoutError):
            reason = self._timed_out()
        elif isinstance(cause, FileNotFoundError) and self._phase == "start":
            cwd = self.config.cwd
            reason = (
                f"working directory not found: {cwd}"
                if cwd and cause.filename == cwd
                else f"command not found: {self.config.command[0]}"
            )
        elif isinstance(cause, OSError) and self._phase == "start":
            reason = f"cannot start {self.config.command[0]}: {cause.strerror or cause}"
        elif closed and self.channel is not None and (why := await self.channel.exit_reason()):
            reason = f"{why} (during {self._phase})"
        elif closed:
            reason = f"connection closed during {self._phase}"
        elif isinstance(cause, httpx2.HTTPStatusError):
            reason = f"HTTP {cause.response.status_code} from {self.config.url}"
        elif isinstance(cause, httpx2.TransportError):
            reason = f"cannot connect to {self.config.url}: {cause or type(cause).__name__}"
        elif isinstance(cause, MCPError):
            reason = f"{cause.error.message} (MCP error {cause.code}, during {self._phase})"
        else:
            reason = f"{type(cause).__name__}: {cause} (during {self._phase})"
        return self.redact(reason)

    # -- calls -------------------------------------------------------------------------------

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        signal: asyncio.Event | None = None,
        responses: McpInputResponses | None = None,
        state: str | None = None,
        deadline: float | None = None,
    ) -> CallToolResult | InputRequiredResult:
        """One ``tools/call`` under the idle timeout (and the run's ``deadline``, loop time).

        Raises:
            CallFailed: timed out, cancelled, the connection is gone, or the server answered
                with an error or a result that does not conform to the protocol.
        """
        session = self.session
        if session is None:
            why = f": {self.error}" if self.error else ""
            raise CallFailed(f'MCP server "{self.name}" is not connected{why}')
        if signal is not None and signal.is_set():
            raise CallFailed(f"MCP tool {name} cancelled")
        clock = _IdleClock(self._budget, math.inf if deadline is None else deadline)
        if self._paused:
            clock.pause()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if not self._paused:
                clock.restart()

        watcher = _watch(signal, clock.scope)
        self._active.add(clock)
        result: CallToolResult | InputRequiredResult | None = None
        try:
            with clock.scope:
                result = await session.call_tool(
                    name,
                    arguments,
                    progress_callback=on_progress,
                    input_responses=responses,
                    request_state=state,
                    allow_input_required=True,
                )
        except Exception as exc:
            raise self.redactor.scrub(await self._call_error(name, exc)) from None
        finally:
            self._active.discard(clock)
            if watcher is not None:
                watcher.cancel()
        if result is not None:
            return result
        if signal is not None and signal.is_set():
            raise CallFailed(f"MCP tool {name} cancelled")
        if anyio.current_time() >= clock.cap:
            raise CallFailed(f"MCP tool {name} stopped at the run's deadline")
        raise CallFailed(
            f"MCP tool {name} timed out after {self.config.timeout} ms without progress"
        )

    async def _call_error(self, name: str, exc: Exception) -> CallFailed:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED
        from pydantic import ValidationError

        if isinstance(exc, MCPError) and exc.code != CONNECTION_CLOSED:
            text = f"MCP error {exc.code} from {self.name}/{name}: {exc.error.message}"
            return CallFailed(self.redact(text), code=exc.code)
        if isinstance(exc, ValidationError):
            first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid"}
            where = ".".join(str(p) for p in first["loc"]) or "(root)"
            return CallFailed(
                f"MCP server {self.name} returned a non-conforming result for {name} "
                f"({exc.error_count()} problem(s); {where}: {first['msg']})"
            )
        if isinstance(exc, MCPError | anyio.ClosedResourceError | anyio.BrokenResourceError):
            reason = "connection closed"
            if self.channel is not None:
                reason = await self.channel.exit_reason() or reason
            self._fail(self.redact(f"connection lost: {reason}"))
            return CallFailed(f'MCP server "{self.name}" is gone ({self.error})')
        return CallFailed(self.redact(f"MCP tool {name} failed: {type(exc).__name__}: {exc}"))

    # -- elicitation (legacy back channel) and the paused idle timer -------------------------

    async def _elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        request = elicitation_to_request(params)
        with self.paused():
            if self.wait_for is None:  # "elicitation": "halt": the asking call halts the run
                return await self.held.ask(request)
            answer = await ask_inline(self.wait_for, request)
        return answer_to_elicit_result(answer, request)

    @contextmanager
    def paused(self) -> Generator[None]:
        """Stop every in-flight call's idle clock while a human is being asked."""
        self._paused += 1
        for clock in self._active:
            clock.pause()
        try:
            yield
        finally:
            self._paused -= 1
            if not self._paused:
                for clock in self._active:
                    clock.restart()


class _IdleClock:
    """One call's cancel scope: ``budget`` seconds after the last sign of life, never past
    ``cap`` (the run's deadline); paused, only the cap applies."""

    __slots__ = ("budget", "cap", "scope")

    def __init__(self, budget: float, cap: float) -> None:
        self.budget = budget
        self.cap = cap
        self.scope = anyio.CancelScope(deadline=min(anyio.current_time() + budget, cap))

    def restart(self) -> None:
        self.scope.deadline = min(anyio.current_time() + self.budget, self.cap)

    def pause(self) -> None:
        self.scope.deadline = self.cap


async def _negotiate(session: ClientSession) -> None:
    """Prefer the 2026-07-28 ``server/discover``; fall back to the ``initialize`` handshake."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED
    from pydantic import ValidationError

    try:
        await session.discover()
    except (MCPError, RuntimeError, ValidationError) as exc:
        if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
            raise
        await session.initialize()


def _watch(signal: asyncio.Event | None, scope: anyio.CancelScope) -> asyncio.Future[Any] | None:
    """Cancel ``scope`` when ``signal`` fires (a done-callback; no task group per call)."""
    if signal is None:
        return None
    waiter = asyncio.ensure_future(signal.wait())

    def fire(done: asyncio.Future[Any]) -> None:
        if not done.cancelled():
            scope.cancel()

    waiter.add_done_callback(fire)
    return waiter


def _root_cause(exc: BaseException) -> BaseException:
    current: BaseException = exc
    while isinstance(current, BaseExceptionGroup):
        group = cast(BaseExceptionGroup[BaseException], current)
        members = [e for e in group.exceptions if not isinstance(e, asyncio.CancelledError)]
        if not members:
            break
        current = members[0]
    return cast(BaseException, current)


def _resolve(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)
