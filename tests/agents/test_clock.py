"""Clocks: the Clock protocol, AsyncioClock and the VirtualClock tests drive by hand."""

from __future__ import annotations

import asyncio
import contextvars
import math
import time

import pytest

from toolnexus.agents.clock import AsyncioClock, Clock, TimerHandle, VirtualClock
from toolnexus.errors import UsageError

# --- VirtualClock: time -------------------------------------------------------------------


async def test_a_virtual_clock_starts_at_zero_and_stands_still_without_advance() -> None:
    clock = VirtualClock()
    for _ in range(10):
        await asyncio.sleep(0)

    assert clock.now() == 0.0


def test_a_virtual_clock_can_start_at_any_finite_time() -> None:
    assert VirtualClock(1000.5).now() == 1000.5


@pytest.mark.parametrize("start", [math.inf, -math.inf, math.nan])
def test_a_virtual_clock_refuses_a_non_finite_start(start: float) -> None:
    with pytest.raises(UsageError):
        VirtualClock(start)


async def test_advance_moves_time_by_exactly_the_given_seconds() -> None:
    clock = VirtualClock(10.0)

    await clock.advance(2.5)
    await clock.advance(0.25)

    assert clock.now() == 12.75


@pytest.mark.parametrize("seconds", [-1.0, math.nan, math.inf])
async def test_advance_refuses_negative_and_non_finite_seconds(seconds: float) -> None:
    clock = VirtualClock()

    with pytest.raises(UsageError):
        await clock.advance(seconds)
    assert clock.now() == 0.0


# --- VirtualClock: call_later -------------------------------------------------------------


async def test_a_timer_fires_only_once_its_deadline_is_reached() -> None:
    clock = VirtualClock()
    fired: list[float] = []
    clock.call_later(1.0, lambda: fired.append(clock.now()))

    await clock.advance(0.999)
    assert fired == []
    await clock.advance(0.001)
    assert fired == [1.0]


async def test_timers_fire_in_deadline_order_and_ties_in_scheduling_order() -> None:
    clock = VirtualClock()
    fired: list[str] = []
    clock.call_later(3, lambda: fired.append("c"))
    clock.call_later(1, lambda: fired.append("a1"))
    clock.call_later(2, lambda: fired.append("b"))
    clock.call_later(1, lambda: fired.append("a2"))

    await clock.advance(5)

    assert fired == ["a1", "a2", "b", "c"]


async def test_a_callback_sees_now_equal_to_its_own_deadline() -> None:
    clock = VirtualClock()
    seen: list[float] = []
    clock.call_later(1.5, lambda: seen.append(clock.now()))
    clock.call_later(4.0, lambda: seen.append(clock.now()))

    await clock.advance(10)

    assert seen == [1.5, 4.0]
    assert clock.now() == 10.0


async def test_a_cancelled_timer_never_fires() -> None:
    clock = VirtualClock()
    fired: list[int] = []
    handle = clock.call_later(1, lambda: fired.append(1))

    handle.cancel()
    await clock.advance(5)

    assert fired == []


async def test_cancelling_a_timer_twice_or_after_it_fired_is_harmless() -> None:
    clock = VirtualClock()
    fired = clock.call_later(1, lambda: None)
    kept = clock.call_later(5, lambda: None)
    await clock.advance(1)

    fired.cancel()
    fired.cancel()

    assert clock.pending == 1
    kept.cancel()
    kept.cancel()
    assert clock.pending == 0


async def test_a_zero_delay_timer_waits_for_the_next_advance() -> None:
    clock = VirtualClock()
    fired: list[float] = []
    clock.call_later(0, lambda: fired.append(clock.now()))
    for _ in range(5):
        await asyncio.sleep(0)
    assert fired == []

    await clock.advance(0)

    assert fired == [0.0]


async def test_a_negative_delay_counts_as_zero() -> None:
    clock = VirtualClock(5.0)
    fired: list[float] = []
    clock.call_later(-3, lambda: fired.append(clock.now()))

    await clock.advance(0)

    assert fired == [5.0]


async def test_a_nan_delay_is_refused_by_call_later_and_sleep() -> None:
    clock = VirtualClock()

    with pytest.raises(UsageError):
        clock.call_later(math.nan, lambda: None)
    with pytest.raises(UsageError):
        await clock.sleep(math.nan)
    assert clock.pending == 0


async def test_an_infinite_delay_never_comes_due() -> None:
    clock = VirtualClock()
    fired: list[int] = []
    clock.call_later(math.inf, lambda: fired.append(1))

    await clock.advance(1e300)

    assert fired == []
    assert clock.pending == 1


async def test_a_raising_callback_propagates_and_later_timers_stay_scheduled() -> None:
    clock = VirtualClock()
    fired: list[str] = []

    def boom() -> None:
        raise RuntimeError("boom")

    clock.call_later(1, boom)
    clock.call_later(2, lambda: fired.append("later"))

    with pytest.raises(RuntimeError, match="boom"):
        await clock.advance(3)
    assert (fired, clock.pending, clock.now()) == ([], 1, 1.0)
    await clock.advance(1)
    assert fired == ["later"]


async def test_a_callback_runs_in_the_context_it_was_scheduled_from() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    clock = VirtualClock()
    seen: list[str] = []
    token = var.set("at schedule")
    clock.call_later(1, lambda: seen.append(var.get()))
    var.reset(token)

    await clock.advance(1)

    assert seen == ["at schedule"]


# --- VirtualClock: sleepers ---------------------------------------------------------------


async def test_a_sleeper_has_run_by_the_time_advance_returns() -> None:
    clock = VirtualClock()
    woke: list[float] = []

    async def sleeper() -> None:
        await clock.sleep(2)
        woke.append(clock.now())

    task = asyncio.create_task(sleeper())
    await asyncio.sleep(0)  # let it start sleeping

    await clock.advance(2)

    assert woke == [2.0]
    assert task.done()


async def test_a_sleeper_is_not_woken_before_its_deadline() -> None:
    clock = VirtualClock()
    task = asyncio.create_task(clock.sleep(2))
    await asyncio.sleep(0)

    await clock.advance(1.999)

    assert not task.done()
    task.cancel()


async def test_sleep_of_zero_returns_without_an_advance_and_is_not_pending() -> None:
    clock = VirtualClock()
    seen: list[int] = []

    async def watch() -> None:
        seen.append(clock.pending)

    watcher = asyncio.create_task(watch())
    await asyncio.wait_for(clock.sleep(0), timeout=5)
    await watcher

    assert (seen, clock.pending, clock.now()) == ([0], 0, 0.0)


async def test_work_made_runnable_transitively_finishes_within_advance() -> None:
    """A chain far longer than any fixed number of yields still settles completely."""
    clock = VirtualClock()
    events = [asyncio.Event() for _ in range(300)]
    done: list[int] = []

    async def first() -> None:
        await clock.sleep(1)
        events[0].set()

    async def link(i: int) -> None:
        await events[i - 1].wait()
        await asyncio.sleep(0)
        events[i].set()

    async def last() -> None:
        await events[-1].wait()
        done.append(1)

    tasks = [asyncio.create_task(first())]
    tasks += [asyncio.create_task(link(i)) for i in range(1, len(events))]
    tasks.append(asyncio.create_task(last()))
    await asyncio.sleep(0)

    await clock.advance(1)

    assert done == [1]
    assert all(t.done() for t in tasks)


async def test_a_periodic_sleeper_ticks_once_per_period_inside_one_advance() -> None:
    clock = VirtualClock()
    ticks: list[float] = []

    async def heartbeat() -> None:
        while True:
            await clock.sleep(1)
            ticks.append(clock.now())

    task = asyncio.create_task(heartbeat())
    await asyncio.sleep(0)

    await clock.advance(3.5)

    assert ticks == [1.0, 2.0, 3.0]
    task.cancel()


async def test_a_task_woken_earlier_runs_before_a_later_timer_fires() -> None:
    clock = VirtualClock()
    order: list[str] = []

    async def sleeper() -> None:
        await clock.sleep(1)
        order.append("task@1")

    task = asyncio.create_task(sleeper())
    await asyncio.sleep(0)
    clock.call_later(2, lambda: order.append("timer@2"))

    await clock.advance(2)

    assert order == ["task@1", "timer@2"]
    assert task.done()


async def test_many_tasks_sleeping_wake_in_deadline_order() -> None:
    clock = VirtualClock()
    woke: list[int] = []
    delays = [(i * 37) % 100 + 1 for i in range(100)]

    async def sleeper(delay: int) -> None:
        await clock.sleep(delay)
        woke.append(delay)

    tasks = [asyncio.create_task(sleeper(d)) for d in delays]
    await asyncio.sleep(0)
    assert clock.pending == 100

    await clock.advance(100)

    assert woke == sorted(delays)
    assert clock.pending == 0
    assert all(t.done() for t in tasks)


async def test_concurrent_advances_run_one_after_the_other() -> None:
    clock = VirtualClock()
    fired: list[float] = []
    clock.call_later(1.5, lambda: fired.append(clock.now()))

    await asyncio.gather(clock.advance(1), clock.advance(1))

    assert clock.now() == 2.0
    assert fired == [1.5]


async def test_advance_returns_even_while_a_task_yields_forever() -> None:
    clock = VirtualClock()
    spins = 0

    async def spinner() -> None:
        nonlocal spins
        while True:
            spins += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(spinner())

    await asyncio.wait_for(clock.advance(1), timeout=30)

    assert clock.now() == 1.0
    assert spins > 0
    task.cancel()


# --- VirtualClock: pending ----------------------------------------------------------------


async def test_pending_counts_timers_and_sleepers_until_they_fire() -> None:
    clock = VirtualClock()
    clock.call_later(1, lambda: None)
    sleeper = asyncio.create_task(clock.sleep(2))
    await asyncio.sleep(0)
    assert clock.pending == 2

    await clock.advance(1)
    assert clock.pending == 1
    await clock.advance(1)
    assert clock.pending == 0
    assert sleeper.done()


async def test_a_cancelled_sleeper_stops_counting_as_pending() -> None:
    clock = VirtualClock()
    sleeper = asyncio.create_task(clock.sleep(5))
    await asyncio.sleep(0)
    assert clock.pending == 1

    sleeper.cancel()
    with pytest.raises(asyncio.CancelledError):
        await sleeper

    assert clock.pending == 0


async def test_thousands_of_cancelled_timers_leave_the_live_ones_intact() -> None:
    clock = VirtualClock()
    fired: list[int] = []
    handles = [clock.call_later(i % 7 + 1, lambda: fired.append(0)) for i in range(5000)]
    clock.call_later(3, lambda: fired.append(3))
    for handle in handles:
        handle.cancel()

    assert clock.pending == 1
    await clock.advance(10)
    assert fired == [3]
    assert clock.pending == 0


# --- AsyncioClock -------------------------------------------------------------------------


async def test_asyncio_clock_reads_the_running_loops_time() -> None:
    loop = asyncio.get_running_loop()
    before = loop.time()
    now = AsyncioClock().now()
    after = loop.time()

    assert before <= now <= after


def test_asyncio_clock_outside_a_loop_reads_the_monotonic_clock() -> None:
    before = time.monotonic()
    now = AsyncioClock().now()
    after = time.monotonic()

    assert before <= now <= after


async def test_asyncio_clock_call_later_runs_the_callback_on_the_loop() -> None:
    done = asyncio.Event()

    handle = AsyncioClock().call_later(0, done.set)

    await asyncio.wait_for(done.wait(), timeout=5)
    assert isinstance(handle, TimerHandle)


async def test_asyncio_clock_cancelled_timer_never_runs() -> None:
    clock = AsyncioClock()
    fired: list[str] = []
    done = asyncio.Event()
    clock.call_later(0, lambda: fired.append("cancelled")).cancel()
    clock.call_later(0, done.set)  # scheduled later with the same deadline: runs after

    await asyncio.wait_for(done.wait(), timeout=5)

    assert fired == []


async def test_asyncio_clock_sleep_of_zero_returns() -> None:
    await asyncio.wait_for(AsyncioClock().sleep(0), timeout=5)


async def test_asyncio_clock_refuses_a_nan_delay() -> None:
    clock = AsyncioClock()

    with pytest.raises(UsageError):
        await clock.sleep(math.nan)
    with pytest.raises(UsageError):
        clock.call_later(math.nan, lambda: None)


def test_both_clocks_satisfy_the_clock_protocol() -> None:
    clocks: list[Clock] = [AsyncioClock(), VirtualClock()]

    assert all(isinstance(c, Clock) for c in clocks)
