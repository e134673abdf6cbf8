"""The agent card a served toolkit or agent publishes at ``/.well-known/agent-card.json``.

The contract's card (``name``, ``description``, ``version``, ``protocolVersion: "0.3.0"``,
``url``, ``defaultInputModes``/``defaultOutputModes``, skills from SKILL.md) plus, beyond the
contract, the toolkit's tools as skills (`card_skills`: names and descriptions, tagged ``tool``;
``a2a={"tools": False}`` keeps only SKILL.md skills, as the 0.21 card did), and for a served agent
the agent and its team (tagged ``agent`` and ``team``),
plus what an A2A 1.0 client reads to pick its transport: ``supportedInterfaces`` naming the
JSON-RPC endpoint for protocol 1.0 and 0.3, and ``preferredTransport``. A served profile's
``capabilities.streaming`` is true — the endpoint serves ``SendStreamingMessage`` /
``message/stream``, with the model's text as it comes — unless it says ``streaming: false`` (the
0.21 card: callers poll, and the model is asked for whole replies). `build_agent_card` called on
its own keeps the 0.21 default, ``false``: a host's own endpoint streams only if it says so.

A card never carries a secret: the bearer token, headers and tool configuration stay out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ..errors import UsageError

__all__ = [
    "CARD_PATH",
    "DEFAULT_VERSION",
    "PROTOCOL_VERSION",
    "A2AConfig",
    "CardSkill",
    "build_agent_card",
    "card_skills",
    "check_a2a_config",
]

CARD_PATH = "/.well-known/agent-card.json"
"""Where the card is served."""
PROTOCOL_VERSION = "0.3.0"
"""The card's ``protocolVersion`` (the endpoint also speaks A2A 1.0: ``supportedInterfaces``)."""
DEFAULT_VERSION = "0.1.0"
"""The card's ``version`` when the profile gives none."""

A2AConfig = Mapping[str, Any]
"""``{name?, description?, version?, provider?: {organization, url}, skills?: [str], tools?:
bool, streaming?: bool, store?}``."""

_KEYS = frozenset(
    {"name", "description", "version", "provider", "skills", "tools", "streaming", "store"}
)


_WORKBENCH = frozenset({"builtin", "skill"})
"""The tool sources a card does not list (`card_skills`)."""


@dataclass(frozen=True, slots=True)
class CardSkill:
    """One skill the card lists (what a `toolnexus.SkillInfo` offers, plus tags)."""

    name: str
    description: str
    tags: tuple[str, ...] = ()


def card_skills(
    cfg: Mapping[str, Any], skill_infos: Sequence[Any], tools: Sequence[Any]
) -> list[Any]:
    """What a served toolkit's card lists: its SKILL.md skills, then each of its own tools (name
    and description, tagged ``tool``) whose name no skill took — unless ``cfg["tools"]`` is
    ``False``. Its own tools are those it was given (native, HTTP, MCP, relay, sub-agents,
    remote agents); the built-ins and the ``skill`` loader are the agent's workbench, not
    what it offers, and stay off. Nothing else of a tool (schema, source, configuration)
    reaches the card."""
    listed: list[Any] = list(skill_infos)
    if cfg.get("tools") is False:
        return listed
    taken = {str(getattr(s, "name", "")) for s in listed}
    for tool in tools:
        name = str(getattr(tool, "name", ""))
        if getattr(tool, "source", None) in _WORKBENCH:
            continue
        if name and name not in taken:
            taken.add(name)
            listed.append(CardSkill(name, str(getattr(tool, "description", "") or ""), ("tool",)))
    return listed


def check_a2a_config(cfg: Any) -> dict[str, Any]:
    """The ``a2a`` profile of a served agent as a dict (``True`` means all defaults;
    ``streaming`` defaults to true).

    Raises:
        UsageError: not a mapping, an unknown key, or a value of the wrong type.
    """
    if cfg is True:
        cfg = {}
    if not isinstance(cfg, Mapping):
        raise UsageError(f"a2a must be a dict (or True), got {type(cfg).__name__}")
    out: dict[str, Any] = {str(k): v for k, v in cast(Mapping[Any, Any], cfg).items()}
    unknown = sorted(set(out) - _KEYS)
    if unknown:
        raise UsageError(f"a2a: unknown key(s) {', '.join(map(str, unknown))}")
    for key in ("name", "description", "version"):
        if out.get(key) is not None and not isinstance(out[key], str):
            raise UsageError(f"a2a.{key} must be a string")
    for switch in ("tools", "streaming"):
        if out.get(switch) is not None and not isinstance(out[switch], bool):
            raise UsageError(f"a2a.{switch} must be true or false")
    skills = out.get("skills")
    if skills is not None and (
        not isinstance(skills, list | tuple)
        or not all(isinstance(s, str) for s in cast(list[Any], skills))
    ):
        raise UsageError("a2a.skills must be a list of skill names")
    out.setdefault("streaming", True)  # a served endpoint streams (see the module docs)
    return out


def build_agent_card(cfg: Mapping[str, Any], skills: Sequence[Any], url: str) -> dict[str, Any]:
    """The card for ``cfg`` (the ``a2a`` profile), the loaded skills and the base ``url``.

    ``skills`` are `toolnexus.SkillInfo`-like objects (``name``, ``description``, optionally
    ``tags``), filtered by ``cfg["skills"]`` whenever that is not ``None`` (an empty list yields
    no skills). ``capabilities.streaming`` is ``cfg["streaming"] is True`` (the 0.21 default,
    false; a served profile, `check_a2a_config`, sets it true).
    """
    wanted: Any = cfg.get("skills")
    entries: list[dict[str, Any]] = []
    for skill in skills:
        name = str(getattr(skill, "name", ""))
        if not name or (wanted is not None and name not in wanted):
            continue
        description = getattr(skill, "description", "") or ""
        tags = [str(t) for t in getattr(skill, "tags", ()) or ()]
        entries.append({"id": name, "name": name, "description": str(description), "tags": tags})
    endpoint = url.rstrip("/") + "/"
    card: dict[str, Any] = {
        "name": cfg.get("name") if cfg.get("name") is not None else "toolnexus-agent",
        "description": cfg.get("description") if cfg.get("description") is not None else "",
        "version": cfg.get("version") if cfg.get("version") is not None else DEFAULT_VERSION,
        "protocolVersion": PROTOCOL_VERSION,
        "url": endpoint,
        "preferredTransport": "JSONRPC",
        "supportedInterfaces": [
            {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "capabilities": {
            "streaming": cfg.get("streaming") is True,
            "pushNotifications": False,
        },
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "skills": entries,
    }
    provider = cfg.get("provider")
    if provider:
        card["provider"] = dict(provider)
    return card
