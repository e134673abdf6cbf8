"""`SqliteRunStore`: the run store half of `toolnexus.stores.sqlite.SqliteStore`.

The `RunStore` and `AnswerChannel` methods, each a thin shell: validate the arguments (a
`UsageError` changes nothing), hand one job of `toolnexus.stores.sqlite_runs` to the store,
turn its rows into records. Where a job runs follows the store's one rule (see
`toolnexus.stores.sqlite`): the hot steps of a halt and a resume (``save_halt``,
``load_halt``, ``claim``, ``take``, ``renew``, ``flag``, ``save_progress``, ``complete``,
``release``, ``answer_record``) run inline, through ``_fast``; the answering moves (``post_answer``,
``expire``, ``cancel``), which wake parked runs, and the scans (``list_pending``, ``purge``)
run on the worker thread, through ``_call``. Parked runs and workers wait on the worker's
`AnswerWatch`, never on a timer of the event loop.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar

from ..errors import RequestExpired, StoreError
from ..loop.checkpoint import Checkpoint
from ..suspension import Answer
from . import sqlite_runs
from ._runrows import (
    halt_row,
    lapsed_status,
    listed,
    load_checkpoint,
    recorded_answer,
    request_record,
    taken_claim,
)
from .asked import asked_of, encode_asked
from .checks import (
    check_answer,
    check_filters,
    check_flag,
    check_limit,
    check_optional_text,
    check_request_id,
    check_seconds,
    encode_answer,
    encode_original,
    encode_outcome,
)
from .memory_runs import cancelled_answer
from .requests import DEFAULT_LEASE_S, AnswerRecord, Claim, PendingEntry
from .sqlite_runs import AnswerRow, ClaimRow
from .sqlite_schema import wal_pages
from .sqlite_watch import AnswerWatch

__all__ = ["SqliteRunStore"]

T = TypeVar("T")


class SqliteRunStore:
    """The `RunStore` / `AnswerChannel` methods of `SqliteStore`, in the ``halts`` table.

    A mixin: `SqliteStore` provides the clock, the path and the five hooks below.
    """

    __slots__ = ()

    _path: str
    _now: Callable[[], float]

    # -- what SqliteStore provides ---------------------------------------------------------

    def _watch(self) -> AnswerWatch:
        """The worker's watch of parked runs."""
        raise NotImplementedError

    async def _fast(self, job: Callable[[sqlite3.Connection], T], pages: int = 2) -> T:
        """Run ``job`` inline when it can, else on the worker."""
        raise NotImplementedError

    async def _call(self, job: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``job`` on the worker."""
        raise NotImplementedError

    def _post(self, job: Callable[[sqlite3.Connection], object]) -> None:
        """Run ``job`` on the worker without waiting for it, if the worker runs."""
        raise NotImplementedError

    def _error(self, exc: sqlite3.Error) -> StoreError:
        """``exc`` as the `StoreError` that names the file."""
        raise NotImplementedError

    # -- T1 and reads ----------------------------------------------------------------------

    async def save_halt(self, checkpoint: Checkpoint) -> None:
        """T1: insert or replace the halted run waiting on ``checkpoint.pending.id``.

        Replacing keeps the row's status (a claimed run stays claimed).

        Raises:
            UsageError: not a `Checkpoint`, or not storable (see `encode_checkpoint`).
            StoreError: the database failed; nothing changed.
        """
        row = halt_row(checkpoint, digest=False)
        asked = encode_asked(asked_of(checkpoint))
        job = partial(sqlite_runs.save_halt, row, checkpoint.queue, asked)
        await self._fast(job, wal_pages(row.checkpoint) + wal_pages(asked) - 1)

    async def load_halt(self, request_id: str) -> Checkpoint | None:
        """The checkpoint waiting on ``request_id`` (any status), or ``None``.

        Raises:
            CheckpointError: the stored checkpoint is corrupt or from a newer toolnexus (the
                row is left as it is).
        """
        rid = check_request_id(request_id)
        text = await self._fast(partial(sqlite_runs.load_halt, rid))
        return None if text is None else load_checkpoint(text, rid, self._path)

    async def answer_record(self, request_id: str) -> AnswerRecord | None:
        """The recorded answer and status of ``request_id``; ``None`` while pending/unknown."""
        rid = check_request_id(request_id)
        return self._record(rid, await self._fast(partial(sqlite_runs.answer_row, rid)))

    async def list_pending(
        self,
        *,
        kind: str | None = None,
        tool: str | None = None,
        conversation_id: str | None = None,
        older_than: float | None = None,
        newer_than: float | None = None,
        limit: int = 100,
    ) -> list[PendingEntry]:
        """Requests waiting for a human (``pending``, or T10 back to pending), and the
        unsettled ones a resumer flagged (T13), oldest first."""
        filters = check_filters(kind, tool, conversation_id, older_than, newer_than)
        now = self._now()
        job = partial(sqlite_runs.list_pending, *filters, check_limit(limit), now)
        return [listed(row, now) for row in await self._call(job)]

    # -- answering: T2, T3, T11 ------------------------------------------------------------

    async def post_answer(
        self,
        request_id: str,
        answer: Answer,
        *,
        answered_by: str | None = None,
        digest: str | None = None,
    ) -> AnswerRecord:
        """T2/T3: record ``answer`` exactly once and wake the parked run (see `RunStore`).

        Raises:
            UnknownRequest, AnswerMismatch, UsageError, AnswerConflict: see
                `RunStore.post_answer`; nothing was recorded.
            RequestExpired: past its ``expiresAt``; the expired decline was recorded instead.
        """
        rid = check_request_id(request_id)
        reply = check_answer(answer, rid)
        text = encode_answer(reply)
        job = partial(
            sqlite_runs.post_answer,
            self._watch(),
            self._path,
            rid,
            text,
            reply,
            check_optional_text(answered_by, "answered_by"),
            check_optional_text(digest, "digest"),
            self._now(),
        )
        found, expired = await self._call(job)
        if expired:
            raise RequestExpired(
                f'request "{rid}" expired before it was answered; it was settled with the '
                "expired decline"
            )
        return self._recorded(rid, found)

    async def expire(self, request_id: str) -> AnswerRecord:
        """T3: record the expired decline for a pending request (see `RunStore.expire`)."""
        rid = check_request_id(request_id)
        job = partial(sqlite_runs.expire, self._watch(), self._path, rid, self._now())
        return self._recorded(rid, await self._call(job))

    async def cancel(
        self,
        request_id: str,
        *,
        reason: str | None = None,
        answered_by: str | None = None,
    ) -> AnswerRecord:
        """T11: end the halted run without resuming it (see `RunStore.cancel`)."""
        rid = check_request_id(request_id)
        note = check_optional_text(reason, "reason")
        job = partial(
            sqlite_runs.cancel,
            self._watch(),
            rid,
            encode_answer(cancelled_answer(rid, note)),
            check_optional_text(answered_by, "answered_by"),
            self._now(),
        )
        return self._recorded(rid, await self._call(job))

    # -- resuming: T4–T10 --------------------------------------------------------------------

    async def claim(
        self,
        request_id: str,
        answer: Answer,
        *,
        answered_by: str | None = None,
        digest: str = "",
        lease_s: float = DEFAULT_LEASE_S,
        original: Mapping[str, Any] | None = None,
    ) -> Claim:
        """T4: atomically take ``request_id`` for resuming with ``answer``, recording
        ``digest`` and ``original`` with it (see `RunStore.claim`).

        Raises:
            AnswerConflict: answered, claimed under a live lease (by anyone, in any
                process), or cancelled; names ``answered_by``.
        """
        rid = check_request_id(request_id)
        text = encode_answer(answer)
        who = check_optional_text(answered_by, "answered_by")
        tag = check_optional_text(digest, "digest") or ""
        lease = check_seconds(lease_s, "lease_s", positive=True)
        edited = encode_original(original)
        now = self._now()
        job = partial(sqlite_runs.claim, rid, text, who, tag, edited, now, lease)
        token = await self._fast(job)
        answer = recorded_answer(answer, text)
        return Claim(rid, token, answer, who, now + lease, digest=tag)

    async def take(
        self,
        request_id: str | None = None,
        *,
        lease_s: float = DEFAULT_LEASE_S,
        queue: str = "",
    ) -> Claim | None:
        """T5: take an answered request for resuming: ``request_id``, or the oldest one
        answered in ``queue`` (the checkpoint's `Checkpoint.queue`).

        ``None`` when there is nothing to take. Two takers, in any processes, never get the
        same request under live leases. The claim carries the checkpoint, read after the
        take: one that cannot be read is ``None``, with why in ``Claim.unreadable``.
        """
        lease = check_seconds(lease_s, "lease_s", positive=True)
        lane = check_optional_text(queue, "queue") or ""
        if request_id is None:
            job = partial(sqlite_runs.take_next, self._path, lane, self._now(), lease)
            head = await self._fast(job)
            return None if head is None else self._claim(*head)
        rid = check_request_id(request_id)
        held = await self._fast(partial(sqlite_runs.take, self._path, rid, self._now(), lease))
        return None if held is None else self._claim(rid, held)

    async def renew(self, claim: Claim, *, lease_s: float = DEFAULT_LEASE_S) -> Claim:
        """T6: extend the lease (see `RunStore.renew`).

        Raises:
            LeaseLost: the claim is no longer the request's current one.
        """
        until = self._now() + check_seconds(lease_s, "lease_s", positive=True)
        await self._fast(partial(sqlite_runs.renew, claim.request_id, claim.token, until))
        return replace(claim, lease_until=until, taken=time.monotonic())

    async def flag(self, request_id: str, claim: Claim, problem: str, *, hold_s: float) -> None:
        """T13: hold the claimed request for ``hold_s`` seconds (``math.inf``: until an
        operator acts) with ``problem`` (see `RunStore.flag`).

        Raises:
            UsageError: a bad ``problem``, ``hold_s`` or ``claim``.
            LeaseLost: the claim is no longer the request's current one.
        """
        rid, held, text, hold = check_flag(request_id, claim, problem, hold_s)
        now = self._now()
        await self._fast(partial(sqlite_runs.flag, rid, held.token, now + hold, text, now))

    async def save_progress(self, checkpoint: Checkpoint, claim: Claim) -> None:
        """T7: replace the claimed run's checkpoint (the calls the resume resolved).

        From here the claim's answer counts as recorded: a lapse or a release returns the
        request to ``answered``, never to ``pending``; a problem flagged (T13) is cleared.

        Raises:
            LeaseLost: the claim is no longer the request's current one.
        """
        row = halt_row(checkpoint, digest=False)
        held = (claim.request_id, claim.token)
        job = partial(sqlite_runs.save_progress, row, checkpoint.queue, *held, self._now())
        await self._fast(job, wal_pages(row.checkpoint) + 1)

    async def complete(
        self,
        request_id: str,
        claim: Claim | None = None,
        *,
        outcome: dict[str, Any] | None = None,
    ) -> None:
        """T8: settle the request ``done`` (or ``expired``), keeping ``outcome``.

        Raises:
            UnknownRequest: no row for ``request_id``.
            LeaseLost: ``claim`` is no longer the request's current one.
        """
        rid = check_request_id(request_id)
        kept = encode_outcome(outcome)
        held = None if claim is None else (claim.request_id, claim.token)
        await self._fast(partial(sqlite_runs.complete, rid, held, kept, self._now()))
        if self._watch().waiting():
            # Runs parked on this store wake now, not at the next poll. (A run parking at
            # this very moment is not missed: its own first look finds the row, or the next
            # poll does, since this commit changed the file's data_version.)
            self._post(partial(_wake, self._watch(), rid))

    async def release(self, request_id: str, claim: Claim | None = None) -> None:
        """T9: give a claimed request back (the resume failed before finishing).

        A stale ``claim``, or a request that is not claimed, changes nothing."""
        rid = check_request_id(request_id)
        if claim is not None and claim.request_id != rid:
            return
        token = None if claim is None else claim.token
        requeued = await self._fast(partial(sqlite_runs.release, rid, token))
        if requeued and self._watch().waiting():  # a worker waiting for the queue: now
            self._post(partial(_wake_queued, self._watch()))

    # -- retention: T12 ----------------------------------------------------------------------

    async def purge(self, *, older_than: float) -> int:
        """T12: delete requests settled more than ``older_than`` seconds ago; the count."""
        cutoff = self._now() - check_seconds(older_than, "older_than")
        return await self._call(partial(sqlite_runs.purge, cutoff))

    # -- waiting -----------------------------------------------------------------------------

    async def wait_for_answer(
        self, request_id: str, *, timeout: float | None
    ) -> AnswerRecord | None:
        """Wait until ``request_id`` leaves ``pending``; ``None`` after ``timeout`` seconds.

        The wait costs no thread and no timer: the waiter is parked on the worker, which
        wakes it at once for a move made through this store, and within ``poll_interval``
        for one committed by another connection.
        """
        rid = check_request_id(request_id)
        limit = None if timeout is None else check_seconds(timeout, "timeout")
        watch = self._watch()
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[AnswerRow] = loop.create_future()
        found = await self._call(partial(_park, watch, rid, waiter, loop))
        if found is None:
            try:
                async with asyncio.timeout(limit):
                    found = await waiter
            except TimeoutError:
                return None
            except sqlite3.Error as exc:
                raise self._error(exc) from exc
            finally:
                if waiter.cancelled():
                    self._post(partial(_unpark, watch, rid, waiter))
        return self._record(rid, found)

    async def wait_for_queued(self, *, timeout: float) -> None:
        """Return when an answer may have been queued for a resumer, or after ``timeout``.

        An answer posted, expired or given back through this store returns at once; a commit
        by another connection returns within ``poll_interval`` (a spurious return is
        harmless: the caller looks with `take`).
        """
        limit = check_seconds(timeout, "timeout")
        watch = self._watch()
        loop = asyncio.get_running_loop()
        signal: asyncio.Future[None] = loop.create_future()
        await self._call(partial(_park_queued, watch, signal, loop))
        try:
            async with asyncio.timeout(limit):
                await signal
        except TimeoutError:
            return
        except sqlite3.Error as exc:
            raise self._error(exc) from exc
        finally:
            if signal.cancelled():
                self._post(partial(_unpark_queued, watch, signal))

    # -- records -----------------------------------------------------------------------------

    def _record(self, request_id: str, found: AnswerRow | None) -> AnswerRecord | None:
        """The `AnswerRecord` of a row read by `sqlite_runs.answer_row`, T10 applied now."""
        if found is None:
            return None
        answer, answered_at, who, digest, status, recorded, lease_until, settled = found[:8]
        outcome, original, problem, flagged_at, holder = found[8:]
        now_status = lapsed_status(status, recorded, lease_until, self._now())
        return request_record(
            request_id,
            answer,
            answered_at,
            who,
            digest,
            now_status,
            settled,
            outcome,
            self._path,
            original=original,
            problem=problem,
            flagged_at=flagged_at,
            lease_until=lease_until,
            holder=holder,
        )

    def _claim(self, request_id: str, held: ClaimRow) -> Claim:
        """A take's `Claim`, its checkpoint read here (`taken_claim`)."""
        return taken_claim(
            request_id,
            held.token,
            held.answer,
            held.answered_by,
            held.lease_until,
            held.digest,
            held.checkpoint,
            self._path,
        )

    def _recorded(self, request_id: str, found: AnswerRow) -> AnswerRecord:
        record = self._record(request_id, found)
        assert record is not None  # a row just recorded has an answer
        return record


# Jobs for the worker thread, each taking its connection last.


def _park(
    watch: AnswerWatch,
    request_id: str,
    future: asyncio.Future[Any],
    loop: asyncio.AbstractEventLoop,
    conn: sqlite3.Connection,
) -> AnswerRow | None:
    return watch.add(request_id, future, loop, conn)


def _unpark(
    watch: AnswerWatch, request_id: str, future: asyncio.Future[Any], conn: sqlite3.Connection
) -> None:
    watch.remove(request_id, future)


def _park_queued(
    watch: AnswerWatch,
    future: asyncio.Future[Any],
    loop: asyncio.AbstractEventLoop,
    conn: sqlite3.Connection,
) -> None:
    watch.add_queued(future, loop)


def _unpark_queued(
    watch: AnswerWatch, future: asyncio.Future[Any], conn: sqlite3.Connection
) -> None:
    watch.remove_queued(future)


def _wake(watch: AnswerWatch, request_id: str, conn: sqlite3.Connection) -> None:
    watch.wake(conn, request_id)


def _wake_queued(watch: AnswerWatch, conn: sqlite3.Connection) -> None:
    watch.wake_queued()
