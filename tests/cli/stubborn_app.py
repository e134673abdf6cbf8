"""A host app whose one tool, once approved, never lets go: it swallows every cancel. The
worker shutdown test loads it (``--app stubborn_app:make``) to see ``--grace`` end a stop
that would otherwise never finish."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from toolnexus import Client, Tool, ToolContext, ToolResult, create_client, pending
from toolnexus.stores.url import resolve_store


async def stubborn(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
    if ctx is None or ctx.answer is None:
        return pending(kind="approval", prompt="Hold on?")
    print("stubborn: started", file=sys.stderr, flush=True)
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            continue  # the misbehaviour under test


TOOL = Tool("stubborn", "Never finishes once approved.", {"type": "object"}, "native", stubborn)


def make() -> tuple[Client, list[Tool]]:
    store = resolve_store(os.environ["TN_STORE"])
    client = create_client(
        base_url=os.environ["TN_BASE_URL"], model="m-1", api_key="sk-test", store=store
    )
    return client, [TOOL]
