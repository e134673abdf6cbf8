"""Scenario 1 — an approval gate answered now, on the terminal.

The refund tool returns ``pending(kind="approval", ...)``; the client's ``wait_for`` asks the
operator and the loop resumes to ``done`` in one call. Type ``y`` to approve.

    python examples/approval_gate.py
"""

from __future__ import annotations

import asyncio

from _model import llm, tool_outputs

from toolnexus import (
    Answer,
    Request,
    ToolContext,
    ToolResult,
    create_client,
    create_toolkit,
    define_tool,
    pending,
)
from toolnexus.testing import RecordedRequest, Reply, call, text, tool_calls


@define_tool
def refund(order_id: str, ctx: ToolContext | None = None) -> str | ToolResult:
    """Refund an order (irreversible: needs a human's approval)."""
    if ctx is None or ctx.answer is None:
        return pending(kind="approval", prompt=f"Refund order #{order_id}?")
    return f"refunded order #{order_id}" if ctx.answer.ok else "refund declined by the operator"


async def wait_for(req: Request) -> Answer:
    try:
        line = await asyncio.to_thread(input, f"{req.prompt} [y/N] ")
    except EOFError:  # stdin closed (a pipe, a job without a terminal): nobody said yes
        print("(no input: declined)")
        return Answer(id=req.id, ok=False, reason="declined", data={"note": "no one to ask"})
    return Answer(id=req.id, ok=line.strip().lower() == "y")


def brain(request: RecordedRequest) -> Reply:
    seen = tool_outputs(request)
    if not seen:
        return tool_calls(call("refund", {"order_id": "4021"}))
    return text(f"Result: {seen[-1]}.")


async def main() -> None:
    toolkit = await create_toolkit(extra_tools=[refund], builtins=False)
    async with llm(brain) as endpoint, create_client(**endpoint, wait_for=wait_for) as client:
        result = await client.run("Refund order #4021 if policy allows.", toolkit)
    print(f"status={result.status}: {result.text}")


if __name__ == "__main__":
    asyncio.run(main())
