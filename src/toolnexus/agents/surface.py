"""``toolnexus.agents.surface``: the agent surface, under the existing package's path.

A thin re-export: every name is the same object as ``toolnexus.agents.<name>``.
"""

from .agent import Agent, agent
from .home import StartedAgent, agent_from_dir, start_agent
from .persona import BOOTSTRAP_CAP_BYTES as MAX_BOOTSTRAP_FILE_BYTES
from .persona import BOOTSTRAP_ORDER, HEARTBEAT_OK, HEARTBEAT_PROMPT, compose_soul, memory_tool

__all__ = [
    "BOOTSTRAP_ORDER",
    "HEARTBEAT_OK",
    "HEARTBEAT_PROMPT",
    "MAX_BOOTSTRAP_FILE_BYTES",
    "Agent",
    "StartedAgent",
    "agent",
    "agent_from_dir",
    "compose_soul",
    "memory_tool",
    "start_agent",
]
