"""Sub-agents 1 — a durable pending: the handle parks until someone answers.

The ``asker`` agent's ``check_secret`` tool needs a human's approval. Nothing in the chain has a
``wait_for``, so the suspension goes durable: ``wait`` returns ``status="pending"``, the handle
sits in ``suspended`` and `AgentRuntime.resume` is the only way back. The Answer goes straight
to the halted call (retry-with-answer): the model is not asked to repeat it.

    python examples/agents_durable_resume.py
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from _model import llm, tool_outputs

from toolnexus import Answer, ToolContext, ToolResult, define_tool, pending
from toolnexus.agents import AgentDef, AgentRuntime, Handle
from toolnexus.testing import RecordedRequest, Reply, call, text, tool_calls


@define_tool
def check_secret(ctx: ToolContext | None = None) -> str | ToolResult:
    """Read the deployment secret (needs a human's approval)."""
    if ctx is not None and ctx.answer is not None and ctx.answer.ok:
        return "secret-token"
    return pending(kind="approval", prompt="approve secret access?")


def brain(request: RecordedRequest) -> Reply:
    """The scripted model: call the tool until its result is in, then answer."""
    if not tool_outputs(request):
        return tool_calls(call("check_secret", {}, id="c1"))
    return text("approved and done")


def runtime_llm(endpoint: dict[str, Any]) -> dict[str, Any]:
    """The runtime's ``llm=`` option from `_model.llm`'s client keyword arguments."""
    env_key = "OPENAI_API_KEY" if endpoint["style"] == "openai" else "ANTHROPIC_API_KEY"
    return {
        "base_url": endpoint["base_url"],
        "style": endpoint["style"],
        "model": endpoint["model"],
        "api_key": endpoint.get("api_key") or os.environ.get(env_key),
    }


REGISTRY = {
    # No wait_for here, and none higher up: the suspension is durable.
    "asker": AgentDef(
        name="asker",
        description="needs approvals",
        system_prompt="Use check_secret to read the secret, then say what happened.",
        tools=[check_secret],
    ),
}


async def main() -> None:
    async with (
        llm(brain) as endpoint,
        AgentRuntime(registry=REGISTRY, llm=runtime_llm(endpoint)) as rt,
    ):
        h = rt.spawn(rt.root, "asker")
        assert isinstance(h, Handle), h
        rt.wake(h, "get the secret")
        r = await rt.wait(h)
        view = rt.inspect(h)
        print(f"wait: status={r.status} state={rt.state_of(h)} pending_kind={view.pending_kind}")
        if r.status != "pending" or r.pending is None or view.pending_kind != "approval":
            raise SystemExit(f"expected a durable pending, got {r.status}: {r.text}")
        path = (r.pending.data or {}).get("path")
        print(f"request {r.pending.id}: {r.pending.prompt} path={path}")

        # The out-of-band Answer resumes the deepest suspended handle.
        await rt.resume(Answer(id=r.pending.id, ok=True))
        print(f"after resume: state={rt.state_of(h)}")
        final = await rt.wait(h)
        print(f"final: status={final.status}: {final.text}")
        print(f"lifetime: turns={rt.inspect(h).turns} tokens={rt.inspect(h).tokens}")
        print("trace:", ", ".join(t.split(": ", 1)[1] for t in rt.trace))


if __name__ == "__main__":
    asyncio.run(main())
