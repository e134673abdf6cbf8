"""Reading ``mcp.json``: the MCP server map, checked and normalised.

The format is a superset of the Claude-desktop, VS Code and opencode files. Servers sit under
a ``mcpServers``, ``servers`` or ``mcp`` key, or the file is the server map itself (then the
sibling keys ``builtins``, ``agents``, ``a2a`` and ``mcpServer`` are reserved, never servers)::

    {"mcpServers": {
        "files": {"command": ["npx", "-y", "@mcp/fs", "/tmp"], "timeout": 10000},
        "search": {"url": "https://mcp.example/mcp",
                   "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"},
                   "tools": {"delete_index": false}}},
     "builtins": {"bash": false}}

Parsing is pure: nothing connects and no ``${ENV}`` is expanded here. Header values (and
``environment`` and ``command`` values) are expanded at connect time and never logged.

Mistakes fail loudly: an unknown top-level key beside a wrapper, or a key that is no server but
is close to a known one (``"mcpServer"`` holding servers, ``"mcp_servers"``), is a `UsageError`
naming the key and the likely intended one. Read from a file, relative ``cwd``, ``command`` and
argument paths are the file's folder's (see `_anchored`); ``"currentPython": true`` makes a
``python``/``python3`` command the running interpreter.
"""

from __future__ import annotations

import copy
import difflib
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeAlias, TypeVar, cast

from .._env import expand_env_headers
from ..errors import UsageError

__all__ = [
    "DEFAULT_TIMEOUT",
    "DEFAULT_TIMEOUT_MS",
    "MAX_LIST_PAGES",
    "McpConfig",
    "McpStatus",
    "ServerConfig",
    "ToolInfo",
    "apply_tools_filter",
    "expand_env_headers",
    "is_enabled",
    "is_remote",
    "parse_mcp_config",
]

log = logging.getLogger("toolnexus")

DEFAULT_TIMEOUT_MS = 30000
"""Milliseconds each phase (connect, initialize, tools/list) and each idle call may take, when a
server's config gives no ``timeout`` (config values are in milliseconds)."""

DEFAULT_TIMEOUT = DEFAULT_TIMEOUT_MS / 1000
"""The same default in seconds (``30.0``), under the toolnexus package's name."""

MAX_LIST_PAGES = 1000
"""``tools/list`` pages read at most (a server that paginates forever cannot hang a load)."""

McpStatus: TypeAlias = Literal["connected", "disabled", "failed"]

_WRAPPERS = ("mcpServers", "servers", "mcp")
_RESERVED = frozenset({"builtins", "agents", "a2a", "mcpServer"})
_IGNORED = frozenset({"$schema", "inputs"})  # JSON Schema pointer; VS Code's input prompts
_KNOWN = (*_WRAPPERS, *sorted(_RESERVED))
_LOCAL_TYPES = frozenset({"local", "stdio"})
_REMOTE_TYPES = frozenset(
    {"remote", "http", "streamable-http", "streamable_http", "streamableHttp"}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerConfig:
    """One MCP server, normalised.

    Attributes:
        name: the key in the server map (tool names are prefixed with it, sanitized).
        type: ``local`` (a stdio child process) or ``remote`` (streamable HTTP, SSE fallback).
        command: the executable and its arguments (local).
        environment: extra variables for the child, over the process environment.
        cwd: the child's working directory.
        enabled: ``False`` when the file says ``disabled: true`` or ``enabled: false``.
        timeout: milliseconds per phase and per idle call.
        url: the endpoint (remote).
        headers: sent with every request; values may name ``${ENV}`` variables.
        tools: ``{original tool name: bool}`` allowlist / drop-list (see `apply_tools_filter`).
        sse: connect with the legacy SSE transport directly (``"type": "sse"``).
        elicitation: ``"inline"`` (default): the elicitation capability is advertised only
            with a ``wait_for``, which answers inline; ``"halt"`` (``"elicitation": "halt"``):
            it is advertised without one too, and a server's ``elicitation/create`` halts the
            run durably while the call waits in the live session (`toolnexus.tools.mcp_held`).
    """

    name: str
    type: Literal["local", "remote"]
    command: tuple[str, ...] = ()
    environment: Mapping[str, str] = field(default_factory=lambda: {})
    cwd: str | None = None
    enabled: bool = True
    timeout: int = DEFAULT_TIMEOUT_MS
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=lambda: {})
    tools: Mapping[str, bool] | None = None
    sse: bool = False
    elicitation: Literal["inline", "halt"] = "inline"


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class McpConfig(Mapping[str, dict[str, Any]]):
    """A parsed ``mcp.json``: the servers in file order and the top-level ``builtins`` key.

    It also reads as a read-only ``Mapping`` of server name → the server's dict *as written*
    (wrappers and reserved keys stripped), equal to such a dict, as the toolnexus package's
    ``parse_mcp_config`` returns: ``cfg["files"]["command"]``, ``dict(cfg)``, ``"files" in cfg``.
    """

    servers: tuple[ServerConfig, ...] = ()
    builtins: Any = None
    raw: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: {})
    """The server dicts as written, by name (filled by `parse_mcp_config`)."""

    def server(self, name: str) -> ServerConfig | None:
        """The server called ``name``, or ``None``."""
        return next((s for s in self.servers if s.name == name), None)

    def __getitem__(self, name: str) -> dict[str, Any]:
        written = self.raw.get(name)
        if written is not None:
            return copy.deepcopy(dict(written))
        server = self.server(name)
        if server is None:
            raise KeyError(name)
        return _as_written(server)

    def __iter__(self) -> Iterator[str]:
        return iter([s.name for s in self.servers])

    def __len__(self) -> int:
        return len(self.servers)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, McpConfig):
            return (self.servers, self.builtins, dict(self)) == (
                other.servers,
                other.builtins,
                dict(other),
            )
        if isinstance(other, Mapping):
            return dict(self) == dict(cast(Mapping[Any, Any], other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]


def _as_written(server: ServerConfig) -> dict[str, Any]:
    """A server dict for a `ServerConfig` built in code (no file text to give back)."""
    out: dict[str, Any] = {"type": server.type}
    if server.command:
        out["command"] = list(server.command)
    if server.url is not None:
        out["url"] = server.url
    if server.environment:
        out["environment"] = dict(server.environment)
    if server.cwd is not None:
        out["cwd"] = server.cwd
    if not server.enabled:
        out["enabled"] = False
    if server.timeout != DEFAULT_TIMEOUT_MS:
        out["timeout"] = server.timeout
    if server.headers:
        out["headers"] = dict(server.headers)
    if server.tools is not None:
        out["tools"] = dict(server.tools)
    if server.elicitation != "inline":
        out["elicitation"] = server.elicitation
    return out


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """A tool as the server lists it, under its original name: ``ToolInfo(name, description,
    input_schema)``, positionally as in the toolnexus package, or by keyword."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})


class _Named(Protocol):
    @property
    def name(self) -> str: ...


_N = TypeVar("_N", bound=_Named)
_Fail = Callable[[str], UsageError]


def is_enabled(server: ServerConfig | Mapping[str, Any]) -> bool:
    """False when the server is switched off (``disabled: true`` wins over ``enabled``).

    Takes a `ServerConfig` or a plain server dict: a dict is enabled unless ``disabled`` is
    ``True`` or ``enabled`` is ``False``.
    """
    if isinstance(server, ServerConfig):
        return server.enabled
    return server.get("disabled") is not True and server.get("enabled") is not False


def is_remote(server: ServerConfig | Mapping[str, Any]) -> bool:
    """True for a server reached over HTTP.

    Takes a `ServerConfig` or a plain server dict: a dict is remote when its ``type`` is
    ``"remote"``, local when it is ``"local"``, and otherwise remote iff ``url`` is a string.
    """
    if isinstance(server, ServerConfig):
        return server.type == "remote"
    kind = server.get("type")
    if kind == "remote":
        return True
    if kind == "local":
        return False
    return isinstance(server.get("url"), str)


def apply_tools_filter(
    tools: Sequence[_N], allow: Mapping[str, bool] | None, *, server: str = ""
) -> list[_N]:
    """Keep the tools a server's ``tools`` map lets through, by ORIGINAL name.

    ``None`` or ``{}`` keeps everything; one ``true`` entry makes the map an allowlist; only
    ``false`` entries make it a drop-list. Names the server does not offer are ignored, with one
    warning per call.

    Example:
        >>> keep = apply_tools_filter([ToolInfo(name="a"), ToolInfo(name="b")], {"b": False})
        >>> [t.name for t in keep]
        ['a']
    """
    if not allow:
        return list(tools)
    offered = {t.name for t in tools}
    unknown = sorted(name for name in allow if name not in offered)
    if unknown:
        log.warning(
            "toolnexus: MCP server %r has no tool named %s (ignored in its tools filter)",
            server,
            ", ".join(repr(n) for n in unknown),
        )
    if any(allow.values()):
        return [t for t in tools if allow.get(t.name) is True]
    return [t for t in tools if allow.get(t.name, True)]


def parse_mcp_config(source: str | os.PathLike[str] | Mapping[str, Any] | McpConfig) -> McpConfig:
    """Parse an ``mcp.json`` path, its parsed object, or pass an `McpConfig` through.

    Raises:
        UsageError: the file is missing or not JSON, or a server entry is malformed (the
            message names the server and the problem).

    Example:
        >>> cfg = parse_mcp_config({"mcpServers": {"fs": {"command": "npx", "args": ["fs"]}}})
        >>> cfg.servers[0].command
        ('npx', 'fs')
    """
    if isinstance(source, McpConfig):
        return source
    if isinstance(source, Mapping):
        return _parse_object(source, "mcp config", None)
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"mcp config {path}: cannot read ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"mcp config {path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    if not isinstance(data, dict):
        raise UsageError(f"mcp config {path}: the top level must be a JSON object")
    base = path.resolve().parent
    return _parse_object(cast(dict[str, Any], data), f"mcp config {path}", base)


def _suggest(key: str, value: Any = None) -> str:
    """`` (did you mean 'mcpServers'?)`` for a key close to a known top-level key (a wrapper
    first when ``value`` is a map of servers)."""
    candidates: Sequence[str] = _WRAPPERS if _is_server_map(value) else _KNOWN
    folded = {k.lower().replace("_", "").replace("-", ""): k for k in candidates}
    exact = folded.get(key.lower().replace("_", "").replace("-", ""))
    if exact is None and candidates is _WRAPPERS:
        exact = folded.get(key.lower().replace("_", "").replace("-", "") + "s")
    if exact is not None and exact != key:
        return f" (did you mean {exact!r}?)"
    close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close and close[0] != key else ""


def _check_top_level(data: Mapping[str, Any], where: str, wrapped: bool) -> None:
    """Unknown top-level keys are errors next to a wrapper; in a bare server map a key that
    is no server but looks like a known key is one too; so is a server map under the
    reserved ``mcpServer`` key (a typo for ``mcpServers``) when no server was found."""
    for key, value in data.items():
        if key in _WRAPPERS or key in _RESERVED or key in _IGNORED:
            continue
        hint = _suggest(key, value)
        if wrapped:
            known = ", ".join(repr(k) for k in _KNOWN)
            raise UsageError(f"{where}: unknown top-level key {key!r}{hint} (known: {known})")
        if hint and not _looks_like_server(value):
            raise UsageError(f"{where}: top-level key {key!r} is not a server{hint}")
    singular = data.get("mcpServer")
    if not wrapped and _is_server_map(singular) and not _servers_in(data):
        raise UsageError(
            f"{where}: 'mcpServer' holds servers, but it is the reserved key of the MCP "
            "server toolnexus serves (did you mean 'mcpServers'?)"
        )


def _is_server_map(value: Any) -> bool:
    """A non-empty object whose every value looks like a server entry."""
    if not isinstance(value, dict) or not value:
        return False
    return all(_looks_like_server(v) for v in cast(dict[str, Any], value).values())


def _servers_in(data: Mapping[str, Any]) -> bool:
    return any(k not in _RESERVED and k not in _IGNORED for k in data)


def _parse_object(data: Mapping[str, Any], where: str, base: Path | None) -> McpConfig:
    servers: dict[str, Any] = {}
    wrapped = False
    for key in _WRAPPERS:
        value = data.get(key)
        if key not in data or (key == "mcp" and _looks_like_server(value)):
            continue
        if not isinstance(value, dict):
            raise UsageError(f"{where}: {key!r} must be an object mapping names to servers")
        wrapped = True
        for name, entry in cast(dict[str, Any], value).items():
            servers.setdefault(name, entry)
    _check_top_level(data, where, wrapped)
    if not wrapped:
        servers = {k: v for k, v in data.items() if k not in _RESERVED and k not in _IGNORED}
    parsed = tuple(_parse_server(str(name), entry, where, base) for name, entry in servers.items())
    return McpConfig(servers=parsed, builtins=data.get("builtins"), raw=copy.deepcopy(servers))


def _looks_like_server(value: Any) -> bool:
    return isinstance(value, dict) and ("command" in value or "url" in value)


def _parse_server(name: str, entry: Any, where: str, base: Path | None) -> ServerConfig:
    def fail(problem: str) -> UsageError:
        return UsageError(f'{where}: server "{name}": {problem}')

    if not isinstance(entry, dict):
        raise fail(f"must be an object, got {_kind(entry)}")
    raw = cast(dict[str, Any], entry)
    command = _command(raw, fail)
    url = _optional(raw, "url", str, fail)
    kind = _server_type(raw, command, url, fail)
    if kind == "local" and not command:
        raise fail('a local server needs a "command"')
    if kind == "remote":
        if not url:
            raise fail('a remote server needs a "url"')
        if not url.startswith(("http://", "https://")):
            raise fail('"url" must start with http:// or https://')
    disabled = _optional(raw, "disabled", bool, fail)
    enabled = _optional(raw, "enabled", bool, fail)
    cwd = _optional(raw, "cwd", str, fail)
    if _optional(raw, "currentPython", bool, fail) and command and command[0] in _PYTHONS:
        command = (sys.executable, *command[1:])
    if base is not None:
        command, cwd = _anchored(command, cwd, base)
    return ServerConfig(
        name=name,
        type=kind,
        command=command,
        environment=_string_map(raw, ("environment", "env"), fail),
        cwd=cwd,
        enabled=not disabled and enabled is not False,
        timeout=_timeout(raw, fail),
        url=url,
        headers=_string_map(raw, ("headers",), fail),
        tools=_tools_map(raw, fail),
        sse=str(raw.get("type", "")).lower() == "sse",
        elicitation=_elicitation(raw, fail),
    )


def _elicitation(raw: Mapping[str, Any], fail: _Fail) -> Literal["inline", "halt"]:
    value = raw.get("elicitation", "inline")
    if value not in ("inline", "halt"):
        raise fail(f'"elicitation" must be "inline" or "halt", got {value!r}')
    return value


_PYTHONS = frozenset({"python", "python3"})


def _anchored(
    command: tuple[str, ...], cwd: str | None, base: Path
) -> tuple[tuple[str, ...], str | None]:
    """Relative paths of a file's server resolved against the file's folder ``base``.

    ``cwd`` when relative; ``command[0]`` when it is a relative path (has a ``/``; a bare name
    is looked up on ``PATH``); each argument that is a relative path naming something that
    exists under the server's working directory (or ``base`` without one). Options (``-x``)
    and anything that exists nowhere stay as written.
    """
    if cwd is not None and not os.path.isabs(cwd) and "${" not in cwd:
        cwd = str((base / cwd).resolve())
    if not command:
        return command, cwd
    program, *args = command
    if "/" in program and not os.path.isabs(program) and "${" not in program:
        program = str((base / program).resolve())
    root = Path(cwd) if cwd is not None else base
    anchored = [
        str((root / arg).resolve())
        if arg
        and not arg.startswith("-")
        and not os.path.isabs(arg)
        and "${" not in arg
        and (root / arg).exists()
        else arg
        for arg in args
    ]
    return (program, *anchored), cwd


def _server_type(
    raw: Mapping[str, Any], command: tuple[str, ...], url: str | None, fail: _Fail
) -> Literal["local", "remote"]:
    declared = raw.get("type")
    if declared is None:
        if url is not None:
            return "remote"
        if command:
            return "local"
        raise fail('needs a "command" (local) or a "url" (remote)')
    if not isinstance(declared, str):
        raise fail(f'"type" must be a string, got {_kind(declared)}')
    if declared in _LOCAL_TYPES:
        return "local"
    if declared in _REMOTE_TYPES or declared.lower() == "sse":
        return "remote"
    raise fail(f'unknown "type" {declared!r} (expected "local" or "remote")')


def _command(raw: Mapping[str, Any], fail: _Fail) -> tuple[str, ...]:
    command = raw.get("command")
    args = raw.get("args")
    if args is not None and not _is_string_list(args):
        raise fail('"args" must be an array of strings')
    extra = tuple(cast(list[str], args or []))
    if command is None:
        if extra:
            raise fail('"args" given without a "command"')
        return ()
    if isinstance(command, str):
        if not command.strip():
            raise fail('"command" must not be empty')
        return (command, *extra)
    if not _is_string_list(command) or not command:
        raise fail('"command" must be a non-empty array of strings (or a string with "args")')
    parts = cast(list[str], command)
    if not parts[0].strip():
        raise fail('"command" must not start with an empty string')
    return (*parts, *extra)


def _timeout(raw: Mapping[str, Any], fail: _Fail) -> int:
    value = raw.get("timeout")
    if value is None:
        return DEFAULT_TIMEOUT_MS
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise fail(f'"timeout" must be a positive number of milliseconds, got {value!r}')
    if value == float("inf"):
        raise fail('"timeout" must be finite')
    return max(1, int(value))


def _string_map(raw: Mapping[str, Any], keys: tuple[str, ...], fail: _Fail) -> dict[str, str]:
    for key in keys:
        value = raw.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise fail(f'"{key}" must be an object of strings, got {_kind(value)}')
        out: dict[str, str] = {}
        for k, v in cast(dict[str, Any], value).items():
            if isinstance(v, bool) or not isinstance(v, str | int | float):
                raise fail(f'"{key}.{k}" must be a string, got {_kind(v)}')
            out[str(k)] = str(v)
        return out
    return {}


def _tools_map(raw: Mapping[str, Any], fail: _Fail) -> dict[str, bool] | None:
    value = raw.get("tools")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise fail(f'"tools" must be an object of booleans, got {_kind(value)}')
    out: dict[str, bool] = {}
    for k, v in cast(dict[str, Any], value).items():
        if not isinstance(v, bool):
            raise fail(f'"tools.{k}" must be true or false, got {_kind(v)}')
        out[str(k)] = v
    return out


_T = TypeVar("_T")


def _optional(raw: Mapping[str, Any], key: str, kind: type[_T], fail: _Fail) -> _T | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, kind):
        raise fail(f'"{key}" must be a {_TYPE_NAMES.get(kind, kind.__name__)}, got {_kind(value)}')
    return value


_TYPE_NAMES: dict[type[Any], str] = {str: "string", bool: "boolean"}


def _is_string_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in cast(list[Any], value))


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
