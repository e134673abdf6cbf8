"""A cross-process ``wait_for``: the run stays alive, the answer comes through the store.

::

    store = SqliteStore("state.db")           # or PostgresStore(url): any AnswerChannel
    client = create_client(..., store=store, wait_for=store_wait_for(store))
    result = await client.run("Refund order 4021", toolkit)   # parks on the approval

    # meanwhile, in a webhook in another process:
    await store.post_answer(request_id, Answer(id=request_id, ok=True), answered_by="ana")

While it waits, the request is in the store's pending index (``list_pending``), with the run's
checkpoint — so an approvals inbox can show it, and a crashed process's run can still be
resumed later with `Client.resume`. The wait ends at the Request's ``expiresAt`` (the loop then
feeds the tool the expired decline). Postgres wakes the waiter through LISTEN/NOTIFY; SQLite
polls.
"""

from __future__ import annotations

from .errors import UsageError
from .loop.checkpoint import Checkpoint, Outstanding
from .loop.engine import ParkingWaitFor
from .stores.runs import AnswerChannel, RunStore
from .suspension import Answer, Request

__all__ = ["ParkingWaitFor", "StoreWaitFor", "store_wait_for"]


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
        await self._runs.save_halt(checkpoint)
        record = await self._store.wait_for_answer(request.id, timeout=self._timeout)
        if record is None:
            return Answer(id=request.id, ok=False, reason="expired")
        await self._runs.complete(request.id)
        return record.answer


def store_wait_for(store: object, *, timeout: float | None = None) -> StoreWaitFor:
    """A ``wait_for`` that waits for an answer posted to ``store`` from any process.

    Args:
        store: a store with an answer channel (memory run store, SQLite, Postgres).
        timeout: the longest wait in seconds (the Request's ``expiresAt`` also ends it).
    """
    return StoreWaitFor(store, timeout=timeout)
