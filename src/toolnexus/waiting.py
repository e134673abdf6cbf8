"""A cross-process ``wait_for``: the run stays alive, the answer comes through the store.

::

    store = SqliteStore("state.db")           # or PostgresStore(url): any AnswerChannel
    client = create_client(..., store=store, wait_for=store_wait_for(store))
    result = await client.run("Refund order 4021", toolkit)   # parks on the approval

    # meanwhile, in a webhook in another process (no toolkit needed):
    await store.post_answer(request_id, Answer(id=request_id, ok=True), answered_by="ana")

A client with this ``wait_for`` lets a suspending run *halt* — its checkpoint is saved and the
request shows in the pending index — and then waits for the request to be answered. When it
is, the parked run takes the answer (`RunStore.take`) and resumes through the one resumption
(`toolnexus.resumption`), exactly as a worker would: the resolved calls are recorded before the
model is called again, and the outcome before the request counts as done. So a process that
dies while it waits, or while it resumes, loses nothing: once its lease runs out, any worker
(``client.worker(toolkit)``) finishes the run. If a worker takes the answer first, the parked
run returns that worker's outcome.

The wait ends at the Request's ``expiresAt`` or after ``timeout`` seconds. The request is then
settled with the expired decline (`RunStore.expire`, recorded as answered by `EXPIRED_BY`) and
the run resumes with it, so a late answer gets `AnswerConflict`. A cancelled request
(`Client.cancel`) ends the parked run with `RunCancelled`. A run whose task is cancelled while
it waits leaves its request pending: its checkpoint can still be answered and resumed.

Used as the ``wait_for`` of an agent definition, the engine parks inline instead (`park`).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from .errors import AnswerConflict, UsageError
from .loop.checkpoint import Checkpoint, Outstanding
from .loop.engine import ParkingWaitFor
from .stores.checks import check_seconds
from .stores.requests import (
    DEFAULT_LEASE_S,
    EXPIRED_BY,
    SETTLED,
    AnswerChannel,
    AnswerRecord,
    RunStore,
)
from .suspension import Answer, Request, expired_decline, is_expired

__all__ = ["EXPIRED_BY", "ParkingWaitFor", "StoreWaitFor", "store_wait_for"]

_SETTLE_POLL_MAX = 1.0  # seconds between looks while another resumer finishes the run


class StoreWaitFor:
    """Parks a live run on a store until any process records the answer."""

    def __init__(
        self, store: object, *, timeout: float | None = None, lease_s: float = DEFAULT_LEASE_S
    ) -> None:
        if not isinstance(store, AnswerChannel) or not isinstance(store, RunStore):
            raise UsageError(
                "store_wait_for needs a store with an answer channel "
                "(InMemoryRunStore, SqliteStore or PostgresStore)"
            )
        self._store: AnswerChannel = store
        self._runs: RunStore = store
        self._timeout = timeout
        self.lease_s = check_seconds(lease_s, "lease_s", positive=True)
        """How long the parked run holds its answer while it resumes (another process takes
        over once it runs out, if this one died)."""

    @property
    def store(self) -> RunStore:
        """The store runs park on."""
        return self._runs

    async def wait(self, request: Request) -> AnswerRecord:
        """Wait until ``request`` leaves ``pending``; at its deadline, settle it as expired.

        Returns the record: an answer for a resumer to take, a cancel, or — when someone got
        there first — a request already being resumed or settled.
        """
        limit = self._timeout
        deadline = request.expires_at if request.expiresAt else None
        if deadline is not None and not is_expired(request):
            left = (deadline - datetime.now(UTC)).total_seconds()
            limit = left if limit is None else min(limit, left)
        if not is_expired(request):
            record = await self._store.wait_for_answer(request.id, timeout=limit)
            if record is not None:
                return record
        return await self._expire(request.id)

    async def settled(self, request_id: str) -> AnswerRecord:
        """Wait until another resumer has settled ``request_id`` and return its record."""
        pause = 0.02
        while True:
            record = await self._runs.answer_record(request_id)
            if record is not None and record.status in SETTLED:
                return record
            await asyncio.sleep(pause)
            pause = min(pause * 2, _SETTLE_POLL_MAX)

    async def _expire(self, request_id: str) -> AnswerRecord:
        try:
            return await self._runs.expire(request_id)
        except AnswerConflict:
            # Answered (or cancelled) as the wait ran out: that is the outcome.
            record = await self._runs.answer_record(request_id)
            if record is None:
                raise
            return record

    # -- the engine's inline park (an agent definition's wait_for) --------------------------

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
        """Save the halt, wait for its answer, take and settle it, and hand the answer to the
        engine, which resolves the call inline.

        Raises:
            AnswerConflict: another resumer took the answer first.
        """
        await self._runs.save_halt(checkpoint)
        try:
            record = await self.wait(request)
        except asyncio.CancelledError:
            # The loop cancels the wait at ``expiresAt``: settle before unwinding. Any other
            # cancel leaves the request pending, resumable from its checkpoint.
            if is_expired(request):
                await asyncio.shield(self.expire(request))
            raise
        claim = await self._runs.take(request.id, lease_s=self.lease_s)
        if claim is None:
            raise AnswerConflict(
                f'request "{request.id}" is being resumed elsewhere', answered_by=record.answered_by
            )
        await self._runs.complete(request.id, claim)
        return claim.answer

    async def expire(self, request: Request) -> Answer:
        """Settle ``request`` as expired, unless an answer got there first (the loop calls this
        for a request already past its deadline when it would be parked)."""
        expired = expired_decline(request.id)
        try:
            claim = await self._runs.claim(request.id, expired, answered_by=EXPIRED_BY)
        except AnswerConflict:
            claim = await self._runs.take(request.id)
            if claim is None:
                return expired
        await self._runs.complete(request.id, claim)
        return claim.answer


def store_wait_for(
    store: object, *, timeout: float | None = None, lease_s: float = DEFAULT_LEASE_S
) -> StoreWaitFor:
    """A ``wait_for`` that waits for an answer posted to ``store`` from any process.

    Args:
        store: a store with an answer channel (memory run store, SQLite, Postgres).
        timeout: the longest wait in seconds (the Request's ``expiresAt`` also ends it).
        lease_s: how long the woken run holds the request while it resumes (default 300 s);
            if its process dies, a worker takes over once the lease runs out.
    """
    return StoreWaitFor(store, timeout=timeout, lease_s=lease_s)
