"""Stopping a worker: `Worker.stop_taking` lets the runs in flight finish while no further run
is taken; `Worker.stop` cancels what is left, names it in `Worker.abandoned`, and the store
holds each abandoned run for ``retry_s`` before queueing it again. One process, the memory
store with a hand-moved clock, a tool that blocks on an event the test controls."""

from __future__ import annotations

import asyncio
from typing import Any

from test_answering import Clock, halted_run
from toolnexus import Answer, Tool, ToolContext, ToolResult, create_client, create_toolkit, pending
from toolnexus.stores.requests import holder_name
from toolnexus.stores.runs import InMemoryStore
from toolnexus.testing import ScriptedModel, call, text, tool_calls


class Gates:
    """Each approved call of ``ship`` says it started, then waits until the test opens it."""

    def __init__(self) -> None:
        self.started: asyncio.Queue[str] = asyncio.Queue()
        self.open: dict[str, asyncio.Event] = {}
        self.shipped: list[str] = []

    def tool(self) -> Tool:
        async def ship(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
            order = str(args.get("order"))
            if ctx is None or ctx.answer is None:
                return pending(kind="approval", prompt=f"ship {order}?")
            gate = self.open.setdefault(order, asyncio.Event())
            await self.started.put(order)
            await gate.wait()
            self.shipped.append(order)
            return ToolResult(f"shipped {order}")

        schema = {"type": "object", "properties": {"order": {"type": "string"}}}
        return Tool("ship", "Ship an order.", schema, "native", ship)


async def test_a_stop_lets_the_runs_in_flight_finish_and_abandons_what_is_left() -> None:
    gates = Gates()
    clock = Clock()
    tk = await create_toolkit(extra_tools=[gates.tool()], builtins=False)
    script = [
        tool_calls(call("ship", {"order": "A"}, id="a")),
        tool_calls(call("ship", {"order": "B"}, id="b")),
    ]
    async with ScriptedModel(script, default=lambda _r: text("done")) as model:
        store = InMemoryStore(clock)
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            first = await halted_run(client, tk, "conv-a")
            second = await halted_run(client, tk, "conv-b")
            for request in (first, second):
                await client.answer(request.id, Answer(request.id, True), answered_by="ana")
            settled = asyncio.Event()
            worker = client.worker(
                tk, concurrency=2, retry_s=60, on_result=lambda _rid, _r: settled.set()
            )
            runner = worker.start()
            assert {await gates.started.get(), await gates.started.get()} == {"A", "B"}
            assert set(worker.in_flight) == {first.id, second.id}
            worker.stop_taking()
            gates.open["A"].set()
            await asyncio.wait_for(settled.wait(), 30)  # A finished; B is still in its tool
            assert not runner.done()  # (the worker's task waits for B)
            await worker.stop()
            assert runner.done()
            assert (worker.resumed, worker.failed, worker.abandoned) == (1, 0, [second.id])
            assert worker.in_flight == ()
            assert gates.shipped == ["A"]  # B's tool call was cut off, never finished
            done = await store.answer_record(first.id)
            held = await store.answer_record(second.id)
            assert done is not None
            assert done.status == "done"
            assert held is not None
            assert (held.status, held.holder, held.lease_until) == (
                "claimed",
                holder_name(),
                clock.now + 60,
            )
            clock.now += 61  # the hold runs out: queued again, for any worker
            queued = await store.answer_record(second.id)
            assert queued is not None
            assert queued.status == "answered"
