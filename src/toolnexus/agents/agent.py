"""The level-1 surface: ``agent(...)`` — an Agent is a Tool, a soul and a team.

::

    researcher = agent("researcher", does="finds facts", uses={"tools": [search]})
    lead = agent("lead", does="answers questions", team=[researcher], soul="Be brief.")
    result = await lead.run("Who won?", llm={"base_url": url, "model": "m", "api_key": "k"})
    if result.status == "pending":
        await result.runtime.resume(Answer(id=result.pending.id, ok=True))
    served = await lead.serve("127.0.0.1:0", llm=..., store="sqlite:///state.db")

`Agent` here is the spec (`toolnexus.agents.spec.Agent`: definition, registry, ``run``,
``as_tool``) plus the conveniences that stand on the layers which take a spec: ``loop`` (a
`Loop` on a plain client) and ``serve`` (`toolnexus.serve.serve_agent`). They live up here, so
that the spec stays below the loop and the serving layer (STYLE 16); every agent ``agent``
builds is one of these, and a spec check (``isinstance(x, spec.Agent)``) accepts it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Unpack

from .._types import Tool
from ..errors import UsageError
from .loop import Loop
from .spec import Agent as _Spec
from .spec import AgentSpec

if TYPE_CHECKING:
    from ..serve.server import ServeHandle

__all__ = ["Agent", "AgentSpec", "agent"]


class Agent(_Spec):
    """An agent (see `toolnexus.agents.spec.Agent` for its arguments and attributes), with its
    `loop` and `serve` conveniences. Build with `agent`."""

    def loop(self, options: Mapping[str, Any], toolkit: Any = None) -> Loop:
        """A `Loop` running this agent's soul, model, budget, hooks, guardrails and completion
        check on a client built from ``options`` (the `create_client` options)."""
        return Loop(self, options, toolkit)

    async def serve(self, addr: str, **options: Any) -> ServeHandle:
        """Serve this agent (and its team) over A2A on ``addr`` → a
        `toolnexus.serve.ServeHandle`: each task runs the agent; its questions reach the
        caller as ``input-required``. ``options``: those of
        `toolnexus.serve.serve_agent_app` (``llm``, ``store``, ``token``, ``a2a``, …)."""
        from ..serve.app import serve_agent  # starlette and the A2A SDK load when it serves

        return await serve_agent(self, addr, **options)


def agent(name: str, **spec: Unpack[AgentSpec]) -> Agent:
    """Define an agent: what it ``does``, the tools it ``uses``, its ``soul`` and ``team``.

    ``team`` agents are the only targets of its ``task`` tool (no team ⇒ no ``task`` tool).
    ``model=None`` inherits the runtime's model. ``guardrails`` run before every tool call
    (`guarded_hooks`); ``completion`` gates every turn (`run_gated`). A ``soul`` wins over a
    ``soul_file``.
    """
    uses = spec.get("uses")
    unknown = sorted(set(uses or {}) - {"tools"})
    if unknown:
        raise UsageError(f"agent {name!r}: unknown uses key(s) {', '.join(unknown)} (known: tools)")
    tools = list((uses or {}).get("tools") or [])
    for t in tools:
        if not isinstance(t, Tool):
            raise UsageError(
                f"uses['tools'] must hold toolnexus.Tool values, got {type(t).__name__}"
            )
    for g in spec.get("guardrails") or []:
        if not callable(g):
            raise UsageError(f"agent {name!r}: every guardrail must be callable")
    return Agent(name, **spec)
