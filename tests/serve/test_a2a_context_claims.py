"""A running task holds its context's claim for as long as its run goes on — renewed every
third of ``lease_s``, so a run longer than the lease still keeps a second message out — and a
server that stops gives up the claims of the runs it cancels, so another server sharing the
store takes the next message at once instead of after the lease."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from a2a_support import Serve, ref_message, rpc

from toolnexus.serve import InMemoryTaskStore
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, text


class Renewals(InMemoryTaskStore):
    """The in-memory store, telling when a claim was renewed (or given up) ``wanted`` times."""

    def __init__(self, wanted: int) -> None:
        super().__init__()
        self.holds: list[float] = []
        self.wanted = wanted
        self.enough = asyncio.Event()

    async def hold_context(self, context_id: str, task_id: str, *, lease_s: float) -> bool:
        held = await super().hold_context(context_id, task_id, lease_s=lease_s)
        self.holds.append(lease_s)
        if len(self.holds) >= self.wanted:
            self.enough.set()
        return held


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModel]:
    async with ScriptedModel(default=lambda request: text("done")) as m:
        yield m


@pytest.fixture
def release(model: ScriptedModel) -> asyncio.Event:
    """Set it to let the runs of "slowly" end (the model holds them until then)."""
    gate = asyncio.Event()

    async def slow(request: RecordedRequest) -> Reply:
        await gate.wait()
        return text("slow done")

    model.when(lambda r: "slowly" in str(r.body["messages"][-1]), slow)
    return gate


async def test_a_run_longer_than_the_lease_keeps_its_context(
    serve_refunds: Serve, release: asyncio.Event
) -> None:
    tasks = Renewals(wanted=4)  # four renewals a fifth of a second apart: past the lease
    served = await serve_refunds(a2a={"name": "refunds", "store": tasks}, lease_s=0.6)
    slowly = ref_message("slowly", context_id="ctx-long", blocking=False)
    async with httpx.AsyncClient(timeout=30) as http:
        started = (await rpc(http, served.url, "SendMessage", slowly))["result"]
        await asyncio.wait_for(tasks.enough.wait(), 20)
        busy = await rpc(
            http, served.url, "SendMessage", ref_message("next", context_id="ctx-long")
        )
        assert busy["error"]["data"] == {"reason": "busy", "taskId": started["id"]}
        assert set(tasks.holds) == {0.6}  # renewals only: nothing gave it up
        release.set()


async def test_a_stopped_server_gives_up_the_context_of_the_run_it_cancels(
    serve_refunds: Serve, release: asyncio.Event
) -> None:
    tasks = Renewals(wanted=1)
    first = await serve_refunds(a2a={"name": "refunds", "store": tasks})
    second = await serve_refunds(a2a={"name": "refunds", "store": tasks})
    slowly = ref_message("slowly", context_id="ctx-stop", blocking=False)
    async with httpx.AsyncClient(timeout=30) as http:
        started = (await rpc(http, first.url, "SendMessage", slowly))["result"]
        busy = await rpc(
            http, second.url, "SendMessage", ref_message("next", context_id="ctx-stop")
        )
        assert busy["error"]["data"] == {"reason": "busy", "taskId": started["id"]}
        await first.stop()
        assert tasks.holds == [0]  # given up as its run was cancelled
        later = await rpc(
            http, second.url, "SendMessage", ref_message("next", context_id="ctx-stop")
        )
    release.set()
    assert later["result"]["status"]["state"] == "completed"
