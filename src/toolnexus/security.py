"""What every served route shares: a bearer token, a cap on the request body, and the checks
that keep a web page on another site (or one reached through DNS rebinding) out.

The HTTP surfaces — the served A2A and MCP routes (`toolnexus.serve`) and the approvals inbox
(`toolnexus.inbox`), which a served app can mount — all stand on this module, so it sits below
both of them.

All are plain ASGI middleware, so they wrap any app — the A2A endpoint, ``/mcp``, a host's own
routes — and work the same for JSON and for streamed (SSE) responses::

    app = secure(JsonOnly(inner), token=os.environ["TOKEN"], max_body=1 << 20)

- `SiteGuard` refuses a request whose ``Host`` is not a name the app is served under (loopback
  names, the public URL's host, and those the host allows) with 421, and one whose browser
  ``Origin`` is not the app's own (nor allowed) with 403. A page that rebinds its own name to
  127.0.0.1 sends its own name as ``Host``; a page on another site sends its ``Origin``. A
  client without ``Origin`` (anything but a browser) passes.
- `BearerAuth` refuses a request without ``Authorization: Bearer <token>`` (compared in constant
  time, so the time to refuse says nothing about the token) with 401 and a
  ``WWW-Authenticate: Bearer`` challenge. The token itself is never logged or echoed. Wrong
  tokens are counted per client address (`SignInLimit`): past 10 in a minute, that address
  gets 429 with ``Retry-After`` — before its token is looked at — until the oldest is a
  minute old.
- `BodyLimit` refuses a body larger than ``max_bytes`` with 413 — by its ``Content-Length``
  before reading a byte, or while reading a body sent without one — and hands the app a body it
  has read whole, so the app never sees a truncated request.
- `JsonOnly` refuses a ``POST`` whose body is not declared JSON with 415: a page on another
  site can send ``text/plain``, a form or no type at all without asking (no CORS preflight),
  but never ``application/json``.

All answer in JSON-RPC's shape (``{"jsonrpc": "2.0", "id": null, "error": {...}}``), which is
what the A2A and MCP clients on these routes read; a plain HTTP client gets the status code.

Written here rather than taken from Starlette: Starlette has no bearer middleware of its own,
and its ``BaseHTTPMiddleware`` buffers streamed responses; these are small pure-ASGI
wrappers that pass SSE straight through. The MCP SDK's own Host/Origin check cannot know the
names a toolkit is served under, so it stays off and `SiteGuard` guards ``/mcp`` as well.
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
from urllib.parse import urlsplit

from .errors import UsageError

__all__ = [
    "CALLER",
    "DEFAULT_CALLER",
    "DEFAULT_MAX_BODY",
    "LOOPBACK_HOSTS",
    "MIN_TOKEN_LENGTH",
    "ASGIApp",
    "BearerAuth",
    "BodyLimit",
    "JsonOnly",
    "SignInLimit",
    "SiteGuard",
    "check_proxies",
    "check_site",
    "check_token",
    "is_json_type",
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


LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
"""The names an app on this machine is always served under (any port)."""

_CHECKED = "toolnexus.site_checked"
"""The scope key `SiteGuard` sets once it passed a request: a guard nested inside another
(the MCP app or the inbox mounted in a served app) leaves the decision to the outer one."""

_DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443"}


def _split_host(value: str) -> tuple[str, str | None]:
    """``host[:port]`` → ``(host, port)``: lower case, an IPv6 literal in brackets, no
    trailing dot."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        name, rest = (value[: end + 1], value[end + 1 :]) if end > 0 else (value, "")
        port = rest[1:] if rest.startswith(":") else None
    elif value.count(":") == 1:
        name, _, port = value.partition(":")
    elif ":" in value:  # a bare IPv6 address, as a host may write it in allowed_hosts
        name, port = f"[{value}]", None
    else:
        name, port = value, None
    return name.rstrip("."), port or None


def _origin(value: str) -> tuple[str, str, str] | None:
    """``scheme://host[:port]`` → ``(scheme, host, port)``, the port filled in from the
    scheme; ``None`` for anything else (``null``, a path, no scheme)."""
    scheme, sep, rest = value.strip().lower().partition("://")
    rest = rest.rstrip("/")
    if not sep or not scheme or not rest or "/" in rest or "@" in rest:
        return None
    name, port = _split_host(rest)
    port = port or _DEFAULT_PORTS.get(scheme)
    return (scheme, name, port) if name and port else None


def _url_origin(url: str) -> tuple[str, str, str]:
    parts = urlsplit(url)
    own = _origin(f"{parts.scheme}://{parts.netloc}") if parts.scheme in ("http", "https") else None
    if own is None:
        raise UsageError(f"the public URL must be an http(s) URL, got {url!r}")
    return own


def _allowed_origin(value: str) -> tuple[str, str, str]:
    """An ``allowed_origins`` entry → ``(scheme, host, port)`` (port ``*``: any)."""
    if value.lower() == "null":
        return ("null", "", "")
    any_port = value.endswith(":*")
    parsed = _origin(value[:-2] if any_port else value)
    if parsed is None:
        raise UsageError(f'allowed_origins takes "scheme://host[:port]", got {value!r}')
    return (parsed[0], parsed[1], "*") if any_port else parsed


def _names(option: str, value: Iterable[str] | str | None) -> list[str]:
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    for item in items:
        if not isinstance(item, str) or not item.strip() or any(c.isspace() for c in item):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UsageError(f"{option} takes names without whitespace, got {item!r}")
    return [item.strip() for item in items]


def _header(scope: Scope, wanted: bytes) -> str | None:
    for name, value in scope.get("headers") or ():
        if name.lower() == wanted:
            return bytes(value).decode("latin-1")
    return None


def _shown(value: str) -> str:
    return repr(value if len(value) <= 100 else value[:100] + "...")


class SiteGuard:
    """Refuse requests a browser sends on behalf of another site: a foreign ``Host`` (421) or
    a foreign ``Origin`` (403).

    - ``Host`` must be a name the app is served under: a loopback name (`LOOPBACK_HOSTS`),
      the host of ``public_url``, or one of ``hosts`` (``"example.com"`` on any port,
      ``"example.com:8443"`` on that one, ``"*.example.com"`` for its subdomains, ``"*"``
      for any). This is what stops DNS rebinding: the attacker's page reaches 127.0.0.1
      under the attacker's own name, and that name is what its requests carry.
    - ``Origin``, when a browser sends one, must be the app's own — the same host and port
      as the request's ``Host`` — or ``public_url``'s, or one of ``origins``
      (``"https://app.example.com"``, ``"http://localhost:*"`` for any port, ``"*"`` for
      any, ``"null"`` for sandboxed pages). No ``Origin`` passes: a program that is not a
      browser sends none, and a same-origin navigation none either. ``Origin: null`` (a
      sandboxed page, or the app's own page under ``Referrer-Policy: no-referrer``) passes
      only with ``Sec-Fetch-Site: same-origin``, which the browser sets and no page can.

    A guard nested in another (the MCP app, or the inbox, mounted in a served app) leaves
    the request to the outer one, which checked it first.

    Args:
        app: the app to protect.
        hosts: more names the app is served under.
        origins: more origins whose pages may call it.
        public_url: the address clients use (its host and origin are the app's own).

    Raises:
        UsageError: a name with whitespace, or an origin that is not ``scheme://host[:port]``.
    """

    __slots__ = ("_any_host", "_any_origin", "_app", "_hosts", "_origins", "_suffixes")

    def __init__(
        self,
        app: ASGIApp,
        *,
        hosts: Iterable[str] | str | None = None,
        origins: Iterable[str] | str | None = None,
        public_url: str | None = None,
    ) -> None:
        self._app = app
        named = [*LOOPBACK_HOSTS, *_names("allowed_hosts", hosts)]
        allowed = _names("allowed_origins", origins)
        if public_url:
            own = _url_origin(public_url)
            named.append(own[1])
            allowed.append(f"{own[0]}://{own[1]}:{own[2]}")
        self._any_host = "*" in named
        self._hosts = {_split_host(name) for name in named if not name.startswith("*")}
        self._suffixes = tuple(name[1:].lower() for name in named if name.startswith("*."))
        self._any_origin = "*" in allowed
        self._origins = {_allowed_origin(value) for value in allowed if value != "*"}

    def host_allowed(self, host: str) -> bool:
        """Whether ``host`` (a ``Host`` header) names this app."""
        if self._any_host:
            return True
        name, port = _split_host(host)
        return (
            (name, None) in self._hosts
            or (name, port) in self._hosts
            or any(name.endswith(suffix) for suffix in self._suffixes)
        )

    def origin_allowed(self, origin: str, host: str | None, fetch_site: str | None = None) -> bool:
        """Whether a page from ``origin`` may call this app at ``host`` (``fetch_site``: the
        request's ``Sec-Fetch-Site``)."""
        if self._any_origin:
            return True
        if origin.strip().lower() == "null":
            # A page whose referrer policy is "no-referrer" posts its own forms with
            # "Origin: null"; the browser still says they are same-origin (a header no page
            # can set), and a sandboxed or cross-site page's are not.
            return fetch_site == "same-origin" or ("null", "", "") in self._origins
        parsed = _origin(origin)
        if parsed is None:
            return False
        scheme, name, port = parsed
        if host is not None:
            own, own_port = _split_host(host)
            # A browser leaves the port out of Host exactly when it is the scheme's default.
            if own == name and (own_port or _DEFAULT_PORTS.get(scheme)) == port:
                return True
        return parsed in self._origins or (scheme, name, "*") in self._origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind not in ("http", "websocket") or scope.get(_CHECKED):
            await self._app(scope, receive, send)
            return
        host = _header(scope, b"host")
        origin = _header(scope, b"origin")
        refusal: tuple[int, str] | None = None
        if host is not None and not self.host_allowed(host):
            refusal = (
                421,
                f"Misdirected Request: this app is not served under the host {_shown(host)} "
                "(a host it should answer to goes in allowed_hosts / --allow-host)",
            )
        elif origin is not None and not self.origin_allowed(
            origin, host, _header(scope, b"sec-fetch-site")
        ):
            refusal = (
                403,
                f"Forbidden: a page from {_shown(origin)} may not call this app "
                "(an origin it should serve goes in allowed_origins / --allow-origin)",
            )
        if refusal is None:
            scope[_CHECKED] = True
            await self._app(scope, receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await _reply(send, refusal[0], rpc_error_body(-32600, refusal[1]))


def check_site(
    hosts: Iterable[str] | str | None = None,
    origins: Iterable[str] | str | None = None,
    public_url: str | None = None,
) -> None:
    """Refuse the options `SiteGuard` would refuse, before a server opens anything.

    Raises:
        UsageError: as `SiteGuard`.
    """
    SiteGuard(_nothing, hosts=hosts, origins=origins, public_url=public_url)


async def _nothing(scope: Scope, receive: Receive, send: Send) -> None:
    return None


class JsonOnly:
    """Refuse a request body not declared JSON (``Content-Type: application/json`` or
    ``application/<...>+json``, with any parameters) with 415, before the app reads it.

    A page on another site can ``POST`` ``text/plain``, a form or an untyped body to any
    address without a CORS preflight, so without this check a JSON-RPC endpoint would run
    what it sends; a JSON type makes the browser ask first, and nobody answers yes.

    Args:
        app: the app to protect.
        prefix: only paths below it (after the mount's ``root_path``) are checked (the
            inbox's ``/api/``; its HTML forms post form bodies).
    """

    __slots__ = ("_app", "_prefix")

    def __init__(self, app: ASGIApp, *, prefix: str = "") -> None:
        self._app = app
        self._prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope.get("type") != "http"
            or scope.get("method") not in ("POST", "PUT", "PATCH")
            or not _below(scope, self._prefix)
            or is_json_type(_header(scope, b"content-type"))
        ):
            await self._app(scope, receive, send)
            return
        await _reply(
            send,
            415,
            rpc_error_body(
                -32600, "Unsupported Media Type: the body must be JSON (application/json)"
            ),
        )


def is_json_type(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` declares JSON (``application/json`` or ``…+json``)."""
    if content_type is None:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def _below(scope: Scope, prefix: str) -> bool:
    if not prefix:
        return True
    path = str(scope.get("path") or "")
    root = str(scope.get("root_path") or "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return path.startswith(prefix)


def secure(
    app: ASGIApp,
    *,
    token: str | None = None,
    max_body: int | None = DEFAULT_MAX_BODY,
    allowed_hosts: Iterable[str] | str | None = None,
    allowed_origins: Iterable[str] | str | None = None,
    public_url: str | None = None,
    callers: Mapping[str, str] | None = None,
) -> ASGIApp:
    """``app`` behind `SiteGuard`, then the bearer check (when ``token`` — one caller — or
    ``callers`` — several, see `BearerAuth` — is given), then the body cap (none when
    ``max_body`` is ``None``). The JSON-RPC endpoints themselves stand behind `JsonOnly` (a
    route that does not exist stays a 404).

    The site and the token are checked first, on the headers alone: a page on another site or
    an unauthenticated client cannot make the server read its body at all.

    Args:
        app: the app to protect.
        token: require ``Authorization: Bearer <token>`` (one caller).
        callers: ``{name: token}`` of several callers (see `BearerAuth`).
        max_body: the request body cap in bytes.
        allowed_hosts: names the app is served under besides loopback and ``public_url``'s.
        allowed_origins: origins whose pages may call it besides its own.
        public_url: the address clients use (behind a proxy: the proxy's).
    """
    inner: ASGIApp = app if max_body is None else BodyLimit(app, max_body)
    if token is not None or callers is not None:
        inner = BearerAuth(inner, token, callers=callers)
    return SiteGuard(inner, hosts=allowed_hosts, origins=allowed_origins, public_url=public_url)


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
