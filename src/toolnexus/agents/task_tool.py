"""The ``task`` tool: delegate a subtask to a teammate (spawn → wake → wait → close, fused).

Every ``task`` call spawns a fresh child — a later call with the same agent and prompt runs
the teammate again. Only the *re-invocation of the same call* reattaches to the child it
spawned: the retry of a suspended call (it carries ``ctx.answer``, inline or in a resume
cascade) finds its child by the call's id and task key (``"<agent>:<prompt>"``): a settled
child gives its recorded result, a suspended one is resumed inline with the answer, a running
one is awaited. That is what makes the resume cascade idempotent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .._types import Tool, ToolContext, ToolResult
from ..suspend import suspension_result
from ..suspension import Answer
from .handle import Handle
from .types import AgentDef, CloseReason, InboxItem, PostResult, SpawnError, TaskResult

__all__ = ["Delegating", "task_description", "task_tool"]


class Delegating(Protocol):
    """What the ``task`` tool uses of its runtime (`toolnexus.agents.AgentRuntime` is one; it
    builds the tool, so it is named here by that use rather than imported)."""

    registry: dict[str, AgentDef]
    trace: list[str]

    def wake(self, h: Handle, prompt: str | None = None) -> PostResult: ...

    async def wait(
        self, h: Handle, timeout_ms: float | None = None, *, waiter: Handle | None = None
    ) -> TaskResult: ...

    async def resume_handle(self, h: Handle, answer: Answer) -> TaskResult: ...

    async def close(
        self, h: Handle, *, force: bool = False, reason: CloseReason | None = None
    ) -> list[InboxItem]: ...


def task_description(rt: Delegating, team: list[str]) -> str:
    """The description advertises only the caller's team, sorted, from each agent's ``does``."""
    listed = "; ".join(f"{name}: {rt.registry[name].description}" for name in team)
    return "Delegate a subtask to an isolated subagent. Available agents — " + listed


def _output(child: Handle, result: TaskResult) -> ToolResult:
    text = result.text if result.status == "done" else f"[{result.status}] {result.text}"
    return ToolResult(
        text,
        result.is_error or result.status in ("error", "interrupted", "timeout", "closed"),
        {"agent": child.agent, "turns": result.turns, "totalTokens": result.total_tokens},
    )


def _spawned_by(parent: Handle, key: str, call_id: str | None) -> Handle | None:
    """The child the call ``call_id`` spawned for ``key`` (the latest such, without an id)."""
    found: Handle | None = None
    for c in parent.children:
        if c.task_key == key and (call_id is None or c.task_call in (call_id, None)):
            found = c
    return found


def _trace_escalation(rt: Delegating, parent: Handle, child: Handle) -> None:
    """The inline answer reached ``child`` from ``parent``: when ``parent``'s own ``wait_for``
    gave it, name it as the interpreter of the question's asker."""
    if rt.registry[parent.agent].wait_for is None:
        return
    asker = child
    while True:
        below = next((c for c in asker.children if c.state == "suspended"), None)
        if below is None:
            break
        asker = below
    rt.trace.append(f'{asker.id}: escalate → {parent.id} answers ("nearest interpreter")')


def task_tool(
    rt: Delegating, parent: Handle, *, spawn: Callable[[Handle, str], Handle | SpawnError]
) -> Tool:
    """The ``task`` tool of ``parent``: its team is its definition's ``task_targets``.

    ``spawn`` makes a child that is the agent's, not the host's (only ``parent`` may wait on
    it); every other step is one of the runtime's verbs."""
    team = sorted(rt.registry[parent.agent].task_targets or ())

    async def execute(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        agent = str(args.get("agent", ""))
        prompt = str(args.get("prompt", ""))
        if agent not in team:
            return ToolResult(
                f'agent "{agent}" not in this agent\'s team ({", ".join(team) or "none"})', True
            )
        key = f"{agent}:{prompt}"
        answer = ctx.answer if ctx is not None else None
        call_id = ctx.call_id if ctx is not None else None
        child = _spawned_by(parent, key, call_id) if answer is not None else None
        if child is not None and answer is not None:
            rt.trace.append(
                f"{parent.id}: task replay → REATTACH to {child.id} (state {child.state})"
            )
            if child.state == "suspended":
                _trace_escalation(rt, parent, child)
                result = await rt.resume_handle(child, answer)
            elif child.state == "running":
                result = await rt.wait(child, waiter=parent)
            else:
                result = child.result or TaskResult(text="", status="closed")
        else:
            spawned = spawn(parent, agent)
            if isinstance(spawned, SpawnError):
                return ToolResult(spawned.error, True)
            child = spawned
            child.task_key = key
            child.task_call = call_id
            posted = rt.wake(child, prompt)
            if not posted.ok:
                return ToolResult(posted.error or "wake refused", True)
            result = await rt.wait(child, waiter=parent)
        if result.status == "pending" and result.pending is not None:
            return suspension_result(result.pending)
        if child.state != "closed":
            await rt.close(child)
        return _output(child, result)

    return Tool(
        name="task",
        description=task_description(rt, team),
        input_schema={
            "type": "object",
            "properties": {
                "agent": {"type": "string", "enum": team, "description": "Who does the subtask."},
                "prompt": {"type": "string", "description": "The subtask, self-contained."},
            },
            "required": ["agent", "prompt"],
        },
        source="native",
        execute=execute,
        validate_args=False,
        handles_declines=True,
    )
