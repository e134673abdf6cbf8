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
from .engines import LlmConfig
from .handle import Handle
from .persistence import InMemoryRuntimeStore, RuntimeStore
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
    "PostResult",
    "RuntimeStore",
    "SpawnError",
    "TaskResult",
    "TaskStatus",
    "VirtualClock",
    "agent",
]
