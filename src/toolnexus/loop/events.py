"""The turn loop's event stream: one coroutine, awaited plainly or iterated for its events.

The loop (`toolnexus.loop.engine.Engine`) is written once, as a coroutine that returns its
`Finished` step. Without streaming it is simply awaited: one coroutine frame for a run
[parked-run memory] — an async generator would cost its object, the ``asend`` awaitable of
every step and an entry in the event loop's weak set of async generators, for every run in
its model call and every run parked on a human. When streaming, it hands each event out with
``await emit(event)`` and `EventStream` iterates it: an async iterator that steps the
coroutine, passes every other suspension (a future, a bare ``yield``) up to the task that
iterates, and ends with the coroutine's return value (the `Finished` step) as its last item —
what the async generator the loop once was did, with the same semantics:

* an exception of the loop ends the stream (later ``anext`` ⇒ `StopAsyncIteration`);
* ``aclose()`` throws `GeneratorExit` into a suspended loop and lets its cleanup await;
  a loop that hands out another event instead is a `RuntimeError`, as for a generator;
* a stream dropped before its end closes the loop when it is collected (``coroutine.close``).
"""

from __future__ import annotations

import types
from collections.abc import AsyncIterator, Generator
from typing import Any, Generic, TypeVar, cast

__all__ = ["EventStream", "emit"]

T = TypeVar("T")


class _Emit:
    """What a streaming loop awaits to hand ``event`` to the consumer of its stream."""

    __slots__ = ("event",)

    def __init__(self, event: object) -> None:
        self.event = event

    def __await__(self) -> Generator[Any, Any, None]:
        yield self


def emit(event: object) -> _Emit:
    """``await emit(event)``: hand ``event`` to the `EventStream` iterating this loop (the
    loop resumes when the consumer asks for the next item). Only inside an `EventStream`."""
    return _Emit(event)


@types.coroutine
def _advance(
    coro: types.CoroutineType[Any, Any, Any], error: BaseException | None
) -> Generator[Any, Any, tuple[bool, Any]]:
    """Run ``coro`` (sending in ``error`` first, when given) to its next event or its end:
    ``(False, event)`` or ``(True, returned)``; every other suspension goes up to the task."""
    value: Any = None
    while True:
        try:
            out = coro.send(value) if error is None else coro.throw(error)
        except StopIteration as stop:
            return True, stop.value
        error = None
        if type(out) is _Emit:
            return False, out.event
        try:
            value = yield out
        except BaseException as exc:  # a cancellation of the task: the loop gets it
            value, error = None, exc


class EventStream(AsyncIterator[T], Generic[T]):
    """The events a loop coroutine hands out (`emit`), then what it returns."""

    __slots__ = ("_coro", "_running")

    def __init__(self, coro: types.CoroutineType[Any, Any, Any]) -> None:
        self._coro: types.CoroutineType[Any, Any, Any] | None = coro
        self._running = False

    def __del__(self) -> None:
        coro = self._coro
        if coro is not None and not coro.cr_suspended and not coro.cr_running:
            coro.close()  # never iterated: no "never awaited" warning (an async generator has none)

    def __aiter__(self) -> EventStream[T]:
        return self

    async def __anext__(self) -> T:
        coro = self._coro
        if coro is None:
            raise StopAsyncIteration
        if self._running:
            raise RuntimeError("anext(): the run's event stream is already running")
        self._running = True
        try:
            finished, item = await _advance(coro, None)
        except BaseException:
            self._coro = None
            raise
        finally:
            self._running = False
        if finished:
            self._coro = None
        return cast(T, item)

    async def aclose(self) -> None:
        """Close the loop where it stands: `GeneratorExit` at its suspension, its cleanup
        awaited (nothing to do when it ended or never started)."""
        coro = self._coro
        if coro is None:
            return
        if self._running:
            raise RuntimeError("aclose(): the run's event stream is running")
        self._coro = None
        if not coro.cr_suspended:
            coro.close()  # never started: nothing runs
            return
        try:
            finished, _ = await _advance(coro, GeneratorExit())
        except GeneratorExit:
            return
        if not finished:
            coro.close()
            raise RuntimeError("the run's event stream ignored GeneratorExit")
