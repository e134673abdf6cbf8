"""What the worker and chaos benchmarks share: the gated tool, the model's brain, private
Postgres schemas, and halted runs cloned through the store API.

The conversation: the prompt names a ticket (``Close ticket T-7``); the model calls
``close_ticket`` once, which needs an approval (the run halts); once approved and resumed, the
model answers with a final text. So a resume is one tool execution and **one** model call.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import toolnexus as tn
from toolnexus.loop.checkpoint import Checkpoint
from toolnexus.testing import RecordedRequest, Reply, call, text, tool_calls

MODEL = "ticket-bot"
API_KEY = "x"
WARM_UP = "warm-up"

FINAL = "Done: the ticket is closed."
"""The model's final text once the ticket is closed."""

_CALL = tool_calls(call("close_ticket", {"ticket": "T-0"}, id="call_close"))
_DONE = text(FINAL)
_READY = text("ready")


def brain(request: RecordedRequest) -> Reply:
    """One ``close_ticket`` call, then a final text; the warm-up prompt gets a text at once."""
    messages = request.body.get("messages") or []
    if messages and messages[0].get("content") == WARM_UP:
        return _READY
    if any(m.get("role") == "tool" for m in messages):
        return _DONE
    return _CALL


async def ends_with(store: Any, conversation_id: str | None, final: str) -> bool:
    """Whether the stored conversation's last message is ``final``."""
    messages = await store.get(conversation_id) if conversation_id else None
    return bool(messages) and messages[-1].get("content") == final


def append_line(path: Path, line: str, *, sync: bool = False) -> None:
    """Append one line to ``path`` (``O_APPEND``: lines from several processes never mix)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def ticket_tool(on_approved: Callable[[str], None] | None = None) -> tn.Tool:
    """``close_ticket``: halts for an approval; approved, calls ``on_approved(request_id)``."""

    def close_ticket(ticket: str, ctx: tn.ToolContext | None = None) -> str | tn.ToolResult:
        """Close a support ticket (needs approval)."""
        if ctx is None or ctx.answer is None:
            return tn.pending(kind="approval", prompt=f"Close {ticket}?")
        if not ctx.answer.ok:
            return "declined"
        if on_approved is not None and ctx.request is not None:
            on_approved(ctx.request.id)
        return f"{ticket} closed"

    return tn.define_tool(close_ticket)


async def toolkit(on_approved: Callable[[str], None] | None = None) -> Any:
    return await tn.create_toolkit(extra_tools=[ticket_tool(on_approved)], builtins=False)


def new_client(model_url: str, store: Any) -> tn.Client:
    return tn.create_client(base_url=model_url, model=MODEL, api_key=API_KEY, store=store)


# -- Postgres ----------------------------------------------------------------------------------


def with_schema(url: str, schema: str) -> str:
    """``url`` with its search_path set to ``schema`` (libpq's ``options`` parameter)."""
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


@contextlib.asynccontextmanager
async def private_schema(url: str, tag: str) -> AsyncIterator[str]:
    """A fresh schema ``b_<tag>_<random>``, dropped afterwards; yields the URL scoped to it."""
    import psycopg

    schema = f"b_{tag}_{secrets.token_hex(4)}"
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield with_schema(url, schema)
    finally:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute(f"DROP SCHEMA {schema} CASCADE")


# -- halted runs -------------------------------------------------------------------------------


async def one_real_halt(model_url: str, store: Any) -> Checkpoint:
    """Halt one real run through the client; its stored checkpoint (the template)."""
    async with new_client(model_url, store) as client:
        result = await client.run("Close ticket T-0", await toolkit())
        if result.pending is None:
            raise RuntimeError(f"the template run did not halt: {result.status} {result.text!r}")
        checkpoint = await store.load_halt(result.pending.id)
        if checkpoint is None:
            raise RuntimeError("the template run's checkpoint is not in the store")
        await store.cancel(result.pending.id, reason="template", answered_by="bench")
        return checkpoint


def clones(template: Checkpoint, count: int, prefix: str = "bench") -> list[Checkpoint]:
    """``count`` copies of ``template``, each waiting on a fresh request id."""
    old = template.pending.id
    raw = template.dumps()
    now = time.time()
    out: list[Checkpoint] = []
    for _ in range(count):
        checkpoint = Checkpoint.loads(raw.replace(old, f"{prefix}-{uuid.uuid4().hex}"))
        checkpoint.created_at = now
        out.append(checkpoint)
    return out


async def gather_limited(limit: int, jobs: list[Any]) -> list[Any]:
    """Await the coroutines of ``jobs``, ``limit`` at a time."""
    gate = asyncio.Semaphore(limit)

    async def one(job: Any) -> Any:
        async with gate:
            return await job

    return await asyncio.gather(*(one(job) for job in jobs))
