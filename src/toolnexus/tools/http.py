"""HTTP tools: one HTTP endpoint becomes a `Tool` (``source="http"``).

::

    weather = http_tool(
        "weather", "Current weather for a city.", "GET",
        "https://api.example.com/v1/weather/{city}",
        headers={"Authorization": "Bearer ${WEATHER_TOKEN}"},
        input_schema={"type": "object", "properties": {"city": {"type": "string"},
                      "units": {"type": "string"}}, "required": ["city"]},
    )

How the arguments travel:

- ``{name}`` placeholders in the URL are filled from the arguments, URL-encoded as one path
  segment (``/`` included), and removed from the rest. A missing one is an error result.
- Arguments named in ``query`` go to the querystring (a list value repeats the key, ``None``
  is left out) and are removed from the rest.
- The remaining arguments form the body: ``json`` (``application/json``), ``form``
  (``application/x-www-form-urlencoded``) or ``raw``. For ``raw`` the body is the ``body``
  argument, else the ``content`` argument, else the only remaining argument; it is sent as
  text (``text/plain; charset=utf-8`` unless a ``Content-Type`` header is configured), and
  any other remaining arguments go to the querystring.
- ``GET``, ``HEAD``, ``DELETE`` and ``OPTIONS`` send no body: their remaining arguments go to
  the querystring.

Headers expand ``${ENV}`` on every call (see `toolnexus._env`); the values are never logged,
and any secret that came from the environment (or a credential header) is masked (``***``) in
error texts; a toolkit holding the tool masks it in every other tool's result too.

Results: 2xx ⇒ the body text, ``metadata={"status": status}``. ``result_mode="json"`` parses
the body and re-serialises it compactly (an empty body stays ``""``; invalid JSON is an
error); ``"status+text"`` gives ``"<status>\\n<body>"``. Non-2xx ⇒ an error result
``HTTP <status>: <body>``. A timeout, a connection failure or a cancelled run (``ctx.signal``
set) aborts the request and becomes an error result; nothing from aiohttp is raised.

Connections are pooled: one ``aiohttp.ClientSession`` per event loop, shared by every HTTP
tool on that loop (no cookie jar, so nothing leaks between tools or runs), closed when the
loop shuts down (``asyncio.run`` and ``asyncio.Runner`` do this through the loop's
async-generator shutdown). A caller that manages its own session passes ``session=``.
aiohttp is imported on the first call, not at import time.
"""

from __future__ import annotations

import asyncio
import json
import re
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias
from urllib.parse import quote, urlencode

from .._compat import warn_once
from .._env import expand_env_headers
from .._types import JSONSchema, Tool, ToolContext, ToolResult, sanitize
from ..errors import UsageError
from ..redaction import Redactor

if TYPE_CHECKING:
    import aiohttp

__all__ = ["DEFAULT_TIMEOUT", "BodyMode", "ResultMode", "http_tool"]

DEFAULT_TIMEOUT = 30.0
"""`http_tool`'s default request deadline, in seconds."""

BodyMode: TypeAlias = Literal["json", "form", "raw"]
ResultMode: TypeAlias = Literal["text", "json", "status+text"]

_BODY_MODES = ("json", "form", "raw")
_RESULT_MODES = ("text", "json", "status+text")
_BODYLESS = frozenset({"GET", "HEAD", "DELETE", "OPTIONS"})
_METHOD = re.compile(r"^[A-Z]+$")
_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")
_RAW_KEYS = ("body", "content")


def http_tool(
    name: str,
    description: str,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    query: Sequence[str] | None = None,
    body: BodyMode = "json",
    input_schema: JSONSchema | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    result_mode: ResultMode = "text",
    session: aiohttp.ClientSession | None = None,
    timeout_ms: float | None = None,
) -> Tool:
    """A `Tool` that calls one HTTP endpoint.

    Args:
        name: the tool name (sanitized to ``[a-zA-Z0-9_-]``).
        description: what the tool does, for the model.
        method: the HTTP method, e.g. ``"GET"``.
        url: the URL, with ``{arg}`` placeholders filled from the arguments.
        headers: request headers; ``${NAME}`` is expanded from the environment per call.
        query: argument names sent as the querystring.
        body: how the remaining arguments are sent: ``json`` | ``form`` | ``raw``.
        input_schema: the JSON Schema of the arguments (default: an object with no declared
            properties, ``{"type": "object", "properties": {}}``).
        timeout: the request deadline in **seconds** (default `DEFAULT_TIMEOUT`, 30.0;
            ``None``: no deadline), as in the existing package. A value of 1000 or more is
            taken as seconds too, with a warning (it used to be milliseconds here).
        timeout_ms: the deadline in milliseconds instead; wins over ``timeout``.
        result_mode: ``text`` | ``json`` | ``status+text``.
        session: an ``aiohttp.ClientSession`` to use instead of the pooled one (the caller
            keeps ownership and closes it).

    Raises:
        UsageError: for an unknown body or result mode, a bad method or timeout.

    Example:
        >>> t = http_tool("get_user", "Fetch a user.", "GET", "https://x.test/users/{id}",
        ...               input_schema={"type": "object", "properties": {"id": {"type": "string"}}})
        >>> (t.name, t.source)
        ('get_user', 'http')
    """
    verb = method.strip().upper()
    if not _METHOD.match(verb):
        raise UsageError(f"http_tool {name!r}: invalid HTTP method {method!r}")
    if body not in _BODY_MODES:
        raise UsageError(f"http_tool {name!r}: body must be one of {', '.join(_BODY_MODES)}")
    if result_mode not in _RESULT_MODES:
        modes = ", ".join(_RESULT_MODES)
        raise UsageError(f"http_tool {name!r}: result_mode must be one of {modes}")
    deadline_ms = _deadline_ms(name, timeout, timeout_ms)
    if isinstance(query, str):
        raise UsageError(f"http_tool {name!r}: query must be a list of argument names")
    tool_name = sanitize(name)
    if not tool_name:
        raise UsageError("a tool name must not be empty")
    endpoint = _Endpoint(
        name=tool_name,
        method=verb,
        url=url,
        headers=dict(headers or {}),
        query=tuple(query or ()),
        body=body,
        timeout_ms=deadline_ms,
        result_mode=result_mode,
        session=session,
    )
    return Tool(
        name=tool_name,
        description=description,
        input_schema=input_schema
        if input_schema is not None
        else {"type": "object", "properties": {}},
        source="http",
        execute=endpoint.execute,
    )


def _deadline_ms(name: str, timeout: float | None, timeout_ms: float | None) -> float | None:
    """The request deadline in ms from ``timeout`` (seconds) or ``timeout_ms``."""
    for label, value in (("timeout_ms", timeout_ms), ("timeout", timeout)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or not value > 0  # pyright: ignore[reportUnnecessaryIsInstance]
        ):
            raise UsageError(f"http_tool {name!r}: {label} must be a positive number")
    if timeout_ms is not None:
        return float(timeout_ms)
    if timeout is None:
        return None
    if timeout >= 1000:
        warn_once(
            ("http_tool timeout", name),
            f"http_tool {name!r}: timeout={timeout} is in seconds (pass timeout_ms= for "
            "milliseconds)",
        )
    return float(timeout) * 1000


class _Endpoint:
    """The configuration of one HTTP tool and its ``execute``."""

    def __init__(
        self,
        *,
        name: str,
        method: str,
        url: str,
        headers: dict[str, str],
        query: tuple[str, ...],
        body: BodyMode,
        timeout_ms: float | None,
        result_mode: ResultMode,
        session: aiohttp.ClientSession | None,
    ) -> None:
        self.name = name
        self.method = method
        self.url = url
        self.placeholders = tuple(dict.fromkeys(_PLACEHOLDER.findall(url)))
        self.headers = headers
        self.redactor = Redactor()
        """The header variables and credential headers of this endpoint (masked in errors)."""
        for header, value in headers.items():
            self.redactor.add_setting(header, str(value))
        self.query = query
        self.body = body
        self.timeout_ms = timeout_ms
        self.result_mode = result_mode
        self.session = session

    async def execute(self, args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        signal = ctx.signal if ctx is not None else None
        if signal is None:
            return await self._call(args)
        if signal.is_set():
            return self._cancelled()
        request = asyncio.ensure_future(self._call(args))
        stop = asyncio.ensure_future(signal.wait())
        stop.add_done_callback(lambda _: request.cancel())
        try:
            return await request
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if signal.is_set() and (task is None or not task.cancelling()):
                return self._cancelled()  # our abort, not the caller's cancellation
            raise
        finally:
            stop.cancel()

    def _cancelled(self) -> ToolResult:
        return ToolResult(f"HTTP tool {self.name} cancelled", is_error=True)

    async def _call(self, args: dict[str, Any]) -> ToolResult:
        remaining = dict(args)
        url = self.url
        for placeholder in self.placeholders:
            value = remaining.pop(placeholder, None)
            if value is None:
                return ToolResult(
                    f"HTTP tool {self.name}: missing argument {placeholder!r} "
                    f"for URL placeholder {{{placeholder}}}",
                    is_error=True,
                )
            url = url.replace(f"{{{placeholder}}}", quote(_text(value), safe=""))
        params = _pairs({k: remaining.pop(k) for k in self.query if k in remaining})
        headers = expand_env_headers(self.headers)
        data: bytes | None = None
        if self.method in _BODYLESS:
            params.extend(_pairs(remaining))
        elif self.body == "json":
            data = json.dumps(remaining, ensure_ascii=False, separators=(",", ":")).encode()
            _default_header(headers, "Content-Type", "application/json")
        elif self.body == "form":
            data = urlencode(_pairs(remaining)).encode()
            _default_header(headers, "Content-Type", "application/x-www-form-urlencoded")
        else:
            data = _raw_body(remaining).encode()
            params.extend(_pairs(remaining))
            _default_header(headers, "Content-Type", "text/plain; charset=utf-8")
        try:
            status, text = await self._send(url, params, headers, data)
        except TimeoutError:
            return ToolResult(
                f"HTTP tool {self.name} timed out after {_ms(self.timeout_ms)}ms", is_error=True
            )
        except Exception as exc:  # aiohttp's and the rest; cancellation is not an Exception
            reason = self._redact(_reason(exc))
            return ToolResult(f"HTTP tool {self.name} request failed: {reason}", is_error=True)
        return self._result(status, text)

    async def _send(
        self, url: str, params: list[tuple[str, str]], headers: dict[str, str], data: bytes | None
    ) -> tuple[int, str]:
        import aiohttp
        from yarl import URL

        target = URL(url)
        if params:
            target = target.extend_query(params)
        seconds = None if self.timeout_ms is None else self.timeout_ms / 1000
        session = self.session or await _pooled_session()
        async with session.request(
            self.method,
            target,
            headers=headers,
            data=data,
            timeout=aiohttp.ClientTimeout(total=seconds),
        ) as response:
            raw = await response.read()
            return response.status, _decode(raw, response.charset)

    def _result(self, status: int, text: str) -> ToolResult:
        metadata: dict[str, Any] = {"status": status}
        if not 200 <= status < 300:
            return ToolResult(f"HTTP {status}: {self._redact(text)}", True, metadata)
        if self.result_mode == "status+text":
            return ToolResult(f"{status}\n{text}", False, metadata)
        if self.result_mode == "json" and text.strip():
            try:
                parsed = json.loads(text)
            except ValueError as exc:
                message = f"HTTP tool {self.name}: the response is not valid JSON ({exc})"
                return ToolResult(message, True, metadata)
            text = json.dumps(parsed, ensure_ascii=False, separators=(",", ":"))
        return ToolResult(text, False, metadata)

    def _redact(self, text: str) -> str:
        return self.redactor.text(text)


def _text(value: Any) -> str:
    """One argument value as text, for a URL, a querystring, a form or a raw body."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _pairs(values: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Key/value pairs: a list repeats its key, ``None`` is left out."""
    pairs: list[tuple[str, str]] = []
    for key, value in values.items():
        if isinstance(value, list):
            items: list[Any] = value  # pyright: ignore[reportUnknownVariableType]
            pairs.extend((key, _text(item)) for item in items if item is not None)
        elif value is not None:
            pairs.append((key, _text(value)))
    return pairs


def _raw_body(remaining: dict[str, Any]) -> str:
    for key in _RAW_KEYS:
        if key in remaining:
            return _text(remaining.pop(key))
    if len(remaining) == 1:
        return _text(remaining.popitem()[1])
    return ""


def _default_header(headers: dict[str, str], name: str, value: str) -> None:
    lowered = name.lower()
    if not any(key.lower() == lowered for key in headers):
        headers[name] = value


def _decode(raw: bytes, charset: str | None) -> str:
    try:
        return raw.decode(charset or "utf-8", errors="replace")
    except LookupError:  # an unknown charset name from the server
        return raw.decode("utf-8", errors="replace")


def _ms(value: float | None) -> str:
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else str(value)


def _reason(exc: Exception) -> str:
    import aiohttp

    if isinstance(exc, aiohttp.ClientConnectorError):
        cause = exc.os_error
        detail = cause.strerror or type(cause).__name__
        return f"cannot connect to {exc.host}:{exc.port}: {detail} ({type(cause).__name__})"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# --- the pooled session -------------------------------------------------------------------

_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Pooled] = (
    weakref.WeakKeyDictionary()
)


class _Pooled:
    __slots__ = ("closer", "session")

    def __init__(self, session: aiohttp.ClientSession, closer: AsyncIterator[None]) -> None:
        self.session = session
        self.closer = closer


async def _pooled_session() -> aiohttp.ClientSession:
    """This loop's shared session, created on first use and closed when the loop shuts down."""
    loop = asyncio.get_running_loop()
    pooled = _sessions.get(loop)
    if pooled is not None and not pooled.session.closed:
        return pooled.session
    import aiohttp

    session = aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar())
    closer = _close_at_shutdown(loop, session)
    _sessions[loop] = _Pooled(session, closer)
    # Starting the generator registers it with the loop, whose shutdown_asyncgens() (run by
    # asyncio.run / asyncio.Runner before closing) then runs its finally block.
    await anext(closer)
    return session


async def _close_at_shutdown(
    loop: asyncio.AbstractEventLoop, session: aiohttp.ClientSession
) -> AsyncIterator[None]:
    try:
        yield
    finally:
        pooled = _sessions.get(loop)
        if pooled is not None and pooled.session is session:
            del _sessions[loop]
        await session.close()
