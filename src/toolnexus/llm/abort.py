"""Abort in-flight work when the caller's cancel fires or the run's deadline passes.

The run's ``timeout_ms`` and its ``cancel`` event are *aborts*, not failures: the in-flight
HTTP request is torn down (its task is cancelled, which closes the aiohttp connection), and the
caller sees `RunTimeout` or `RunCancelled`. Wrap the whole retrying call in `run_abortable`, so
an abort also interrupts a backoff sleep and is never retried.

A transport's own per-request ``timeout`` is a different thing (a stalled connection, reported as
a retryable `TransportError`); the run deadline lives here and only here.

Deadlines are absolute ``loop.time()`` values, so one deadline computed at the start of a run
bounds every call the run makes.
"""

from __future__ import annotations

import asyncio
from asyncio import FIRST_COMPLETED
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Coroutine
from typing import Any, TypeVar

from ..errors import RunCancelled, RunTimeout

__all__ = ["abortable_iter", "deadline_after", "run_abortable"]

T = TypeVar("T")


def deadline_after(timeout_ms: float | None) -> float | None:
    """The absolute ``loop.time()`` deadline ``timeout_ms`` from now (``None`` ⇒ no deadline).

    Must be called with a running event loop.

    >>> deadline = deadline_after(30_000)  # inside a coroutine
    """
    if timeout_ms is None:
        return None
    return asyncio.get_running_loop().time() + timeout_ms / 1000.0


def _timeout_error(timeout_ms: float | None) -> RunTimeout:
    if timeout_ms is None:
        return RunTimeout("run deadline passed; the in-flight request was aborted")
    # The existing package's wording (COMPAT §2), kept byte for byte.
    return RunTimeout(f"run timeout after {timeout_ms:g}ms (client timeout_ms budget)")


def _cancelled_error() -> RunCancelled:
    return RunCancelled("run cancelled")


async def _stop(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` and wait until it has unwound (its connection is released by then)."""
    task.cancel()
    await asyncio.wait((task,))
    if not task.cancelled():
        task.exception()  # retrieved: an error while unwinding is not worth a warning


async def run_abortable(
    coro: Coroutine[Any, Any, T],
    *,
    cancel: asyncio.Event | None,
    deadline: float | None,
    timeout_ms: float | None = None,
) -> T:
    """Await ``coro``, aborting it when ``cancel`` is set or ``deadline`` passes.

    With neither a cancel event nor a deadline the coroutine is simply awaited (no task, no
    timer). Otherwise it runs as a task; whichever comes first — its result, the cancel, the
    deadline — decides. An abort cancels the task, waits for it to unwind, then raises. A
    result that is ready when the abort arrives wins over the abort; a failure that arrives
    once the deadline has passed is reported as the deadline (`RunTimeout`).

    Args:
        coro: the work, typically one retrying model call.
        cancel: the caller's cancel signal; already set ⇒ the work never starts.
        deadline: an absolute ``loop.time()``; already past ⇒ the work never starts.
        timeout_ms: the run's configured timeout, named in the `RunTimeout` message.

    Returns:
        What ``coro`` returned.

    Raises:
        RunCancelled: ``cancel`` fired first.
        RunTimeout: the deadline passed first.

    >>> reply = await run_abortable(call(), cancel=stop_event, deadline=deadline_after(5_000))
    """
    if cancel is None and deadline is None:
        return await coro
    loop = asyncio.get_running_loop()
    if cancel is not None and cancel.is_set():
        coro.close()
        raise _cancelled_error()
    if deadline is not None and loop.time() >= deadline:
        coro.close()
        raise _timeout_error(timeout_ms)
    task = loop.create_task(coro)
    watcher = loop.create_task(cancel.wait()) if cancel is not None else None
    waiting: set[asyncio.Task[Any]] = {task} if watcher is None else {task, watcher}
    remaining = None if deadline is None else deadline - loop.time()
    try:
        done, _ = await asyncio.wait(waiting, timeout=remaining, return_when=FIRST_COMPLETED)
    finally:
        if watcher is not None:
            watcher.cancel()
        if not task.done():
            # Also reached when our own caller is cancelled: never leave the work running.
            await _stop(task)
    if task in done:
        failed = not task.cancelled() and task.exception() is not None
        if failed and deadline is not None and loop.time() >= deadline:
            # A failure once the budget is spent is the budget running out: a host's sync
            # transport times out by itself when what was left of it is gone.
            raise _timeout_error(timeout_ms) from task.exception()
        return task.result()
    if watcher is not None and watcher in done:
        raise _cancelled_error()
    raise _timeout_error(timeout_ms)


_END: Any = object()


async def _next(iterator: AsyncIterator[T]) -> T:
    try:
        return await anext(iterator)
    except StopAsyncIteration:
        return _END


async def abortable_iter(
    source: AsyncIterable[T],
    *,
    cancel: asyncio.Event | None,
    deadline: float | None,
    timeout_ms: float | None = None,
) -> AsyncGenerator[T, None]:
    """Iterate ``source``, aborting a pending ``__anext__`` on cancel or deadline.

    The cancel is observed between items too: a cancel set while the consumer handles one item
    stops the iteration before the next is requested. Whether it ends normally, by an abort, or
    because the consumer stopped early, the source is closed (``aclose``), which releases a
    streaming connection.

    Args:
        source: the items, typically a transport's SSE stream.
        cancel: the caller's cancel signal.
        deadline: an absolute ``loop.time()``.
        timeout_ms: the run's configured timeout, named in the `RunTimeout` message.

    Yields:
        The source's items, in order.

    Raises:
        RunCancelled: ``cancel`` fired before the source ended.
        RunTimeout: the deadline passed before the source ended.

    >>> async for event in abortable_iter(events, cancel=stop_event, deadline=None):
    ...     handle(event)
    """
    iterator = aiter(source)
    try:
        if cancel is None and deadline is None:
            async for item in iterator:
                yield item
            return
        while True:
            step = _next(iterator)
            item = await run_abortable(
                step, cancel=cancel, deadline=deadline, timeout_ms=timeout_ms
            )
            if item is _END:
                return
            yield item
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            await aclose()
