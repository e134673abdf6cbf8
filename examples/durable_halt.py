"""Scenario 3, posture B — halt, persist, exit; a new process answers and resumes.

    python examples/durable_halt.py start  [state.db]      # halts, prints the request, exits
    python examples/durable_halt.py pending [state.db]     # the approvals inbox
    python examples/durable_halt.py answer <request-id> yes|no [state.db]

``start`` has no ``wait_for``: the run halts with ``status="pending"`` and its checkpoint goes to
SQLite. ``answer`` is a brand-new process (another machine would do the same with Postgres): it
claims the request exactly once and resumes the halted call with the answer. Answering twice is
an `AnswerConflict`.
"""

from __future__ import annotations

import asyncio
import sys

from _model import llm, tool_outputs

from toolnexus import (
    Answer,
    AnswerConflict,
    ToolContext,
    ToolResult,
    UnknownRequest,
    create_client,
    create_toolkit,
    define_tool,
    pending,
)
from toolnexus.testing import RecordedRequest, Reply, call, text, tool_calls


@define_tool
def delete_bucket(name: str, ctx: ToolContext | None = None) -> str | ToolResult:
    """Delete a storage bucket (needs approval)."""
    if ctx is None or ctx.answer is None:
        return pending(kind="approval", prompt=f"Delete bucket {name!r}?")
    return f"bucket {name!r} deleted" if ctx.answer.ok else "deletion declined"


def brain(request: RecordedRequest) -> Reply:
    seen = tool_outputs(request)
    if not seen:
        return tool_calls(call("delete_bucket", {"name": "old-logs"}))
    return text(f"Outcome: {seen[-1]}.")


async def main(argv: list[str]) -> int:
    command = argv[0] if argv else "start"
    if command == "answer" and len(argv) < 3:
        print("usage: durable_halt.py answer <request-id> yes|no [state.db]")
        return 2
    rest = argv[3:] if command == "answer" else argv[1:]
    db = rest[0] if rest else "durable.db"
    toolkit = await create_toolkit(extra_tools=[delete_bucket], builtins=False)
    async with (
        llm(brain) as endpoint,
        create_client(**endpoint, store=f"sqlite:///{db}") as client,
    ):
        if command == "start":
            result = await client.ask("Clean up the old-logs bucket.", toolkit, id="ops-1")
            print(f"status={result.status}")
            if result.pending is not None:
                print(f"request {result.pending.id}: {result.pending.prompt}")
            return 0
        if command == "pending":
            for entry in await client.list_pending():
                print(f"{entry.request_id}  {entry.kind}  {entry.tool}  {entry.prompt}")
            return 0
        answer = Answer(id=argv[1], ok=argv[2].lower() in ("y", "yes"))
        try:
            done = await client.resume(toolkit, answer, answered_by="cli")
        except (AnswerConflict, UnknownRequest) as exc:
            print(f"error: {exc}")
            return 1
        print(f"status={done.status}: {done.text}")
        return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
