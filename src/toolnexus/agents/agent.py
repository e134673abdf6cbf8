"""The level-1 surface: ``agent(...)`` — an Agent is a Tool, a soul and a team.

::

    researcher = agent("researcher", does="finds facts", uses={"tools": [search]})
    lead = agent("lead", does="answers questions", team=[researcher], soul="Be brief.")
    result = await lead.run("Who won?", llm={"base_url": url, "model": "m", "api_key": "k"})
    if result.status == "pending":
        await result.runtime.resume(Answer(id=result.pending.id, ok=True))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._types import Tool, ToolContext, ToolResult
from ..errors import UsageError
from ..suspension import WaitFor, suspension_result
from .handle import Handle
from .runtime import AgentRuntime
from .types import AgentDef, Budget, TaskResult

__all__ = ["Agent", "agent"]


@dataclass(slots=True)
class Agent:
    """An agent definition plus its team; build with `agent`."""

    definition: AgentDef
    team: list[Agent] = field(default_factory=lambda: [])

    @property
    def name(self) -> str:
        return self.definition.name

    def registry(self) -> dict[str, AgentDef]:
        """The transitive closure of the team graph, name → definition (first wins)."""
        found: dict[str, AgentDef] = {}
        stack: list[Agent] = [self]
        while stack:
            current = stack.pop()
            if current.name in found:
                continue
            found[current.name] = current.definition
            stack.extend(sorted(current.team, key=lambda a: a.name, reverse=True))
        return dict(sorted(found.items()))

    async def run(self, prompt: str, **rt_opts: Any) -> TaskResult:
        """Run this agent once on a fresh runtime and return its result.

        A ``pending`` result keeps its runtime open in ``result.runtime``: answer it with
        ``await result.runtime.resume(answer)`` and ``wait`` again. Otherwise the runtime is
        closed before returning.
        """
        rt = AgentRuntime(registry=self.registry(), **rt_opts)
        spawned = rt.spawn(rt.root, self.name)
        if not isinstance(spawned, Handle):
            await rt.aclose()
            return TaskResult(text=spawned.error, status="error", is_error=True)
        result = await rt.run_turn(spawned, prompt)
        if result.status != "pending":
            await rt.aclose()
        return result

    async def serve(self, addr: str, **options: Any) -> Any:
        """Serve this agent (and its team) over A2A on ``addr`` → a
        `toolnexus.serve.ServeHandle`: each task runs the agent; its questions reach the
        caller as ``input-required``. ``options``: those of
        `toolnexus.serve.serve_agent_app` (``llm``, ``store``, ``token``, ``a2a``, …)."""
        from ..serve.app import serve_agent

        return await serve_agent(self, addr, **options)

    def as_tool(self, **rt_opts: Any) -> Tool:
        """This agent as a tool ``{prompt}``: runs its loop, returns only the final text.

        When the agent suspends, the tool suspends with the same Request; the retry with the
        answer resumes that very run (its runtime is kept until then), so the agent's tool
        sees the answer — inline through the caller's ``wait_for`` or through a durable resume
        in the same process.
        """
        parked: dict[str, AgentRuntime] = {}

        async def execute(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
            answer = ctx.answer if ctx is not None else None
            rt = parked.pop(answer.id, None) if answer is not None else None
            if rt is not None and answer is not None:
                await rt.resume(answer)
                handle = rt.handle(f"root/{self.name}.1")
                assert handle is not None
                result = await rt.wait(handle)
                if result.status != "pending":
                    await rt.aclose()
            else:
                result = await self.run(str(args.get("prompt", "")), **rt_opts)
            if result.status == "pending" and result.pending is not None:
                if result.runtime is not None:
                    parked[result.pending.id] = result.runtime
                return suspension_result(result.pending)
            text = result.text if result.status == "done" else f"[{result.status}] {result.text}"
            return ToolResult(
                text,
                result.is_error,
                {"agent": self.name, "turns": result.turns, "totalTokens": result.total_tokens},
            )

        return Tool(
            name=self.name,
            description=self.definition.description,
            input_schema={
                "type": "object",
                "properties": {"prompt": {"type": "string", "description": "The task."}},
                "required": ["prompt"],
            },
            source="native",
            execute=execute,
        )


def agent(
    name: str,
    *,
    does: str,
    uses: Mapping[str, Any] | None = None,
    soul: str | None = None,
    soul_file: str | Path | None = None,
    team: Sequence[Agent] | None = None,
    budget: Budget | None = None,
    model: str | None = None,
    wait_for: WaitFor | None = None,
    on_spawn: Callable[..., Any] | None = None,
    on_close: Callable[..., Any] | None = None,
    hooks: Any = None,
    on_metric: Callable[[dict[str, Any]], Any] | None = None,
) -> Agent:
    """Define an agent: what it ``does``, the tools it ``uses``, its ``soul`` and ``team``.

    ``team`` agents are the only targets of its ``task`` tool (no team ⇒ no ``task`` tool).
    ``model=None`` inherits the runtime's model.
    """
    if soul is not None and soul_file is not None:
        raise UsageError("give soul or soul_file, not both")
    if soul_file is not None:
        soul = Path(soul_file).read_text(encoding="utf-8")
    unknown = sorted(set(uses or {}) - {"tools"})
    if unknown:
        raise UsageError(f"agent {name!r}: unknown uses key(s) {', '.join(unknown)} (known: tools)")
    tools = list((uses or {}).get("tools") or [])
    for t in tools:
        if not isinstance(t, Tool):
            raise UsageError(
                f"uses['tools'] must hold toolnexus.Tool values, got {type(t).__name__}"
            )
    members = list(team or [])
    return Agent(
        definition=AgentDef(
            name=name,
            description=does,
            system_prompt=soul or "",
            model=model,
            tools=tools,
            task_targets=[m.name for m in members],
            budget=budget,
            wait_for=wait_for,
            on_spawn=on_spawn,
            on_close=on_close,
            hooks=hooks,
            on_metric=on_metric,
        ),
        team=members,
    )
