"""Sub-agents 3 — inspect what is parked before resuming it: ``list`` and ``inspect``.

A host that keeps the answer apart from the runtime (a queue, a database row) still needs to
know what is parked. ``rt.list()`` walks the tree and ``rt.inspect(h)`` gives one read-only
view — state, pending kind and request, lifetime tokens and turns — without touching the
handle. ``wait`` on a suspended handle returns its cached pending result at once.

    python examples/agents_inspect.py
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from _model import llm, tool_outputs

from toolnexus import Answer, ToolContext, ToolResult, define_tool, pending
from toolnexus.agents import AgentDef, AgentRuntime, Handle, HandleView
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
    "asker": AgentDef(
        name="asker",
        description="needs approvals",
        system_prompt="Use check_secret to read the secret, then say what happened.",
        tools=[check_secret],
    ),
}


def show(view: HandleView) -> str:
    kind = view.pending_kind or "-"
    return (
        f"{view.id}  state={view.state}  pending_kind={kind}  "
        f"turns={view.turns}  tokens={view.tokens}  inbox={view.inbox}"
    )


async def main() -> None:
    async with (
        llm(brain) as endpoint,
        AgentRuntime(registry=REGISTRY, llm=runtime_llm(endpoint)) as rt,
    ):
        h = rt.spawn(rt.root, "asker")
        assert isinstance(h, Handle), h
        rt.wake(h, "get the secret")
        await rt.wait(h)

        # The read-only views: what is parked, and on what.
        for view in rt.list():
            print("list:", show(view))
        view = rt.inspect(h)
        if view.state != "suspended" or view.pending_kind != "approval":
            raise SystemExit(f"unexpected view: {view}")
        assert view.pending is not None
        print(f"inspect: request {view.pending.id}: {view.pending.prompt}")

        started = time.perf_counter()
        last = await rt.wait(h)  # the cached pending result: does not block
        waited_ms = (time.perf_counter() - started) * 1000
        print(f"wait again: status={last.status} in {waited_ms:.2f} ms (cached, no model call)")
        assert last.pending is not None
        assert last.pending.id == view.pending.id

        await rt.resume(Answer(id=last.pending.id, ok=True))
        settled = await rt.wait(h)
        print(f"settled: {view.state} -> {settled.status}: {settled.text}")
        print("list:", show(rt.list()[0]))


if __name__ == "__main__":
    asyncio.run(main())
