"""Workers: resume every answered run of a store, from any process on any machine.

::

    async with create_client(..., store="postgresql://…") as client:
        async with client.worker(toolkit) as worker:   # runs until the block ends
            await stop_signal.wait()

An answer recorded anywhere (``client.answer``, ``store.post_answer`` — a webhook, the inbox,
the CLI) queues its run. A worker takes queued runs one at a time per slot (`RunStore.take`,
under a lease with a fencing token) and resumes each through the one resumption
(`toolnexus.resumption`). It drains what was answered before it started and what is answered
while it runs: woken by Postgres ``LISTEN/NOTIFY`` or, on SQLite, by polling every
``poll_interval`` seconds.

Any number of workers may share a store. A worker killed mid-resume is replaced by another once
its lease runs out; one that stalls past its lease and wakes up never starts the approved tool
and cannot write a second outcome (its token is stale: `LeaseLost`). While a resume runs, its
resumption (`toolnexus.resumption.Resumption`) renews the lease every third of ``lease_s``.

A run that cannot be resumed here (its tool is missing from this worker's toolkit, the model
fails, …) is not retried in a hot loop: the worker keeps holding it for ``retry_s`` seconds, logs
the error once, and reports it in `Worker.errors`; then it is queued again, for this worker or
another one.

Stopping: `stop` cancels the runs in flight at once; each is given back as a failure is — held
for ``retry_s`` seconds, then queued again for any worker (the resume starts over from the last
recorded step, so a tool call that was cut off runs again). To let them finish first, call
`stop_taking`, wait for the runs in `Worker.in_flight` (or the task `start` returned), then
`stop`; the ones `stop` had to cancel are in `Worker.abandoned`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, cast

from .errors import LeaseLost, UsageError
from .resumption import Resumption
from .stores.checks import check_optional_text, check_seconds
from .stores.requests import DEFAULT_LEASE_S, AnswerChannel, Claim, RunStore

__all__ = ["Worker"]

log = logging.getLogger("toolnexus.worker")


ResumeClaim = Callable[[Claim, Resumption], Awaitable[Any]]
"""Resumes the run of a taken request with the given resumption (a client's or a tree's)."""


class Worker:
    """Resumes the answered runs of one queue of a store. Build with `Client.worker` or
    `toolnexus.agents.AgentRuntime.worker`.

    Args:
        runs: the store (it must also be an `AnswerChannel`).
        resume: resumes one taken request (``client.resume_claim`` bound to a toolkit, or a
            runtime's ``resume_claim``).
        queue: which runs this worker takes (`toolnexus.loop.checkpoint.Checkpoint.queue`).
        lease_s: how long a taken run is held before another worker may take it over.
        poll_interval: the longest sleep between looks at the queue (SQLite has no
            notifications; on Postgres a notification wakes the worker at once).
        retry_s: how long a run that failed here is held before it is queued again.
        concurrency: how many runs this worker resumes at once: up to as many lanes (one
            more opens each time a lane takes a run), each taking its next run as soon as it
            has finished one.
        on_result: called with ``(request_id, result)`` after each settled run (sync or
            async); what it raises is logged.
    """

    def __init__(
        self,
        runs: RunStore,
        resume: ResumeClaim,
        *,
        queue: str = "",
        lease_s: float = DEFAULT_LEASE_S,
        poll_interval: float = 1.0,
        retry_s: float = 60.0,
        concurrency: int = 4,
        on_result: Callable[[str, Any], Any] | None = None,
    ) -> None:
        if not isinstance(runs, AnswerChannel):
            raise UsageError(
                "a worker needs a store with an answer channel (memory, SQLite, Postgres)"
            )
        count = cast(object, concurrency)  # checked as the caller may pass anything
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise UsageError(f"concurrency must be an int >= 1, got {concurrency!r}")
        self._runs: RunStore = runs
        self._channel: AnswerChannel = runs
        self._resume_claim = resume
        self._queue = check_optional_text(queue, "queue") or ""
        self._lease_s = check_seconds(lease_s, "lease_s", positive=True)
        self._poll = check_seconds(poll_interval, "poll_interval", positive=True)
        retry = check_seconds(retry_s, "retry_s", positive=True)
        self.resumption = Resumption(runs, lease_s=self._lease_s, hold_on_failure=retry)
        """The resumption this worker resumes with (it holds a failed run for ``retry_s``)."""
        self._concurrency = count
        self._on_result = on_result
        self._runner: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self.resumed = 0
        """Runs this worker resumed and settled."""
        self.failed = 0
        """Resumes that failed here (each is retried after ``retry_s``)."""
        self.errors: dict[str, str] = {}
        """The last error per request id that failed here (cleared when it settles)."""
        self.abandoned: list[str] = []
        """The request ids whose resume was cancelled before it ended (by `stop`, or a cancel
        of the worker's task): each is held for ``retry_s`` seconds, then queued again."""
        self._in_flight: dict[str, Claim] = {}

    # -- one pass ----------------------------------------------------------------------------

    async def drain(self, *, max_runs: int | None = None) -> int:
        """Resume what is queued now, up to ``max_runs``; returns how many were taken.

        Returns when the queue is empty and every run it took has finished (settled,
        halted again, or failed and held for ``retry_s``).

        Up to ``concurrency`` lanes each take a run, resume it and take the next, so the takes
        overlap as the resumes do (one taker in front of the lanes would cap a worker at one
        take's round trip per run, whatever its concurrency). A lane opens when the one before
        it took a run, and none takes again once a take found the queue empty: an idle pass
        costs one take, as before.
        """
        taken = 0
        lanes = 0
        empty = False

        async def lane() -> None:
            nonlocal taken, empty
            # A stop takes no further run, even one whose cancel a store swallowed.
            while (
                not empty and (max_runs is None or taken < max_runs) and not self._stopping.is_set()
            ):
                taken += 1  # counted before the take: lanes never take past max_runs
                try:
                    claim = await self._runs.take(lease_s=self._lease_s, queue=self._queue)
                except BaseException:
                    taken -= 1
                    raise
                if claim is None:
                    taken -= 1
                    empty = True
                    return
                open_lane()
                await self._resume(claim)

        def open_lane() -> None:
            nonlocal lanes
            if lanes < self._concurrency:
                lanes += 1
                group.create_task(lane())

        async with asyncio.TaskGroup() as group:
            open_lane()
        return taken

    @property
    def in_flight(self) -> tuple[str, ...]:
        """The request ids this worker is resuming now, in the order it took them."""
        return tuple(self._in_flight)

    async def _resume(self, claim: Claim) -> None:
        rid = claim.request_id
        self._in_flight[rid] = claim
        try:
            result = await self._resume_claim(claim, self.resumption)
        except asyncio.CancelledError:
            self.abandoned.append(rid)
            raise
        except LeaseLost as exc:
            self.failed += 1
            log.warning("toolnexus: worker lost request %s to another resumer: %s", rid, exc)
        except Exception as exc:
            self.failed += 1
            text = f"{type(exc).__name__}: {exc}"
            if self.errors.get(rid) != text:
                log.error("toolnexus: worker could not resume request %s: %s", rid, text)
            self.errors[rid] = text
        else:
            self.resumed += 1
            self.errors.pop(rid, None)
            await self._report(rid, result)
        finally:
            self._in_flight.pop(rid, None)

    async def _report(self, rid: str, result: Any) -> None:
        if self._on_result is None:
            return
        try:
            value = self._on_result(rid, result)
            if inspect.isawaitable(value):
                await value
        except Exception:
            log.warning("toolnexus: the worker's on_result raised", exc_info=True)

    # -- running -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Drain, then wait for new answers, until `stop` (or cancel the task, or use
        ``async with``)."""
        self._stopping.clear()
        while not self._stopping.is_set():
            await self.drain()
            await self._pause()

    async def _pause(self) -> None:
        """Wait for an answer to be queued, the poll interval, or `stop`, whichever is first.

        The store's wait runs in a task of its own and is awaited with `asyncio.wait`, which
        never swallows a cancel: a stop is prompt whatever the store's wait does with one.
        """
        queued = asyncio.ensure_future(self._channel.wait_for_queued(timeout=self._poll))
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait((queued, stopping), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (queued, stopping):
                task.cancel()
                task.add_done_callback(_retrieve)

    def start(self) -> asyncio.Task[None]:
        """Run the worker in the background; `stop` ends it."""
        if self._runner is None or self._runner.done():
            self._runner = asyncio.ensure_future(self.run())
        return self._runner

    def stop_taking(self) -> None:
        """Take no further run; the runs in flight go on to their end (`stop` cancels them).
        The worker's task ends once they have."""
        self._stopping.set()

    async def stop(self) -> None:
        """Stop taking runs and cancel the ones in flight, waiting for the cancellation: each
        is held for ``retry_s`` seconds, then queued again for any worker (`abandoned` names
        them). After `stop_taking`, only what has not finished yet is cancelled."""
        self._stopping.set()
        runner, self._runner = self._runner, None
        if runner is None:
            return
        runner.cancel()
        # `asyncio.wait`, not `await runner`: the runner's own cancellation is not ours to
        # raise, but a cancel of the caller of `stop` (a timeout around it) must go through.
        await asyncio.wait((runner,))
        self._stopping.clear()  # (a later `drain` by hand takes runs again)
        error = None if runner.cancelled() else runner.exception()
        if error is not None:
            raise error

    async def __aenter__(self) -> Worker:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Fetch a finished helper task's outcome, so asyncio never logs it as unretrieved."""
    if not task.cancelled():
        task.exception()
