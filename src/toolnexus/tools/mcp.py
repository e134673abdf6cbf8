"""The MCP tool source: every tool of every configured MCP server as a uniform `Tool`.

::

    async with await load_mcp("mcp.json", ask_human) as mcp:
        mcp.status              # {"files": "connected", "search": "failed"} (mcp.status() too)
        mcp.errors()            # {"search": "timed out after 30000 ms during initialize"}
        tools = mcp.tools       # files_read_file, files_list_directory, ...

Servers connect concurrently; one that fails (command not found, crash, refused connection,
timeout) is isolated as ``failed`` (with a ``[toolnexus] MCP server "<n>" failed: ...`` line on
stderr) and loading goes on. Tool names are
``sanitize(server) + "_" + sanitize(tool)``. With a ``wait_for``, the client advertises the
elicitation capability and servers' questions are answered inline; without one, a server that
asks through the 2026-07-28 input-required result suspends the run durably (see
`toolnexus.tools.mcp_call`). The ``mcp`` SDK is imported only when a server is loaded.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .._types import Tool, sanitize
from ..errors import RunCancelled, UsageError
from ..redaction import Redactor
from ..suspension import WaitFor
from .mcp_config import (
    DEFAULT_TIMEOUT,
    DEFAULT_TIMEOUT_MS,
    MAX_LIST_PAGES,
    McpConfig,
    McpStatus,
    ServerConfig,
    ToolInfo,
    apply_tools_filter,
    expand_env_headers,
    is_enabled,
    is_remote,
    parse_mcp_config,
)
from .mcp_elicit import MCP_EXTRA_HINT, answer_to_elicit_result, elicitation_to_request

if TYPE_CHECKING:
    from .mcp_session import ServerLink

__all__ = [
    "DEFAULT_TIMEOUT",
    "DEFAULT_TIMEOUT_MS",
    "MAX_LIST_PAGES",
    "McpConfig",
    "McpInventory",
    "McpLoadCancelled",
    "McpSource",
    "McpStatus",
    "McpStatusMap",
    "ServerConfig",
    "ServerInventory",
    "ToolInfo",
    "answer_to_elicit_result",
    "apply_tools_filter",
    "elicitation_to_request",
    "expand_env_headers",
    "is_enabled",
    "is_remote",
    "list_mcp_tools",
    "load_mcp",
    "load_mcp_with_context",
    "parse_mcp_config",
]

log = logging.getLogger("toolnexus")

ConfigSource = str | os.PathLike[str] | Mapping[str, Any] | McpConfig


class McpLoadCancelled(RunCancelled, asyncio.CancelledError):
    """The load's ``cancel`` fired: every started server was torn down.

    Both ours' `RunCancelled` and ``asyncio.CancelledError`` (what the toolnexus package
    raises), so either ``except`` clause catches it.
    """


class McpStatusMap(dict[str, McpStatus]):
    """``{server: "connected" | "disabled" | "failed"}`` that is also callable.

    The toolnexus package reads ``source.status["files"]``; ours called ``source.status()``.
    This snapshot serves both: calling it gives a fresh plain dict (live for an `McpSource`,
    where a server that dropped since reads ``failed``).
    """

    __slots__ = ("_live",)

    def __init__(self, live: Callable[[], Mapping[str, McpStatus]]) -> None:
        super().__init__(live())
        self._live = live

    def __call__(self) -> dict[str, McpStatus]:
        return dict(self._live())


class McpSource:
    """The loaded MCP servers: their tools, their status, and `close`.

    Use it as an async context manager (or call `close`): it owns child processes and
    connections until closed.
    """

    def __init__(
        self,
        config: McpConfig,
        links: list[ServerLink],
        tools: list[Tool],
        redactor: Redactor | None = None,
    ) -> None:
        self.config = config
        self.tools = tools
        self.redactor = redactor if redactor is not None else Redactor()
        """Every secret of the configured servers (see `toolnexus.redaction`)."""
        self._links = links
        self._closed = False

    @property
    def builtins(self) -> Any:
        """The config file's top-level ``builtins`` key (``None`` when absent)."""
        return self.config.builtins

    @property
    def status(self) -> McpStatusMap:
        """``{server: status}`` now; ``status()`` also works, read afresh (`McpStatusMap`)."""
        return McpStatusMap(self._live_status)

    def _live_status(self) -> dict[str, McpStatus]:
        return {link.name: link.status for link in self._links}

    def errors(self) -> dict[str, str]:
        """Why each failed server failed (secrets redacted)."""
        return {link.name: link.error for link in self._links if link.error is not None}

    async def close(self) -> None:
        """Disconnect every server and stop every child process tree. Idempotent."""
        if self._closed:
            return
        self._closed = True
        await asyncio.gather(*(link.close() for link in self._links))

    async def __aenter__(self) -> McpSource:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"McpSource(status={self._live_status()!r}, tools={len(self.tools)})"


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerInventory:
    """What one server offers: its unfiltered tools under their original names."""

    name: str
    status: McpStatus
    tools: tuple[ToolInfo, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class McpInventory:
    """`list_mcp_tools`'s answer.

    Attributes:
        tools: ``{server: [ToolInfo, ...]}`` for the **connected** servers only, unfiltered,
            under the tools' original names (the toolnexus package's shape).
        status: ``{server: status}`` for every configured server (file order); calling it
            (``inventory.status()``) gives a plain copy.
        servers: ours: one `ServerInventory` per configured server, with its error.
    """

    tools: dict[str, list[ToolInfo]] = field(default_factory=lambda: {})
    status: dict[str, McpStatus] = field(default_factory=lambda: {})
    servers: dict[str, ServerInventory] = field(default_factory=lambda: {})

    def __post_init__(self) -> None:
        if not isinstance(self.status, McpStatusMap):
            snapshot = dict(self.status)
            object.__setattr__(self, "status", McpStatusMap(lambda: snapshot))


async def load_mcp(
    input: ConfigSource,
    wait_for: WaitFor | None = None,
    *,
    cancel: asyncio.Event | None = None,
    redactor: Redactor | None = None,
    strict: bool = False,
) -> McpSource:
    """Connect to every enabled server and expose their tools.

    Args:
        input: a path to ``mcp.json``, its parsed object, or an `McpConfig`.
        wait_for: answers servers' elicitations inline; only then is the elicitation
            capability advertised.
        cancel: setting it aborts the whole load (every started server is closed).
        redactor: learns every server's secrets (``${ENV}`` references, credential headers);
            a new one when omitted (`McpSource.redactor`).
        strict: a server that fails (cannot start, crashes, refuses, times out) raises
            instead of being isolated as ``failed``.

    Raises:
        UsageError: the config is malformed; with ``strict``, a server failed (the message
            names each failed server and why).
        McpLoadCancelled: ``cancel`` was set before every server settled (a `RunCancelled`
            and an ``asyncio.CancelledError``).
        ImportError: the ``mcp`` extra is not installed.
    """
    parsed = parse_mcp_config(input)
    secrets = redactor if redactor is not None else Redactor()
    links = await _connect_all(parsed, wait_for, cancel, secrets)
    failed = [link for link in links if link.status == "failed"]
    if strict and failed:
        await asyncio.gather(*(link.close() for link in links))
        reasons = "; ".join(f"{link.name}: {link.error}" for link in failed)
        raise UsageError(f"MCP server(s) failed to start (strict): {reasons}")
    return McpSource(parsed, links, _tools(links, wait_for), secrets)


async def load_mcp_with_context(
    input: ConfigSource,
    wait_for: WaitFor | asyncio.Event | None = None,
    *,
    cancel: asyncio.Event | None = None,
) -> McpSource:
    """`load_mcp` under the name the other ports use, in the package's order.

    Ours used to take the cancel signal second; a second positional that is an
    ``asyncio.Event`` is still read as ``cancel``.
    """
    if isinstance(wait_for, asyncio.Event):
        if cancel is not None:
            raise UsageError("load_mcp_with_context: cancel given twice")
        wait_for, cancel = None, wait_for
    return await load_mcp(input, wait_for, cancel=cancel)


async def list_mcp_tools(
    input: ConfigSource,
    *,
    cancel: asyncio.Event | None = None,
) -> McpInventory:
    """Connect to every enabled server, list its tools (unfiltered), disconnect.

    Failures are isolated per server, as in `load_mcp`. ``inventory.tools`` maps each
    connected server to its `ToolInfo` list (``input_schema`` normalised to an object schema
    with ``properties`` and ``additionalProperties: false``); ``inventory.status`` covers
    every configured server.
    """
    parsed = parse_mcp_config(input)
    links = await _connect_all(parsed, None, cancel, Redactor())
    try:
        listed = {link.name: [_listed(info) for info in link.tools] for link in links}
        return McpInventory(
            tools={link.name: listed[link.name] for link in links if link.status == "connected"},
            status={link.name: link.status for link in links},
            servers={
                link.name: ServerInventory(
                    name=link.name,
                    status=link.status,
                    tools=tuple(listed[link.name]),
                    error=link.error,
                )
                for link in links
            },
        )
    finally:
        await asyncio.gather(*(link.close() for link in links))


def _listed(info: ToolInfo) -> ToolInfo:
    """``info`` as the inventory shows it: an object schema that admits no extra keys."""
    schema = dict(info.input_schema)
    properties = schema.get("properties")
    schema.update(
        type="object",
        properties=properties if isinstance(properties, dict) else {},
        additionalProperties=False,
    )
    return ToolInfo(name=info.name, description=info.description or "", input_schema=schema)


async def _connect_all(
    config: McpConfig,
    wait_for: WaitFor | None,
    cancel: asyncio.Event | None,
    redactor: Redactor,
) -> list[ServerLink]:
    try:
        importlib.import_module("mcp")  # fail early, with the hint, without the extra

        from .mcp_session import ServerLink
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(MCP_EXTRA_HINT) from exc
    if cancel is not None and cancel.is_set():
        raise McpLoadCancelled("MCP loading cancelled")
    links = [ServerLink(server, wait_for=wait_for, redactor=redactor) for server in config.servers]
    try:
        ready = [link.start() for link in links if link.config.enabled]
        if ready:
            await _settle(ready, cancel)
    except BaseException:
        await asyncio.gather(*(link.close() for link in links))
        raise
    return links


async def _settle(ready: list[asyncio.Future[None]], cancel: asyncio.Event | None) -> None:
    everything = asyncio.gather(*ready)
    if cancel is None:
        await everything
        return
    stopper = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({everything, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
    if not everything.done():
        everything.cancel()
        everything.add_done_callback(_retrieve)
        raise McpLoadCancelled("MCP loading cancelled")


def _retrieve(done: asyncio.Future[Any]) -> None:
    """Mark a cancelled gather's outcome as seen (no "exception never retrieved" noise)."""
    if not done.cancelled():
        done.exception()


def _tools(links: list[ServerLink], wait_for: WaitFor | None) -> list[Tool]:
    from .mcp_call import McpToolRunner

    tools: list[Tool] = []
    seen: set[str] = set()
    for link in links:
        if link.status != "connected":
            continue
        prefix = sanitize(link.name)
        for info in apply_tools_filter(link.tools, link.config.tools, server=link.name):
            name = f"{prefix}_{sanitize(info.name)}"
            if name in seen:
                log.warning("toolnexus: MCP tool name %r appears twice; keeping the first", name)
                continue
            seen.add(name)
            tools.append(
                Tool(
                    name=name,
                    description=link.redact(info.description),
                    input_schema=link.redactor.value(_object_schema(info.input_schema)),
                    source="mcp",
                    execute=McpToolRunner(link, info.name, wait_for),
                    # a question held in the session must hear the decline too, or the
                    # server's call would wait on it until the session ends
                    handles_declines=link.halts,
                )
            )
    return tools


def _object_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The server's input schema, with ``"type": "object"`` filled in when missing."""
    if schema.get("type") is None:
        return {"type": "object", **schema}
    return schema
