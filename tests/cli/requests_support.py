"""Requests with ids and prompts a test chooses, halted by real runs into a real store, and the
store's own moves (answer, take, flag, settle) to bring each into the state a test reads.

The ``named`` tool asks for approval under the id its arguments name (``rid``), with their
``prompt`` (and ``expires``); once approved it returns ``ran <rid>``.
"""

from __future__ import annotations

import asyncio
import math
import os
import sys
from pathlib import Path
from typing import Any

from toolnexus import Answer, Tool, ToolContext, ToolResult, create_client, pending
from toolnexus.stores.url import resolve_store
from toolnexus.testing import ScriptedModel, call, tool_calls

HERE = Path(__file__).parent
TOKEN = "sk-test-0123456789abcdef"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "rid": {"type": "string"},
        "prompt": {"type": "string"},
        "expires": {"type": "string"},
        "amount": {"type": "integer"},
    },
}


async def named(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
    if ctx is None or ctx.answer is None:
        return pending(
            kind="approval", prompt=args["prompt"], id=args["rid"], expiresAt=args.get("expires")
        )
    return ToolResult(f"ran {args['rid']}")


TOOL = Tool("named", "Asks under the id it is given.", SCHEMA, "native", named)


async def halt_named(store_url: str, *requests: dict[str, Any]) -> None:
    """One run halted per request: ``{"rid": …, "prompt": …}`` (and ``expires``, ``amount``)."""
    store: Any = resolve_store(store_url)
    async with ScriptedModel() as model:
        async with (
            store,
            create_client(
                base_url=model.openai_base_url, model="m-1", api_key=TOKEN, store=store
            ) as client,
        ):
            for args in requests:
                model.add(tool_calls(call("named", args)))
                result = await client.run(f"ask {args['rid']}", [TOOL])
                assert result.pending is not None
                assert result.pending.id == args["rid"]


async def into_states(store_url: str) -> None:
    """Requests in every state a request can be in, each with its id naming it:

    ``st-pending``, ``st-late`` (pending, past its deadline), ``st-queued`` (answered by ana),
    ``st-held`` (taken by this process: claimed, lease 300 s), ``st-edited`` (approved with an
    edit by bob, resumed, done), ``st-declined`` (declined by ana, a reason, done),
    ``st-cancelled`` (cancelled by ops with a reason), ``st-flagged`` (taken, flagged for an
    operator, held for ever).
    """
    ids = ["pending", "late", "queued", "held", "edited", "declined", "cancelled", "flagged"]
    await halt_named(
        store_url,
        *(
            {
                "rid": f"st-{name}",
                "prompt": f"Allow {name}?",
                "amount": 400,
                **({"expires": "2000-01-01T00:00:00Z"} if name == "late" else {}),
            }
            for name in ids
        ),
    )
    store: Any = resolve_store(store_url)
    async with store:
        await store.post_answer("st-queued", Answer("st-queued", True), answered_by="ana")
        await store.post_answer("st-held", Answer("st-held", True), answered_by="ana")
        assert await store.take("st-held") is not None
        edit = {"rid": "st-edited", "prompt": "Allow edited?", "amount": 40}
        edited = Answer("st-edited", True, data={"arguments": edit})
        await store.post_answer("st-edited", edited, answered_by="bob")
        taken = await store.take("st-edited")
        await store.complete("st-edited", taken, outcome={"status": "done", "text": "Ran 40."})
        declined = Answer("st-declined", False, reason="declined", data={"note": "not today"})
        await store.post_answer("st-declined", declined, answered_by="ana")
        taken = await store.take("st-declined")
        await store.complete("st-declined", taken, outcome={"status": "done", "text": "Fine."})
        await store.cancel("st-cancelled", reason="duplicate", answered_by="ops")
        await store.post_answer("st-flagged", Answer("st-flagged", True), answered_by="eve")
        taken = await store.take("st-flagged")
        await store.flag("st-flagged", taken, "the approved call changed", hold_s=math.inf)


async def cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``toolnexus *args`` as a subprocess: its exit code, stdout and stderr."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
        cwd=HERE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 50)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()
