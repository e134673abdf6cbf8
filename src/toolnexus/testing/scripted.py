"""`ScriptedModel`: a real HTTP server on loopback that answers like OpenAI or Anthropic.

Only the model's *choices* are scripted; the HTTP, the JSON and the SSE are the real thing, so
a client under test exercises its whole network path. Each request consumes one step of the
script (after the `ScriptedModel.when` rules had their say); a step is a reply or a callable
that computes one from the recorded request.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import socket
import struct
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeAlias, cast

from aiohttp import web

from ..errors import UsageError
from ..llm.base import Style
from ._render import error_body, split_events, stream_error_event, template
from ._replies import (
    REPLY_TYPES,
    Completion,
    CutStream,
    Delayed,
    EmptyChoices,
    Garbage,
    HTTPError,
    Reply,
    Reset,
    ResetMidStream,
    StreamError,
)

__all__ = ["RecordedRequest", "ScriptedModel", "Step"]

_ROUTES: dict[str, Style] = {
    "/v1/chat/completions": "openai",
    "/chat/completions": "openai",
    "/v1/messages": "anthropic",
    "/messages": "anthropic",
}
_ID_PREFIX: dict[Style, str] = {"openai": "chatcmpl-", "anthropic": "msg_"}
_LINGER_RESET = struct.pack("ii", 1, 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest:
    """One request the model received.

    Attributes:
        path: the request path, e.g. ``/v1/chat/completions``.
        headers: the request headers, names lower-cased.
        body: the parsed JSON body.
        style: ``openai`` or ``anthropic``, from the route.
        stream: whether the body asked for SSE (``"stream": true``).
    """

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    style: Style
    stream: bool


Step: TypeAlias = Reply | Callable[[RecordedRequest], Reply | Awaitable[Reply]]
"""A reply, or a function (sync or async) computing one from the request."""


@dataclass(slots=True)
class _Rule:
    predicate: Callable[[RecordedRequest], bool]
    step: Step
    remaining: int | None


class _ScriptError(Exception):
    """The script cannot answer; the message becomes the body of a 500."""


def _check_step(step: Step) -> Step:
    if not (isinstance(step, REPLY_TYPES) or callable(step)):
        raise UsageError(f"a script step is a reply or a callable, not {type(step).__name__}")
    return step


class ScriptedModel:
    """An OpenAI- and Anthropic-compatible model server whose answers follow a script.

    Routes: ``POST /v1/chat/completions`` and ``/chat/completions`` (OpenAI),
    ``POST /v1/messages`` and ``/messages`` (Anthropic). Each reply is rendered in the route's
    style, as SSE when the body has ``"stream": true``.

    Answer order per request: the first `when` rule whose predicate matches (and that has
    ``times`` left), else the next step of the script, else the `default`, else HTTP 500
    ``scripted model: script exhausted at request <n>``.

    Example::

        async with ScriptedModel([tool_calls(call("add", {"a": 1, "b": 2})), text("3")]) as m:
            client = create_client(base_url=m.openai_base_url, style="openai", ...)
            ...
            assert m.requests[1].body["messages"][-1]["role"] == "tool"
    """

    def __init__(
        self, script: Iterable[Step] = (), *, default: Step | None = None, port: int = 0
    ) -> None:
        self.requests: list[RecordedRequest] = []
        """Every request received, in order (including those answered with a fault)."""
        self.disconnects = 0
        """How many clients went away before the server had finished answering them."""
        self._script: deque[Step] = deque(_check_step(s) for s in script)
        self._rules: list[_Rule] = []
        self._default = None if default is None else _check_step(default)
        self._port = port
        self._count = 0
        self._call_count = 0
        self._runner: web.ServerRunner | None = None
        self._url: str | None = None
        self._closing = False
        self._inflight: set[asyncio.Task[Any]] = set()
        self._disconnected = asyncio.Event()

    # -- script -------------------------------------------------------------------------------

    def add(self, *steps: Step) -> None:
        """Append steps to the sequential script."""
        self._script.extend(_check_step(s) for s in steps)

    def when(
        self, predicate: Callable[[RecordedRequest], bool], reply: Step, *, times: int | None = None
    ) -> None:
        """Answer requests matching ``predicate`` with ``reply``, before the script is consulted.

        ``times`` bounds how often the rule fires (``None``: always). Rules are checked in the
        order they were added. A rule that fires does not consume a script step.
        """
        if times is not None and times < 0:
            raise UsageError(f"times must be >= 0 or None, got {times}")
        self._rules.append(_Rule(predicate, _check_step(reply), times))

    def default(self, reply: Step | None) -> None:
        """Answer with ``reply`` once the script is exhausted (``None``: fail loudly again)."""
        self._default = None if reply is None else _check_step(reply)

    @property
    def remaining(self) -> int:
        """How many sequential steps are still unconsumed."""
        return len(self._script)

    # -- lifecycle ----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``; available once started."""
        if self._url is None:
            raise UsageError("the scripted model is not running; use `async with` or start()")
        return self._url

    @property
    def openai_base_url(self) -> str:
        """The base URL an OpenAI-style client takes (``url + "/v1"``)."""
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The base URL an Anthropic-style client takes (the client appends ``/v1``)."""
        return self.url

    async def start(self) -> None:
        """Bind 127.0.0.1 (port 0 ⇒ a free port) and start serving."""
        if self._runner is not None:
            raise UsageError("the scripted model is already started")
        # handler_cancellation: a client that goes away cancels its handler, which is how a
        # disconnect during a delay is observed (and no answer is written to a dead socket).
        server = web.Server(self._handle, handler_cancellation=True, access_log=None)
        runner = web.ServerRunner(server)
        await runner.setup()
        try:
            await web.TCPSite(runner, "127.0.0.1", self._port).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self._closing = False
        self._url = f"http://127.0.0.1:{runner.addresses[0][1]}"

    async def aclose(self) -> None:
        """Stop serving; requests still in progress (e.g. delayed) are dropped."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self._closing = True
        for task in self._inflight:
            task.cancel()
        if self._inflight:
            await asyncio.wait(self._inflight)
        await runner.cleanup()
        self._url = None

    async def __aenter__(self) -> ScriptedModel:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def wait_for_disconnect(self, timeout: float = 5.0, *, count: int = 1) -> None:
        """Wait until ``count`` client disconnects in total have been observed.

        Raises `TimeoutError` when that does not happen within ``timeout`` seconds.
        """
        async with asyncio.timeout(timeout):
            while self.disconnects < count:
                await self._disconnected.wait()

    # -- serving ------------------------------------------------------------------------------

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        style = _ROUTES.get(request.path)
        if style is None or request.method != "POST" or self._closing:
            status = 503 if self._closing else 404 if style is None else 405
            return _plain(status, f"scripted model: cannot answer {request.method} {request.path}")
        task = asyncio.current_task()
        assert task is not None
        self._inflight.add(task)
        try:
            return await self._answer(request, style)
        except asyncio.CancelledError:
            if not self._closing:
                self._note_disconnect()
            raise
        finally:
            self._inflight.discard(task)

    def _note_disconnect(self) -> None:
        self.disconnects += 1
        # Waiters hold the old event: wake them, and give later waiters a fresh one.
        self._disconnected.set()
        self._disconnected = asyncio.Event()

    async def _answer(self, request: web.BaseRequest, style: Style) -> web.StreamResponse:
        body = _json_object(await request.read())
        if body is None:
            return _plain(400, "scripted model: the request body is not a JSON object")
        recorded = RecordedRequest(
            path=request.path,
            headers={k.lower(): v for k, v in request.headers.items()},
            body=body,
            style=style,
            stream=body.get("stream") is True,
        )
        self.requests.append(recorded)
        self._count += 1
        n = self._count
        try:
            reply = await self._choose(recorded, n)
        except _ScriptError as exc:
            return _plain(500, f"scripted model: {exc}")
        return await self._reply(request, recorded, n, reply)

    async def _choose(self, recorded: RecordedRequest, n: int) -> Reply:
        step: Step | None = None
        try:
            for rule in self._rules:
                if rule.remaining != 0 and rule.predicate(recorded):
                    if rule.remaining is not None:
                        rule.remaining -= 1
                    step = rule.step
                    break
            else:
                step = self._script.popleft() if self._script else self._default
            if step is None:
                raise _ScriptError(f"script exhausted at request {n}")
            if isinstance(step, REPLY_TYPES):
                return step
            reply = cast(object, step(recorded))
            if inspect.isawaitable(reply):
                reply = await reply
        except _ScriptError:
            raise
        except Exception as exc:
            raise _ScriptError(f"step for request {n} raised {exc!r}") from exc
        if not isinstance(reply, REPLY_TYPES):
            raise _ScriptError(f"step for request {n} returned {reply!r}, not a reply")
        return reply

    async def _reply(
        self, request: web.BaseRequest, recorded: RecordedRequest, n: int, reply: Reply
    ) -> web.StreamResponse:
        match reply:
            case Completion() | EmptyChoices():
                content_type = "text/event-stream" if recorded.stream else "application/json"
                return web.Response(
                    body=self._render(recorded, n, reply).encode(), content_type=content_type
                )
            case HTTPError(status=status, body=body, content_type=content_type, headers=headers):
                return web.Response(
                    status=status,
                    body=error_body(recorded.style, status) if body is None else body,
                    headers={"Content-Type": content_type, **dict(headers)},
                )
            case Garbage(body=body, content_type=content_type):
                return web.Response(body=body, headers={"Content-Type": content_type})
            case Reset():
                _abort(request)
                return web.Response()
            case Delayed(reply=inner, seconds=seconds):
                await asyncio.sleep(seconds)
                return await self._reply(request, recorded, n, inner)
            case CutStream() | ResetMidStream() | StreamError():
                return await self._fault_stream(request, recorded, n, reply)

    async def _fault_stream(
        self,
        request: web.BaseRequest,
        recorded: RecordedRequest,
        n: int,
        reply: CutStream | ResetMidStream | StreamError,
    ) -> web.StreamResponse:
        if not recorded.stream:
            kind = type(reply).__name__
            return _plain(500, f"scripted model: {kind} needs a streaming request (request {n})")
        events: list[str] = []
        if reply.reply is not None:
            # The last event is the terminal one ([DONE] / message_stop): never sent.
            events = split_events(self._render(recorded, n, reply.reply))[:-1]
        sent = "".join(events[: reply.after_events])
        if isinstance(reply, StreamError):
            sent += stream_error_event(recorded.style, reply.type, reply.message)
        if not isinstance(reply, ResetMidStream):
            return web.Response(body=sent.encode(), content_type="text/event-stream")
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(sent.encode())
        _abort(request)
        return response

    def _render(self, recorded: RecordedRequest, n: int, reply: Completion | EmptyChoices) -> str:
        body = recorded.body
        include_usage = False
        if recorded.stream and recorded.style == "openai":
            with contextlib.suppress(KeyError, TypeError):
                include_usage = body["stream_options"]["include_usage"] is True
        compiled = template(reply, recorded.style, recorded.stream, include_usage)
        values = {
            "model": json.dumps(body.get("model"), ensure_ascii=False),
            "id": f'"{_ID_PREFIX[recorded.style]}{n}"',
        }
        for k in range(compiled.auto_ids):
            self._call_count += 1
            values[f"c{k}"] = f'"call_{self._call_count}"'
        return compiled.fill(values)


def _json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def _plain(status: int, message: str) -> web.Response:
    return web.Response(status=status, text=message)


def _abort(request: web.BaseRequest) -> None:
    """Drop the connection with a TCP reset (SO_LINGER 0), not an orderly close."""
    transport = request.transport
    if transport is None or transport.is_closing():
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
    transport.abort()
