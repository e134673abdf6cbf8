"""`toolnexus.loop.events`: the loop coroutine iterated for its events behaves as the async
generator it replaced (order, end, errors, cancellation, ``aclose``, a dropped stream)."""

from __future__ import annotations

import asyncio
import gc
import warnings
from typing import Any

import pytest

from toolnexus.loop.events import EventStream, emit


async def collect(stream: EventStream[Any]) -> list[Any]:
    return [item async for item in stream]


async def test_events_in_order_then_the_return_value_then_the_end() -> None:
    async def loop() -> str:
        await emit(1)
        await asyncio.sleep(0)  # a bare yield goes to the task, not to the consumer
        await emit(2)
        return "finished"

    stream: EventStream[Any] = EventStream(loop())
    assert await collect(stream) == [1, 2, "finished"]
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_a_future_the_loop_awaits_is_awaited_by_the_consuming_task() -> None:
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def loop() -> str:
        await emit("before")
        value = await future
        await emit(value)
        return "done"

    stream: EventStream[Any] = EventStream(loop())
    assert await anext(stream) == "before"
    pending = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)
    assert not pending.done()
    future.set_result("answer")
    assert await pending == "answer"
    assert await anext(stream) == "done"


async def test_an_error_of_the_loop_ends_the_stream() -> None:
    async def loop() -> str:
        await emit(1)
        raise ValueError("broken")

    stream: EventStream[Any] = EventStream(loop())
    assert await anext(stream) == 1
    with pytest.raises(ValueError, match="broken"):
        await anext(stream)
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_cancelling_the_consumer_cancels_the_loop_where_it_waits() -> None:
    seen: list[str] = []
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def loop() -> str:
        await emit(1)
        try:
            await never
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise
        return "unreachable"

    stream: EventStream[Any] = EventStream(loop())

    async def consume() -> list[Any]:
        return await collect(stream)

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["cancelled"]
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_aclose_throws_generator_exit_and_lets_the_cleanup_await() -> None:
    seen: list[str] = []

    async def loop() -> str:
        try:
            await emit(1)
            await emit(2)
        except GeneratorExit:
            seen.append("exit")
            raise
        finally:
            await asyncio.sleep(0)  # cleanup may await, as an async generator's may
            seen.append("cleaned")
        return "unreachable"

    stream: EventStream[Any] = EventStream(loop())
    assert await anext(stream) == 1
    await stream.aclose()
    assert seen == ["exit", "cleaned"]
    with pytest.raises(StopAsyncIteration):
        await anext(stream)
    await stream.aclose()  # twice: nothing more


async def test_aclose_of_a_loop_that_emits_again_is_an_error() -> None:
    async def loop() -> str:
        try:
            await emit(1)
        except GeneratorExit:
            await emit("hostile")
        return "unreachable"

    stream: EventStream[Any] = EventStream(loop())
    assert await anext(stream) == 1
    with pytest.raises(RuntimeError, match="ignored GeneratorExit"):
        await stream.aclose()


async def test_a_stream_never_iterated_runs_nothing_and_warns_nothing() -> None:
    ran: list[str] = []

    async def loop() -> str:
        ran.append("ran")
        return "x"

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        closed: EventStream[Any] = EventStream(loop())
        await closed.aclose()
        dropped: EventStream[Any] = EventStream(loop())
        del closed, dropped
        gc.collect()
    assert ran == []


async def test_a_stream_dropped_mid_way_closes_its_loop() -> None:
    seen: list[str] = []

    async def loop() -> str:
        try:
            await emit(1)
            await emit(2)
        except GeneratorExit:
            seen.append("exit")
            raise
        return "unreachable"

    stream: EventStream[Any] = EventStream(loop())
    assert await anext(stream) == 1
    del stream
    gc.collect()
    assert seen == ["exit"]


async def test_two_concurrent_anext_calls_are_refused() -> None:
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def loop() -> str:
        await gate
        return "done"

    stream: EventStream[Any] = EventStream(loop())
    first = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="already running"):
        await anext(stream)
    with pytest.raises(RuntimeError, match="running"):
        await stream.aclose()
    gate.set_result(None)
    assert await first == "done"
