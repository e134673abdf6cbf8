"""The tool set: one list of uniform `Tool`s, rendered for any provider and run by name.

A `Toolkit` renders itself for any provider (`to_openai`, `to_anthropic`, `to_gemini`) and
executes calls by name, so it also serves a bring-your-own loop::

    async with await create_toolkit(extra_tools=[add]) as tk:
        schemas = tk.to_openai()
        result = await tk.execute("add", {"a": 1, "b": 2})

This is the tool set the client, the engine's callers and the served surfaces work with. The
toolkit users build (`toolnexus.toolkit`: `create_toolkit`, and `Toolkit.serve`) is this class
plus its conveniences, defined above the serving layer; every toolkit that code holds is an
instance of this one, so an ``isinstance`` check against it accepts both.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, cast
from urllib.parse import urlsplit

from ._compat import warn_stderr
from ._types import Tool, ToolContext, ToolResult
from .errors import UsageError
from .loop.checkpoint import tool_fingerprint
from .redaction import Redactor
from .suspension import WaitFor
from .tools.execute import invoke_tool, unknown_tool_result
from .tools.validation import validate_arguments

__all__ = [
    "BUILTIN_NAMES",
    "Closer",
    "ToolSet",
    "Toolkit",
    "check_tool",
    "guard_relay",
    "to_anthropic",
    "to_gemini",
    "to_openai",
    "tool_fingerprint",
]

log = logging.getLogger("toolnexus")
_JOINED_KEPT = 8
"""How many clients' joined redactors a toolkit keeps (`Toolkit.run_redactor`)."""

BUILTIN_NAMES: tuple[str, ...] = (
    "bash",
    "read",
    "write",
    "edit",
    "grep",
    "glob",
    "webfetch",
    "question",
    "apply_patch",
    "todowrite",
)
"""The ten built-in tool names, reserved even when built-ins are off (relay collision guard)."""

Closer = Callable[[], Awaitable[None]]


def to_openai(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """OpenAI function-calling declarations for ``tools``."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
            },
        }
        for t in tools
    ]


def to_anthropic(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """Anthropic tool declarations for ``tools``."""
    return [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in tools
    ]


def to_gemini(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """Gemini declarations: ONE element wrapping every tool.

    Gemini reads an OpenAPI-style schema subset, so a JSON-Schema type list such as
    ``["string", "null"]`` is rendered as ``"type": "string", "nullable": true``.
    """
    return [
        {
            "functionDeclarations": [
                {
                    "name": t.name,
                    "description": t.description,
                    "parameters": _gemini_schema(t.input_schema),
                }
                for t in tools
            ]
        }
    ]


def _gemini_schema(node: Any) -> Any:
    if isinstance(node, list):
        return [_gemini_schema(v) for v in cast(list[Any], node)]
    if not isinstance(node, dict):
        return node
    out = {k: _gemini_schema(v) for k, v in cast(dict[str, Any], node).items()}
    kind = out.get("type")
    if isinstance(kind, list):
        kinds = [k for k in cast(list[Any], kind) if k != "null"]
        if len(kinds) == 1:
            out["type"] = kinds[0]
            if len(kinds) < len(cast(list[Any], kind)):
                out["nullable"] = True
    return out


class Toolkit:
    """The assembled tool set. Build it with `create_toolkit` (`toolnexus.toolkit`)."""

    def __init__(
        self,
        tools: Sequence[Tool] = (),
        *,
        wait_for: WaitFor | None = None,
        skills_prompt: str = "",
        mcp_status: Callable[[], Mapping[str, str]] | Mapping[str, str] | None = None,
        mcp_errors: Callable[[], Mapping[str, str]] | None = None,
        closers: Sequence[Closer] = (),
        redactor: Redactor | None = None,
        exposures: Sequence[str] = (),
        skills: Sequence[Any] = (),
        profiles: Mapping[str, Any] | None = None,
    ) -> None:
        self.redactor = redactor if redactor is not None else Redactor()
        """The toolkit's secrets (MCP ``${ENV}`` references, credential headers, `http_tool`
        header variables): masked in every tool result (see `toolnexus.redaction`)."""
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self._tools.setdefault(t.name, t)
            self._adopt(t)
        self._exposures = tuple(exposures)
        self._warned = False
        # client redactor -> joined redactor, for up to `_JOINED_KEPT` clients (a halting
        # client and a worker often share a toolkit): each joined one keeps its secrets cached.
        self._joined: dict[Redactor, Redactor] = {}
        self.wait_for = wait_for
        self._skills_prompt = skills_prompt
        self._mcp_status = mcp_status
        self._mcp_errors = mcp_errors
        self._closers = list(closers)
        self._closed = False
        self._cache: dict[str, list[dict[str, Any]]] = {}
        self._shared: tuple[list[Tool], dict[str, Tool]] | None = None
        self._skills = list(skills)
        self.profiles: dict[str, Any] = dict(profiles or {})
        """The config file's serving blocks (``a2a``, ``mcpServer``) that `serve` falls back to."""

    # -- the tool set --------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        """Every tool, in assembly order."""
        return list(self._tools.values())

    def run_tools(self) -> tuple[list[Tool], dict[str, Tool]]:
        """The tool list and the name index that every run over this toolkit shares.

        Cached until the tool set changes (`register`), so that a run — thousands of them
        parked on a human — does not each keep its own copies [parked-run memory]. Both are
        read-only.
        """
        shared = self._shared
        if shared is None:
            shared = self._shared = (list(self._tools.values()), dict(self._tools))
        return shared

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or ``None``."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Every tool name, in assembly order."""
        return list(self._tools)

    def register(self, *tools: Tool) -> Self:
        """Add tools after construction; returns the toolkit (calls chain).

        A name that already exists keeps the first tool: the newcomer is skipped with
        ``[toolnexus] duplicate tool name "<n>" — keeping first`` on stderr. A relay tool
        named like a built-in is still a `UsageError`.
        """
        for t in tools:
            check_tool(t)
            guard_relay(t)
            if t.name in self._tools:
                warn_stderr(f'duplicate tool name "{t.name}" — keeping first')
                continue
            self._tools[t.name] = t
            self._adopt(t)
        self._cache.clear()
        self._shared = None
        return self

    def _adopt(self, t: Tool) -> None:
        """Learn the secrets a tool source registered on its own (an `http_tool`'s)."""
        owner = getattr(t.execute, "__self__", t.execute)  # a bound method's object
        own = getattr(owner, "redactor", None)
        if isinstance(own, Redactor):
            self.redactor.link(own)

    def run_redactor(self, client: Redactor) -> Redactor:
        """The redactor of a run of ``client`` over this toolkit: both registries, live."""
        held = self._joined  # (a Redactor hashes by identity)
        joined = held.get(client)
        if joined is None:
            if len(held) >= _JOINED_KEPT:
                del held[next(iter(held))]  # the first one kept
            joined = held[client] = Redactor.joined(client, self.redactor)
        return joined

    def warn_exposure(self, endpoint: str) -> None:
        """Log once, at WARNING, when this toolkit gives unconfined built-ins to a model that
        is not on this machine (``endpoint`` is not loopback)."""
        if self._warned or not self._exposures or _is_local(endpoint):
            return
        self._warned = True
        log.warning(
            "toolnexus: the model at %s (not loopback) gets %s; for a model you do not trust "
            "see docs/tools.md (workspace, bash allow-list or sandbox, private_network=False)",
            urlsplit(endpoint).netloc or endpoint,
            " and ".join(self._exposures),
        )

    def fingerprint(self) -> str:
        """A digest of the tool set; a resumed run compares it to the halted run's."""
        return tool_fingerprint(self._tools.values())

    # -- adapters ------------------------------------------------------------------------

    def to_openai(self) -> list[dict[str, Any]]:
        """OpenAI declarations (cached until the tool set changes)."""
        cached = self._cache.get("openai")
        if cached is None:
            cached = self._cache["openai"] = to_openai(self._tools.values())
        return cached

    def to_anthropic(self) -> list[dict[str, Any]]:
        """Anthropic declarations (cached until the tool set changes)."""
        cached = self._cache.get("anthropic")
        if cached is None:
            cached = self._cache["anthropic"] = to_anthropic(self._tools.values())
        return cached

    def to_gemini(self) -> list[dict[str, Any]]:
        """Gemini declarations: one element wrapping every tool."""
        return to_gemini(self._tools.values())

    def skill_infos(self) -> list[Any]:
        """The loaded SKILL.md skills (`toolnexus.SkillInfo`), in discovery order."""
        return list(self._skills)

    def skills_prompt(self) -> str:
        """The skills section of the system prompt (``""`` with no skill source)."""
        return self._skills_prompt

    def mcp_errors(self) -> dict[str, str]:
        """``{server: reason}`` for every MCP server that failed (secrets redacted)."""
        return dict(self._mcp_errors()) if self._mcp_errors is not None else {}

    def mcp_status(self) -> dict[str, str]:
        """``{server: "connected" | "disabled" | "failed"}`` for every configured MCP server."""
        live = self._mcp_status
        if live is None:
            return {}
        return dict(live() if callable(live) else live)

    # -- execution -----------------------------------------------------------------------

    async def execute(
        self, name: str, args: Mapping[str, Any] | None = None, ctx: ToolContext | None = None
    ) -> ToolResult:
        """Run the tool ``name`` with ``args``. Never raises for a tool problem.

        An unknown name, arguments that fail the tool's schema, or a tool that raises all come
        back as ``is_error`` results the model can read.
        """
        tool = self._tools.get(name)
        if tool is None:
            return unknown_tool_result(name, list(self._tools))
        arguments = dict(args or {})
        problem = validate_arguments(tool, arguments)
        if problem is not None:
            return ToolResult(problem, True)
        return await invoke_tool(tool, arguments, ctx, self.redactor)

    # -- the network ---------------------------------------------------------------------

    async def add_agent(
        self,
        agent_or_card_url: Any,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        poll_every: float | None = None,
    ) -> Self:
        """Add a remote A2A agent's tools (one per card skill); raises when it fails.

        ``agent_or_card_url``: a `toolnexus.A2AAgent` or its card URL. Tools already
        registered under a name win (first wins)."""
        from .tools.a2a import A2AAgent, agent_tools

        remote = (
            agent_or_card_url
            if isinstance(agent_or_card_url, A2AAgent)
            else A2AAgent(
                agent_or_card_url, headers=headers, timeout=timeout, poll_every=poll_every
            )
        )
        for t in await agent_tools(remote):
            if t.name not in self._tools:
                self.register(t)
        return self

    # -- lifecycle -----------------------------------------------------------------------

    async def close(self) -> None:
        """Release every source (MCP connections, child processes). Idempotent."""
        if self._closed:
            return
        self._closed = True
        for closer in reversed(self._closers):
            try:
                await closer()
            except Exception:
                log.warning("toolnexus: a tool source failed to close", exc_info=True)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"Toolkit(tools={list(self._tools)!r})"


def _is_local(endpoint: str) -> bool:
    """True for an in-process model or an endpoint on a loopback address."""
    from .llm.dialects import is_loopback_url  # only when a run meets unconfined built-ins

    if urlsplit(endpoint).scheme not in ("http", "https"):
        return True
    return is_loopback_url(endpoint)


def check_tool(t: object) -> None:
    if not isinstance(t, Tool):
        raise UsageError(
            f"expected a toolnexus.Tool, got {type(t).__name__} "
            "(wrap functions with define_tool, endpoints with http_tool)"
        )


def guard_relay(t: Tool) -> None:
    if t.source == "relay" and t.name in BUILTIN_NAMES:
        raise UsageError(
            f"toolnexus: relay tool name collides with a built-in tool: [{t.name}] — "
            "rename the relay tool"
        )


ToolSet = Toolkit | Sequence[Tool] | None
"""What a run takes as its tools: a `Toolkit`, a list of tools, or ``None`` for none."""
