"""`InMemoryRunStore`: the process-lifetime run store, the reference for the state machine.

The transitions are those of the table in `toolnexus.stores.requests` (T1–T13); the SQLite and
Postgres stores implement the same ones, and one contract suite runs against all three.
Checkpoints, answers and outcomes are kept as their JSON text, so what comes back is a copy and
what this store accepts the durable stores accept too.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from .._types import Message
from ..errors import CheckpointError, LeaseLost, RequestExpired, UnknownRequest
from ..loop.checkpoint import Checkpoint
from ..suspension import Answer, expired_decline
from ._runrows import recorded_audit, taken_claim
from .asked import asked_of, decode_asked, encode_asked
from .checks import (
    call_digest,
    cancelled_answer,
    check_answer,
    check_filters,
    check_flag,
    check_limit,
    check_optional_text,
    check_request_id,
    check_seconds,
    conflict,
    encode_answer,
    encode_checkpoint,
    encode_original,
    encode_outcome,
    filter_entries,
    halted_call,
    is_past,
    load_checkpoint,
    pending_entry,
)
from .inbox_index import (
    HistoryEntry,
    RunEntry,
    check_history_status,
    check_ids,
    check_offset,
    check_prefix,
    check_search,
    matches_text,
)
from .memory import InMemoryConversationStore
from .requests import (
    DEFAULT_LEASE_S,
    EXPIRED_BY,
    SETTLED,
    AnswerRecord,
    Claim,
    PendingEntry,
    RequestStatus,
    holder_name,
)
from .sessions import MemorySessions

__all__ = ["Clock", "InMemoryRunStore", "InMemoryStore"]


class Clock(Protocol):
    def __call__(self) -> float: ...


@dataclass(slots=True)
class _Row:
    checkpoint: str | None
    status: RequestStatus
    entry: PendingEntry | None
    answer: str | None = None
    answered_by: str | None = None
    answered_at: float | None = None
    digest: str = ""
    lease_until: float = 0.0
    token: int = 0
    recorded: bool = False  # the answer was recorded before the claim (T2/T3 then T5)
    settled_at: float | None = None
    outcome: str | None = None
    queue: str = ""
    info: PendingEntry | None = None  # the index columns, kept after the row settles
    announced: bool = False  # handed out by take_unannounced
    original: str | None = None  # the model's call an edited approval replaced (JSON text)
    problem: str | None = None  # what a resumer flagged (T13), until T7 clears it
    flagged_at: float | None = None
    asked: str | None = None  # what the request asked (JSON text), kept when T8/T11 drop it
    holder: str | None = None  # who took the claim (T4, T5)


class InMemoryRunStore:
    """The process-lifetime `RunStore` and `AnswerChannel` (the default when no durable store
    is configured).

    Args:
        clock: the time source for leases, ``answered_at``, ages and expiry (default
            `time.time`).
    """

    def __init__(self, clock: Clock | None = None) -> None:
        self._rows: dict[str, _Row] = {}
        self._now = clock or time.time
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}
        self._queued: asyncio.Event | None = None
        self.sessions = MemorySessions(self._now)
        """The approvals inbox's sessions (`toolnexus.stores.sessions`)."""

    # -- T1 and reads --------------------------------------------------------------------

    async def save_halt(self, checkpoint: Checkpoint) -> None:
        text = encode_checkpoint(checkpoint)
        rid = checkpoint.pending.id
        row = self._rows.get(rid)
        if row is None:
            row = self._rows[rid] = _Row(text, "pending", pending_entry(checkpoint))
        else:
            row.checkpoint = text
            row.entry = pending_entry(checkpoint)
        row.info = row.entry
        row.queue = checkpoint.queue
        row.asked = encode_asked(asked_of(checkpoint))

    async def load_halt(self, request_id: str) -> Checkpoint | None:
        row = self._rows.get(check_request_id(request_id))
        if row is None or row.checkpoint is None:
            return None
        return load_checkpoint(row.checkpoint, request_id, "the memory store")

    async def answer_record(self, request_id: str) -> AnswerRecord | None:
        row = self._rows.get(check_request_id(request_id))
        if row is None or row.answer is None:
            return None
        status = self._status(row)
        if status == "pending" or (status == "claimed" and not row.recorded):
            return None  # a claim's own answer (T4) is recorded only when it settles
        return AnswerRecord(
            request_id,
            Answer.from_dict(json.loads(row.answer)),
            row.answered_at or 0.0,
            row.answered_by,
            row.digest,
            status,
            row.settled_at,
            None if row.outcome is None else json.loads(row.outcome),
            None if row.original is None else json.loads(row.original),
            row.problem,
            row.flagged_at,
            row.lease_until if status == "claimed" else None,
            row.holder if status == "claimed" else None,
        )

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
        return await self.search_pending(
            kind=kind,
            tool=tool,
            conversation_id=conversation_id,
            older_than=older_than,
            newer_than=newer_than,
            limit=limit,
        )

    # -- the inbox's queries (`toolnexus.stores.inbox_index.InboxIndex`) -------------------

    async def search_pending(
        self,
        *,
        kind: str | None = None,
        tool: str | None = None,
        conversation_id: str | None = None,
        older_than: float | None = None,
        newer_than: float | None = None,
        text: str | None = None,
        offset: int = 0,
        limit: int = 100,
    ) -> list[PendingEntry]:
        filters = check_filters(kind, tool, conversation_id, older_than, newer_than)
        needle = check_search(text)
        start = check_offset(offset)
        size = check_limit(limit)
        picked = filter_entries(self._listed(needle), *filters, self._now())
        return picked[start : start + size]

    async def count_pending(
        self,
        *,
        tool: str | None = None,
        conversation_id: str | None = None,
        older_than: float | None = None,
        newer_than: float | None = None,
        text: str | None = None,
    ) -> dict[str, int]:
        filters = check_filters(None, tool, conversation_id, older_than, newer_than)
        needle = check_search(text)
        counts: dict[str, int] = {}
        for e in filter_entries(self._listed(needle), *filters, self._now()):
            counts[e.kind] = counts.get(e.kind, 0) + 1
        return counts

    async def list_history(
        self,
        *,
        answered_by: str | None = None,
        status: str | None = None,
        kind: str | None = None,
        tool: str | None = None,
        text: str | None = None,
        answered_after: float | None = None,
        request_id: str | None = None,
        offset: int = 0,
        limit: int = 100,
    ) -> list[HistoryEntry]:
        only = None if request_id is None else check_request_id(request_id)
        who = check_optional_text(answered_by, "answered_by")
        wanted = check_history_status(status)
        of_kind = check_optional_text(kind, "kind")
        of_tool = check_optional_text(tool, "tool")
        needle = check_search(text)
        after = None if answered_after is None else check_seconds(answered_after, "answered_after")
        start = check_offset(offset)
        size = check_limit(limit)
        out: list[HistoryEntry] = []
        rows = self._rows.items() if only is None else [(only, self._rows.get(only))]
        for rid, row in rows:
            if row is None:
                continue
            record = await self.answer_record(rid)
            info = row.info
            if record is None or info is None:
                continue
            if (
                (who is not None and record.answered_by != who)
                or (wanted is not None and record.status != wanted)
                or (of_kind is not None and info.kind != of_kind)
                or (of_tool is not None and info.tool != of_tool)
                or (after is not None and not record.answered_at > after)
                or (
                    needle is not None
                    and not matches_text(needle, info.prompt, info.tool, rid, info.conversation_id)
                )
            ):
                continue
            out.append(_history(info, record, row.asked))
        out.sort(key=lambda h: (h.answered_at, h.request_id), reverse=True)
        return out[start : start + size]

    async def list_runs(self, *, offset: int = 0, limit: int = 100) -> list[RunEntry]:
        start = check_offset(offset)
        size = check_limit(limit)
        out: list[RunEntry] = []
        for rid, row in self._rows.items():
            status = self._status(row)
            if status not in ("answered", "claimed"):
                continue
            info = row.info or PendingEntry(rid, "", "", "", None, 0.0, None)
            claimed = status == "claimed"
            out.append(
                RunEntry(
                    rid,
                    info.kind,
                    info.prompt,
                    info.tool,
                    info.conversation_id,
                    info.created_at,
                    status,
                    row.answered_by,
                    row.answered_at,
                    row.lease_until if claimed else None,
                    row.holder if claimed else None,
                    row.problem,
                    row.flagged_at,
                )
            )
        out.sort(key=lambda r: (r.created_at, r.request_id))
        return out[start : start + size]

    async def find_request_ids(self, prefix: str, *, limit: int = 10) -> list[str]:
        start = check_prefix(prefix)
        size = check_limit(limit)
        # A scan: this store lives in one process, for tests and development.
        return sorted(rid for rid in self._rows if rid.startswith(start))[:size]

    async def load_halts(self, request_ids: Sequence[str]) -> dict[str, Checkpoint]:
        out: dict[str, Checkpoint] = {}
        for rid in check_ids(request_ids):
            row = self._rows.get(rid)
            if row is None or row.checkpoint is None:
                continue
            try:
                out[rid] = load_checkpoint(row.checkpoint, rid, "the memory store")
            except CheckpointError:
                continue
        return out

    async def take_unannounced(self, *, limit: int = 100) -> list[PendingEntry]:
        size = check_limit(limit)
        fresh = [e for e in self._waiting(None) if not self._rows[e.request_id].announced]
        fresh.sort(key=lambda e: (e.created_at, e.request_id))
        for e in fresh[:size]:
            self._rows[e.request_id].announced = True
        return fresh[:size]

    def _waiting(self, needle: str | None) -> list[PendingEntry]:
        """The pending index: rows waiting for a human, matching ``needle`` if given."""
        return [
            r.entry
            for r in self._rows.values()
            if r.entry is not None
            and r.checkpoint is not None
            and self._status(r) == "pending"
            and _matches(needle, r.entry)
        ]

    def _listed(self, needle: str | None) -> list[PendingEntry]:
        """What `list_pending` shows: the pending index, and the unsettled rows a resumer
        flagged (T13) whatever their lease, each with its status now and its problem."""
        out: list[PendingEntry] = []
        for r in self._rows.values():
            entry = r.entry
            if entry is None or r.checkpoint is None or not _matches(needle, entry):
                continue
            status = self._status(r)
            if r.problem is not None and status in ("pending", "answered", "claimed"):
                out.append(
                    replace(entry, status=status, problem=r.problem, flagged_at=r.flagged_at)
                )
            elif status == "pending":
                out.append(entry)
        return out

    # -- answering: T2, T3, T11 ------------------------------------------------------------

    async def post_answer(
        self,
        request_id: str,
        answer: Answer,
        *,
        answered_by: str | None = None,
        digest: str | None = None,
    ) -> AnswerRecord:
        rid = check_request_id(request_id)
        reply = check_answer(answer, rid)
        text = encode_answer(reply)
        who = check_optional_text(answered_by, "answered_by")
        tag = check_optional_text(digest, "digest")
        row = self._halted(rid)
        self._refuse_unless_pending(rid, row)
        # An unreadable checkpoint or an answer the request does not take raises here:
        # nothing is recorded.
        audit = recorded_audit(row.checkpoint, rid, "the memory store", reply, tag)
        if row.entry is not None and is_past(row.entry.expires_at, self._now()):
            decline = encode_answer(expired_decline(rid))
            self._record(rid, row, decline, EXPIRED_BY, audit.halted, None)
            raise RequestExpired(
                f'request "{rid}" expired before it was answered; it was settled with the '
                "expired decline"
            )
        if audit.answer is not reply:  # the intake's canonical answer is the one recorded
            text = encode_answer(audit.answer)
        self._record(rid, row, text, who, audit.approved, audit.original)
        record = await self.answer_record(rid)
        assert record is not None
        return record

    async def expire(self, request_id: str) -> AnswerRecord:
        rid = check_request_id(request_id)
        row = self._halted(rid)
        self._refuse_unless_pending(rid, row)
        assert row.checkpoint is not None
        stored = load_checkpoint(row.checkpoint, rid, "the memory store")
        tag = call_digest(*halted_call(stored))
        self._record(rid, row, encode_answer(expired_decline(rid)), EXPIRED_BY, tag, None)
        record = await self.answer_record(rid)
        assert record is not None
        return record

    async def cancel(
        self,
        request_id: str,
        *,
        reason: str | None = None,
        answered_by: str | None = None,
    ) -> AnswerRecord:
        rid = check_request_id(request_id)
        note = check_optional_text(reason, "reason")
        who = check_optional_text(answered_by, "answered_by")
        row = self._rows.get(rid)
        flagged = row is not None and row.problem is not None and row.status not in SETTLED
        if row is None or not flagged:  # an operator may end a flagged run (T13) as it is
            row = self._halted(rid)
            self._refuse_unless_pending(rid, row)
        now = self._now()
        row.status = "cancelled"
        row.answer = encode_answer(cancelled_answer(rid, note))
        row.answered_by = who
        row.answered_at = row.settled_at = now
        row.checkpoint = None
        row.entry = None
        row.lease_until = 0.0
        row.token += 1
        row.recorded = True
        self._wake(rid)
        record = await self.answer_record(rid)
        assert record is not None
        return record

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
        rid = check_request_id(request_id)
        text = encode_answer(answer)
        who = check_optional_text(answered_by, "answered_by")
        tag = check_optional_text(digest, "digest") or ""
        lease = check_seconds(lease_s, "lease_s", positive=True)
        edited = encode_original(original)
        row = self._rows.get(rid)
        if row is None:
            row = self._rows[rid] = _Row(None, "pending", None)
        self._refuse_unless_pending(rid, row)
        row.status = "claimed"
        row.answer, row.answered_by, row.digest, row.original = text, who, tag, edited
        row.answered_at = None
        row.recorded = False
        answer = self._hold(row, lease)
        return Claim(rid, row.token, answer, who, row.lease_until, digest=tag)

    async def take(
        self,
        request_id: str | None = None,
        *,
        lease_s: float = DEFAULT_LEASE_S,
        queue: str = "",
    ) -> Claim | None:
        lease = check_seconds(lease_s, "lease_s", positive=True)
        lane = check_optional_text(queue, "queue") or ""
        if request_id is not None:
            rid = check_request_id(request_id)
            row = self._rows.get(rid)
            if row is None or self._status(row) != "answered":
                return None
            return self._take(rid, row, lease)
        queued = [
            (r.answered_at or 0.0, k)
            for k, r in self._rows.items()
            if r.queue == lane and self._status(r) == "answered"
        ]
        if not queued:
            return None
        _, rid = min(queued)
        return self._take(rid, self._rows[rid], lease)

    async def renew(self, claim: Claim, *, lease_s: float = DEFAULT_LEASE_S) -> Claim:
        lease = check_seconds(lease_s, "lease_s", positive=True)
        row = self._held(claim)
        row.lease_until = self._now() + lease
        return replace(claim, lease_until=row.lease_until, taken=time.monotonic())

    async def save_progress(self, checkpoint: Checkpoint, claim: Claim) -> None:
        text = encode_checkpoint(checkpoint)
        row = self._held(claim)
        row.checkpoint = text
        row.entry = row.info = pending_entry(checkpoint)
        row.queue = checkpoint.queue
        row.recorded = True  # the answer has been applied: it is the one this run goes on with
        row.problem = row.flagged_at = None  # the resume got past what was flagged (T13)
        if row.answered_at is None:
            row.answered_at = self._now()

    async def complete(
        self,
        request_id: str,
        claim: Claim | None = None,
        *,
        outcome: dict[str, Any] | None = None,
    ) -> None:
        rid = check_request_id(request_id)
        kept = encode_outcome(outcome)
        row = self._rows.get(rid)
        if row is None:
            raise UnknownRequest(f'no halted run waits on request "{rid}"')
        if claim is not None:
            if claim.request_id != rid:
                raise LeaseLost(f'the claim is on request "{claim.request_id}", not "{rid}"')
            row = self._held(claim)
        now = self._now()
        row.status = "expired" if row.answered_by == EXPIRED_BY else "done"
        if row.answered_at is None:
            row.answered_at = now
        row.settled_at = now
        row.lease_until = 0.0
        row.checkpoint = None
        row.entry = None
        row.outcome = kept
        self._wake(rid)

    async def release(self, request_id: str, claim: Claim | None = None) -> None:
        rid = check_request_id(request_id)
        row = self._rows.get(rid)
        if row is None or row.status != "claimed":
            return
        if claim is not None and (claim.request_id != rid or claim.token != row.token):
            return
        if row.checkpoint is None:
            del self._rows[rid]
            return
        row.lease_until = 0.0
        if row.recorded:
            row.status = "answered"
            self._signal_queued()
            return
        row.status = "pending"
        row.answer = row.answered_by = row.original = None
        row.digest = ""

    async def flag(self, request_id: str, claim: Claim, problem: str, *, hold_s: float) -> None:
        _, held, text, hold = check_flag(request_id, claim, problem, hold_s)
        row = self._held(held)
        now = self._now()
        row.lease_until = now + hold
        row.problem, row.flagged_at = text, now

    # -- retention: T12 ----------------------------------------------------------------------

    async def purge(self, *, older_than: float) -> int:
        age = check_seconds(older_than, "older_than")
        cutoff = self._now() - age
        gone = [
            k
            for k, r in self._rows.items()
            if r.status in SETTLED and r.settled_at is not None and r.settled_at <= cutoff
        ]
        for k in gone:
            del self._rows[k]
        return len(gone)

    # -- waiting -----------------------------------------------------------------------------

    async def wait_for_answer(
        self, request_id: str, *, timeout: float | None
    ) -> AnswerRecord | None:
        rid = check_request_id(request_id)
        limit = None if timeout is None else check_seconds(timeout, "timeout")
        record = await self.answer_record(rid)
        if record is not None or limit == 0:
            return record
        waiter = asyncio.get_running_loop().create_future()
        waiters = self._waiters.setdefault(rid, [])
        waiters.append(waiter)
        try:
            async with asyncio.timeout(limit):
                await waiter
        except TimeoutError:
            return None
        finally:
            if waiter in waiters:
                waiters.remove(waiter)
            if not waiters and self._waiters.get(rid) is waiters:
                del self._waiters[rid]
        return await self.answer_record(rid)

    async def wait_for_queued(self, *, timeout: float) -> None:
        """Return when an answer may have been queued for a resumer, or after ``timeout``."""
        limit = check_seconds(timeout, "timeout")
        if self._queued is None:
            self._queued = asyncio.Event()
        event = self._queued
        try:
            async with asyncio.timeout(limit):
                await event.wait()
        except TimeoutError:
            return
        finally:
            if event.is_set() and self._queued is event:
                self._queued = None

    async def aclose(self) -> None:
        """Nothing to release; present so every store closes the same way."""

    # -- the rules -----------------------------------------------------------------------------

    def _status(self, row: _Row) -> RequestStatus:
        """The row's status with T10 applied: a claim whose lease ran out counts as released."""
        if row.status == "claimed" and row.lease_until <= self._now():
            return "answered" if row.recorded else "pending"
        return row.status

    def _halted(self, rid: str) -> _Row:
        row = self._rows.get(rid)
        if row is None or (row.checkpoint is None and row.status in ("pending", "claimed")):
            raise UnknownRequest(f'no halted run waits on request "{rid}"')
        return row

    def _refuse_unless_pending(self, rid: str, row: _Row) -> None:
        status = self._status(row)
        if status != "pending":
            raise conflict(rid, row.answered_by, status, row.lease_until)

    def _record(
        self, rid: str, row: _Row, text: str, who: str | None, digest: str, original: str | None
    ) -> None:
        """T2/T3: the answer is recorded and queued; any stale holder is fenced out."""
        row.status = "answered"
        row.answer, row.answered_by, row.digest, row.original = text, who, digest, original
        row.answered_at = self._now()
        row.lease_until = 0.0
        row.token += 1
        row.recorded = True
        self._wake(rid)
        self._signal_queued()

    def _hold(self, row: _Row, lease: float) -> Answer:
        """T4/T5: the row claimed under a new token and lease; the answer to resume with."""
        row.status = "claimed"
        row.token += 1
        row.lease_until = self._now() + lease
        row.holder = holder_name()
        assert row.answer is not None
        return Answer.from_dict(json.loads(row.answer))

    def _take(self, rid: str, row: _Row, lease: float) -> Claim:
        """T5: the row taken, its checkpoint handed over (or why it cannot be read)."""
        answer = self._hold(row, lease)
        where = "the memory store"
        return taken_claim(
            rid,
            row.token,
            answer,
            row.answered_by,
            row.lease_until,
            row.digest,
            row.checkpoint,
            where,
        )

    def _held(self, claim: Claim) -> _Row:
        row = self._rows.get(claim.request_id)
        if row is None or row.status != "claimed" or row.token != claim.token:
            raise LeaseLost(
                f'the claim on request "{claim.request_id}" was lost: another resume took it '
                "over after its lease ran out (nothing was written)",
                answered_by=None if row is None else row.answered_by,
            )
        return row

    def _wake(self, request_id: str) -> None:
        for waiter in self._waiters.pop(request_id, ()):
            if not waiter.done():
                waiter.set_result(None)

    def _signal_queued(self) -> None:
        if self._queued is not None:
            self._queued.set()


def _matches(needle: str | None, e: PendingEntry) -> bool:
    return needle is None or matches_text(needle, e.prompt, e.tool, e.request_id, e.conversation_id)


def _history(info: PendingEntry, record: AnswerRecord, asked: str | None) -> HistoryEntry:
    return HistoryEntry(
        request_id=record.request_id,
        kind=info.kind,
        prompt=info.prompt,
        tool=info.tool,
        conversation_id=info.conversation_id,
        created_at=info.created_at,
        status=record.status,
        answer=record.answer,
        answered_by=record.answered_by,
        answered_at=record.answered_at,
        digest=record.digest,
        settled_at=record.settled_at,
        original=record.original,
        problem=record.problem,
        flagged_at=record.flagged_at,
        asked=decode_asked(asked),
    )


class InMemoryStore(InMemoryRunStore):
    """Conversations and halted runs in one process-lifetime object, like the durable stores.

    Example:
        >>> store = InMemoryStore()          # create_client(..., store=store)
    """

    def __init__(self, clock: Clock | None = None) -> None:
        super().__init__(clock)
        self._conversations = InMemoryConversationStore()

    async def get(self, id: str) -> list[Message] | None:
        """The transcript stored under ``id`` (a copy), or ``None``."""
        return await self._conversations.get(id)

    async def save(self, id: str, messages: list[Message]) -> None:
        """Store a copy of ``messages`` under ``id``."""
        await self._conversations.save(id, messages)

    async def delete(self, id: str) -> bool:
        """Forget ``id``; True when it was stored."""
        return await self._conversations.delete(id)
