"""Shared by the serve tests: a refund tool that asks for approval, a model brain for it, and
the official a2a-sdk client pointed at a served URL.

Every execution of the refund tool with an answer is appended to a ledger file, so a test can
count how often the approved action really happened (exactly once, across processes too).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from toolnexus import Tool, ToolContext, ToolResult, pending
from toolnexus.testing import RecordedRequest, Reply, call, text, tool_calls

Serve = Callable[..., Awaitable[Any]]
"""The ``serve_refunds`` fixture: ``await serve_refunds(store=..., **serve_options)``."""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}},
    "required": ["order_id"],
}

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
}


def refund_tool(ledger: Path, *, kind: str = "approval", schema: bool = False) -> Tool:
    """``refund``: suspends for approval; with the answer, records it in ``ledger``."""

    async def refund(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        answer = ctx.answer if ctx is not None else None
        if answer is None:
            data = {"schema": APPROVAL_SCHEMA} if schema else None
            url = "https://login.example/authorize" if kind == "authorization" else None
            return pending(
                kind=kind, prompt=f"Refund order #{args['order_id']}?", data=data, url=url
            )
        die = os.environ.get("A2A_TEST_DIE_ONCE")  # a marker path: die on the first answer
        if die and not Path(die).exists():
            Path(die).write_text("died")
            os._exit(3)  # the serving process dies mid-resume, before the side effect
        with ledger.open("a") as f:
            f.write(json.dumps({"ok": answer.ok, "data": answer.data}) + "\n")
        return ToolResult(f"refunded #{args['order_id']}" if answer.ok else "refund declined")

    return Tool("refund", "Refund an order (needs approval).", SCHEMA, "native", refund)


def ledger_lines(ledger: Path) -> list[dict[str, Any]]:
    if not ledger.exists():
        return []
    return [json.loads(line) for line in ledger.read_text().splitlines() if line]


def brain(request: RecordedRequest) -> Reply:
    """Call refund once; then report the tool's output."""
    outputs = [m for m in request.body["messages"] if m.get("role") == "tool"]
    if not outputs:
        return tool_calls(call("refund", {"order_id": "42"}))
    return text(f"Result: {outputs[-1]['content']}")


@asynccontextmanager
async def sdk_client(
    url: str, *, streaming: bool = False, token: str | None = None
) -> AsyncIterator[Any]:
    """The a2a-sdk client (ClientFactory, JSON-RPC) for the agent served at ``url``."""
    from a2a.client import ClientConfig, ClientFactory

    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        config = ClientConfig(streaming=streaming, httpx_client=http)
        client = await ClientFactory(config).create_from_url(url)
        try:
            yield client
        finally:
            await client.close()


def user_message(
    text_: str = "", *, task_id: str = "", context_id: str = "", data: Any = None
) -> Any:
    from a2a.types import a2a_pb2 as pb
    from google.protobuf.json_format import ParseDict
    from google.protobuf.struct_pb2 import Value

    parts = []
    if text_:
        parts.append(pb.Part(text=text_))
    if data is not None:
        parts.append(pb.Part(data=ParseDict(data, Value())))
    import uuid

    return pb.SendMessageRequest(
        message=pb.Message(
            message_id=uuid.uuid4().hex,
            role=pb.ROLE_USER,
            parts=parts,
            task_id=task_id,
            context_id=context_id,
        )
    )


async def send(client: Any, request: Any) -> Any:
    """Send one message with the a2a-sdk client; the last task it reports."""
    task = None
    async for event in client.send_message(request):
        if event.HasField("task"):
            task = event.task
    return task


async def until_state(client: Any, task_id: str, state: int, timeout: float = 20.0) -> Any:
    """GetTask until the task shows ``state`` (the caller's own way of following a task)."""
    from a2a.types import a2a_pb2 as pb

    deadline = time.monotonic() + timeout
    while True:
        task = await client.get_task(pb.GetTaskRequest(id=task_id))
        if task.status.state == state:
            return task
        assert time.monotonic() < deadline, f"task stayed {pb.TaskState.Name(task.status.state)}"
        await asyncio.sleep(0.02)


async def rpc(
    http: httpx.AsyncClient, url: str, method: str, params: Any, *, id: Any = 1, headers: Any = None
) -> dict[str, Any]:
    """One raw JSON-RPC call (no A2A-Version header: the reference / 0.3 wire)."""
    body = {"jsonrpc": "2.0", "id": id, "method": method, "params": params}
    response = await http.post(url.rstrip("/") + "/", json=body, headers=headers)
    return response.json()


def ref_message(
    text_: str = "",
    *,
    task_id: str | None = None,
    context_id: str | None = None,
    data: Any = None,
    blocking: bool = True,
) -> dict[str, Any]:
    """SendMessage params on the reference wire."""
    parts: list[dict[str, Any]] = []
    if text_:
        parts.append({"kind": "text", "text": text_})
    if data is not None:
        parts.append({"kind": "data", "data": data})
    message: dict[str, Any] = {"role": "user", "messageId": "m-" + text_[:8], "parts": parts}
    if task_id:
        message["taskId"] = task_id
    if context_id:
        message["contextId"] = context_id
    return {"message": message, "configuration": {"blocking": blocking}}
