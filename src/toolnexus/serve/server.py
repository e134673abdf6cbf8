"""Running an ASGI app on uvicorn in the host's event loop: `start` → `ServeHandle`.

The listening socket is bound here, before uvicorn starts, so the bound port (``:0`` picks a free
one) is known at once and a client that connects before uvicorn's first accept simply waits in
the backlog: no polling for "is it up yet".
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from types import TracebackType
from typing import Any

from .._extras import missing_extra
from ..errors import UsageError
from ..security import ASGIApp, check_proxies

__all__ = [
    "WILDCARDS",
    "ServeHandle",
    "check_exposure",
    "exposure_warning",
    "is_loopback",
    "parse_addr",
    "start",
]

WILDCARDS = ("0.0.0.0", "::")
"""Bind addresses that mean every interface."""


def parse_addr(addr: str) -> tuple[str, int]:
    """``host:port`` split on the last ``:`` (an empty host is ``127.0.0.1``; port 0 picks
    a free port). ``[::1]:8080`` is accepted for IPv6."""
    if not isinstance(addr, str) or ":" not in addr:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UsageError(f'addr must be "host:port", got {addr!r}')
    host, _, port_text = addr.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        raise UsageError(f'addr must be "host:port" with a numeric port, got {addr!r}') from None
    if not 0 <= port <= 65535:
        raise UsageError(f"port out of range in {addr!r}")
    return host, port


def is_loopback(host: str) -> bool:
    """Whether ``host`` (as `parse_addr` returns it) reaches this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(addr: str, *, tokenless: bool, insecure: bool) -> bool:
    """The rule for serving routes that run tools without a bearer token → whether to warn
    (`exposure_warning`) once listening.

    On loopback it is allowed, with a warning: only this machine can reach it — but any program
    or user on it. Anywhere else it is refused, unless the host opts out with ``insecure``
    (something in front of it, a proxy or a firewall, does the guarding): a warning then too.

    Args:
        addr: the ``host:port`` to listen on.
        tokenless: the app serves A2A or MCP routes without a token.
        insecure: the host's explicit opt-out.

    Raises:
        UsageError: a non-loopback address without a token and without ``insecure``.
    """
    if not tokenless:
        return False
    host, _ = parse_addr(addr)
    if not is_loopback(host) and not insecure:
        raise UsageError(
            f"refusing to serve on {addr!r} without a token: anyone who can reach that "
            "address could run the served tools. Pass token= (--token), listen on "
            "127.0.0.1, or, if something in front of it (a proxy, a firewall) guards it, "
            "opt out with insecure=True (--insecure)"
        )
    return True


def exposure_warning(addr: str, url: str) -> str:
    """The line logged when serving ``addr`` (now at ``url``) without a token."""
    host, _ = parse_addr(addr)
    if is_loopback(host):
        return (
            f"toolnexus: serving {url} WITHOUT A TOKEN: any program or user on this machine "
            "can run its tools (pass token= / --token to require one)"
        )
    shown = f"[{host}]" if ":" in host else host
    return (
        f"toolnexus: serving on {shown}:{url.rsplit(':', 1)[1]} WITHOUT A TOKEN "
        f"(insecure=True): anyone who can reach this address can run its tools ({url})"
    )


class ServeHandle:
    """A running server: its ``url``, and `stop` (``close`` is an alias).

    Also an async context manager: ``async with await toolkit.serve(":0") as served: ...``.
    """

    def __init__(
        self,
        url: str,
        server: Any,
        task: asyncio.Task[None],
        on_stop: Callable[[], Awaitable[None]] | None = None,
        app: ASGIApp | None = None,
    ) -> None:
        self.url = url
        """``http://<host>:<bound port>`` (``0.0.0.0`` / ``::`` shown as ``127.0.0.1``)."""
        self.app = app
        """The ASGI app being served (what `toolnexus.serve.serve_app` builds)."""
        self._server = server
        self._task = task
        self._on_stop = on_stop
        self._stopped = False

    async def stop(self) -> None:
        """Stop accepting, let requests in flight end (streams get two seconds), then release
        what the server holds (its task store). Idempotent."""
        if self._stopped:
            return
        self._stopped = True
        self._server.should_exit = True
        try:
            await asyncio.wait((self._task,))
        finally:
            if self._on_stop is not None:
                await self._on_stop()
        if not self._task.cancelled() and self._task.exception() is not None:
            raise self._task.exception()  # pyright: ignore[reportGeneralTypeIssues]

    close = stop

    async def __aenter__(self) -> ServeHandle:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def __repr__(self) -> str:
        return f"ServeHandle(url={self.url!r})"


async def start(
    app: ASGIApp,
    addr: str,
    *,
    on_stop: Callable[[], Awaitable[None]] | None = None,
    trusted_proxies: Iterable[str] = (),
) -> ServeHandle:
    """Serve ``app`` on ``addr`` with uvicorn in this event loop.

    ``trusted_proxies`` (addresses or networks, see `toolnexus.security.check_proxies`) are
    the peers whose ``X-Forwarded-For`` and ``X-Forwarded-Proto`` are applied; none by
    default, loopback included (uvicorn's own default believes 127.0.0.1).
    """
    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover - the extra is missing
        raise missing_extra("serving needs uvicorn", "serve") from exc
    host, port = parse_addr(addr)
    proxies = check_proxies(trusted_proxies)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit it: without it a response written in two parts
        # (headers, then body) waits out the client's delayed ACK (~40 ms per request).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(1024)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {addr!r}: {exc}") from exc
    bound = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="auto",  # the MCP mount starts its session manager
        access_log=False,
        timeout_graceful_shutdown=2,
        server_header=False,
        proxy_headers=bool(proxies),
        forwarded_allow_ips=list(proxies) or None,
    )
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve(sockets=[sock]))

    async def release() -> None:
        with contextlib.suppress(OSError):
            sock.close()
        if on_stop is not None:
            await on_stop()

    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    if ":" in shown:
        shown = f"[{shown}]"
    return ServeHandle(f"http://{shown}:{bound}", server, task, release, app)
