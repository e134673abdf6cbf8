"""The ``task`` tool: delegate a subtask to a teammate (spawn → wake → wait → close, fused).

A re-invoked ``task`` whose key (``"<agent>:<prompt>"``) matches an existing child reattaches
to it instead of spawning a duplicate: a settled child gives its recorded result, a suspended one
its pending request (or, when the retry carries an answer, an inline resume), a running one is
awaited. That is what makes the resume cascade idempotent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._types import Tool, ToolContext, ToolResult
from ..suspension import suspension_result
from .handle import Handle
from .types import SpawnError, TaskResult

if TYPE_CHECKING:
    from .runtime import AgentRuntime

__all__ = ["task_description", "task_tool"]


def task_description(rt: AgentRuntime, team: list[str]) -> str:
    """The description advertises only the caller's team, sorted, from each agent's ``does``."""
    listed = "; ".join(f"{name}: {rt.registry[name].description}" for name in team)
    return (
        "Delegate a subtask to an isolated subagent. It works on a fresh transcript with its own "
        "tools and returns only its final answer. Available agents — " + listed
    )


def _output(child: Handle, result: TaskResult) -> ToolResult:
    text = result.text if result.status == "done" else f"[{result.status}] {result.text}"
    return ToolResult(
        text,
        result.is_error or result.status in ("error", "interrupted", "timeout", "closed"),
        {"agent": child.agent, "turns": result.turns, "totalTokens": result.total_tokens},
    )


def task_tool(rt: AgentRuntime, parent: Handle) -> Tool:
    """The ``task`` tool of ``parent``: its team is its definition's ``task_targets``."""
    team = sorted(rt.registry[parent.agent].task_targets)

    async def execute(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        agent = str(args.get("agent", ""))
        prompt = str(args.get("prompt", ""))
        if agent not in team:
            return ToolResult(
                f'agent "{agent}" is not in this agent\'s team (available: {", ".join(team)})',
                True,
            )
        key = f"{agent}:{prompt}"
        answer = ctx.answer if ctx is not None else None
        child = next((c for c in parent.children if c.task_key == key), None)
        if child is not None:
            rt.trace.append(f"{child.id}: task replay → REATTACH")
            if child.state == "suspended":
                if answer is None:
                    assert child.pending is not None
                    return suspension_result(child.pending)
                result = await rt.resume_handle(child, answer)
            elif child.state == "running":
                result = await rt.wait(child, waiter=parent)
            else:
                result = child.result or TaskResult(text="", status="closed")
        else:
            spawned = rt.spawn(parent, agent)
            if isinstance(spawned, SpawnError):
                return ToolResult(spawned.error, True)
            child = spawned
            child.task_key = key
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
