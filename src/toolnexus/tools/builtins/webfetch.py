"""The ``webfetch`` built-in: GET a URL and return its body as Markdown, text or HTML.

``webfetch{url, format?, timeout?}``: ``format`` is ``markdown`` (default), ``text`` or
``html``; ``timeout`` is in **seconds** (default 30, at most 120). An HTML response (by its
``Content-Type``, or a body that starts like HTML) is converted to Markdown or text (see
`_html`); any other body is returned as is; ``html`` returns the body untouched. A non-2xx
status is the error ``HTTP <status>`` (``metadata={"status": status}``). Only ``http`` and
``https`` URLs are fetched; redirects are followed (at most 10). Bodies over 5 MiB are refused.
A timeout, a connection failure or the run's cancel signal (``ctx.signal``) is an error; nothing
from aiohttp escapes.

With ``builtins={"private_network": False}`` every address the request would reach — a literal
IP in the URL, every address a host name resolves to, the same for each redirect — must be
public (see `_netguard`); anything else is refused before a byte is sent. By default (the
contract's behaviour) loopback and private addresses are allowed.

Each call uses its own short-lived ``aiohttp`` session without cookies or proxy settings from
the environment; aiohttp is imported on the first call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from ..._types import JSONSchema, Tool, ToolContext, ToolResult
from ._args import number_arg, optional_text_arg, text_arg
from ._html import html_to_markdown, html_to_text
from ._options import BuiltinOptions
from ._output import BuiltinError, builtin_tool

if TYPE_CHECKING:
    import aiohttp
    from yarl import URL

    from ._netguard import AddressPolicy

__all__ = ["MAX_BODY_BYTES", "WEBFETCH_SCHEMA", "webfetch_tool"]

Format = Literal["markdown", "text", "html"]

DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 120.0
MAX_BODY_BYTES = 5 * 1024 * 1024
MAX_REDIRECTS = 10
_FORMATS: tuple[Format, ...] = ("markdown", "text", "html")
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_ACCEPT: dict[Format, str] = {
    "markdown": "text/markdown;q=1.0, text/html;q=0.9, text/plain;q=0.8, */*;q=0.1",
    "text": "text/plain;q=1.0, text/html;q=0.9, */*;q=0.1",
    "html": "text/html;q=1.0, application/xhtml+xml;q=0.9, */*;q=0.1",
}
_USER_AGENT = "toolnexus-webfetch/1"

WEBFETCH_SCHEMA: JSONSchema = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "description": "The http(s) URL to fetch"},
        "format": {
            "type": "string",
            "enum": ["text", "markdown", "html"],
            "description": "How to return the content (default markdown)",
        },
        "timeout": {"type": "number", "description": "Timeout in seconds (default 30)"},
    },
    "required": ["url"],
    "additionalProperties": False,
}

_DESCRIPTION = (
    "Fetch a URL with HTTP GET and return its content as markdown (default), plain text or "
    "raw html. Non-2xx responses are errors."
)


def webfetch_tool(options: BuiltinOptions, *, policy: AddressPolicy | None = None) -> Tool:
    """The ``webfetch`` built-in under ``options``.

    Args:
        options: the parsed built-in options; ``private_network=False`` guards addresses.
        policy: which addresses may be reached when guarded (default: `is_public_address`).
            A test or a host with its own rules can pass another.
    """
    guarded = not options.private_network

    async def run(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        url = text_arg(args, "url")
        fmt = _format(optional_text_arg(args, "format"))
        timeout = min(number_arg(args, "timeout", DEFAULT_TIMEOUT_S), MAX_TIMEOUT_S)
        fetch = _Fetch(url, fmt, timeout, _policy(policy) if guarded else None)
        stop = ctx.signal if ctx is not None else None
        return await _until_stopped(fetch.run(), stop)

    return builtin_tool(
        "webfetch",
        _DESCRIPTION,
        WEBFETCH_SCHEMA,
        run,
        max_output_bytes=options.max_output_bytes,
    )


def _policy(policy: AddressPolicy | None) -> AddressPolicy:
    if policy is not None:
        return policy
    from ._netguard import is_public_address

    return is_public_address


def _format(value: str | None) -> Format:
    if value is None:
        return "markdown"
    for known in _FORMATS:
        if value == known:
            return known
    raise BuiltinError(f"format must be one of text, markdown, html (got {value!r})")


async def _until_stopped(work: Awaitable[ToolResult], stop: asyncio.Event | None) -> ToolResult:
    """``work``'s result, or an error result as soon as ``stop`` is set (``work`` is
    cancelled, which aborts the request)."""
    task = asyncio.ensure_future(work)
    if stop is None:
        return await task
    if stop.is_set():
        task.cancel()
        raise BuiltinError("cancelled")
    stopper = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise BuiltinError("cancelled")
    finally:
        stopper.cancel()
        if not task.done():
            task.cancel()


class _Fetch:
    """One fetch: the request, its redirects, the address checks and the reply's rendering."""

    def __init__(self, url: str, fmt: Format, timeout: float, policy: AddressPolicy | None) -> None:
        self.url: str = url
        self.fmt: Format = fmt
        self.timeout: float = timeout
        self.policy: AddressPolicy | None = policy

    async def run(self) -> ToolResult:
        import aiohttp

        from ._netguard import GuardedResolver

        resolver = GuardedResolver(self.policy) if self.policy is not None else None
        connector = aiohttp.TCPConnector(resolver=resolver) if resolver is not None else None
        session = aiohttp.ClientSession(
            connector=connector,
            cookie_jar=aiohttp.DummyCookieJar(),
            trust_env=False,
            timeout=aiohttp.ClientTimeout(total=self.timeout),
        )
        try:
            async with session:
                return await self._follow(session)
        except BuiltinError:
            raise
        except TimeoutError:
            raise BuiltinError(f"timed out after {self.timeout:g}s fetching {self.url}") from None
        except Exception as exc:
            if resolver is not None and resolver.refused is not None:
                refused = resolver.refused
                raise BuiltinError(
                    f"refused: {refused.host} resolves to {refused.address}, which is not a "
                    "public address (private_network is off)"
                ) from None
            raise BuiltinError(f"request failed: {_reason(exc)}") from None

    async def _follow(self, session: aiohttp.ClientSession) -> ToolResult:
        from yarl import URL

        url = self._checked(URL(self.url))
        for _ in range(MAX_REDIRECTS + 1):
            async with session.get(
                url,
                allow_redirects=False,
                headers={"Accept": _ACCEPT[self.fmt], "User-Agent": _USER_AGENT},
            ) as response:
                location = response.headers.get("Location")
                if response.status in _REDIRECTS and location:
                    url = self._checked(response.url.join(URL(location)))
                    continue
                metadata: dict[str, Any] = {"status": response.status, "url": str(response.url)}
                if not 200 <= response.status < 300:
                    return ToolResult(f"HTTP {response.status}", True, metadata)
                body = await _read_capped(response.content.read, response.content_length)
                text = _decode(body, response.charset)
                metadata["format"] = self.fmt
                return ToolResult(self._render(text, response.content_type), False, metadata)
        raise BuiltinError(f"too many redirects (more than {MAX_REDIRECTS})")

    def _checked(self, url: URL) -> URL:
        """``url`` if its scheme is http(s) and, when guarded, a literal IP host is allowed."""
        if url.scheme not in ("http", "https") or not url.host:
            raise BuiltinError(f"only http and https URLs can be fetched: {url}")
        if self.policy is not None:
            from ._netguard import parse_ip

            ip = parse_ip(url.host)
            if ip is not None and not self.policy(ip):
                raise BuiltinError(
                    f"refused: {url.host} is not a public address (private_network is off)"
                )
        return url

    def _render(self, text: str, content_type: str) -> str:
        if self.fmt == "html" or not _is_html(content_type, text):
            return text
        return html_to_markdown(text) if self.fmt == "markdown" else html_to_text(text)


async def _read_capped(read: Callable[[int], Awaitable[bytes]], length: int | None) -> bytes:
    if length is not None and length > MAX_BODY_BYTES:
        raise BuiltinError(f"response too large ({length} bytes; the limit is {MAX_BODY_BYTES})")
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise BuiltinError(f"response too large (over {MAX_BODY_BYTES} bytes)")
        chunks.append(chunk)


def _is_html(content_type: str, text: str) -> bool:
    if "html" in content_type.lower():
        return True
    if content_type and content_type != "application/octet-stream":
        return False
    start = text.lstrip()[:15].lower()
    return start.startswith(("<!doctype html", "<html"))


def _decode(raw: bytes, charset: str | None) -> str:
    try:
        return raw.decode(charset or "utf-8", errors="replace")
    except LookupError:  # an unknown charset name from the server
        return raw.decode("utf-8", errors="replace")


def _reason(exc: Exception) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
