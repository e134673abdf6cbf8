"""A served agent that asks its A2A caller for approval, and finishes after the follow-up.

    python examples/served_approval.py [state.db]

The refund toolkit is served over A2A (``toolkit.serve``), its tasks and halted runs in one
SQLite file. The caller is the official a2a-sdk client: its task comes back
``input-required`` with the question as text (and the whole Request as a data part); the
caller's follow-up on that task — ``approve`` — is recorded as the answer, exactly once, and
the halted refund resumes from where it stopped: the tool runs once, with the approval, and the
task completes. Needs the ``serve`` extra.

The server requires a bearer token (``REFUNDS_TOKEN``, else one made up for this run): served
without one, anything on the machine could start and approve refunds.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
import tempfile
import uuid
from pathlib import Path

import httpx
from _model import llm, tool_outputs
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb

from toolnexus import ToolContext, ToolResult, create_client, create_toolkit, define_tool, pending
from toolnexus.testing import RecordedRequest, Reply, call, text, tool_calls

TOKEN = os.environ.get("REFUNDS_TOKEN") or secrets.token_urlsafe(24)


@define_tool
def refund(order_id: str, ctx: ToolContext | None = None) -> str | ToolResult:
    """Refund an order (irreversible: needs the caller's approval)."""
    if ctx is None or ctx.answer is None:
        return pending(kind="approval", prompt=f"Refund order #{order_id}? Reply approve or deny.")
    # the caller's "approve" (or "deny") reached the tool through the answer intake: a decision
    return f"refunded order #{order_id}" if ctx.answer.ok else "refund declined"


def brain(request: RecordedRequest) -> Reply:
    seen = tool_outputs(request)
    if not seen:
        return tool_calls(call("refund", {"order_id": "4021"}))
    return text(f"Done: {seen[-1]}.")


def message(words: str, task: pb.Task | None = None) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(
        message=pb.Message(
            message_id=uuid.uuid4().hex,
            role=pb.ROLE_USER,
            parts=[pb.Part(text=words)],
            task_id=task.id if task else "",
            context_id=task.context_id if task else "",
        )
    )


async def last_task(client, request: pb.SendMessageRequest) -> pb.Task:
    task = None
    async for event in client.send_message(request):
        if event.HasField("task"):
            task = event.task
    assert task is not None
    return task


async def main(db: Path) -> None:
    toolkit = await create_toolkit(extra_tools=[refund], builtins=False)
    async with llm(brain) as endpoint, create_client(**endpoint, store=f"sqlite:///{db}") as model:
        served = await toolkit.serve(
            "127.0.0.1:0", client=model, a2a={"name": "refunds"}, token=TOKEN
        )
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        async with served, httpx.AsyncClient(timeout=30, headers=bearer) as http:
            caller = await ClientFactory(
                ClientConfig(streaming=False, httpx_client=http)
            ).create_from_url(served.url)
            task = await last_task(caller, message("Refund order #4021, please."))
            print(
                f"task {pb.TaskState.Name(task.status.state)}: {task.status.message.parts[0].text}"
            )
            task = await last_task(caller, message("approve", task))
            print(f"task {pb.TaskState.Name(task.status.state)}: {task.artifacts[0].parts[0].text}")
            await caller.close()


if __name__ == "__main__":
    if len(sys.argv) > 1:
        asyncio.run(main(Path(sys.argv[1])))
    else:
        with tempfile.TemporaryDirectory() as folder:
            asyncio.run(main(Path(folder) / "state.db"))
