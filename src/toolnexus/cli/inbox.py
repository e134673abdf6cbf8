"""``toolnexus inbox --store URL --users FILE``: the approvals inbox on its own server."""

from __future__ import annotations

import asyncio
import signal

import typer

from . import codes
from .stores import open_store

__all__ = ["read_secret", "run_inbox"]


def read_secret(path: str | None) -> bytes | None:
    """The secret kept in ``path`` (surrounding whitespace dropped): no longer used by the
    inbox, whose sessions are kept in the store, and still checked so that a deployment
    that names one keeps starting the same way.

    Raises:
        UsageError: the file cannot be read or is empty.
    """
    from pathlib import Path

    from ..errors import UsageError

    if path is None:
        return None
    try:
        secret = Path(path).read_bytes().strip()
    except OSError as exc:
        raise UsageError(f"cannot read --secret-file {path!r}: {exc}") from exc
    if not secret:
        raise UsageError(f"--secret-file {path!r} is empty")
    return secret


async def run_inbox(
    store_url: str,
    users: str,
    host: str,
    port: int,
    *,
    webhook: str | None = None,
    poll_interval: float = 1.0,
    secret: bytes | None = None,
    public_url: str | None = None,
    allowed_hosts: list[str] | None = None,
    allowed_origins: list[str] | None = None,
    max_failed_sign_ins: int = 10,
    trusted_proxies: tuple[str, ...] = (),
) -> int:
    """Serve the inbox over the store at ``store_url`` until SIGINT/SIGTERM.

    The address it listens on is one of its allowed hosts (besides loopback, ``public_url``'s
    and ``allowed_hosts``), unless it is a wildcard (``0.0.0.0``, ``::``).
    """
    from ..inbox import inbox_app
    from ..security import check_proxies
    from ..serve.server import WILDCARDS, start

    hosts = list(allowed_hosts or ())
    if host not in WILDCARDS:
        hosts.append(host)

    proxies = check_proxies(trusted_proxies)

    async with open_store(store_url, create=True) as store:
        app = inbox_app(
            store,
            users=users,
            webhook=webhook,
            poll_interval=poll_interval,
            secret=secret,
            public_url=public_url,
            allowed_hosts=hosts,
            allowed_origins=allowed_origins,
            max_failed_sign_ins=max_failed_sign_ins,
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        host_part = f"[{host}]" if ":" in host else host
        served = await start(
            app, f"{host_part}:{port}", on_stop=app.aclose, trusted_proxies=proxies
        )
        typer.echo(f"inbox: {served.url}/", err=False)
        try:
            await app.start()
            await stop.wait()
        finally:
            await served.stop()
    return codes.OK
