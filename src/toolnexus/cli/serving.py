"""``toolnexus serve --app module:factory``: the host's toolkit on the network until interrupted.

The factory is the one ``toolnexus worker`` loads (``(client, toolkit)``, a list of tools being
taken as a toolkit of those tools). ``--a2a`` and ``--mcp`` turn on each profile with its
defaults; without them the toolkit's own ``a2a`` / ``mcpServer`` config keys decide.
``--inbox`` co-mounts the approvals inbox under ``/inbox``, over the client's run store.
``--token`` guards every route with one bearer token; ``--callers FILE`` with one token per
caller, each caller seeing only its own A2A tasks (`toolnexus.serve.callers`).

Once listening it prints one line on stdout, ``serving http://host:port (a2a, mcp, inbox)``,
so a script (or a test) reads the bound port when ``--port 0`` picked it. SIGINT and SIGTERM
stop it: requests in flight end, then the client is closed.

Without ``--token`` it serves on a loopback address only, with a warning on stderr; on another
address it refuses to start unless ``--insecure`` says something in front of it guards it.
``--allow-host`` / ``--allow-origin`` name the hosts and browser origins it answers besides
its own (`toolnexus.security.SiteGuard`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import signal
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import typer

from ..errors import UsageError
from . import codes
from .worker import load_app

__all__ = ["ServeOptions", "run_serve"]


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """What the command line asked for."""

    app: str
    a2a: bool = False
    mcp: bool = False
    inbox: bool = False
    users: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = None
    callers: str | None = None
    trusted_proxies: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()
    insecure: bool = False


def _profiles(toolkit: Any) -> Mapping[str, Any]:
    return getattr(toolkit, "profiles", None) or {}


async def _as_toolkit(tools: Any) -> Any:
    """A toolkit: as given, or one holding a list of tools (no built-ins)."""
    if isinstance(tools, Sequence) and not isinstance(tools, str):
        from ..toolkit import create_toolkit

        return await create_toolkit(extra_tools=list(tools), builtins=False)  # pyright: ignore[reportUnknownArgumentType]
    return tools


def serve_kwargs(options: ServeOptions, toolkit: Any) -> dict[str, Any]:
    """The keyword arguments of `toolnexus.serve.serve` for ``options``.

    Raises:
        UsageError: nothing would be served, ``--users`` without ``--inbox``, or both
            ``--token`` and ``--callers``.
    """
    if options.token is not None and options.callers is not None:
        raise UsageError("give --token (one caller) or --callers FILE (several), not both")
    if options.users is not None and not options.inbox:
        raise UsageError("--users applies only with --inbox")
    if options.inbox and options.users is None:
        raise UsageError("--inbox needs --users FILE (who may answer; see docs/inbox.md)")
    profiles = _profiles(toolkit)
    if not (options.a2a or options.mcp or options.inbox or profiles.get("a2a")) and not (
        profiles.get("mcpServer")
    ):
        raise UsageError(
            "nothing to serve: pass --a2a, --mcp or --inbox "
            "(or set a2a / mcpServer in the toolkit's config)"
        )
    kwargs: dict[str, Any] = {
        "token": options.token,
        "allowed_hosts": list(options.allow_hosts),
        "allowed_origins": list(options.allow_origins),
        "insecure": options.insecure,
    }
    if options.callers is not None:
        kwargs["callers"] = options.callers
    if options.trusted_proxies:
        kwargs["trusted_proxies"] = options.trusted_proxies
    if options.a2a:
        kwargs["a2a"] = True
    if options.mcp:
        from ..serve.mcp import MCPServeConfig

        kwargs["mcp"] = MCPServeConfig()  # serve_app's mcp=True is refused by MCPServeConfig.of
    if options.inbox:
        kwargs["inbox"] = {"users": options.users}
    return kwargs


def _served_parts(options: ServeOptions, toolkit: Any) -> str:
    profiles = _profiles(toolkit)
    parts = [
        name
        for name, on in (
            ("a2a", options.a2a or bool(profiles.get("a2a"))),
            ("mcp", options.mcp or bool(profiles.get("mcpServer"))),
            ("inbox at /inbox", options.inbox),
        )
        if on
    ]
    return ", ".join(parts)


class _Stderr(logging.Handler):
    """Warnings of the ``toolnexus`` loggers on the command's stderr, one line each."""

    def emit(self, record: logging.LogRecord) -> None:
        typer.echo(self.format(record), err=True)


@contextlib.contextmanager
def warnings_on_stderr() -> Generator[None]:
    """While the block runs, the ``toolnexus`` loggers' warnings reach stderr (the serving
    commands' "without a token" line among them), whatever the host's logging says."""
    logger = logging.getLogger("toolnexus")
    handler = _Stderr(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


async def run_serve(options: ServeOptions) -> int:
    """Serve until SIGINT / SIGTERM; the exit code."""
    with warnings_on_stderr():
        return await _serve(options)


async def _serve(options: ServeOptions) -> int:
    from ..serve.app import serve

    client, tools = await load_app(options.app)
    toolkit: Any = None
    try:
        async with client:
            toolkit = await _as_toolkit(tools)
            kwargs = serve_kwargs(options, toolkit)
            host = f"[{options.host}]" if ":" in options.host else options.host
            handle = await serve(toolkit, f"{host}:{options.port}", client=client, **kwargs)
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            async with handle:
                typer.echo(f"serving {handle.url} ({_served_parts(options, toolkit)})")
                await stop.wait()
            typer.echo("serve: stopped", err=True)
    finally:
        closing = getattr(toolkit if toolkit is not None else tools, "aclose", None)
        if callable(closing):
            closed: object = closing()
            if inspect.isawaitable(closed):
                await closed
    return codes.OK
