"""`AiohttpTransport`: a post beyond the own pool's connections waits in the transport, before
its body is encoded and its aiohttp request made; every slot comes back, however a post ends."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web
from loopback_support import WAIT, serve

from toolnexus.errors import ProviderError, TransportError, UsageError
from toolnexus.llm.transport import AiohttpTransport


class Gate:
    """A handler that holds every request until released, counting those it holds."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.inside = 0
        self.most = 0
        self.arrived = asyncio.Condition()

    async def handler(self, request: web.Request) -> web.Response:
        body = await request.json()
        async with self.arrived:
            self.inside += 1
            self.most = max(self.most, self.inside)
            self.arrived.notify_all()
        try:
            await self.open.wait()
        finally:
            self.inside -= 1
        if body.get("fail"):
            return web.json_response({"error": "no"}, status=400)
        return web.json_response({"n": body["n"]})

    async def until_inside(self, count: int) -> None:
        async with self.arrived:
            await asyncio.wait_for(self.arrived.wait_for(lambda: self.inside >= count), WAIT)


async def test_posts_beyond_the_limit_wait_and_all_finish_in_the_limit() -> None:
    gate = Gate()
    transport = AiohttpTransport(connector_limit=2)
    try:
        async with serve(gate.handler) as url:
            posts = [
                asyncio.create_task(transport.post(url, {}, {"n": n}, timeout=None))
                for n in range(6)
            ]
            await gate.until_inside(2)
            await asyncio.sleep(0.05)  # the others would have arrived by now
            assert gate.inside == 2
            gate.open.set()
            replies = await asyncio.wait_for(asyncio.gather(*posts), WAIT)
        assert sorted(r["n"] for r in replies) == list(range(6))
        assert gate.most == 2
    finally:
        await transport.aclose()


async def test_a_waiting_post_encodes_its_body_only_when_a_connection_is_free() -> None:
    gate = Gate()
    transport = AiohttpTransport(connector_limit=1)
    try:
        async with serve(gate.handler) as url:
            held = asyncio.create_task(transport.post(url, {}, {"n": 1}, timeout=None))
            await gate.until_inside(1)
            bad = asyncio.create_task(transport.post(url, {}, {"n": object()}, timeout=None))
            await asyncio.sleep(0.05)
            assert not bad.done()  # waiting for the connection, its body not yet encoded
            gate.open.set()
            assert (await asyncio.wait_for(held, WAIT)) == {"n": 1}
            with pytest.raises(UsageError, match="not JSON-serialisable"):
                await asyncio.wait_for(bad, WAIT)
    finally:
        await transport.aclose()


async def test_every_ending_gives_the_connection_back() -> None:
    gate = Gate()
    gate.open.set()
    transport = AiohttpTransport(connector_limit=1)
    try:
        async with serve(gate.handler) as url:
            with pytest.raises(ProviderError):
                await asyncio.wait_for(
                    transport.post(url, {}, {"n": 1, "fail": 1}, timeout=None), WAIT
                )
            with pytest.raises(UsageError):
                await asyncio.wait_for(transport.post(url, {}, {"n": object()}, timeout=None), WAIT)
            refused = url.rsplit(":", 1)[0] + ":9/"
            with pytest.raises(TransportError):
                await asyncio.wait_for(transport.post(refused, {}, {"n": 1}, timeout=None), WAIT)
            gate.open.clear()
            cancelled = asyncio.create_task(transport.post(url, {}, {"n": 2}, timeout=None))
            await gate.until_inside(1)
            waiting = asyncio.create_task(transport.post(url, {}, {"n": 3}, timeout=None))
            await asyncio.sleep(0.02)
            waiting.cancel()  # cancelled while it waits for the connection
            cancelled.cancel()  # cancelled while it holds the connection
            for task in (waiting, cancelled):
                with pytest.raises(asyncio.CancelledError):
                    await task
            gate.open.set()
            reply = await asyncio.wait_for(transport.post(url, {}, {"n": 4}, timeout=None), WAIT)
        assert reply == {"n": 4}
    finally:
        await transport.aclose()


async def test_a_per_request_timeout_still_covers_the_wait_for_a_connection() -> None:
    gate = Gate()
    transport = AiohttpTransport(connector_limit=1)
    try:
        async with serve(gate.handler) as url:
            held = asyncio.create_task(transport.post(url, {}, {"n": 1}, timeout=None))
            await gate.until_inside(1)
            with pytest.raises(TransportError, match="timed out"):
                await asyncio.wait_for(transport.post(url, {}, {"n": 2}, timeout=0.2), WAIT)
            gate.open.set()
            assert (await asyncio.wait_for(held, WAIT)) == {"n": 1}
    finally:
        await transport.aclose()


def test_the_slots_follow_a_new_event_loop_per_call() -> None:
    transport = AiohttpTransport(connector_limit=1)

    async def round_trip() -> list[Any]:
        async def handler(request: web.Request) -> web.Response:
            await asyncio.sleep(0.01)
            return web.json_response(await request.json())

        async with serve(handler) as url:
            posts = [transport.post(url, {}, {"n": n}, timeout=None) for n in range(3)]
            replies = await asyncio.wait_for(asyncio.gather(*posts), WAIT)
        await transport.aclose()
        return replies

    for _ in range(2):  # contended in each loop: a semaphore bound to the first would fail
        assert asyncio.run(round_trip()) == [{"n": 0}, {"n": 1}, {"n": 2}]


async def test_a_post_cancelled_after_it_was_handed_a_slot_passes_the_slot_on() -> None:
    gate = Gate()
    transport = AiohttpTransport(connector_limit=1)
    try:
        async with serve(gate.handler) as url:
            held = asyncio.create_task(transport.post(url, {}, {"n": 1}, timeout=None))
            await gate.until_inside(1)
            handed = asyncio.create_task(transport.post(url, {}, {"n": 2}, timeout=None))
            later = asyncio.create_task(transport.post(url, {}, {"n": 3}, timeout=None))
            await asyncio.sleep(0.02)  # both wait for the connection
            slots = transport._slots  # pyright: ignore[reportPrivateUsage]
            assert slots is not None
            slots.give()  # one more slot, handed to the first waiter ...
            handed.cancel()  # ... cancelled before it could run: the slot goes on to `later`
            with pytest.raises(asyncio.CancelledError):
                await handed
            assert not slots._waiters  # pyright: ignore[reportPrivateUsage]
            gate.open.set()
            assert (await asyncio.wait_for(held, WAIT)) == {"n": 1}
            assert (await asyncio.wait_for(later, WAIT)) == {"n": 3}
        # Both slots are back: the pool's one and the one handed in; none was lost.
        assert slots._free == 2  # pyright: ignore[reportPrivateUsage]
    finally:
        await transport.aclose()
