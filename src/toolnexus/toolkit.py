"""The toolkit: every tool source assembled into one list of uniform `Tool`s.

``await create_toolkit(...)`` gathers the sources in a fixed order — MCP, skills, built-ins,
then the host's ``extra_tools`` — drops built-ins that a host tool shadows, de-duplicates by
name (first wins) and applies ``disable_tools``. The result renders itself for any provider
(`to_openai`, `to_anthropic`, `to_gemini`) and executes calls by name, so it also serves a
bring-your-own loop::

    async with await create_toolkit(extra_tools=[add]) as tk:
        schemas = tk.to_openai()
        result = await tk.execute("add", {"a": 1, "b": 2})
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, cast

from ._types import Tool, ToolContext, ToolResult
from .errors import UsageError
from .loop.checkpoint import tool_fingerprint
from .loop.execute import invoke_tool, unknown_tool_result
from .suspension import WaitFor
from .tools.validation import validate_arguments

__all__ = [
    "BUILTIN_NAMES",
    "Toolkit",
    "create_toolkit",
    "to_anthropic",
    "to_gemini",
    "to_openai",
    "tool_fingerprint",
]

log = logging.getLogger("toolnexus")

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
    """The assembled tool set. Build it with `create_toolkit`."""

    def __init__(
        self,
        tools: Sequence[Tool] = (),
        *,
        wait_for: WaitFor | None = None,
        skills_prompt: str = "",
        mcp_status: Callable[[], Mapping[str, str]] | Mapping[str, str] | None = None,
        mcp_errors: Callable[[], Mapping[str, str]] | None = None,
        closers: Sequence[Closer] = (),
    ) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self._tools.setdefault(t.name, t)
        self.wait_for = wait_for
        self._skills_prompt = skills_prompt
        self._mcp_status = mcp_status
        self._mcp_errors = mcp_errors
        self._closers = list(closers)
        self._closed = False
        self._cache: dict[str, list[dict[str, Any]]] = {}
        self._shared: tuple[list[Tool], dict[str, Tool]] | None = None

    # -- the tool set --------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        """Every tool, in assembly order."""
        return list(self._tools.values())

    def run_tools(self) -> tuple[list[Tool], dict[str, Tool]]:
        """The tool list and the name index that every run over this toolkit shares.

        Cached until the tool set changes (`register`), so that a run — thousands of them
        parked on a human — does not each keep its own copies. Both are read-only.
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

    def register(self, *tools: Tool) -> None:
        """Add tools after construction. A name that already exists is a `UsageError`."""
        for t in tools:
            _check_tool(t)
            if t.name in self._tools:
                raise UsageError(f'a tool named "{t.name}" is already registered')
            _guard_relay(t)
            self._tools[t.name] = t
        self._cache.clear()
        self._shared = None

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
        return await invoke_tool(tool, arguments, ctx)

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

    async def __aenter__(self) -> Toolkit:
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


def _check_tool(t: object) -> None:
    if not isinstance(t, Tool):
        raise UsageError(
            f"expected a toolnexus.Tool, got {type(t).__name__} "
            "(wrap functions with define_tool, endpoints with http_tool)"
        )


def _guard_relay(t: Tool) -> None:
    if t.source == "relay" and t.name in BUILTIN_NAMES:
        raise UsageError(
            f"toolnexus: relay tool name collides with a built-in tool: [{t.name}] — "
            "rename the relay tool"
        )


async def create_toolkit(
    mcp_config: str | Mapping[str, Any] | None = None,
    skills_dir: str | Sequence[str] | None = None,
    *,
    skills: Sequence[Any] | None = None,
    skill_provider: Any = None,
    skills_filter: Mapping[str, bool] | None = None,
    skill_sample_limit: int = 0,
    extra_tools: Sequence[Tool] | None = None,
    tools: Sequence[Tool] | None = None,
    builtins: bool | Mapping[str, Any] | None = None,
    agents: Any = None,
    wait_for: WaitFor | None = None,
    disable_tools: Iterable[str] | None = None,
    disable_skills: Iterable[str] | None = None,
    cancel: Any = None,
) -> Toolkit:
    """Assemble a `Toolkit` from every configured source.

    Order: MCP → skills → built-ins → ``extra_tools``; a built-in whose name a host tool provides
    is dropped first (host shadowing); then de-duplication by name, first wins; then
    ``disable_tools`` drops tools by their final exposed name.

    Args:
        mcp_config: path to an ``mcp.json`` or the parsed object (MCP servers).
        skills_dir: one or more folders searched for ``**/SKILL.md``.
        skills: data skills; ``skill_provider``: a lazy provider of them.
        skills_filter: ``{skill name: bool}`` allowlist / drop-list.
        skill_sample_limit: sibling files listed by the ``skill`` tool (0 ⇒ 10, -1 ⇒ none).
        extra_tools: the host's own tools (``tools`` is an alias).
        builtins: ``True``/``None`` (on), ``False``, or a dict (``enabled``/``disabled``,
            ``tools`` per-name map), plus the confinement options ``workspace``, ``bash``
            (``False`` or ``{"allow": [...]}``), ``private_network`` and ``max_output_bytes``.
        agents: remote A2A agents (not in this build).
        wait_for: answers MCP elicitations inline.
        disable_tools: tool names to drop from the final set.
        disable_skills: skill names to drop from the catalog.
        cancel: an `asyncio.Event` that aborts loading.

    Raises:
        UsageError: a relay tool named like a built-in, a non-Tool in ``extra_tools``, or a
            source this build does not support yet.
    """
    if agents:
        raise UsageError(
            "create_toolkit: agents (remote A2A agents) are not supported by this build yet"
        )
    host = list(extra_tools or ()) + list(tools or ())
    for t in host:
        _check_tool(t)
        _guard_relay(t)
    mcp_tools: list[Tool] = []
    closers: list[Closer] = []
    status: Callable[[], Mapping[str, str]] | None = None
    errors: Callable[[], Mapping[str, str]] | None = None
    if mcp_config is not None:
        from .tools.mcp import load_mcp  # the tool sources load when a toolkit is built

        source = await load_mcp(mcp_config, wait_for=wait_for, cancel=cancel)
        mcp_tools = list(source.tools)
        closers.append(source.close)
        status = source.status
        errors = source.errors
        if builtins is None:
            builtins = source.builtins
    try:
        return await _assemble(
            host=host,
            mcp_tools=mcp_tools,
            builtins=builtins,
            skills_dir=skills_dir,
            skills=skills,
            skill_provider=skill_provider,
            skills_filter=skills_filter,
            disable_skills=disable_skills,
            skill_sample_limit=skill_sample_limit,
            disable_tools=disable_tools,
            wait_for=wait_for,
            closers=closers,
            status=status,
            errors=errors,
        )
    except BaseException:
        for closer in closers:
            await closer()
        raise


async def _assemble(
    *,
    host: list[Tool],
    mcp_tools: list[Tool],
    builtins: bool | Mapping[str, Any] | None,
    skills_dir: str | Sequence[str] | None,
    skills: Sequence[Any] | None,
    skill_provider: Any,
    skills_filter: Mapping[str, bool] | None,
    disable_skills: Iterable[str] | None,
    skill_sample_limit: int,
    disable_tools: Iterable[str] | None,
    wait_for: WaitFor | None,
    closers: list[Closer],
    status: Callable[[], Mapping[str, str]] | None,
    errors: Callable[[], Mapping[str, str]] | None,
) -> Toolkit:
    from .tools.builtins import select_builtins
    from .tools.skills import load_skill_source

    skill_source = await load_skill_source(
        skills_dir,
        skills=skills,
        skill_provider=skill_provider,
        skills_filter=skills_filter,
        disable_skills=disable_skills,
        sample_limit=skill_sample_limit,
    )
    skill_tools = [skill_source.tool] if skill_source is not None else []
    builtin_tools = select_builtins(builtins)
    host_names = {t.name for t in host}
    ordered = mcp_tools + skill_tools + [t for t in builtin_tools if t.name not in host_names]
    ordered += host
    dropped = set(disable_tools or ())
    final: list[Tool] = []
    seen: set[str] = set()
    for t in ordered:
        if t.name in seen:
            log.warning("toolnexus: duplicate tool name %r ignored (first wins)", t.name)
            continue
        seen.add(t.name)
        if t.name not in dropped:
            final.append(t)
    skill_kept = any(t.source == "skill" and t.name == "skill" for t in final)
    return Toolkit(
        final,
        wait_for=wait_for,
        skills_prompt=skill_source.prompt() if skill_source is not None and skill_kept else "",
        mcp_status=status,
        mcp_errors=errors,
        closers=closers,
    )
