"""A cross-process ``wait_for``: the run stays alive, the answer comes through the store.

::

    store = SqliteStore("state.db")           # or PostgresStore(url): any AnswerChannel
    client = create_client(..., store=store, wait_for=store_wait_for(store))
    result = await client.run("Refund order 4021", toolkit)   # parks on the approval

    # meanwhile, in a webhook in another process:
    await store.post_answer(request_id, Answer(id=request_id, ok=True), answered_by="ana")

While it waits, the request is in the store's pending index (``list_pending``), with the run's
checkpoint — so an approvals inbox can show it, and a crashed process's run can still be
resumed later with `Client.resume`. Postgres wakes the waiter through LISTEN/NOTIFY; SQLite
polls.

The wait ends at the Request's ``expiresAt`` or after ``timeout`` seconds. The parked side
then settles the request as expired in the store — it claims it with the expired decline,
recorded as answered by ``"toolnexus:expired"``, and completes it — so the request leaves the
pending index and a late ``post_answer`` gets `AnswerConflict` instead of being recorded for
a run that no longer waits. The loop feeds the tool the expired decline. (A run cancelled
while it waits leaves its request pending: its checkpoint can still be resumed.)
"""

from __future__ import annotations

import asyncio

from .errors import AnswerConflict, UsageError
from .loop.checkpoint import Checkpoint, Outstanding
from .loop.engine import ParkingWaitFor
from .stores.runs import AnswerChannel, RunStore
from .suspension import Answer, Request, is_expired

__all__ = ["EXPIRED_BY", "ParkingWaitFor", "StoreWaitFor", "store_wait_for"]

EXPIRED_BY = "toolnexus:expired"
"""The ``answered_by`` recorded for a request whose parked wait ran out."""


class StoreWaitFor:
    """Parks a live run on a store until any process posts the answer."""

    def __init__(self, store: object, *, timeout: float | None = None) -> None:
        if not isinstance(store, AnswerChannel) or not isinstance(store, RunStore):
            raise UsageError(
                "store_wait_for needs a store with an answer channel "
                "(InMemoryRunStore, SqliteStore or PostgresStore)"
            )
        self._store: AnswerChannel = store
        self._runs: RunStore = store
        self._timeout = timeout

    async def __call__(self, request: Request) -> Answer:
        """Used as a plain ``wait_for``: parks with a checkpoint that holds only the request."""
        return await self.park(
            request,
            Checkpoint(
                model="",
                style="openai",
                messages=[],
                turn=0,
                usage={"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                tool_calls=[],
                outstanding=[Outstanding("", "", "{}", "suspended", request=request)],
                pending=request,
            ),
        )

    async def park(self, request: Request, checkpoint: Checkpoint) -> Answer:
        """Save the halt, wait for its answer, and settle the request either way.

        Returns the posted answer (the request is then completed), or the expired decline
        when the wait ran out (the request is then settled as expired).
        """
        await self._runs.save_halt(checkpoint)
        try:
            record = await self._store.wait_for_answer(request.id, timeout=self._timeout)
        except asyncio.CancelledError:
            # The loop cancels the wait at ``expiresAt``: settle before unwinding. Any other
            # cancel leaves the request pending, resumable from its checkpoint.
            if is_expired(request):
                await asyncio.shield(self.expire(request))
            raise
        if record is None:
            return await self.expire(request)
        await self._runs.complete(request.id)
        return record.answer

    async def expire(self, request: Request) -> Answer:
        """Settle ``request`` as expired, unless an answer got there first.

        Also what the loop calls for a request already past its deadline when it would be
        parked: the store records the expiry all the same (``answered_by`` `EXPIRED_BY`).
        """
        expired = Answer(id=request.id, ok=False, reason="expired")
        try:
            await self._runs.claim(request.id, expired, answered_by=EXPIRED_BY)
        except AnswerConflict:
            # Posted as the wait ran out: that answer was accepted, so it is the outcome. A
            # claim by another resume owns the run now; this one ends with the decline.
            record = await self._runs.answer_record(request.id)
            if record is None:
                return expired
            await self._runs.complete(request.id)
            return record.answer
        await self._runs.complete(request.id)
        return expired


def store_wait_for(store: object, *, timeout: float | None = None) -> StoreWaitFor:
    """A ``wait_for`` that waits for an answer posted to ``store`` from any process.

    Args:
        store: a store with an answer channel (memory run store, SQLite, Postgres).
        timeout: the longest wait in seconds (the Request's ``expiresAt`` also ends it).
    """
    return StoreWaitFor(store, timeout=timeout)
