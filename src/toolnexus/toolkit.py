"""The toolkit users build: ``await create_toolkit(...)``, and `Toolkit` with its ``serve``.

``await create_toolkit(...)`` gathers the sources in a fixed order — MCP, skills, built-ins,
then the host's ``extra_tools`` — drops built-ins that a host tool shadows, de-duplicates by
name (first wins) and applies ``disable_tools``::

    async with await create_toolkit(extra_tools=[add]) as tk:
        schemas = tk.to_openai()
        result = await tk.execute("add", {"a": 1, "b": 2})
        served = await tk.serve("127.0.0.1:0", client=client, a2a={"name": "helper"})

`Toolkit` here is the tool set (`toolnexus._toolkit.Toolkit`: rendering, execution, lifecycle)
plus ``serve``, a convenience over `toolnexus.serve.serve`. Serving stands on the client and
the tool set, so the convenience lives up here, above it (STYLE 16): the layers below hold and
check the tool set, and every toolkit made here is one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ._toolkit import (
    BUILTIN_NAMES,
    Closer,
    check_tool,
    guard_relay,
    to_anthropic,
    to_gemini,
    to_openai,
)
from ._toolkit import Toolkit as _ToolSet
from ._types import Tool
from .loop.checkpoint import tool_fingerprint
from .redaction import Redactor
from .suspension import WaitFor

if TYPE_CHECKING:
    from .serve.server import ServeHandle

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


class Toolkit(_ToolSet):
    """The assembled tool set (`toolnexus._toolkit.Toolkit`) and its network convenience.

    Build it with `create_toolkit`; ``Toolkit(tools)`` wraps a list of tools as it is.
    """

    @classmethod
    async def create(cls, *args: Any, **kwargs: Any) -> Toolkit:
        """`create_toolkit` under the existing package's classmethod name."""
        return await create_toolkit(*args, **kwargs)

    async def serve(self, addr: str, **options: Any) -> ServeHandle:
        """Serve this toolkit on ``addr`` (A2A through ``client=``, MCP inbound through
        ``mcp=``) → a `toolnexus.serve.ServeHandle`. See `toolnexus.serve.serve_app` for the
        options and docs/serving.md."""
        from .serve.app import serve  # starlette and the A2A SDK load when a toolkit serves

        return await serve(self, addr, **options)


async def create_toolkit(
    mcp_config: str | Mapping[str, Any] | None = None,
    skills_dir: str | Sequence[str] | None = None,
    skills: Sequence[Any] | None = None,
    skill_provider: Any = None,
    skills_filter: Mapping[str, bool] | None = None,
    skill_sample_limit: int = 0,
    extra_tools: Sequence[Tool] | None = None,
    builtins: bool | Mapping[str, Any] | None = None,
    agents: Any = None,
    wait_for: WaitFor | None = None,
    disable_tools: Iterable[str] | None = None,
    disable_skills: Iterable[str] | None = None,
    cancel: Any = None,
    *,
    tools: Sequence[Tool] | None = None,
    strict: bool = False,
) -> Toolkit:
    """Assemble a `Toolkit` from every configured source.

    Every argument may be given positionally, in the existing package's order (``tools``, an
    alias of ``extra_tools``, is keyword-only). Order: MCP → skills → built-ins →
    ``extra_tools``; a built-in whose name a host tool provides
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
        agents: remote A2A agents (`toolnexus.agent(card_url)` or card URLs): one tool per
            card skill; a top-level ``agents`` block of the config adds more. An agent that
            fails to resolve is logged and adds no tools.
        wait_for: answers MCP elicitations inline.
        disable_tools: tool names to drop from the final set.
        disable_skills: skill names to drop from the catalog.
        cancel: an `asyncio.Event` that aborts loading.
        strict: an MCP server that fails to start or connect is an error (`UsageError`
            naming each server and why) instead of a ``failed`` entry in `Toolkit.mcp_status`.

    Raises:
        UsageError: a relay tool named like a built-in, a non-Tool in ``extra_tools``, a
            source this build does not support yet, a malformed ``mcp.json``, or (with
            ``strict``) an MCP server that failed.
    """
    host = list(extra_tools or ()) + list(tools or ())
    for t in host:
        check_tool(t)
        guard_relay(t)
    profiles = _profiles(mcp_config)
    remote: list[Any] = list(agents or ())
    if profiles.get("agents") is not None:
        from .tools.a2a import parse_agents_config

        remote += parse_agents_config(profiles["agents"])
    if remote:
        from .tools.a2a import load_agents  # resolved concurrently; a failing one is isolated

        host += await load_agents(remote)
    mcp_tools: list[Tool] = []
    closers: list[Closer] = []
    status: Callable[[], Mapping[str, str]] | None = None
    errors: Callable[[], Mapping[str, str]] | None = None
    redactor = Redactor()
    if mcp_config is not None:
        from .tools.mcp import load_mcp  # the tool sources load when a toolkit is built

        source = await load_mcp(
            mcp_config, wait_for=wait_for, cancel=cancel, redactor=redactor, strict=strict
        )
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
            redactor=redactor,
            profiles=profiles,
        )
    except BaseException:
        for closer in closers:
            await closer()
        raise


def _profiles(mcp_config: str | Mapping[str, Any] | None) -> dict[str, Any]:
    """The serving blocks (``a2a``, ``mcpServer``) of the config, when it is a mapping or a
    JSON file (a config that cannot be read was reported by the MCP loader already)."""
    raw: Any = mcp_config
    if isinstance(mcp_config, str):
        import json
        from pathlib import Path

        try:
            raw = json.loads(Path(mcp_config).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
    if not isinstance(raw, Mapping):
        return {}
    block = cast(Mapping[str, Any], raw)
    return {k: block[k] for k in ("a2a", "mcpServer", "agents") if block.get(k) is not None}


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
    redactor: Redactor,
    profiles: Mapping[str, Any] | None = None,
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
        redactor=redactor,
        exposures=_exposures(final, builtins),
        skills=list(skill_source.skills.values()) if skill_source is not None else (),
        profiles=profiles,
    )


def _exposures(tools: Sequence[Tool], builtins: bool | Mapping[str, Any] | None) -> list[str]:
    """The unconfined built-ins among ``tools``: what `Toolkit.warn_exposure` names."""
    from .tools.builtins._options import parse_builtin_options

    kept = {t.name for t in tools if t.source == "builtin"}
    if not kept & {"bash", "webfetch"}:
        return []
    options = parse_builtin_options(builtins if isinstance(builtins, Mapping) else None)
    found: list[str] = []
    bash = options.bash
    if "bash" in kept and bash.allow is None and not getattr(bash, "sandbox", False):
        found.append("unconfined bash")
    if "webfetch" in kept and options.private_network:
        found.append("webfetch with private-network access")
    return found
