"""Clocks the agent runtime reads time through: the real one and a virtual one for tests.

Everything in the runtime that waits (heartbeats, ``wait`` timeouts, the shutdown grace period)
asks an injected `Clock` instead of `asyncio` directly, so a test can drive time by hand::

    clock = VirtualClock()
    rt = AgentRuntime(registry=..., clock=clock)
    ...
    await clock.advance(30)   # thirty seconds pass, instantly and deterministically

Both clocks are meant for one event loop and may be shared by any number of tasks on it; neither
is thread-safe (nor is asyncio).

Delays are seconds as ``float``. A NaN delay is a `UsageError` (it would corrupt the timer
order); a negative delay counts as zero; an infinite one never comes due.
"""

from __future__ import annotations

import asyncio
import contextvars
import heapq
import math
import time
from collections.abc import Callable, Sized
from typing import Protocol, runtime_checkable

from ..errors import UsageError

__all__ = ["AsyncioClock", "Clock", "TimerHandle", "VirtualClock"]


@runtime_checkable
class TimerHandle(Protocol):
    """What `Clock.call_later` returns: cancelling it before it fires means it never fires."""

    def cancel(self) -> None: ...


@runtime_checkable
class Clock(Protocol):
    """The runtime's source of time (CONTRACT §2.2)."""

    def now(self) -> float:
        """The current time in seconds (any fixed origin; only differences matter)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return once ``seconds`` have passed on this clock."""
        ...

    def call_later(self, seconds: float, callback: Callable[[], object]) -> TimerHandle:
        """Run ``callback()`` once ``seconds`` have passed, unless the handle is cancelled."""
        ...


def _delay(seconds: float) -> float:
    if math.isnan(seconds):
        raise UsageError("a clock delay must be a number of seconds, got NaN")
    return max(seconds, 0.0)


class AsyncioClock:
    """Real time: the running event loop's clock (``loop.time()``), sleeps and timers.

    ``now()`` outside a running loop falls back to `time.monotonic`, which is what the default
    asyncio loop uses, so readings taken inside and outside a loop are comparable there.
    """

    __slots__ = ()

    def now(self) -> float:
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:
            return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(_delay(seconds))

    def call_later(self, seconds: float, callback: Callable[[], object]) -> TimerHandle:
        """Schedule ``callback`` on the running loop (there must be one)."""
        return asyncio.get_running_loop().call_later(_delay(seconds), callback)


class _Timer:
    """One scheduled callback or sleeper of a `VirtualClock`; its own cancellable handle."""

    __slots__ = ("_callback", "_context", "_live", "_on_cancel", "when")

    def __init__(
        self, when: float, callback: Callable[[], object], on_cancel: Callable[[], None]
    ) -> None:
        self._on_cancel = on_cancel
        self._callback = callback
        self._context = contextvars.copy_context()
        self._live = True
        self.when = when

    @property
    def live(self) -> bool:
        """Neither fired nor cancelled."""
        return self._live

    def cancel(self) -> None:
        if self._live:
            self._live = False
            self._on_cancel()

    def fire(self) -> None:
        self._live = False
        self._context.run(self._callback)


_MAX_SETTLE_ROUNDS = 10_000
"""Safety valve for `VirtualClock.settle`: a task that yields forever (``while True: await
asyncio.sleep(0)``) would otherwise keep the event loop busy, and ``advance`` would never
return."""

_FALLBACK_SETTLE_ROUNDS = 64
"""Rounds `VirtualClock.settle` yields on an event loop whose ready queue it cannot see."""


class VirtualClock:
    """A clock whose time moves only when the test says so: ``await clock.advance(s)``.

    Nothing ever fires by itself. `advance` moves time forward in steps, one due timer at a
    time, in deadline order (ties in the order they were scheduled): it sets `now` to the
    timer's deadline, runs the callback (or wakes the sleeper), then lets the event loop settle
    (see `settle`) before looking for the next due timer. So a task woken at t=1 runs, and sees
    ``now() == 1``, before anything due at t=2 fires; a timer it schedules that falls inside
    the advanced window fires within the same `advance`. Finally `now` is set to the target and
    the loop settles once more.

    **The guarantee**: when ``await clock.advance(s)`` returns, every timer due by then has
    fired, and every task those timers made runnable — and, transitively, every task *those*
    tasks made runnable — has run until it waits for something not yet done. That holds for
    waits on the event loop (futures, events, locks, queues, this clock); a task waiting on I/O,
    a thread or the loop's real timers is not waited for.

    Other decisions:

    - ``sleep(s)`` with ``s <= 0`` yields once and returns, like ``asyncio.sleep(0)``: it
      registers nothing and needs no `advance`.
    - ``call_later(s, cb)`` with ``s <= 0`` is due at once and fires at the next `advance`
      (``advance(0)`` included): callbacks never run outside `advance`.
    - A callback that raises makes `advance` raise that exception. The timer is spent; later
      timers stay scheduled and fire on the next `advance`.
    - Callbacks run in the `contextvars` context current when they were scheduled, as asyncio's
      do. Concurrent `advance` calls run one after the other.
    """

    def __init__(self, start: float = 0.0) -> None:
        """Start the clock at ``start`` seconds."""
        if not math.isfinite(start):
            raise UsageError(f"a virtual clock must start at a finite time, got {start!r}")
        self._now = float(start)
        self._heap: list[tuple[float, int, _Timer]] = []
        self._seq = 0
        self._pending = 0
        self._advancing: asyncio.Lock | None = None

    def now(self) -> float:
        return self._now

    @property
    def pending(self) -> int:
        """How many timers and sleepers are scheduled (neither fired nor cancelled)."""
        return self._pending

    async def sleep(self, seconds: float) -> None:
        delay = _delay(seconds)
        if delay == 0:
            await asyncio.sleep(0)
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not waiter.done():
                waiter.set_result(None)

        timer = self._schedule(delay, wake)
        try:
            await waiter
        finally:
            timer.cancel()  # a cancelled sleeper stops counting as pending

    def call_later(self, seconds: float, callback: Callable[[], object]) -> TimerHandle:
        return self._schedule(_delay(seconds), callback)

    async def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds`` (finite, ``>= 0``), firing what comes due.

        Raises:
            UsageError: ``seconds`` is negative, NaN or infinite.
        """
        if not math.isfinite(seconds) or seconds < 0:
            raise UsageError(f"advance needs a finite number of seconds >= 0, got {seconds!r}")
        if self._advancing is None:
            self._advancing = asyncio.Lock()
        async with self._advancing:
            target = self._now + seconds
            while (timer := self._pop_due(target)) is not None:
                self._now = max(self._now, timer.when)
                timer.fire()
                await self.settle()
            self._now = max(self._now, target)
            await self.settle()

    async def settle(self) -> None:
        """Yield to the event loop until no other task or callback is ready to run.

        On asyncio's own loops this watches the loop's ready queue, so it stops exactly when
        the loop is idle apart from I/O and real timers (or after a safety cap of 10,000
        rounds, for a task that yields forever). On a loop that does not expose its ready
        queue, it yields a fixed 64 rounds.
        """
        # The ready queue is not public API; reading its length is the only exact idle check
        # asyncio offers, and we read nothing else from it.
        ready = getattr(asyncio.get_running_loop(), "_ready", None)
        if not isinstance(ready, Sized):
            for _ in range(_FALLBACK_SETTLE_ROUNDS):
                await asyncio.sleep(0)
            return
        for _ in range(_MAX_SETTLE_ROUNDS):
            await asyncio.sleep(0)
            if len(ready) == 0:
                return

    def _schedule(self, delay: float, callback: Callable[[], object]) -> _Timer:
        timer = _Timer(self._now + delay, callback, self._forget)
        self._seq += 1
        heapq.heappush(self._heap, (timer.when, self._seq, timer))
        self._pending += 1
        return timer

    def _pop_due(self, target: float) -> _Timer | None:
        heap = self._heap
        while heap:
            when, _, timer = heap[0]
            if not timer.live:
                heapq.heappop(heap)
            elif when <= target:
                heapq.heappop(heap)
                self._pending -= 1
                return timer
            else:
                return None
        return None

    def _forget(self) -> None:
        """A timer was cancelled: count it out, and drop dead entries once they dominate."""
        self._pending -= 1
        if len(self._heap) > 64 and len(self._heap) > 2 * self._pending:
            self._heap = [entry for entry in self._heap if entry[2].live]
            heapq.heapify(self._heap)
