"""Transports for the LLM path: aiohttp by default, the existing package's shape adapted.

A transport makes **one attempt** (retries live in `toolnexus.llm.retry`, aborts in
`toolnexus.llm.abort`) and speaks only our error tree::

    non-2xx reply                          ProviderError(status, body, retry_after)
    2xx that is not a JSON object          BadResponse
    refused / reset / cut / stalled        TransportError   (retryable)
    malformed URL, unserialisable body     UsageError

The ``timeout`` argument is a per-request cap on a stalled exchange, not the run's deadline: when
it fires the attempt fails with a retryable `TransportError`. The whole-run ``timeout_ms`` is
enforced by `toolnexus.llm.abort.run_abortable`, which cancels the request and raises
`RunTimeout`; a client should pass ``timeout=None`` unless it wants a per-attempt cap too.

aiohttp is imported on first use, not at import time: it costs more than the whole import budget
of ``toolnexus``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import math
import sys
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..errors import BadResponse, ProviderError, ToolnexusError, TransportError, UsageError
from .base import SSEEvent, Transport
from .retry import parse_retry_after
from .sse import SSEParser

if TYPE_CHECKING:
    import aiohttp

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "AiohttpTransport",
    "LegacyTransport",
    "RawReply",
    "as_transport",
    "attempt_timeout",
    "attempt_within",
    "with_content_type",
]

_JSON = "application/json"

T = TypeVar("T")


# ``json.dumps`` with these options would build a new encoder on every request. No circular
# check: it costs a dict insert and delete per container, per request, so its cost grew with
# the transcript (the last body of a 20-turn run: 60 -> 48 us on the OpenAI wire, 110 -> 67 us
# on the Anthropic wire, whose blocks are more containers); a circular body (a hand-made
# ``request_params`` value) still fails, as a RecursionError, which `_encode` reports alike.
_BODY_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, check_circular=False)


def _encode(body: dict[str, Any]) -> bytes:
    try:
        return _BODY_ENCODER.encode(body).encode()
    except (TypeError, ValueError, RecursionError) as exc:
        raise UsageError(f"request body is not JSON-serialisable: {exc}") from exc


def _decode(data: bytes) -> dict[str, Any]:
    try:
        payload: object = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise BadResponse(
            f"2xx reply is not valid JSON: {_text(data)[:200]!r}", body=_text(data)
        ) from exc
    if not isinstance(payload, dict):
        raise BadResponse(
            f"2xx reply is not a JSON object but {type(payload).__name__}", body=_text(data)
        )
    return cast("dict[str, Any]", payload)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _status_error(status: int, body: str, retry_after: str | None) -> ProviderError:
    return ProviderError(
        f"HTTP {status}: {body}",
        status=status,
        body=body,
        retry_after=parse_retry_after(retry_after),
    )


def with_content_type(headers: dict[str, str]) -> dict[str, str]:
    """A copy of ``headers`` with ``Content-Type: application/json`` unless they name one."""
    if any(name.lower() == "content-type" for name in headers):
        return dict(headers)
    return {"Content-Type": _JSON, **headers}


def _where(url: str) -> str:
    # Never echo a query string: some gateways carry credentials there.
    return url.split("?", 1)[0]


@dataclass(frozen=True, slots=True)
class RawReply:
    """An HTTP reply as it came, whatever its status (`AiohttpTransport.exchange`).

    Attributes:
        status: the HTTP status.
        body: the body's bytes.
        retry_after: the raw ``Retry-After`` header, or ``None``.
    """

    status: int
    body: bytes
    retry_after: str | None = None


class AiohttpTransport:
    """The default transport: one pooled keep-alive `aiohttp.ClientSession`, created lazily.

    Pass ``session`` to share a session the host owns; `aclose` then leaves it open. Without
    one, the transport creates its own on first use (inside the running loop) and closes it in
    `aclose`; a later call after `aclose`, or from a new event loop (a host running each call
    under its own ``asyncio.run``), starts a fresh one.

    Redirects are not followed: a 3xx is a `ProviderError`, so credentials never travel to a
    host the caller did not name.

    Args:
        session: a host-owned session to send through.
        connector_limit: the most simultaneous connections of the transport's own session
            (``0`` ⇒ unlimited); ignored when ``session`` is given. A ``post`` (without a
            per-request ``timeout``) beyond it waits in the transport, first come first
            served, before its body is encoded and its request made.

    >>> transport = AiohttpTransport()
    >>> reply = await transport.post(url, headers, body, timeout=None)
    >>> await transport.aclose()
    """

    supports_stream = True

    def __init__(
        self, session: aiohttp.ClientSession | None = None, *, connector_limit: int = 256
    ) -> None:
        limit = cast(object, connector_limit)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise UsageError(f"connector_limit must be an int ≥ 0, got {limit!r}")
        self._session = session
        self._owned = session is None
        self._limit = connector_limit
        self._loop: asyncio.AbstractEventLoop | None = None
        # The own session's connections, counted before a post is made (see `post`): made
        # with the session, for its event loop; none for a host's session.
        self._slots: _Slots | None = None
        self._headers_in: dict[str, str] | None = None
        self._headers_out: dict[str, str] = {}

    async def _fresh_session(self) -> aiohttp.ClientSession:
        import aiohttp

        stale = self._session
        session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self._limit),
            timeout=aiohttp.ClientTimeout(total=None),
        )
        self._session, self._loop = session, asyncio.get_running_loop()
        self._slots = _Slots(self._limit) if self._limit else None
        if stale is not None:
            # Its loop is gone (a host running each call under a new asyncio.run()); closing
            # it here only marks it closed, which is all that can be done from this loop.
            await stale.close()
        return session

    def _options(
        self, headers: dict[str, str], body: dict[str, Any], timeout: float | None
    ) -> dict[str, Any]:
        options: dict[str, Any] = {
            "data": _encode(body),
            "headers": self._wire_headers(headers),
            "allow_redirects": False,
        }
        if timeout is not None:
            options["timeout"] = _attempt_limit(timeout)
        return options

    def _wire_headers(self, headers: dict[str, str]) -> dict[str, str]:
        """``headers`` with ``Content-Type: application/json`` unless they name one.

        A client sends the same headers on every request, so the result for the last header
        set is kept (copies on both sides: a caller editing its dict later changes nothing).
        """
        if headers != self._headers_in:
            self._headers_in = dict(headers)
            self._headers_out = with_content_type(headers)
        return self._headers_out

    def _live_session(self) -> aiohttp.ClientSession | None:
        """The session to send through, or ``None`` when a fresh one must be made first."""
        session = self._session
        if session is None or (self._owned and self._loop is not asyncio.get_running_loop()):
            return None
        if session.closed:
            raise UsageError("the aiohttp session given to AiohttpTransport is closed")
        return session

    async def _send(
        self, url: str, headers: dict[str, str], body: dict[str, Any], timeout: float | None
    ) -> aiohttp.ClientResponse:
        options = self._options(headers, body, timeout)
        session = self._live_session()
        if session is None:
            session = await self._fresh_session()
        return await _read(session.post(url, **options), url, timeout)

    async def post(
        self, url: str, headers: dict[str, str], body: dict[str, Any], *, timeout: float | None
    ) -> dict[str, Any]:
        """POST ``body`` as JSON and return the reply's JSON object.

        Raises:
            ProviderError: the endpoint answered with a non-2xx status.
            BadResponse: a 2xx reply that is not a JSON object.
            TransportError: the connection failed, was reset, or ``timeout`` passed.
            UsageError: the URL is malformed or the body cannot be encoded.
        """
        # `_send` and `_read` inlined: this is the loop's hot path, one await per step.
        session = self._live_session()
        if session is None:
            session = await self._fresh_session()
        slots = self._slots if timeout is None else None
        if slots is not None:
            # [parked-run memory] a call beyond the pool's connections waits here, before
            # its body is encoded and aiohttp's request is made: thousands of runs in their
            # model call at once hold a waiter each, not a request each (≈ 3.7 KiB).
            waiter = slots.take()
            if waiter is not None:
                try:
                    await waiter
                except BaseException:
                    if waiter.done() and not waiter.cancelled():
                        slots.give()  # handed a slot, then cancelled: pass it on
                    raise
        try:
            data = _encode(body)
            try:
                # [parked-run memory] without a timeout, no options dict.
                if timeout is None:
                    response = await session.post(
                        url, data=data, headers=self._wire_headers(headers), allow_redirects=False
                    )
                else:
                    response = await session.post(
                        url,
                        data=data,
                        headers=self._wire_headers(headers),
                        allow_redirects=False,
                        timeout=_attempt_limit(timeout),
                    )
                try:
                    data = await response.read()
                except BaseException:
                    response.close()
                    raise
            except ToolnexusError:
                raise
            except Exception as exc:
                raise _translate(exc, url, timeout) from exc
            response.release()
        finally:
            if slots is not None:
                slots.give()
        if not 200 <= response.status < 300:
            raise _status_error(response.status, _text(data), response.headers.get("Retry-After"))
        return _decode(data)

    async def exchange(
        self, url: str, headers: Mapping[str, str], data: bytes, *, timeout: float | None
    ) -> RawReply:
        """POST ``data`` as given and return the reply, whatever its status: one attempt.

        For a caller that owns the bytes it sends and reads every reply itself (the
        classifier posts canonical JSON and words its own errors). ``headers`` go as given.

        Raises:
            TransportError: the connection failed, was reset, or ``timeout`` passed.
            UsageError: the URL is malformed.
        """
        session = self._live_session()
        if session is None:
            session = await self._fresh_session()
        options: dict[str, Any] = {"data": data, "headers": dict(headers), "allow_redirects": False}
        if timeout is not None:
            options["timeout"] = _attempt_limit(timeout)
        try:
            response = await session.post(url, **options)
            try:
                body = await response.read()
            finally:
                response.release()
        except ToolnexusError:
            raise
        except Exception as exc:
            raise _translate(exc, url, timeout) from exc
        return RawReply(response.status, body, response.headers.get("Retry-After"))

    async def stream(
        self, url: str, headers: dict[str, str], body: dict[str, Any], *, timeout: float | None
    ) -> AsyncGenerator[SSEEvent, None]:
        """POST ``body`` and yield the reply's server-sent events as they arrive.

        Closing the generator early (``aclose``) closes the connection. ``timeout`` bounds the
        whole exchange, stream included.

        Raises:
            ProviderError: the endpoint answered with a non-2xx status (body read first).
            BadResponse: the stream is unreadable (an event beyond the parser's size limit).
            TransportError: the connection failed before or during the stream.
        """
        response = await self._send(url, headers, body, timeout)
        finished = False
        try:
            if not 200 <= response.status < 300:
                data = await _read(response.read(), url, timeout)
                retry_after = response.headers.get("Retry-After")
                raise _status_error(response.status, _text(data), retry_after)
            parser = SSEParser()
            while chunk := await _read(response.content.readany(), url, timeout):
                for event in parser.feed(chunk):
                    yield event
            for event in parser.flush():
                yield event
            finished = True
        finally:
            # A fully read reply goes back to the pool; anything else drops the connection.
            if finished:
                response.release()
            else:
                response.close()

    async def aclose(self) -> None:
        """Close the session this transport created; a host's session is left open."""
        session, self._session = self._session, (None if self._owned else self._session)
        if self._owned and session is not None:
            await session.close()


class _Slots:
    """The own pool's connections, counted before a post is made (`AiohttpTransport.post`):
    a post beyond them waits here, first come first served, until one is handed over.

    Not `asyncio.Semaphore`: its ``acquire`` is a coroutine that scans the waiters even when a
    slot is free (≈ 1.4 µs per model call); `take` is a decrement. A waiter handed a slot
    (`give`) keeps it; one cancelled first is skipped.
    """

    __slots__ = ("_free", "_waiters")

    def __init__(self, count: int) -> None:
        self._free = count
        self._waiters: deque[asyncio.Future[None]] = deque()

    def take(self) -> asyncio.Future[None] | None:
        """``None``: a slot is taken. Else the future a slot will be handed over by."""
        if self._free:
            self._free -= 1
            return None
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        return waiter

    def give(self) -> None:
        """Give a slot back: to the first waiter still waiting, else to the pool."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1


def _attempt_limit(timeout: float) -> aiohttp.ClientTimeout:
    import aiohttp

    return aiohttp.ClientTimeout(total=timeout)


async def _read(pending: Awaitable[T], url: str, timeout: float | None) -> T:
    try:
        return await pending
    except ToolnexusError:
        raise
    except Exception as exc:
        raise _translate(exc, url, timeout) from exc


def _translate(exc: Exception, url: str, timeout: float | None) -> ToolnexusError:
    """Map an aiohttp/OS failure onto our tree (the caller chains ``exc``)."""
    aiohttp = sys.modules.get("aiohttp")
    if aiohttp is not None and isinstance(exc, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError):
        return UsageError(f"invalid URL {_where(url)!r}: {exc}")
    if isinstance(exc, TimeoutError):
        return TransportError(f"POST {_where(url)} timed out after {timeout}s")
    if isinstance(exc, OSError) or (aiohttp is not None and isinstance(exc, aiohttp.ClientError)):
        detail = str(exc) or type(exc).__name__
        return TransportError(f"POST {_where(url)} failed: {detail}")
    return TransportError(f"POST {_where(url)} failed: {type(exc).__name__}: {exc}")


class LegacyTransport:
    """Adapts the existing package's synchronous transport to our async `Transport`.

    The wrapped object has a blocking ``post(url, headers, payload, timeout) -> dict`` and,
    optionally, ``open(url, headers, payload, timeout)`` returning a live response with
    ``read1``/``readline``/``read`` and ``close`` for SSE. Each blocking call runs in a worker
    thread (`asyncio.to_thread`), so the event loop never stalls. A thread cannot be interrupted:
    an abort returns control at once, but the blocking call finishes in the background and its
    result is discarded.

    ``supports_stream`` is ``False`` when the object has no ``open``: the client should then
    make a non-streaming call instead of calling `stream` (which raises `UsageError`).

    Errors the object raises are mapped onto our tree: ours pass through; one carrying an int
    HTTP ``status`` or ``code`` becomes `ProviderError` (with ``body``/``text`` and
    ``retry_after`` or a ``Retry-After`` header when it has them); invalid JSON becomes
    `BadResponse`; anything else becomes `TransportError`, chained.

    The object receives what the existing package gave it: the full header set, with
    ``Content-Type: application/json`` unless the host named one, and ``timeout`` as a float
    in seconds — what is left of the client's ``timeout_ms`` (the client passes it, see
    ``takes_deadline``), else `DEFAULT_TIMEOUT_S` (120.0).

    >>> transport = LegacyTransport(UrllibTransport())
    """

    def __init__(self, obj: object) -> None:
        if not callable(getattr(obj, "post", None)):
            raise UsageError(f"{type(obj).__name__} has no post(url, headers, payload, timeout)")
        self._obj: Any = obj
        self.supports_stream: bool = callable(getattr(obj, "open", None))

    takes_deadline = True
    """The client passes what is left of ``timeout_ms`` as each attempt's ``timeout``."""

    async def post(
        self, url: str, headers: dict[str, str], body: dict[str, Any], *, timeout: float | None
    ) -> dict[str, Any]:
        """Run the object's blocking ``post`` in a worker thread and check what it returned."""
        result = await _off_loop(
            self._obj.post, url, with_content_type(headers), body, _seconds(timeout)
        )
        if inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            raise UsageError(
                f"{type(self._obj).__name__}.post returned an awaitable; an async transport "
                "needs async post() and stream() methods"
            )
        if not isinstance(result, dict):
            raise BadResponse(
                f"legacy transport returned {type(result).__name__}, not a JSON object"
            )
        return cast("dict[str, Any]", result)

    async def stream(
        self, url: str, headers: dict[str, str], body: dict[str, Any], *, timeout: float | None
    ) -> AsyncGenerator[SSEEvent, None]:
        """Stream through the object's blocking ``open``, reading chunks in worker threads.

        Raises:
            UsageError: the object has no ``open`` (check ``supports_stream`` first).
        """
        if not self.supports_stream:
            raise UsageError(
                f"{type(self._obj).__name__} cannot stream (it has no open()); "
                "make a non-streaming call instead"
            )
        response: Any = await _off_loop(
            self._obj.open, url, with_content_type(headers), body, _seconds(timeout)
        )
        read = _reader(response)
        parser = SSEParser()
        try:
            while True:
                try:
                    chunk: object = await asyncio.to_thread(read)
                except Exception as exc:
                    raise TransportError(f"stream from {_where(url)} broke: {exc}") from exc
                if not chunk:
                    break
                data = chunk.encode() if isinstance(chunk, str) else bytes(cast("bytes", chunk))
                for event in parser.feed(data):
                    yield event
            for event in parser.flush():
                yield event
        finally:
            close = getattr(response, "close", None)
            if callable(close):
                await asyncio.to_thread(close)

    async def aclose(self) -> None:
        """Nothing to release: the wrapped object belongs to the host."""


def _reader(response: Any) -> Callable[[], object]:
    for name in ("read1", "readline"):
        method = getattr(response, name, None)
        if callable(method):
            return cast("Callable[[], object]", method)
    read = getattr(response, "read", None)
    if not callable(read):
        raise UsageError(f"open() returned {type(response).__name__}, which has no read method")
    return lambda: read(_CHUNK)


_CHUNK = 65536

DEFAULT_TIMEOUT_S = 120.0
"""The ``timeout`` a synchronous transport gets when the run has no ``timeout_ms``."""


def _seconds(timeout: float | None) -> float:
    return DEFAULT_TIMEOUT_S if timeout is None else float(timeout)


async def _off_loop(function: Callable[..., Any], *args: Any) -> Any:
    try:
        return await asyncio.to_thread(function, *args)
    except ToolnexusError:
        raise
    except Exception as exc:
        raise _legacy_error(exc) from exc


def _http_status(exc: Exception) -> int | None:
    for name in ("status", "code"):
        value = getattr(exc, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
    return None


def _legacy_body(exc: Exception) -> str:
    for name in ("body", "text"):
        value = getattr(exc, name, None)
        if isinstance(value, str):
            return value
        if isinstance(value, bytes | bytearray):
            return _text(bytes(value))
    return ""


def _legacy_retry_after(exc: Exception) -> float | None:
    value = getattr(exc, "retry_after", None)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) if math.isfinite(value) and value >= 0 else None
    if isinstance(value, str):
        return parse_retry_after(value)
    headers = getattr(exc, "headers", None)
    items = getattr(headers, "items", None)
    if callable(items):
        for name, header in cast("Callable[[], Any]", items)():
            if isinstance(name, str) and name.lower() == "retry-after" and isinstance(header, str):
                return parse_retry_after(header)
    return None


def _legacy_error(exc: Exception) -> ToolnexusError:
    """Map whatever a legacy transport raised onto our tree (the caller chains ``exc``)."""
    status = _http_status(exc)
    if status is not None:
        body = _legacy_body(exc)
        return ProviderError(
            f"HTTP {status}: {body or exc}",
            status=status,
            body=body,
            retry_after=_legacy_retry_after(exc),
        )
    if isinstance(exc, json.JSONDecodeError):
        return BadResponse(f"reply is not valid JSON: {exc}")
    return TransportError(f"legacy transport failed: {type(exc).__name__}: {exc}")


def attempt_within(
    transport: Transport,
    url: str,
    headers: dict[str, str],
    body: dict[str, Any],
    deadline: float | None,
) -> Callable[[], Awaitable[dict[str, Any]]]:
    """One model-call attempt (for the retry loop). A transport that ``takes_deadline`` (a
    host's synchronous one) gets what is left of ``deadline`` (loop time) as its ``timeout``,
    in seconds; every other transport gets ``None`` (the deadline is enforced above it)."""
    if deadline is None or not getattr(transport, "takes_deadline", False):
        return functools.partial(transport.post, url, headers, body, timeout=None)

    def attempt() -> Awaitable[dict[str, Any]]:
        return transport.post(url, headers, body, timeout=attempt_timeout(transport, deadline))

    return attempt


def attempt_timeout(transport: Transport, deadline: float | None) -> float | None:
    """The ``timeout`` of one attempt (a post, or a stream's ``open``) started now: what is
    left of ``deadline`` (loop time), in seconds, for a transport that ``takes_deadline``;
    ``None`` otherwise (the deadline is enforced above the transport)."""
    if deadline is None or not getattr(transport, "takes_deadline", False):
        return None
    return max(deadline - asyncio.get_running_loop().time(), 0.001)


def as_transport(obj: object | None) -> Transport:
    """Turn what a host passed as ``http_transport`` into a `Transport`.

    * ``None`` ⇒ a new `AiohttpTransport`;
    * an `aiohttp.ClientSession` ⇒ an `AiohttpTransport` sending through it (left open);
    * an object with an ``async def post`` ⇒ used as is; it must also have ``stream`` and
      ``aclose`` (the `Transport` Protocol);
    * an object with a plain ``post`` (the existing package's shape) ⇒ `LegacyTransport`.

    Raises:
        UsageError: anything else, naming what is expected.

    >>> as_transport(None)
    <toolnexus.llm.transport.AiohttpTransport object at ...>
    """
    if obj is None:
        return AiohttpTransport()
    aiohttp = sys.modules.get("aiohttp")
    if aiohttp is not None and isinstance(obj, aiohttp.ClientSession):
        return AiohttpTransport(cast("aiohttp.ClientSession", obj))
    post = getattr(obj, "post", None)
    if not callable(post):
        raise UsageError(
            f"http_transport must have post(): an async transport with async post(), stream() "
            f"and aclose(), or an object with a blocking post(url, headers, payload, timeout); "
            f"got {type(obj).__name__}"
        )
    if inspect.iscoroutinefunction(post):
        missing = [name for name in ("stream", "aclose") if not callable(getattr(obj, name, None))]
        if missing:
            raise UsageError(
                f"http_transport {type(obj).__name__} has async post() but lacks "
                f"{' and '.join(f'{name}()' for name in missing)}"
            )
        return cast(Transport, obj)
    return LegacyTransport(obj)
