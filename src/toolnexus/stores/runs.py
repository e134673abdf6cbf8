"""The run store: halted checkpoints, exactly-once answer claims, the pending index.

A halted run is saved keyed by the id of the Request it waits on. Answering it is a *claim*:
one atomic conditional update ``pending → claimed``. The winner resumes; every other claimant
gets `AnswerConflict` naming who won. A claim carries a lease, so a process that died
mid-resume does not strand the run: once the lease runs out, the request can be claimed again.
A resume that finishes marks the request ``answered`` and records who answered, when, and a
digest of the halted call's name and arguments (what was approved).

`AnswerChannel` is the cross-process ``wait_for``: a live run parks on the store
(`AnswerChannel.wait_for_answer`) until another process records the answer
(`AnswerChannel.post_answer`). ``post_answer`` is exactly-once too: it competes with `claim`
for the same request, and the loser gets `AnswerConflict`.

`InMemoryRunStore` is the process-lifetime backend; the SQLite and Postgres stores implement
the same Protocols with the same semantics (one shared test suite runs against all three).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from ..errors import AnswerConflict, UnknownRequest, UsageError
from ..loop.checkpoint import Checkpoint
from ..suspension import Answer

__all__ = [
    "DEFAULT_LEASE_S",
    "AnswerChannel",
    "AnswerRecord",
    "HaltStatus",
    "InMemoryRunStore",
    "PendingEntry",
    "RunStore",
    "call_digest",
    "pending_entry",
]

DEFAULT_LEASE_S = 300.0
"""How long a claim holds a request before another process may take it over (seconds)."""

HaltStatus = Literal["pending", "claimed", "answered"]


@dataclass(frozen=True, slots=True)
class PendingEntry:
    """One row of the pending index: a Request waiting for a human."""

    request_id: str
    kind: str
    prompt: str
    tool: str
    conversation_id: str | None
    created_at: float
    expires_at: str | None
    status: HaltStatus = "pending"


@dataclass(frozen=True, slots=True)
class AnswerRecord:
    """Who answered a Request, when, and what the answered call was."""

    request_id: str
    answer: Answer
    answered_at: float
    answered_by: str | None
    digest: str


def call_digest(name: str, arguments: str) -> str:
    """sha256 over the halted call's tool name and canonicalised arguments."""
    try:
        canonical = json.dumps(json.loads(arguments or "{}"), sort_keys=True, separators=(",", ":"))
    except ValueError:
        canonical = arguments
    return hashlib.sha256(f"{name}\n{canonical}".encode()).hexdigest()


def halted_call(checkpoint: Checkpoint) -> tuple[str, str]:
    """``(tool name, raw arguments)`` of the call the checkpoint's pending Request belongs to."""
    for slot in checkpoint.outstanding:
        if slot.request is not None and slot.request.id == checkpoint.pending.id:
            return slot.name, slot.arguments
    first = checkpoint.outstanding[0]
    return first.name, first.arguments


def pending_entry(checkpoint: Checkpoint, status: HaltStatus = "pending") -> PendingEntry:
    """The pending-index row for a checkpoint."""
    name, _ = halted_call(checkpoint)
    req = checkpoint.pending
    return PendingEntry(
        request_id=req.id,
        kind=req.kind,
        prompt=req.prompt,
        tool=name,
        conversation_id=checkpoint.conversation_id,
        created_at=checkpoint.created_at,
        expires_at=req.expiresAt,
        status=status,
    )


@runtime_checkable
class RunStore(Protocol):
    """Where halted runs wait for their answer."""

    async def save_halt(self, checkpoint: Checkpoint) -> None:
        """Insert or replace the halted run waiting on ``checkpoint.pending.id``.

        Replacing keeps the row's status (a claimed run stays claimed)."""
        ...

    async def load_halt(self, request_id: str) -> Checkpoint | None:
        """The checkpoint waiting on ``request_id`` (any status), or ``None``."""
        ...

    async def claim(
        self,
        request_id: str,
        answer: Answer,
        *,
        answered_by: str | None = None,
        digest: str = "",
        lease_s: float = DEFAULT_LEASE_S,
    ) -> None:
        """Atomically take ``request_id`` for resuming with ``answer``.

        A request with no halted checkpoint is recorded too (a resume from a host-held
        transcript), so it can be answered only once as well.

        Raises:
            AnswerConflict: the request is already answered, or claimed under a live lease.
        """
        ...

    async def complete(self, request_id: str) -> None:
        """The resume finished: mark the request answered and record the answer."""
        ...

    async def release(self, request_id: str) -> None:
        """The resume failed before finishing: make the request claimable again."""
        ...

    async def answer_record(self, request_id: str) -> AnswerRecord | None:
        """The accepted answer for ``request_id`` once the resume completed."""
        ...

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
        """Requests still waiting (status ``pending``), oldest first.

        ``older_than`` / ``newer_than`` are ages in seconds."""
        ...


@runtime_checkable
class AnswerChannel(Protocol):
    """The cross-process ``wait_for``: park a live run on the store, answer it from anywhere.

    A live run that needs a human saves its halt (so the request shows in the pending index
    and survives a crash), then waits with `wait_for_answer`. Any process — a webhook, an
    approvals inbox, a CLI — calls `post_answer`; the parked run wakes, reads the answer and
    resumes inline. When it has finished it calls `RunStore.complete`, which drops the
    checkpoint (the recorded answer stays).

    Wake-up is per backend: an `asyncio.Event`-like future in memory, polling on the worker
    thread for SQLite (``poll_interval``), ``LISTEN/NOTIFY`` on the ``toolnexus_answers``
    channel for Postgres. A spurious wake is harmless: waiters re-read the row.

    Example:
        >>> async def park(store, checkpoint):
        ...     await store.save_halt(checkpoint)
        ...     return await store.wait_for_answer(checkpoint.pending.id, timeout=3600)
        >>> async def approve(store, request_id):
        ...     await store.post_answer(request_id, Answer(request_id, True), answered_by="ana")
    """

    async def post_answer(
        self,
        request_id: str,
        answer: Answer,
        *,
        answered_by: str | None = None,
        digest: str | None = None,
    ) -> None:
        """Record ``answer`` for ``request_id`` exactly once and wake its waiters.

        The request goes straight to ``answered`` (from ``pending``, from no row at all, or
        from a claim whose lease ran out), with ``answered_at`` now and ``digest`` (by
        default the digest of the stored halted call, ``""`` when nothing is stored).

        Raises:
            AnswerConflict: the request is already answered, or claimed under a live lease.
            CheckpointError: ``digest`` is ``None`` and the stored checkpoint is corrupt.
        """
        ...

    async def wait_for_answer(
        self, request_id: str, *, timeout: float | None
    ) -> AnswerRecord | None:
        """Wait until ``request_id`` is answered and return its record.

        Answered means `post_answer` recorded an answer, or a claimed resume called
        `RunStore.complete`. Returns at once when that already happened; ``None`` when
        ``timeout`` seconds pass first (``None`` waits for ever).
        """
        ...


@dataclass(slots=True)
class _Row:
    checkpoint: Checkpoint | None
    status: HaltStatus
    entry: PendingEntry | None
    answer: Answer | None = None
    answered_by: str | None = None
    answered_at: float = 0.0
    digest: str = ""
    lease_until: float = 0.0


class InMemoryRunStore:
    """The process-lifetime `RunStore` (the default when no durable store is configured)."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._rows: dict[str, _Row] = {}
        self._now = clock or time.time

    async def save_halt(self, checkpoint: Checkpoint) -> None:
        rid = checkpoint.pending.id
        row = self._rows.get(rid)
        status: HaltStatus = row.status if row is not None else "pending"
        frozen = Checkpoint.loads(checkpoint.dumps())
        if row is None:
            self._rows[rid] = _Row(frozen, status, pending_entry(frozen, status))
        else:
            row.checkpoint = frozen
            row.entry = pending_entry(frozen, status)

    async def load_halt(self, request_id: str) -> Checkpoint | None:
        row = self._rows.get(request_id)
        if row is None or row.checkpoint is None:
            return None
        return Checkpoint.loads(row.checkpoint.dumps())

    async def claim(
        self,
        request_id: str,
        answer: Answer,
        *,
        answered_by: str | None = None,
        digest: str = "",
        lease_s: float = DEFAULT_LEASE_S,
    ) -> None:
        now = self._now()
        row = self._rows.get(request_id)
        if row is None:
            row = self._rows[request_id] = _Row(None, "pending", None)
        if row.status == "answered" or (row.status == "claimed" and row.lease_until > now):
            raise AnswerConflict(
                f'request "{request_id}" was already answered'
                + (f" by {row.answered_by}" if row.answered_by else ""),
                answered_by=row.answered_by,
            )
        row.status = "claimed"
        row.answer = answer
        row.answered_by = answered_by
        row.digest = digest
        row.lease_until = now + lease_s

    async def complete(self, request_id: str) -> None:
        row = self._rows.get(request_id)
        if row is None:
            raise UnknownRequest(f'no halted run waits on request "{request_id}"')
        row.status = "answered"
        row.answered_at = self._now()
        row.checkpoint = None
        row.entry = None

    async def release(self, request_id: str) -> None:
        row = self._rows.get(request_id)
        if row is not None and row.status == "claimed":
            row.status = "pending"
            row.lease_until = 0.0
            if row.checkpoint is None:
                del self._rows[request_id]

    async def answer_record(self, request_id: str) -> AnswerRecord | None:
        row = self._rows.get(request_id)
        if row is None or row.status != "answered" or row.answer is None:
            return None
        return AnswerRecord(request_id, row.answer, row.answered_at, row.answered_by, row.digest)

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
        now = self._now()
        out = [
            r.entry for r in self._rows.values() if r.entry is not None and r.status == "pending"
        ]
        out = _filter(out, kind, tool, conversation_id, older_than, newer_than, now)
        return out[:limit]


class Clock(Protocol):
    def __call__(self) -> float: ...


def _filter(
    entries: Sequence[PendingEntry],
    kind: str | None,
    tool: str | None,
    conversation_id: str | None,
    older_than: float | None,
    newer_than: float | None,
    now: float,
) -> list[PendingEntry]:
    picked = [
        e
        for e in entries
        if (kind is None or e.kind == kind)
        and (tool is None or e.tool == tool)
        and (conversation_id is None or e.conversation_id == conversation_id)
        and (older_than is None or now - e.created_at >= older_than)
        and (newer_than is None or now - e.created_at <= newer_than)
    ]
    return sorted(picked, key=lambda e: (e.created_at, e.request_id))
