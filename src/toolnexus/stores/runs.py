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
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal, Protocol, runtime_checkable

from ..errors import AnswerConflict, CheckpointError, UnknownRequest, UsageError
from ..loop.checkpoint import Checkpoint
from ..suspension import Answer, format_timestamp

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


# -- argument checks and encodings shared by every backend ------------------------------

_answer_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def check_request_id(value: object) -> str:
    """Return ``value`` when it is a usable request id, else raise `UsageError`."""
    if not isinstance(value, str) or not value:
        raise UsageError(f"a request id must be a non-empty string, got {value!r}")
    return _checked_text(value, "the request id")


def check_optional_text(value: object, what: str) -> str | None:
    """``None`` or a valid Unicode string; anything else is a `UsageError`."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise UsageError(f"{what} must be a string or None, got {type(value).__name__}")
    return _checked_text(value, what)


def check_seconds(value: object, what: str, *, positive: bool = False) -> float:
    """A finite, non-negative (or positive) number of seconds, else `UsageError`."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
        or (positive and value == 0)
    ):
        bound = "> 0" if positive else ">= 0"
        raise UsageError(f"{what} must be a finite number of seconds {bound}, got {value!r}")
    return float(value)


def check_limit(value: object) -> int:
    """``list_pending``'s limit: an int >= 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"limit must be an int >= 0, got {value!r}")
    return value


def encode_checkpoint(checkpoint: object) -> str:
    """The checkpoint's JSON text, as every store keeps it.

    Raises:
        UsageError: not a `Checkpoint`, one with no outstanding call or no usable request
            id, or one holding text that is not valid Unicode.
    """
    if not isinstance(checkpoint, Checkpoint):
        raise UsageError(f"save_halt takes a Checkpoint, got {type(checkpoint).__name__}")
    if not checkpoint.outstanding:
        raise UsageError("the checkpoint has no outstanding tool calls: there is nothing to resume")
    check_request_id(checkpoint.pending.id)
    try:
        text = checkpoint.dumps()
    except (TypeError, ValueError, RecursionError) as exc:
        raise UsageError(f"the checkpoint cannot be encoded as JSON: {exc}") from exc
    return _checked_text(text, "the checkpoint")


def load_checkpoint(text: object, request_id: str, where: str) -> Checkpoint:
    """Parse a stored checkpoint.

    Raises:
        CheckpointError: the text is not a checkpoint this toolnexus can read (corrupt,
            hand-edited, or written by a newer version); the message names the request.
    """
    try:
        return Checkpoint.loads(text)  # pyright: ignore[reportArgumentType]
    except (
        CheckpointError,
        TypeError,
        ValueError,
        KeyError,
        AttributeError,
        RecursionError,
    ) as exc:
        raise CheckpointError(
            f"the checkpoint of request {request_id!r} in {where} cannot be read ({exc}); "
            "the stored row was left as it is"
        ) from exc


def encode_answer(answer: object) -> str:
    """The Answer's wire dict as compact JSON text.

    Raises:
        UsageError: not an `Answer`, or its data is not JSON (NaN, sets, objects, cycles).
    """
    if not isinstance(answer, Answer):
        raise UsageError(f"the answer must be an Answer, got {type(answer).__name__}")
    try:
        text = _answer_encoder.encode(answer.to_dict())
    except (TypeError, ValueError, RecursionError) as exc:
        raise UsageError(f"the answer must be JSON-serialisable: {exc}") from exc
    return _checked_text(text, "the answer")


def conflict(
    request_id: str,
    answered_by: str | None,
    status: object = "answered",
    lease_until: object = None,
) -> AnswerConflict:
    """The `AnswerConflict` every backend raises for a request someone else holds.

    Tells an answered request ("was already answered by ana") from one that another resume
    holds right now ("is being answered right now by ana: another resume claimed it (lease
    until …)"), which becomes claimable again if that resume dies and its lease runs out.
    """
    who = f" by {answered_by}" if answered_by else ""
    if status != "claimed":
        text = f'request "{request_id}" was already answered{who}'
    else:
        until = ""
        if isinstance(lease_until, int | float) and math.isfinite(lease_until):
            moment = datetime.fromtimestamp(lease_until, UTC)
            until = f" (lease until {format_timestamp(moment)})"
        text = (
            f'request "{request_id}" is being answered right now{who}: '
            f"another resume claimed it{until}"
        )
    return AnswerConflict(text, answered_by=answered_by)


def _checked_text(text: str, what: str) -> str:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise UsageError(f"{what} must be valid Unicode text: {exc.reason}") from exc
    return text


# -- the in-memory backend ---------------------------------------------------------------


@dataclass(slots=True)
class _Row:
    checkpoint: str | None
    status: HaltStatus
    entry: PendingEntry | None
    answer: str | None = None
    answered_by: str | None = None
    answered_at: float | None = None
    digest: str = ""
    lease_until: float = 0.0


class InMemoryRunStore:
    """The process-lifetime `RunStore` and `AnswerChannel` (the default when no durable store
    is configured).

    Checkpoints and answers are kept as their JSON text, so what comes back is a copy and
    what this store accepts the durable stores accept too.

    Args:
        clock: the time source for leases, ``answered_at`` and ages (default `time.time`).
    """

    def __init__(self, clock: Clock | None = None) -> None:
        self._rows: dict[str, _Row] = {}
        self._now = clock or time.time
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}

    async def save_halt(self, checkpoint: Checkpoint) -> None:
        text = encode_checkpoint(checkpoint)
        rid = checkpoint.pending.id
        row = self._rows.get(rid)
        status: HaltStatus = row.status if row is not None else "pending"
        entry = pending_entry(checkpoint, status)
        if row is None:
            self._rows[rid] = _Row(text, status, entry)
        else:
            row.checkpoint = text
            row.entry = entry

    async def load_halt(self, request_id: str) -> Checkpoint | None:
        row = self._rows.get(check_request_id(request_id))
        if row is None or row.checkpoint is None:
            return None
        return load_checkpoint(row.checkpoint, request_id, "the memory store")

    async def claim(
        self,
        request_id: str,
        answer: Answer,
        *,
        answered_by: str | None = None,
        digest: str = "",
        lease_s: float = DEFAULT_LEASE_S,
    ) -> None:
        rid, text, who = self._check(request_id, answer, answered_by)
        tag = check_optional_text(digest, "digest") or ""
        lease = check_seconds(lease_s, "lease_s", positive=True)
        row = self._take(rid, text, who, tag)
        row.status = "claimed"
        row.lease_until = self._now() + lease

    async def post_answer(
        self,
        request_id: str,
        answer: Answer,
        *,
        answered_by: str | None = None,
        digest: str | None = None,
    ) -> None:
        rid, text, who = self._check(request_id, answer, answered_by)
        tag = check_optional_text(digest, "digest")
        if tag is None:
            held = self._rows.get(rid)
            tag = ""
            if held is not None and held.checkpoint is not None:
                stored = load_checkpoint(held.checkpoint, rid, "the memory store")
                tag = call_digest(*halted_call(stored))
        row = self._take(rid, text, who, tag)
        row.status = "answered"
        row.lease_until = 0.0
        row.answered_at = self._now()
        self._wake(request_id)

    async def complete(self, request_id: str) -> None:
        row = self._rows.get(check_request_id(request_id))
        if row is None:
            raise UnknownRequest(f'no halted run waits on request "{request_id}"')
        row.status = "answered"
        if row.answered_at is None:
            row.answered_at = self._now()
        row.lease_until = 0.0
        row.checkpoint = None
        row.entry = None
        self._wake(request_id)

    async def release(self, request_id: str) -> None:
        row = self._rows.get(check_request_id(request_id))
        if row is not None and row.status == "claimed":
            if row.checkpoint is None:
                del self._rows[request_id]
                return
            row.status = "pending"
            row.lease_until = 0.0
            row.answer = row.answered_by = None
            row.digest = ""
            if row.entry is not None:
                row.entry = replace(row.entry, status="pending")

    async def answer_record(self, request_id: str) -> AnswerRecord | None:
        row = self._rows.get(check_request_id(request_id))
        if row is None or row.status != "answered" or row.answer is None:
            return None
        return AnswerRecord(
            request_id,
            Answer.from_dict(json.loads(row.answer)),
            row.answered_at or 0.0,
            row.answered_by,
            row.digest,
        )

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
        filters = check_filters(kind, tool, conversation_id, older_than, newer_than)
        size = check_limit(limit)
        now = self._now()
        out = [
            r.entry for r in self._rows.values() if r.entry is not None and r.status == "pending"
        ]
        out = _filter(out, *filters, now)
        return out[:size]

    async def aclose(self) -> None:
        """Nothing to release; present so every store closes the same way."""

    @staticmethod
    def _check(
        request_id: str, answer: Answer, answered_by: str | None
    ) -> tuple[str, str, str | None]:
        return (
            check_request_id(request_id),
            encode_answer(answer),
            check_optional_text(answered_by, "answered_by"),
        )

    def _take(self, rid: str, text: str, who: str | None, digest: str) -> _Row:
        """Refuse a request someone holds; else record the answer on its row."""
        row = self._rows.get(rid)
        if row is not None and (
            row.status == "answered" or (row.status == "claimed" and row.lease_until > self._now())
        ):
            raise conflict(rid, row.answered_by, row.status, row.lease_until)
        if row is None:
            row = self._rows[rid] = _Row(None, "pending", None)
        row.answer = text
        row.answered_by = who
        row.digest = digest
        return row

    def _wake(self, request_id: str) -> None:
        for waiter in self._waiters.pop(request_id, ()):
            if not waiter.done():
                waiter.set_result(None)


class Clock(Protocol):
    def __call__(self) -> float: ...


def check_filters(
    kind: object,
    tool: object,
    conversation_id: object,
    older_than: object,
    newer_than: object,
) -> tuple[str | None, str | None, str | None, float | None, float | None]:
    """Check ``list_pending``'s filters; `UsageError` for anything but str/None and ages."""
    return (
        check_optional_text(kind, "kind"),
        check_optional_text(tool, "tool"),
        check_optional_text(conversation_id, "conversation_id"),
        None if older_than is None else check_seconds(older_than, "older_than"),
        None if newer_than is None else check_seconds(newer_than, "newer_than"),
    )


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
