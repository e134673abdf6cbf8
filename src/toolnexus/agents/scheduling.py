"""When turns run: the runtime's model-call slots, and the wakes that start, queue and settle turns.

Two gates keep a busy runtime in bounds here. `ModelSlots` caps the model calls in flight
across the runtime (``max_concurrent_turns``): it wraps only the HTTP call, so a handle waiting
on a tool or a human holds no slot. `TurnScheduler` honours a parent's ``max_concurrent``:
over it, a child's wake waits in a FIFO queue and starts when a sibling's turn settles.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar

from .budget import BudgetGuard, limit_text, max_turns_of
from .clock import Clock
from .handle import Handle, render_inbox
from .tree import Tree
from .turns import TurnDriver
from .types import InboxItem, PostResult, TaskResult

__all__ = ["ModelSlots", "TurnScheduler"]

T = TypeVar("T")


class ModelSlots:
    """At most ``size`` model calls in flight; a slot is released when its holder dies."""

    def __init__(self, size: int) -> None:
        self._semaphore = asyncio.Semaphore(size)
        self._in_flight = 0
        self.max_observed = 0
        """The most model calls that were in flight at once."""

    async def hold(self, call: Callable[[], Awaitable[T]]) -> T:
        """``await call()`` in a slot."""
        async with self._semaphore:
            self._in_flight += 1
            self.max_observed = max(self.max_observed, self._in_flight)
            try:
                return await call()
            finally:
                self._in_flight -= 1


class TurnScheduler:
    """Starts a handle's turns (`wake`), queues them over a parent's ``max_concurrent``, and
    settles each one (`settle`): durable first, visible second, then the freed slot's next wake.

    Args:
        tree: the handles.
        driver: runs a turn.
        clock: when a handle's first turn started (its ``max_wall_ms``).
    """

    def __init__(self, *, tree: Tree, driver: TurnDriver, clock: Clock) -> None:
        self._tree = tree
        self._driver = driver
        self._clock = clock
        self._queues: dict[str, list[Handle]] = {}

    def wake(self, h: Handle, prompt: str | None = None) -> PostResult:
        """Start a turn on an idle handle: its input is ``prompt`` plus the drained inbox.

        Waking a running handle is a no-op (the prompt is buffered for its next turn); waking a
        suspended one only buffers. Over the parent's ``max_concurrent`` the wake queues FIFO.
        """
        if h.state == "closed":
            return PostResult(False, "closed")
        if h is self._tree.root:
            return PostResult(False, "the root is not an agent; wake its children")
        if h.state in ("running", "suspended") or h.queued:
            if prompt:
                sender = h.parent.id if h.parent else "external"
                h.inbox.append(InboxItem(from_=sender, channel="wake", text=prompt))
            return PostResult(True)
        parent = h.parent
        assert parent is not None
        limit = parent.budget.max_concurrent
        if limit is not None and parent.running_children >= limit:
            h.queued = True
            h.queued_prompt = prompt
            self._queues.setdefault(parent.id, []).append(h)
            self._tree.trace.append(f"{h.id}: wake QUEUED (parent concurrency {limit})")
            return PostResult(True)
        self._admit(h, prompt)
        return PostResult(True)

    def release(self, h: Handle) -> None:
        """``h`` stopped running: the first idle wake queued under its parent starts."""
        parent = h.parent
        if parent is None:
            return
        queue = self._queues.get(parent.id)
        while queue:
            nxt = queue.pop(0)
            nxt.queued = False
            if nxt.state != "idle":
                continue
            self._tree.trace.append(f"{nxt.id}: DEQUEUED wake (slot freed)")
            self._admit(nxt, nxt.queued_prompt)
            nxt.queued_prompt = None
            return

    async def settle(self, h: Handle, result: TaskResult) -> None:
        """``h``'s turn came to ``result``: store it, move the handle, tell its waiters."""
        tree = self._tree
        h.task = None
        if h.state == "closed":
            return
        h.result = tree.stamp(h, result)
        # Durable first, visible second: the rows (and, for a question, the pending index) are
        # written before the state changes, so whoever sees the new state — `wait` returns at
        # once for a settled handle — finds it in the store too. The tree is written before
        # the index: a request that can be answered always has a durable suspended handle
        # (`restore` indexes one whose process died between the two).
        if result.status == "pending":
            await tree.persist(h, as_state="suspended")
            await tree.index(h)
            tree.move(h, "suspended", self._suspension_why(h, result))
        elif h.state == "running":
            await tree.persist(h, as_state="idle")
            tree.move(h, "idle", _settled_why(h, result))
        else:
            await tree.persist(h)
        tree.notify(h, result)
        if h.state != "running":
            self.release(h)

    def _admit(self, h: Handle, prompt: str | None) -> None:
        """Atomic admission: drain, cancel seam, state flip, start."""
        items = list(h.inbox)
        h.inbox.clear()
        h.drained = items
        ancestors = {a.id for a in h.ancestors()[1:]} | {"clock"}
        text = (prompt or "") + render_inbox(items, ancestors)
        h.cancel = asyncio.Event()
        h.run_turns = 0
        if h.started_at is None:
            h.started_at = self._clock.now()
        self._tree.move(h, "running", "wake")
        h.task = asyncio.get_running_loop().create_task(self._turn(h, text))

    async def _turn(self, h: Handle, text: str) -> None:
        result: TaskResult
        try:
            await self._on_spawn(h)
            guard = BudgetGuard(h, self._clock.now)
            stop = guard.admit()
            if stop is not None:
                result = TaskResult(text=limit_text(stop), status="incomplete", limit=stop)
                h.inbox[:0] = h.drained
                h.drained = []
            else:
                result = await self._driver.turn(h, text, guard)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            result = TaskResult(text=f"{type(exc).__name__}: {exc}", status="error", is_error=True)
        await self.settle(h, result)

    async def _on_spawn(self, h: Handle) -> None:
        if h.spawned:
            return
        h.spawned = True
        callback = self._tree.defn(h).on_spawn
        if callback is not None:
            value = callback(h)
            if inspect.isawaitable(value):
                await value

    def _suspension_why(self, h: Handle, result: TaskResult) -> str:
        request = result.pending
        kind = request.kind if request is not None else ""
        if self._tree.answered_inline(h):
            return f'pending "{kind}": {request.prompt if request is not None else ""}'
        return f'DURABLE (pending "{kind}", path preserved)'


def _settled_why(h: Handle, result: TaskResult) -> str:
    """The package's reason for a running→idle move."""
    if result.status == "done":
        return f"done, turns={h.turns}, tokens={h.tokens}"
    if result.status == "incomplete":
        if result.limit == "maxTurns":
            return f"INCOMPLETE at maxTurns {max_turns_of(h.budget)}"
        return f"INCOMPLETE at {result.limit}"
    return f"{result.status}: {result.text}"
