"""A worker process for the restart tests of the agent runtime.

python runtime_proc.py halt   <base_url> <store-url>   # spawn, run until suspended, exit
python runtime_proc.py resume <base_url> <store-url> [request-id]
    # restore, list, resume (the given request, else the one the tree waits on), print result
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from toolnexus import Answer, Tool, ToolContext, ToolResult, pending
from toolnexus.agents import AgentDef, AgentRuntime, Handle

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


async def check_secret(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
    if ctx is not None and ctx.answer is not None and ctx.answer.ok:
        return ToolResult("secret-token")
    return pending(kind="approval", prompt="approve secret access?")


REGISTRY = {
    "approverParent": AgentDef(
        name="approverParent",
        description="coordinates",
        model="m-parent",
        task_targets=["approver"],
    ),
    "approver": AgentDef(
        name="approver",
        description="asks",
        model="m-leaf",
        tools=[Tool("check_secret", "needs approval", SCHEMA, "custom", check_secret)],
    ),
}


async def main(mode: str, base_url: str, store: str, request_id: str | None = None) -> int:
    llm = {"base_url": base_url, "style": "openai", "model": "m", "api_key": "k"}
    if mode == "halt":
        async with AgentRuntime(registry=REGISTRY, llm=llm, store=store) as rt:
            h = rt.spawn(rt.root, "approverParent")
            assert isinstance(h, Handle)
            rt.wake(h, "go")
            r = await rt.wait(h)
            print(
                json.dumps(
                    {"status": r.status, "pending": r.pending.to_dict() if r.pending else None}
                )
            )
            return 0  # exits without closing the handles: they stay suspended in the store
    rt = await AgentRuntime.restore(registry=REGISTRY, store=store, llm=llm)
    views = [(v.id, v.state, v.pending_kind) for v in rt.list()]
    if request_id is None:
        parked = rt.list()[0].pending
        assert parked is not None
        request_id = parked.id
    await rt.resume(Answer(id=request_id, ok=True))
    h = rt.handle("root/approverParent.1")
    assert h is not None
    r = await rt.wait(h)
    print(json.dumps({"views": views, "status": r.status, "text": r.text, "trace": rt.trace}))
    await rt.aclose()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(*sys.argv[1:5])))
