"""Run aborts: a cancel or the run deadline tears down the in-flight request."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from loopback_support import WAIT, serve

from toolnexus.errors import ProviderError, RunCancelled, RunTimeout
from toolnexus.llm.abort import abortable_iter, deadline_after, run_abortable
from toolnexus.llm.base import SSEEvent
from toolnexus.llm.retry import RetryPolicy, call_with_retries
from toolnexus.llm.transport import AiohttpTransport


class Hanging:
    """A handler that answers nothing (or one SSE event) and records the client leaving."""

    def __init__(self, *, first_event: bytes | None = None) -> None:
        self.first_event = first_event
        self.entered = asyncio.Event()
        self.disconnected = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        if self.first_event is not None:
            await response.prepare(request)
            await response.write(self.first_event)
        self.entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.disconnected.set()
            raise
        return response


@pytest.fixture
async def transport() -> AsyncGenerator[AiohttpTransport]:
    owned = AiohttpTransport()
    yield owned
    await owned.aclose()


async def value(result: Any = "ok") -> Any:
    return result


async def items(values: list[Any], pulled: list[Any]) -> AsyncIterator[Any]:
    for item in values:
        pulled.append(item)
        yield item


# --- run_abortable ----------------------------------------------------------------------------


async def test_without_cancel_or_deadline_the_work_runs_in_the_callers_task() -> None:
    async def where() -> asyncio.Task[Any] | None:
        return asyncio.current_task()

    assert await run_abortable(where(), cancel=None, deadline=None) is asyncio.current_task()


async def test_the_result_is_returned_when_no_abort_comes() -> None:
    loop = asyncio.get_running_loop()
    result = await run_abortable(value(42), cancel=asyncio.Event(), deadline=loop.time() + WAIT)
    assert result == 42


async def test_an_error_of_the_work_propagates_unchanged() -> None:
    error = ProviderError("HTTP 400: x", status=400)

    async def failing() -> None:
        raise error

    with pytest.raises(ProviderError) as caught:
        await run_abortable(failing(), cancel=asyncio.Event(), deadline=None)
    assert caught.value is error


async def test_a_cancel_set_beforehand_never_starts_the_work() -> None:
    started: list[bool] = []

    async def work() -> None:
        started.append(True)

    cancel = asyncio.Event()
    cancel.set()
    with pytest.raises(RunCancelled):
        await run_abortable(work(), cancel=cancel, deadline=None)
    assert started == []


async def test_a_deadline_already_past_never_starts_the_work() -> None:
    started: list[bool] = []

    async def work() -> None:
        started.append(True)

    deadline = asyncio.get_running_loop().time() - 1
    with pytest.raises(RunTimeout):
        await run_abortable(work(), cancel=None, deadline=deadline)
    assert started == []


async def test_a_cancel_mid_request_aborts_the_http_request(transport: AiohttpTransport) -> None:
    server = Hanging()
    cancel = asyncio.Event()
    async with serve(server.handle) as url:
        call = asyncio.ensure_future(
            run_abortable(transport.post(url, {}, {}, timeout=None), cancel=cancel, deadline=None)
        )
        await asyncio.wait_for(server.entered.wait(), WAIT)
        cancel.set()
        with pytest.raises(RunCancelled):
            await asyncio.wait_for(call, WAIT)
        await asyncio.wait_for(server.disconnected.wait(), WAIT)


async def test_the_deadline_aborts_the_http_request_with_run_timeout(
    transport: AiohttpTransport,
) -> None:
    server = Hanging()
    async with serve(server.handle) as url:
        with pytest.raises(
            RunTimeout, match=r"run timeout after 50ms \(client timeout_ms budget\)"
        ):
            await run_abortable(
                transport.post(url, {}, {}, timeout=None),
                cancel=asyncio.Event(),
                deadline=deadline_after(50),
                timeout_ms=50,
            )
        await asyncio.wait_for(server.disconnected.wait(), WAIT)


async def test_a_deadline_alone_also_aborts(transport: AiohttpTransport) -> None:
    server = Hanging()
    async with serve(server.handle) as url:
        with pytest.raises(RunTimeout):
            await run_abortable(
                transport.post(url, {}, {}, timeout=None), cancel=None, deadline=deadline_after(20)
            )
        await asyncio.wait_for(server.disconnected.wait(), WAIT)


async def test_cancelling_the_caller_also_stops_the_work() -> None:
    entered, stopped = asyncio.Event(), asyncio.Event()

    async def work() -> None:
        entered.set()
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()

    call = asyncio.ensure_future(run_abortable(work(), cancel=asyncio.Event(), deadline=None))
    await asyncio.wait_for(entered.wait(), WAIT)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert stopped.is_set()


async def test_a_cancel_interrupts_a_backoff_and_is_not_retried() -> None:
    attempts: list[int] = []
    backing_off = asyncio.Event()

    async def attempt() -> None:
        attempts.append(len(attempts))
        raise ProviderError("HTTP 503: busy", status=503, retry_after=3600)

    async def sleep(delay: float) -> None:
        backing_off.set()
        await asyncio.sleep(delay)

    cancel = asyncio.Event()
    retrying = call_with_retries(attempt, RetryPolicy(retries=5, sleep=sleep))
    call = asyncio.ensure_future(run_abortable(retrying, cancel=cancel, deadline=None))
    await asyncio.wait_for(backing_off.wait(), WAIT)
    cancel.set()
    with pytest.raises(RunCancelled):
        await asyncio.wait_for(call, WAIT)
    assert attempts == [0]


def test_deadline_after_none_is_no_deadline() -> None:
    assert deadline_after(None) is None


async def test_deadline_after_is_an_absolute_loop_time() -> None:
    before = asyncio.get_running_loop().time()
    deadline = deadline_after(1_000)
    assert deadline is not None
    assert before + 1.0 <= deadline <= asyncio.get_running_loop().time() + 1.0


# --- abortable_iter ---------------------------------------------------------------------------


async def test_the_iterator_passes_items_through_without_cancel_or_deadline() -> None:
    pulled: list[int] = []
    got = [x async for x in abortable_iter(items([1, 2, 3], pulled), cancel=None, deadline=None)]
    assert got == [1, 2, 3]


async def test_the_iterator_passes_items_through_with_a_cancel_that_never_fires() -> None:
    pulled: list[int] = []
    source = items([1, 2, 3], pulled)
    got = [x async for x in abortable_iter(source, cancel=asyncio.Event(), deadline=None)]
    assert got == [1, 2, 3]


async def test_a_cancel_between_items_stops_before_the_next_is_pulled() -> None:
    pulled: list[int] = []
    cancel = asyncio.Event()
    got: list[int] = []

    async def consume() -> None:
        async for item in abortable_iter(items([1, 2, 3], pulled), cancel=cancel, deadline=None):
            got.append(item)
            cancel.set()

    with pytest.raises(RunCancelled):
        await consume()
    assert (got, pulled) == ([1], [1])


async def test_a_cancel_mid_stream_aborts_the_pending_read(transport: AiohttpTransport) -> None:
    server = Hanging(first_event=b"data: one\n\n")
    cancel = asyncio.Event()
    got: list[SSEEvent] = []

    async def consume(url: str) -> None:
        events = transport.stream(url, {}, {}, timeout=None)
        async for event in abortable_iter(events, cancel=cancel, deadline=None):
            got.append(event)

    async with serve(server.handle) as url:
        call = asyncio.ensure_future(consume(url))
        await asyncio.wait_for(server.entered.wait(), WAIT)
        cancel.set()
        with pytest.raises(RunCancelled):
            await asyncio.wait_for(call, WAIT)
        await asyncio.wait_for(server.disconnected.wait(), WAIT)
    assert [event.data for event in got] == ["one"]


async def test_the_deadline_aborts_a_stalled_stream(transport: AiohttpTransport) -> None:
    server = Hanging(first_event=b"data: one\n\n")

    async def consume(url: str) -> None:
        events = transport.stream(url, {}, {}, timeout=None)
        async for _ in abortable_iter(events, cancel=None, deadline=deadline_after(100)):
            pass

    async with serve(server.handle) as url:
        with pytest.raises(RunTimeout):
            await consume(url)
        await asyncio.wait_for(server.disconnected.wait(), WAIT)


async def test_stopping_early_closes_the_source() -> None:
    closed = asyncio.Event()

    async def source() -> AsyncIterator[int]:
        try:
            for item in (1, 2, 3):
                yield item
        finally:
            closed.set()

    wrapped = abortable_iter(source(), cancel=asyncio.Event(), deadline=None)
    assert await anext(wrapped) == 1
    await wrapped.aclose()
    assert closed.is_set()
