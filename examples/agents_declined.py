"""Sub-agents 2 — a declined answer: the run still finishes, it just does not do the thing.

`AgentRuntime.resume` branches only on ``Answer.ok``: a decline is data, not an exception. The
halted ``check_secret`` call is answered with ``declined/expired: <prompt>`` (the loop never
re-runs a tool that did not opt into handling declines), the model reads that, and the handle
settles ``done`` with a text that says so.

    python examples/agents_declined.py
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
    """The scripted model: call the tool, then report on what came back."""
    seen = tool_outputs(request)
    if not seen:
        return tool_calls(call("check_secret", {}, id="c1"))
    if "declined" in seen[-1]:
        return text("understood — access was declined")
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
    "asker": AgentDef(
        name="asker",
        description="needs approvals",
        system_prompt=(
            "Use check_secret to read the secret. If access is declined, say that it was declined."
        ),
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
        print(f"wait: status={r.status} state={rt.state_of(h)}")
        if r.status != "pending" or r.pending is None:
            raise SystemExit(f"expected a durable pending, got {r.status}: {r.text}")

        await rt.resume(Answer(id=r.pending.id, ok=False, reason="declined"))

        # The run still completes: it just knows the request was declined.
        final = await rt.wait(h)
        print(f"final: status={final.status}: {final.text}")
        if final.status != "done" or "declined" not in final.text:
            raise SystemExit(f"unexpected: {final}")


if __name__ == "__main__":
    asyncio.run(main())
