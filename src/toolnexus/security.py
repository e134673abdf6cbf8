"""What every served route shares: a bearer token and a cap on the request body.

The HTTP surfaces — the served A2A and MCP routes (`toolnexus.serve`) and the approvals inbox
(`toolnexus.inbox`), which a served app can mount — all stand on this module, so it sits below
both of them.

Both are plain ASGI middleware, so they wrap any app — the A2A endpoint, ``/mcp``, a host's own
routes — and work the same for JSON and for streamed (SSE) responses::

    app = BearerAuth(BodyLimit(inner, max_bytes=1 << 20), token=TOKEN)   # or secure(...)

- `BearerAuth` refuses a request without ``Authorization: Bearer <token>`` (compared in constant
  time, so the time to refuse says nothing about the token) with 401 and a
  ``WWW-Authenticate: Bearer`` challenge. The token itself is never logged or echoed. Wrong
  tokens are counted per client address (`SignInLimit`): past 10 in a minute, that address
  gets 429 with ``Retry-After`` — before its token is looked at — until the oldest is a
  minute old.
- `BodyLimit` refuses a body larger than ``max_bytes`` with 413 — by its ``Content-Length``
  before reading a byte, or while reading a body sent without one — and hands the app a body it
  has read whole, so the app never sees a truncated request.

Both answer in JSON-RPC's shape (``{"jsonrpc": "2.0", "id": null, "error": {...}}``), which is
what the A2A and MCP clients on these routes read; a plain HTTP client gets the status code.

Written here rather than taken from Starlette: Starlette has no bearer middleware of its own,
and its ``BaseHTTPMiddleware`` buffers streamed responses; these two are small pure-ASGI
wrappers that pass SSE straight through.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from typing import Any

from .errors import UsageError

__all__ = [
    "CALLER",
    "DEFAULT_CALLER",
    "DEFAULT_MAX_BODY",
    "MIN_TOKEN_LENGTH",
    "ASGIApp",
    "BearerAuth",
    "BodyLimit",
    "SignInLimit",
    "check_proxies",
    "check_token",
    "rpc_error_body",
    "secure",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_MAX_BODY = 1 << 20
"""The default request body cap: 1 MiB."""

CALLER = "toolnexus.caller"
"""The ASGI scope key under which `BearerAuth` puts the name of the caller whose token it
took (absent when no token is required)."""

DEFAULT_CALLER = "a2a"
"""The name of the one caller of a single ``token``."""

MIN_TOKEN_LENGTH = 16
"""The shortest token a host may configure. The sign-in limit only slows a guesser down
(10 a minute per address); a short token would still fall to many addresses guessing."""


def rpc_error_body(code: int, message: str, id: Any = None) -> bytes:
    """A JSON-RPC 2.0 error response body."""
    return json.dumps(
        {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}},
        separators=(",", ":"),
    ).encode()


async def _reply(
    send: Send, status: int, body: bytes, headers: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def check_token(token: object) -> str:
    """A token as given by a host: a string of at least `MIN_TOKEN_LENGTH` characters
    without whitespace (the served app's ``token=``, the inbox's users).

    Raises:
        UsageError: not such a string; the message never repeats the token.
    """
    if not isinstance(token, str) or not token or any(c.isspace() for c in token):
        raise UsageError("token must be a non-empty string without whitespace")
    if len(token) < MIN_TOKEN_LENGTH:
        raise UsageError(
            f"token is too short ({len(token)} characters; at least {MIN_TOKEN_LENGTH} are "
            "needed): use a long random secret, such as the output of "
            "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    return token


class SignInLimit:
    """Failed sign-ins per client address, over a sliding window.

    An address that failed ``limit`` times in the last ``window`` seconds is refused until
    its oldest failure is that old; a success clears its count. At most ``max_addresses``
    addresses are remembered (the longest quiet is forgotten first), so a flood of
    addresses cannot grow it without end.

    Raises:
        UsageError: ``limit`` is not an int >= 0 (0: no limit) or ``window`` not positive.
    """

    __slots__ = ("_clock", "_failures", "limit", "max_addresses", "window")

    def __init__(
        self,
        limit: int = 10,
        window: float = 60.0,
        *,
        max_addresses: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UsageError(f"the sign-in limit must be an int >= 0, got {limit!r}")
        if isinstance(window, bool) or not window > 0:
            raise UsageError(f"the sign-in window must be positive seconds, got {window!r}")
        self.limit = limit
        self.window = float(window)
        self.max_addresses = max_addresses
        self._clock = clock
        self._failures: dict[str, deque[float]] = {}

    def retry_after(self, address: str) -> int | None:
        """Whole seconds (at least 1) until ``address`` may try again, as ``Retry-After``
        says them; ``None`` when it may now."""
        if not self.limit:
            return None
        failures = self._recent(address)
        if failures is None or len(failures) < self.limit:
            return None
        return max(math.ceil(failures[0] + self.window - self._clock()), 1)

    def failed(self, address: str) -> None:
        """Count a wrong token from ``address``."""
        if not self.limit:
            return
        failures = self._recent(address)
        if failures is None:
            if len(self._failures) >= self.max_addresses:
                del self._failures[next(iter(self._failures))]
            failures = self._failures[address] = deque(maxlen=self.limit)
        else:  # the most recently failing address is the last one forgotten
            self._failures[address] = self._failures.pop(address)
        failures.append(self._clock())

    def succeeded(self, address: str) -> None:
        """A right token from ``address``: forget its failures."""
        self._failures.pop(address, None)

    def _recent(self, address: str) -> deque[float] | None:
        failures = self._failures.get(address)
        if failures is None:
            return None
        oldest = self._clock() - self.window
        while failures and failures[0] <= oldest:
            failures.popleft()
        if not failures:
            del self._failures[address]
            return None
        return failures


class BearerAuth:
    """Refuse every HTTP request that lacks ``Authorization: Bearer <token>``, and name the
    caller whose token it is in the scope (`CALLER`).

    Args:
        app: the app to protect.
        token: the expected token: one caller, named `DEFAULT_CALLER`.
        callers: instead of ``token``, several callers: their names by the hex sha256 of
            their tokens (`toolnexus.serve.callers.load_callers` reads a callers file).
        realm: the realm named in the ``WWW-Authenticate`` challenge.
    """

    __slots__ = ("_app", "_callers", "_challenge", "failures")

    def __init__(
        self,
        app: ASGIApp,
        token: str | None = None,
        *,
        callers: Mapping[str, str] | None = None,
        realm: str = "toolnexus",
        failures: SignInLimit | None = None,
    ) -> None:
        if (token is None) == (callers is None):
            raise UsageError("BearerAuth needs a token or callers (not both)")
        if callers is None:
            digest = hashlib.sha256(check_token(token).encode()).hexdigest()
            callers = {digest: DEFAULT_CALLER}
        if not callers:
            raise UsageError("BearerAuth needs at least one caller")
        self._app = app
        self._callers = tuple((d.lower().encode(), name) for d, name in callers.items())
        self._challenge = f'Bearer realm="{realm}"'.encode()
        self.failures = failures if failures is not None else SignInLimit()
        """Wrong tokens per client address."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self._app(scope, receive, send)
            return
        client = scope.get("client")
        address = str(client[0]) if client else ""
        wait = self.failures.retry_after(address)
        if wait is not None:  # refused before the token is even looked at
            message = f"Too many wrong tokens from this address: retry after {wait} s"
            header = (b"retry-after", str(wait).encode())
            await _reply(send, 429, rpc_error_body(-32600, message), (header,))
            return
        given = _bearer(scope)
        caller = self._caller(given) if given else None
        if caller is not None:
            self.failures.succeeded(address)
            scope[CALLER] = caller
            await self._app(scope, receive, send)
            return
        if given is not None:
            self.failures.failed(address)
        challenge = self._challenge
        if given is not None:
            challenge += b', error="invalid_token"'
        await _reply(
            send,
            401,
            rpc_error_body(-32600, "Unauthorized: a valid bearer token is required"),
            ((b"www-authenticate", challenge),),
        )

    def _caller(self, given: bytes) -> str | None:
        """The caller whose token ``given`` is: every caller is compared, in constant time."""
        digest = hashlib.sha256(given).hexdigest().encode()
        found: str | None = None
        for expected, name in self._callers:
            if hmac.compare_digest(digest, expected):
                found = name
        return found


def _bearer(scope: Scope) -> bytes | None:
    for name, value in scope.get("headers") or ():
        if name.lower() == b"authorization":
            scheme, _, rest = bytes(value).partition(b" ")
            if scheme.lower() == b"bearer":
                return rest.strip()
            return b""
    return None


class BodyLimit:
    """Refuse a request body over ``max_bytes`` with 413; the app gets the body read whole.

    Args:
        app: the app to protect.
        max_bytes: the largest body accepted.
    """

    __slots__ = ("_app", "_max")

    def __init__(self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BODY) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UsageError(f"max_body must be a positive int of bytes, got {max_bytes!r}")
        self._app = app
        self._max = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") in ("GET", "HEAD"):
            await self._app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self._max:
            await self._too_large(send)
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = bytes(message.get("body") or b"")
            size += len(chunk)
            if size > self._max:
                await self._too_large(send)
                return
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self._app(scope, replay, send)

    async def _too_large(self, send: Send) -> None:
        await _reply(
            send, 413, rpc_error_body(-32600, f"Request body too large (limit {self._max} bytes)")
        )


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers") or ():
        if name.lower() == b"content-length":
            try:
                return int(bytes(value))
            except ValueError:
                return None
    return None


def secure(
    app: ASGIApp,
    *,
    token: str | None = None,
    max_body: int | None = DEFAULT_MAX_BODY,
    callers: Mapping[str, str] | None = None,
) -> ASGIApp:
    """``app`` behind the body cap (none when ``max_body`` is ``None``) and, when ``token``
    (one caller) or ``callers`` (several, see `BearerAuth`) is given, the bearer check.

    The token is checked first, on the headers alone: an unauthenticated client cannot make
    the server read its body at all.
    """
    capped: ASGIApp = app if max_body is None else BodyLimit(app, max_body)
    if token is None and callers is None:
        return capped
    return BearerAuth(capped, token, callers=callers)


def check_proxies(proxies: Iterable[str] | str | None) -> tuple[str, ...]:
    """The proxies whose ``X-Forwarded-For`` / ``X-Forwarded-Proto`` a server we start
    believes: IP addresses or networks (``10.0.0.5``, ``10.0.0.0/8``, ``::1``). None by
    default — not even loopback: a client on the same host could otherwise name any address
    it likes and never be counted by the sign-in limit.

    Raises:
        UsageError: an entry that is not an address or a network.
    """
    if proxies is None:
        return ()
    listed = [proxies] if isinstance(proxies, str) else list(proxies)
    checked: list[str] = []
    for entry in listed:
        if not isinstance(entry, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UsageError(f"a trusted proxy must be an IP address or network, got {entry!r}")
        try:
            network = ipaddress.ip_network(entry.strip(), strict=False)
        except ValueError:
            raise UsageError(
                f"a trusted proxy must be an IP address or network (10.0.0.5, 10.0.0.0/8), "
                f"got {entry!r}"
            ) from None
        single = network.num_addresses == 1
        checked.append(str(network.network_address) if single else str(network))
    return tuple(checked)
