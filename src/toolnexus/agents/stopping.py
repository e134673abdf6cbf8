"""`Stopper`: stopping handles — `interrupt` (synchronous, immediate) and `close` (leaf-first).

Both verbs put the items an aborted turn had drained back at the front of the handle's inbox,
so nothing posted to it is lost.
"""

from __future__ import annotations

import asyncio
import inspect
import logging

from .handle import Handle
from .scheduling import TurnScheduler
from .tree import Tree
from .types import CloseReason, InboxItem, TaskResult

__all__ = ["Stopper"]

log = logging.getLogger("toolnexus.agents")


class Stopper:
    """Interrupts and closes handles.

    Args:
        tree: the handles.
        scheduler: frees an aborted turn's slot for the next queued wake.
        shutdown_ms: how long `close` lets a running turn finish before aborting it.
    """

    def __init__(self, *, tree: Tree, scheduler: TurnScheduler, shutdown_ms: int) -> None:
        self._tree = tree
        self._scheduler = scheduler
        self.shutdown_ms = shutdown_ms

    def interrupt(self, h: Handle) -> asyncio.Future[None]:
        """Abort the in-flight turn, or cancel a pending request — at once (synchronous).

        A running handle goes idle now with its drained inbox put back at the front, and its
        waiters get an ``interrupted`` result; the turn's task unwinds behind. A suspended one
        goes idle now too. Never a kill: the handle stays usable. The returned future resolves
        to ``None`` once the handle has settled (``await rt.interrupt(h)`` waits for that)."""
        loop = asyncio.get_running_loop()
        settled: asyncio.Future[None] = loop.create_future()
        if h.state == "running" and h.task is not None:
            task = h.task
            task.cancel()
            h.task = None
            restored = len(h.drained)
            h.inbox[:0] = h.drained
            h.drained = []
            h.gate = None
            self._tree.move(h, "idle", "interrupted; inbox intact")
            self._tree.trace.append(f"{h.id}: interrupt; inbox intact: {restored} items")
            self._after_interrupt(h, settled, task)
        elif h.state == "suspended":
            kind = h.pending.kind if h.pending is not None else ""
            h.pending = None
            h.checkpoint = None
            h.gate = None
            self._tree.move(h, "idle", f'interrupt cancelled pending "{kind}"')
            self._after_interrupt(h, settled, None)
        else:
            settled.set_result(None)
        return settled

    def _after_interrupt(
        self, h: Handle, settled: asyncio.Future[None], task: asyncio.Task[None] | None
    ) -> None:
        result = self._tree.stamp(h, TaskResult("interrupted", True, "interrupted"))
        h.result = result
        self._tree.notify(h, result)
        self._scheduler.release(h)

        async def finish() -> None:
            try:
                if task is not None:
                    await asyncio.gather(task, return_exceptions=True)
                await self._tree.persist(h)
            finally:
                if not settled.done():
                    settled.set_result(None)

        self._tree.keep(finish())

    async def close(
        self, h: Handle, *, force: bool = False, reason: CloseReason | None = None
    ) -> list[InboxItem]:
        """`AgentRuntime.close`: ``h`` and, leaf-first, its children; ``h``'s unprocessed inbox
        items."""
        for child in list(h.children):
            await self.close(child, force=force, reason=reason)
        if h is self._tree.root or h.state == "closed":
            return list(h.inbox)
        why: CloseReason = reason or "closed"
        aborted: TaskResult | None = None
        if h.state == "running" and h.task is not None:
            task = h.task
            if not force and self.shutdown_ms:
                done, _ = await asyncio.wait({task}, timeout=self.shutdown_ms / 1000)
                if task not in done:
                    task.cancel()
                    why = reason or "interrupted"
            else:
                task.cancel()
                why = reason or "interrupted"
            await asyncio.gather(task, return_exceptions=True)
            h.task = None
            if h.state == "running":  # the turn was aborted, not finished
                h.inbox[:0] = h.drained
                h.drained = []
                aborted = TaskResult("closed", True, "closed")
        if _is_closed(h):  # the aborted turn may have closed it meanwhile
            return list(h.inbox)
        callback = self._tree.defn(h).on_close
        if callback is not None:
            try:
                value = callback(h, why)
                if inspect.isawaitable(value):
                    await value
            except Exception:
                log.warning("toolnexus: on_close raised for %s", h.id, exc_info=True)
        self._tree.move(h, "closed", why)
        if h.result is None:
            h.result = aborted or TaskResult(text=f"{h.id} is closed", status="closed")
        await self._tree.persist(h)
        final = self._tree.stamp(h, aborted or h.result)
        self._tree.notify(h, final)
        return list(h.inbox)


def _is_closed(h: Handle) -> bool:
    return h.state == "closed"
