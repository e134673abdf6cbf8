"""The agent spec: what an agent ``does``, the tools it ``uses``, its soul, team and gates.

An `Agent` here is the spec and what runs it: its registry entry (`Agent.definition`), its
team's closure (`Agent.registry`), one run on a fresh runtime (`Agent.run`) and the agent as a
tool (`Agent.as_tool`). The runtime, the `Loop` and the served A2A surface all take it.

The `Agent` users build (`toolnexus.agents.agent`: ``agent(...)``) is this spec plus its
conveniences that stand on those layers, ``loop`` and ``serve``; it is defined there, above
them, so that this spec stays below everything that runs or serves it (STYLE 16).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Required, TypedDict, Unpack

from .._types import Tool, ToolContext, ToolResult
from ..suspend import suspension_result
from ..suspension import WaitFor
from .handle import Handle
from .harness import Completion, Guardrail, guarded_hooks
from .runtime import AgentRuntime
from .types import AgentDef, Budget, ResultRuntime, TaskResult

__all__ = ["Agent", "AgentSpec"]


class Agent:
    """An agent: what it ``does``, the tools it ``uses``, its soul, team and gates.

    Build with ``agent(...)`` (`toolnexus.agents.agent`, which checks the arguments). Every
    argument (`AgentSpec`) is a public attribute; ``uses`` defaults to ``{}``, ``team`` and
    ``guardrails`` to ``[]``, the rest to ``None``.

    Args:
        name: the agent's name (its tool's name, its handles' prefix).
        does: what it does (its tool's description; its team's view of it). Required.
        uses: ``{"tools": [Tool, ...]}``, the tools it may call.
        soul / soul_file: its system prompt, or a file holding it (``soul`` wins).
        team: the agents its ``task`` tool may delegate to (none ⇒ no ``task`` tool).
        budget: its `Budget` (turns, tokens, tool calls, wall time, children).
        model: the model of its turns (``None``: the runtime's).
        wait_for: answers its suspensions inline.
        on_spawn / on_close: called when a handle of it is spawned / closed.
        hooks: client hooks for its turns; on_metric: its turns' metric sink.
        guardrails: checks before every tool call (`guarded_hooks`).
        completion: the `Completion` check that gates every turn (`run_gated`).
    """

    def __init__(self, name: str, **spec: Unpack[AgentSpec]) -> None:
        self.name = name
        self.does: str = spec["does"]
        self.uses: dict[str, Any] = dict(spec.get("uses") or {})
        self.soul: str | None = spec.get("soul")
        self.soul_file: str | Path | None = spec.get("soul_file")
        self.team: list[Agent] = list(spec.get("team") or [])
        self.budget: Budget | None = spec.get("budget")
        self.model: str | None = spec.get("model")
        self.wait_for: WaitFor | None = spec.get("wait_for")
        self.on_spawn: Callable[..., Any] | None = spec.get("on_spawn")
        self.on_close: Callable[..., Any] | None = spec.get("on_close")
        self.hooks: Any = spec.get("hooks")
        self.on_metric: Callable[[dict[str, Any]], Any] | None = spec.get("on_metric")
        self.guardrails: list[Guardrail] = list(spec.get("guardrails") or [])
        self.completion: Completion | None = spec.get("completion")

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, team={[a.name for a in self.team]!r})"

    def _soul_text(self) -> str:
        if self.soul is not None:
            return self.soul
        if self.soul_file is not None:
            return Path(self.soul_file).read_text(encoding="utf-8")
        return ""

    @property
    def definition(self) -> AgentDef:
        """This agent as a registry entry (see `registry`)."""
        tools = self.uses.get("tools")
        return AgentDef(
            name=self.name,
            description=self.does,
            system_prompt=self._soul_text(),
            model=self.model or "inherit",
            budget=self.budget,
            tools=list(tools) if tools is not None else None,
            wait_for=self.wait_for,
            on_spawn=self.on_spawn,
            on_close=self.on_close,
            task_targets=[m.name for m in self.team],
            hooks=guarded_hooks(self.guardrails, self.hooks),
            on_metric=self.on_metric,
            completion=self.completion,
        )

    def registry(self, acc: dict[str, AgentDef] | None = None) -> dict[str, AgentDef]:
        """The transitive closure of the team graph, name → definition (first wins).

        With ``acc``, the definitions are added to it (and it is returned).
        """
        found: dict[str, AgentDef] = acc if acc is not None else {}
        seen: set[str] = set()
        stack: list[Agent] = [self]
        while stack:
            current = stack.pop()
            if current.name in seen:
                continue
            seen.add(current.name)
            found.setdefault(current.name, current.definition)
            stack.extend(sorted(current.team, key=lambda a: a.name, reverse=True))
        if acc is not None:
            return acc
        return dict(sorted(found.items()))

    async def run(self, prompt: str, **rt_opts: Any) -> TaskResult:
        """Run this agent once on a fresh runtime and return its result.

        A ``pending`` result keeps its runtime open in ``result.runtime``: answer it with
        ``await result.runtime.resume(answer)`` and ``wait`` again. Otherwise the runtime is
        closed before returning.
        """
        opts = {k: v for k, v in rt_opts.items() if v is not None}
        rt = AgentRuntime(registry=self.registry(), **opts)
        spawned = rt.spawn(rt.root, self.name)
        if not isinstance(spawned, Handle):
            await rt.aclose()
            return TaskResult(text=spawned.error, status="error", is_error=True)
        result = await rt.run_turn(spawned, prompt)
        result.runtime = rt
        if result.status != "pending":
            await rt.close(rt.root)
            await rt.aclose()
        return result

    def as_tool(self, **rt_opts: Any) -> Tool:
        """This agent as a tool ``{prompt}``: runs its loop, returns only the final text.

        When the agent suspends, the tool suspends with the same Request; the retry with the
        answer resumes that very run (its runtime is kept until then), so the agent's tool
        sees the answer — inline through the caller's ``wait_for`` or through a durable resume
        in the same process.
        """
        parked: dict[str, ResultRuntime] = {}

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
            description=self.does,
            input_schema={
                "type": "object",
                "properties": {"prompt": {"type": "string", "description": "The task."}},
                "required": ["prompt"],
            },
            source="native",
            execute=execute,
        )


class AgentSpec(TypedDict, total=False):
    """The keyword arguments of `agent` (and of `Agent`): see `Agent` for each."""

    does: Required[str]
    uses: Mapping[str, Any] | None
    soul: str | None
    soul_file: str | Path | None
    team: Sequence[Agent] | None
    budget: Budget | None
    model: str | None
    wait_for: WaitFor | None
    on_spawn: Callable[..., Any] | None
    on_close: Callable[..., Any] | None
    hooks: Any
    on_metric: Callable[[dict[str, Any]], Any] | None
    guardrails: Sequence[Guardrail] | None
    completion: Completion | None
