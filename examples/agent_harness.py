"""The agent harness — a completion check and a guardrail, and a halt inside the gate.

The ``coder`` agent keeps a todo list (the ``todowrite`` built-in). Its completion check,
`all_todos_done`, refuses a "done" while an item is open and sends the agent back with the
reason. A guardrail denies ``delete_branch`` outright. On its second attempt the agent ships,
which needs a human: the tree parks in a SQLite file, this runtime goes away, and a *new*
runtime restored from the file resumes it — the gate goes on at attempt 2 and the turn finishes
once.

    python examples/agent_harness.py
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from typing import Any

from _model import llm

from toolnexus import Answer, ToolContext, ToolResult, create_toolkit, define_tool, pending
from toolnexus.agents import AgentRuntime, Completion, Handle, agent, all_todos_done
from toolnexus.testing import RecordedRequest, Reply, call, text, tool_calls

RETRY = "Your work did not verify"


@define_tool
def ship(ctx: ToolContext | None = None) -> str | ToolResult:
    """Deploy the fix to production (needs a human's approval)."""
    if ctx is None or ctx.answer is None:
        return pending(kind="approval", prompt="Ship the fix to production?")
    return "shipped" if ctx.answer.ok else "not shipped"


@define_tool
def delete_branch(name: str) -> str:
    """Delete a git branch."""
    return f"deleted {name}"


def no_deletes(event: dict[str, Any]) -> str:
    """A guardrail: "" permits, any other text denies the call."""
    return "deletes need a human" if event["name"] == "delete_branch" else ""


def todos(*open_items: str) -> list[dict[str, Any]]:
    done = [{"id": "1", "text": "write the fix", "completed": True}]
    return done + [
        {"id": str(i + 2), "text": t, "completed": False} for i, t in enumerate(open_items)
    ]


def brain(request: RecordedRequest) -> Reply:
    """The scripted model: claims "done" too early, then ships when sent back."""
    messages = request.body["messages"]
    last = messages[-1]
    retried = any(m["role"] == "user" and str(m["content"]).startswith(RETRY) for m in messages)
    if last["role"] == "user" and not retried:
        return tool_calls(
            call("todowrite", {"todos": todos("ship it")}, id="t1"),
            call("delete_branch", {"name": "old-fix"}, id="t2"),
        )
    if last["role"] == "user":
        return tool_calls(call("ship", {}, id="s1"))
    if last.get("tool_call_id") == "s1":
        return tool_calls(call("todowrite", {"todos": todos()}, id="t3"))
    if last.get("tool_call_id") == "t3":
        return text("Shipped: the fix is live.")
    return text("All done!")


def runtime_llm(endpoint: dict[str, Any]) -> dict[str, Any]:
    env_key = "OPENAI_API_KEY" if endpoint["style"] == "openai" else "ANTHROPIC_API_KEY"
    return {
        "base_url": endpoint["base_url"],
        "style": endpoint["style"],
        "model": endpoint["model"],
        "api_key": endpoint.get("api_key") or os.environ.get(env_key),
    }


async def main() -> None:
    toolkit = await create_toolkit(builtins={"enabled": ["todowrite"]})
    coder = agent(
        "coder",
        does="fixes and ships bugs",
        soul="Keep a todo list with todowrite. Finish every item before you say you are done.",
        uses={"tools": [*toolkit.tools(), ship, delete_branch]},
        guardrails=[no_deletes],
        completion=Completion(all_todos_done, max_attempts=3),
    )
    store = "sqlite:///" + os.path.join(tempfile.mkdtemp(), "harness.db")
    async with llm(brain) as endpoint:
        first = AgentRuntime(registry=coder.registry(), llm=runtime_llm(endpoint), store=store)
        h = first.spawn(first.root, "coder")
        assert isinstance(h, Handle)
        halted = await first.run_turn(h, "Fix bug 12 and ship it.")
        assert halted.pending is not None
        attempt = h.gate["attempt"] if h.gate else 1
        print(f"turn 1: {halted.status} — {halted.pending.prompt} (completion attempt {attempt})")
        for line in first.trace:
            if "completion check failed" in line:
                print("  " + line)
        await first.aclose()  # the tree stays parked in the SQLite file

        second = await AgentRuntime.restore(
            registry=coder.registry(), store=store, llm=runtime_llm(endpoint)
        )
        async with second:
            done = await second.resume(Answer(id=halted.pending.id, ok=True))
            print(f"resumed in a new runtime: {done.status} — {done.text}")
            print(f"turns={done.turns} tokens={done.total_tokens}")
            transcript = await second.conversation_store.get("root/coder.1") or []
            denied = [m["content"] for m in transcript if m.get("role") == "tool"]
            print("tool results:", " | ".join(str(d).replace("\n", "; ") for d in denied))


if __name__ == "__main__":
    asyncio.run(main())
