"""``toolnexus.a2a``: the outbound A2A names at the module path the reference package uses.

A thin re-export of `toolnexus.tools.a2a` (COMPAT §1). ``toolnexus.Agent`` / ``agent`` here are
the remote A2A agent descriptor, not the agent-runtime `toolnexus.agents.Agent`.
"""

from __future__ import annotations

from .tools.a2a import (
    DEFAULT_POLL_EVERY,
    DEFAULT_TIMEOUT,
    TERMINAL,
    A2AAgent,
    A2ATask,
    Agent,
    AgentConfig,
    AgentsConfig,
    agent,
    agent_tools,
    is_enabled,
    parse_agents_config,
)

__all__ = [
    "DEFAULT_POLL_EVERY",
    "DEFAULT_TIMEOUT",
    "TERMINAL",
    "A2AAgent",
    "A2ATask",
    "Agent",
    "AgentConfig",
    "AgentsConfig",
    "agent",
    "agent_tools",
    "is_enabled",
    "parse_agents_config",
]
