"""Sub-agents: the agent runtime, delegation through ``task``, escalation and durable resume.

::

    from toolnexus.agents import AgentDef, AgentRuntime

    rt = AgentRuntime(registry={"asker": AgentDef(name="asker", tools=[check_secret])},
                      llm={"base_url": url, "style": "openai", "model": "m", "api_key": "k"})
    h = rt.spawn(rt.root, "asker")
    rt.wake(h, "get the secret")
    r = await rt.wait(h)                       # status "pending", handle suspended
    done = await rt.resume(Answer(id=r.pending.id, ok=True))   # the resumed turn's result
"""

from .agent import Agent, agent
from .budget import BudgetGuard
from .clock import AsyncioClock, Clock, VirtualClock
from .compaction import FLUSH_REMINDER, SUMMARY_PREFIX, compactor, estimate_tokens
from .engines import LlmConfig
from .handle import Handle, Pool
from .harness import (
    Completion,
    Guardrail,
    GuardrailTypeError,
    Verdict,
    all_todos_done,
    guarded_hooks,
    harness,
    loop_unsupported,
    run_gated,
)
from .home import StartedAgent, agent_from_dir, start_agent
from .loop import Loop, Outcome, RunOptions
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
from .resuming import NoSuspendedHandle
from .runtime import AgentRuntime
from .types import (
    DEFAULT_MAX_CONCURRENT,
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_TURNS,
    LIMIT_COMPLETION,
    LIMIT_MAX_CHILDREN,
    LIMIT_MAX_CONCURRENT,
    LIMIT_MAX_DEPTH,
    LIMIT_MAX_TOKENS,
    LIMIT_MAX_TOOL_CALLS,
    LIMIT_MAX_TURNS,
    LIMIT_MAX_WALL_MS,
    LIMIT_TIMEOUT,
    LIMITS,
    TASK_STATUS_CLOSED,
    TASK_STATUS_DONE,
    TASK_STATUS_ERROR,
    TASK_STATUS_INCOMPLETE,
    TASK_STATUS_INTERRUPTED,
    TASK_STATUS_PENDING,
    TASK_STATUS_TIMEOUT,
    TASK_STATUSES,
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
    "DEFAULT_MAX_CONCURRENT",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_TURNS",
    "FLUSH_REMINDER",
    "HEARTBEAT_OK",
    "HEARTBEAT_PROMPT",
    "LIMITS",
    "LIMIT_COMPLETION",
    "LIMIT_MAX_CHILDREN",
    "LIMIT_MAX_CONCURRENT",
    "LIMIT_MAX_DEPTH",
    "LIMIT_MAX_TOKENS",
    "LIMIT_MAX_TOOL_CALLS",
    "LIMIT_MAX_TURNS",
    "LIMIT_MAX_WALL_MS",
    "LIMIT_TIMEOUT",
    "SUMMARY_PREFIX",
    "TASK_STATUSES",
    "TASK_STATUS_CLOSED",
    "TASK_STATUS_DONE",
    "TASK_STATUS_ERROR",
    "TASK_STATUS_INCOMPLETE",
    "TASK_STATUS_INTERRUPTED",
    "TASK_STATUS_PENDING",
    "TASK_STATUS_TIMEOUT",
    "Agent",
    "AgentDef",
    "AgentRuntime",
    "AsyncioClock",
    "Budget",
    "BudgetGuard",
    "Clock",
    "CloseReason",
    "Completion",
    "Guardrail",
    "GuardrailTypeError",
    "Handle",
    "HandleState",
    "HandleView",
    "InMemoryRuntimeStore",
    "InboxItem",
    "LlmConfig",
    "Loop",
    "NoSuspendedHandle",
    "Outcome",
    "Persona",
    "Pool",
    "PostResult",
    "RunOptions",
    "RuntimeStore",
    "SpawnError",
    "StartedAgent",
    "TaskResult",
    "TaskStatus",
    "Verdict",
    "VirtualClock",
    "agent",
    "agent_from_dir",
    "all_todos_done",
    "compactor",
    "compose_soul",
    "estimate_tokens",
    "guarded_hooks",
    "harness",
    "loop_unsupported",
    "memory_tool",
    "persona_from_dir",
    "run_gated",
    "start_agent",
]
