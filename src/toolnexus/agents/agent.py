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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._types import Tool, ToolContext, ToolResult
from ..errors import UsageError
from ..suspension import WaitFor, suspension_result
from .handle import Handle
from .harness import Completion, Guardrail, guarded_hooks
from .runtime import AgentRuntime
from .types import AgentDef, Budget, TaskResult

if TYPE_CHECKING:
    from .loop import Loop

__all__ = ["Agent", "agent"]


class Agent:
    """An agent: what it ``does``, the tools it ``uses``, its soul, team and gates.

    Build with `agent` (which checks the arguments). Every argument is a public attribute;
    ``uses`` defaults to ``{}``, ``team`` and ``guardrails`` to ``[]``.
    """

    def __init__(
        self,
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
        guardrails: Sequence[Guardrail] | None = None,
        completion: Completion | None = None,
    ) -> None:
        self.name = name
        self.does = does
        self.uses: dict[str, Any] = dict(uses or {})
        self.soul = soul
        self.soul_file = soul_file
        self.team: list[Agent] = list(team or [])
        self.budget = budget
        self.model = model
        self.wait_for = wait_for
        self.on_spawn = on_spawn
        self.on_close = on_close
        self.hooks = hooks
        self.on_metric = on_metric
        self.guardrails: list[Guardrail] = list(guardrails or [])
        self.completion = completion

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

    def loop(self, options: Mapping[str, Any], toolkit: Any = None) -> Loop:
        """A `Loop` running this agent's soul, model, budget, hooks, guardrails and completion
        check on a client built from ``options`` (the `create_client` options)."""
        from .loop import Loop

        return Loop(self, options, toolkit)

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
            description=self.does,
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
    guardrails: Sequence[Guardrail] | None = None,
    completion: Completion | None = None,
) -> Agent:
    """Define an agent: what it ``does``, the tools it ``uses``, its ``soul`` and ``team``.

    ``team`` agents are the only targets of its ``task`` tool (no team ⇒ no ``task`` tool).
    ``model=None`` inherits the runtime's model. ``guardrails`` run before every tool call
    (`guarded_hooks`); ``completion`` gates every turn (`run_gated`). A ``soul`` wins over a
    ``soul_file``.
    """
    unknown = sorted(set(uses or {}) - {"tools"})
    if unknown:
        raise UsageError(f"agent {name!r}: unknown uses key(s) {', '.join(unknown)} (known: tools)")
    tools = list((uses or {}).get("tools") or [])
    for t in tools:
        if not isinstance(t, Tool):
            raise UsageError(
                f"uses['tools'] must hold toolnexus.Tool values, got {type(t).__name__}"
            )
    for g in guardrails or []:
        if not callable(g):
            raise UsageError(f"agent {name!r}: every guardrail must be callable")
    return Agent(
        name,
        does=does,
        uses=uses,
        soul=soul,
        soul_file=soul_file,
        team=team,
        budget=budget,
        model=model,
        wait_for=wait_for,
        on_spawn=on_spawn,
        on_close=on_close,
        hooks=hooks,
        on_metric=on_metric,
        guardrails=guardrails,
        completion=completion,
    )
