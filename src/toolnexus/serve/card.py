"""The agent card a served toolkit or agent publishes at ``/.well-known/agent-card.json``.

The contract's card (``name``, ``description``, ``version``, ``protocolVersion: "0.3.0"``,
``url``, ``defaultInputModes``/``defaultOutputModes``, skills from SKILL.md — never raw tools)
plus what an A2A 1.0 client reads to pick its transport: ``supportedInterfaces`` naming the
JSON-RPC endpoint for protocol 1.0 and 0.3, and ``preferredTransport``. ``capabilities.streaming``
is true: the endpoint serves ``SendStreamingMessage`` / ``message/stream``.

A card never carries a secret: the bearer token, headers and tool configuration stay out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from ..errors import UsageError

__all__ = [
    "CARD_PATH",
    "DEFAULT_VERSION",
    "PROTOCOL_VERSION",
    "A2AConfig",
    "build_agent_card",
    "check_a2a_config",
]

CARD_PATH = "/.well-known/agent-card.json"
"""Where the card is served."""
PROTOCOL_VERSION = "0.3.0"
"""The card's ``protocolVersion`` (the endpoint also speaks A2A 1.0: ``supportedInterfaces``)."""
DEFAULT_VERSION = "0.1.0"
"""The card's ``version`` when the profile gives none."""

A2AConfig = Mapping[str, Any]
"""``{name?, description?, version?, provider?: {organization, url}, skills?: [str], store?}``."""

_KEYS = frozenset({"name", "description", "version", "provider", "skills", "store"})


def check_a2a_config(cfg: Any) -> dict[str, Any]:
    """The ``a2a`` profile as a dict (``True`` means all defaults).

    Raises:
        UsageError: not a mapping, an unknown key, or a value of the wrong type.
    """
    if cfg is True:
        return {}
    if not isinstance(cfg, Mapping):
        raise UsageError(f"a2a must be a dict (or True), got {type(cfg).__name__}")
    out: dict[str, Any] = {str(k): v for k, v in cast(Mapping[Any, Any], cfg).items()}
    unknown = sorted(set(out) - _KEYS)
    if unknown:
        raise UsageError(f"a2a: unknown key(s) {', '.join(map(str, unknown))}")
    for key in ("name", "description", "version"):
        if out.get(key) is not None and not isinstance(out[key], str):
            raise UsageError(f"a2a.{key} must be a string")
    skills = out.get("skills")
    if skills is not None and (
        not isinstance(skills, list | tuple)
        or not all(isinstance(s, str) for s in cast(list[Any], skills))
    ):
        raise UsageError("a2a.skills must be a list of skill names")
    return out


def build_agent_card(cfg: Mapping[str, Any], skills: Sequence[Any], url: str) -> dict[str, Any]:
    """The card for ``cfg`` (the ``a2a`` profile), the loaded skills and the base ``url``.

    ``skills`` are `toolnexus.SkillInfo`-like objects (``name``, ``description``), filtered by
    ``cfg["skills"]`` whenever that is not ``None`` (an empty list yields no skills).
    """
    wanted: Any = cfg.get("skills")
    entries: list[dict[str, Any]] = []
    for skill in skills:
        name = str(getattr(skill, "name", ""))
        if not name or (wanted is not None and name not in wanted):
            continue
        description = getattr(skill, "description", "") or ""
        entries.append({"id": name, "name": name, "description": str(description), "tags": []})
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
        "capabilities": {"streaming": True, "pushNotifications": False},
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "skills": entries,
    }
    provider = cfg.get("provider")
    if provider:
        card["provider"] = dict(provider)
    return card
