"""A message that names a context reads that context's tasks, not every task: with 50,000 tasks
in the in-memory task store, a message on a context decodes as many stored tasks as it does
with none beside it (counted: every ``json.loads`` in the serving process while the message is
handled)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import contextmanager
from types import FrameType
from typing import Any

import httpx
import pytest
from a2a_support import Serve, ref_message, rpc

from toolnexus.serve import InMemoryTaskStore
from toolnexus.testing import ScriptedModel, text

OTHERS = 50_000


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModel]:
    async with ScriptedModel(default=lambda request: text("done")) as m:
        yield m


@contextmanager
def counting_decodes() -> Any:
    """Count the calls of ``json.loads`` in this thread (the server's: it runs in this loop)."""
    count = [0]
    code = json.loads.__code__

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code is code:
            count[0] += 1

    previous: Callable[..., Any] | None = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield count
    finally:
        sys.setprofile(previous)


def stored(id: str, context: str) -> dict[str, Any]:
    return {
        "id": id,
        "contextId": context,
        "kind": "task",
        "status": {"state": "completed"},
        "_toolnexus": {"wire": "0.3"},
    }


async def test_a_message_on_a_context_decodes_no_more_tasks_at_50000(
    serve_refunds: Serve,
) -> None:
    tasks = InMemoryTaskStore()
    served = await serve_refunds(a2a={"name": "refunds", "store": tasks}, recover_every=None)
    async with httpx.AsyncClient(timeout=60) as http:

        async def decodes_of_a_message(context: str) -> int:
            first = await rpc(
                http, served.url, "SendMessage", ref_message("hi", context_id=context)
            )
            assert first["result"]["status"]["state"] == "completed"
            with counting_decodes() as count:
                reply = await rpc(
                    http, served.url, "SendMessage", ref_message("again", context_id=context)
                )
            assert reply["result"]["status"]["state"] == "completed"
            return count[0]

        alone = await decodes_of_a_message("ctx-alone")
        for i in range(OTHERS):
            await tasks.save(stored(f"other-{i}", f"ctx-{i % 1000}"))
        crowded = await decodes_of_a_message("ctx-crowded")
    assert crowded == alone
    assert alone < 50
