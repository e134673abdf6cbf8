"""Sub-agents: the agent runtime, delegation through ``task``, escalation and durable resume.

::

    from toolnexus.agents import AgentDef, AgentRuntime

    rt = AgentRuntime(registry={"asker": AgentDef(name="asker", tools=[check_secret])},
                      llm={"base_url": url, "style": "openai", "model": "m", "api_key": "k"})
    h = rt.spawn(rt.root, "asker")
    rt.wake(h, "get the secret")
    r = await rt.wait(h)                       # status "pending", handle suspended
    await rt.resume(Answer(id=r.pending.id, ok=True))
"""

from .agent import Agent, agent
from .budget import BudgetGuard
from .clock import AsyncioClock, Clock, VirtualClock
from .compaction import FLUSH_REMINDER, SUMMARY_PREFIX, compactor, estimate_tokens
from .engines import LlmConfig
from .handle import Handle
from .home import StartedAgent, agent_from_dir, start_agent
from .persistence import InMemoryRuntimeStore, RuntimeStore
from .persona import (
    BOOTSTRAP_CAP_BYTES,
    BOOTSTRAP_ORDER,
    HEARTBEAT_OK,
    HEARTBEAT_PROMPT,
    Persona,
    compose_soul,
    memory_tool,
    persona_from_dir,
)
from .runtime import AgentRuntime
from .types import (
    AgentDef,
    Budget,
    CloseReason,
    HandleState,
    HandleView,
    InboxItem,
    PostResult,
    SpawnError,
    TaskResult,
    TaskStatus,
)

__all__ = [
    "BOOTSTRAP_CAP_BYTES",
    "BOOTSTRAP_ORDER",
    "FLUSH_REMINDER",
    "HEARTBEAT_OK",
    "HEARTBEAT_PROMPT",
    "SUMMARY_PREFIX",
    "Agent",
    "AgentDef",
    "AgentRuntime",
    "AsyncioClock",
    "Budget",
    "BudgetGuard",
    "Clock",
    "CloseReason",
    "Handle",
    "HandleState",
    "HandleView",
    "InMemoryRuntimeStore",
    "InboxItem",
    "LlmConfig",
    "Persona",
    "PostResult",
    "RuntimeStore",
    "SpawnError",
    "StartedAgent",
    "TaskResult",
    "TaskStatus",
    "VirtualClock",
    "agent",
    "agent_from_dir",
    "compactor",
    "compose_soul",
    "estimate_tokens",
    "memory_tool",
    "persona_from_dir",
    "start_agent",
]
