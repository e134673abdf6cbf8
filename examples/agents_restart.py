"""Sub-agents 5 — a suspended tree survives the process: park, exit, restore, answer.

    python examples/agents_restart.py start  [state.db]    # run until the tree is suspended
    python examples/agents_restart.py status [state.db]    # a new process: what is parked
    python examples/agents_restart.py answer <request-id> yes|no [state.db]

``start`` runs the ``ops`` coordinator, which delegates to ``keeper`` through ``task``;
``keeper``'s ``rotate_key`` tool needs approval and nothing has a ``wait_for``, so both handles
park ``suspended``. With ``store="sqlite:///…"`` the whole tree — handles, transcripts,
checkpoints, the pending request — is in the file when the process exits. ``status`` and
``answer`` are fresh processes: `AgentRuntime.restore` rebuilds the tree, and ``resume``
delivers the answer to the halted ``rotate_key`` call, then cascades up — the coordinator's
``task`` call reattaches to its finished child instead of spawning a new one.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from _model import llm, tool_outputs

from toolnexus import (
    Answer,
    AnswerConflict,
    AnswerMismatch,
    ResumeError,
    ToolContext,
    ToolResult,
    define_tool,
    pending,
)
from toolnexus.agents import Agent, AgentRuntime, HandleView, agent
from toolnexus.testing import RecordedRequest, Reply, call, text, tool_calls

OPS_SOUL = "You run operations. Delegate key rotations to keeper with the task tool, then report."
KEEPER_SOUL = "You keep the secrets. Rotate keys with rotate_key and say what happened."
COORDINATOR_ID = "root/ops.1"


@define_tool
def rotate_key(service: str, ctx: ToolContext | None = None) -> str | ToolResult:
    """Rotate a service's API key (needs a human's approval)."""
    if ctx is None or ctx.answer is None:
        return pending(kind="approval", prompt=f"Rotate the {service} API key?")
    # Only an approval gets here: the loop answers a decline itself with
    # "declined/expired: <prompt>" and never re-runs the tool.
    return f"the {service} key was rotated"


def brain(request: RecordedRequest) -> Reply:
    """The scripted model; who is asking shows in the system prompt."""
    messages = request.body["messages"]
    soul = str(messages[0].get("content")) if messages[0].get("role") == "system" else ""
    seen = tool_outputs(request)
    if soul == KEEPER_SOUL:
        if not seen:
            return tool_calls(call("rotate_key", {"service": "payments"}, id="k1"))
        return text(f"Done: {seen[-1]}.")
    if not seen:
        prompt = "Rotate the payments API key."
        return tool_calls(call("task", {"agent": "keeper", "prompt": prompt}, id="t1"))
    return text(f"Ops report — {seen[-1]}")


def team() -> Agent:
    keeper = agent("keeper", does="rotates keys", soul=KEEPER_SOUL, uses={"tools": [rotate_key]})
    return agent("ops", does="runs operations", soul=OPS_SOUL, team=[keeper])


def runtime_llm(endpoint: dict[str, Any]) -> dict[str, Any]:
    """The runtime's ``llm=`` option from `_model.llm`'s client keyword arguments."""
    env_key = "OPENAI_API_KEY" if endpoint["style"] == "openai" else "ANTHROPIC_API_KEY"
    return {
        "base_url": endpoint["base_url"],
        "style": endpoint["style"],
        "model": endpoint["model"],
        "api_key": endpoint.get("api_key") or os.environ.get(env_key),
    }


def show(view: HandleView) -> str:
    line = f"{view.id:24} {view.state:9} turns={view.turns} tokens={view.tokens}"
    if view.pending is not None:
        line += f"  {view.pending_kind} {view.pending.id}: {view.pending.prompt}"
    return line


async def start(ops: Agent, options: dict[str, Any]) -> int:
    result = await ops.run("The payments key leaked. Rotate it.", **options)
    print(f"status={result.status}")
    if result.runtime is None or result.pending is None:
        print(result.text)
        return 1
    for view in result.runtime.list():
        print(show(view))
    print(f"request {result.pending.id}: {result.pending.prompt}")
    path: list[str] = (result.pending.data or {}).get("path") or []
    print(f"path={'/'.join(path)}")
    await result.runtime.aclose()  # the tree stays suspended in the store
    return 0


async def status(ops: Agent, options: dict[str, Any]) -> int:
    rt = await AgentRuntime.restore(registry=ops.registry(), **options)
    async with rt:
        views = rt.list()
        for view in views:
            print(show(view))
        if not views:
            print("(nothing stored)")
    return 0


async def answer(ops: Agent, options: dict[str, Any], request_id: str, ok: bool) -> int:
    rt = await AgentRuntime.restore(registry=ops.registry(), **options)
    async with rt:
        coordinator = rt.handle(COORDINATOR_ID)
        try:
            await rt.resume(Answer(id=request_id, ok=ok), answered_by="cli")
        except (AnswerConflict, AnswerMismatch, ResumeError) as exc:
            print(f"error: {exc}")
            return 1
        assert coordinator is not None
        final = await rt.wait(coordinator)
        print(f"status={final.status}: {final.text}")
        for view in rt.list():
            print(show(view))
        print("trace:")
        for line in rt.trace:
            print(f"  {line}")
    return 0


async def main(argv: list[str]) -> int:
    command = argv[0] if argv else "start"
    if command not in ("start", "status", "answer") or (command == "answer" and len(argv) < 3):
        print(__doc__)
        return 2
    rest = argv[3:] if command == "answer" else argv[1:]
    db = rest[0] if rest else "agents_restart.db"
    ops = team()
    async with llm(brain) as endpoint:
        options = {"llm": runtime_llm(endpoint), "store": f"sqlite:///{db}"}
        if command == "start":
            return await start(ops, options)
        if command == "status":
            return await status(ops, options)
        return await answer(ops, options, argv[1], argv[2].lower() in ("y", "yes"))


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
