"""The PostgreSQL run store's statements.

`PostgresStore` validates every argument, then hands one of these functions a pooled
autocommit connection (see `toolnexus.stores.postgres`). Each implements rows of the table in
`toolnexus.stores.requests` (T1–T12) with the semantics of the in-memory reference
(`toolnexus.stores.memory_runs`), and says which:

- The racing paths are one statement each, so PostgreSQL's row lock decides every race:
  ``claim`` is an ``INSERT … ON CONFLICT DO UPDATE … WHERE`` that takes a pending (or lapsed)
  request and does nothing otherwise; ``take`` is an ``UPDATE`` of the oldest queued row
  found with ``FOR UPDATE SKIP LOCKED``, so any number of workers in any number of processes
  never wait on each other and never get the same row; the holder's writes (T6–T9) match
  ``status = 'claimed' AND token = …`` (fencing).
- Answering (T2) is one guarded ``UPDATE`` when the row carries the halted call's digest and
  deadline (copied from the checkpoint at save_halt, migration 5): it records the answer of a
  request that is waiting and not expired, and changes nothing otherwise. When it records
  nothing, the same statement reads the row to say why (see below). A row still waiting —
  and for T3, T11, rows saved before migration 5 and an answer that may carry edited
  arguments (checked against the stored checkpoint) — the answering path reads ``FOR
  UPDATE``, decides in Python (the digest of the stored call, a passed ``expiresAt``) and
  writes it in one short transaction: the order of refusals is the reference's (unknown,
  conflict, expiry).
- A lapsed lease (T10) is not swept: every statement compares ``lease_until`` with the
  caller's clock, the rule `toolnexus.stores._runrows.lapsed_status` applies to a row read.
- Whatever moves a request out of waiting (T2, T3, T8, T9 back to ``answered``, T11)
  ``NOTIFY``s the schema's channel (`toolnexus.stores.postgres_listen`) in the statement or
  transaction that commits it, so the notification is sent exactly when the change is
  visible. The payload is the hex of the request's key.

When a guarded statement changes nothing, the row is read to say why (unknown, held by whom
until when, lease lost); a row that became claimable in between is tried again. For the two
racing entry points (T2 and T4) that read is part of the statement itself — a CTE that runs
only when the write matched nothing, ``FOR SHARE``: under READ COMMITTED a locking read waits
for a concurrent writer of the row and returns the version it committed, where a plain read
would return the statement's snapshot, from before the winner's write. So a lost race costs
the loser one round trip, as the bare ``UPDATE … WHERE status = 'pending'`` does. The price: a
refused answer's statement takes a row lock, so it commits a transaction (with
``synchronous_commit`` on, a WAL flush) where a plain read would not; a refused claim locked
the row already (``ON CONFLICT DO UPDATE`` locks the row it does not update).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final, LiteralString, NamedTuple

from ..errors import LeaseLost, RequestExpired, UnknownRequest
from ..intake import NEEDS_DATA
from ..loop.checkpoint import CHECKPOINT_VERSION
from ..suspension import Answer, expired_decline
from ._runrows import (
    HaltRow,
    answer_record,
    lapsed_status,
    recorded_answer,
    recorded_audit,
    request_record,
    stored_digest,
    taken_claim,
)
from .checks import cancelled_answer, conflict, encode_answer, is_past, load_checkpoint
from .postgres_listen import CHANNEL_OF_SCHEMA
from .postgres_schema import from_bytea, row_key, to_bytea
from .requests import EXPIRED_BY, AnswerRecord, Claim, holder_name

if TYPE_CHECKING:
    from psycopg import AsyncCursor

    from ..loop.checkpoint import Checkpoint

__all__ = [
    "PENDING",
    "PENDING_WHERE",
    "WAITING_WHERE",
    "answer_of",
    "cancel",
    "claim",
    "complete",
    "expire",
    "flag",
    "load_waiting",
    "post_answer",
    "purge",
    "release",
    "renew",
    "save_progress",
    "take",
]

_RETRIES = 3
"""How often a refused claim is tried again when the row turned claimable in between."""

_EXPIRED_BY: Final = EXPIRED_BY.encode()

# A request still waiting for its answer: pending, or a host claim whose lease ran out (T10).
_CLAIMABLE: LiteralString = (
    "(h.status = 'pending' OR (h.status = 'claimed' AND NOT h.recorded"
    " AND h.lease_until <= %(now)s))"
)
# The worker queue: a recorded answer, or a taken claim whose lease ran out (T10).
_QUEUED: LiteralString = (
    "(h.status = 'answered' OR (h.status = 'claimed' AND h.recorded AND h.lease_until <= %(now)s))"
)
_NOTIFY: LiteralString = "SELECT pg_notify(" + CHANNEL_OF_SCHEMA + ", %(note)s)"

# The row an answer is recorded on, locked until the transaction ends (T2, T3, T11).
_PEEK: LiteralString = (
    "SELECT status, recorded, lease_until, answered_by, expires_at,"
    " checkpoint IS NOT NULL, CASE WHEN %(want)s THEN checkpoint END, problem, flagged_at"
    " FROM toolnexus_halts WHERE key = %(key)s"
)
_LOCK = _PEEK + " FOR UPDATE"
# T2/T3: recorded and queued; a new token fences out a holder whose lease lapsed.
_RECORD = (
    "WITH r AS (UPDATE toolnexus_halts SET status = 'answered', answer = %(answer)s,"
    " answered_by = %(by)s, digest = %(digest)s, original = %(original)s,"
    " answered_at = %(now)s, lease_until = NULL, token = token + 1, recorded = true"
    " WHERE key = %(key)s RETURNING 1) " + _NOTIFY + " FROM r"
)
# Why a racing write (``r``: T2, ``c``: T4) matched nothing: the row as its last writer
# committed it (``FOR SHARE``, see the module's docstring), read only then.
_WHY: LiteralString = (
    "SELECT status, recorded, lease_until, answered_by, expires_at, checkpoint IS NOT NULL"
    " AS halted FROM toolnexus_halts WHERE key = %(key)s AND NOT EXISTS (SELECT 1 FROM {})"
    " FOR SHARE"
)
# A stored checkpoint this toolnexus can read, proven without parsing it: its text is still
# the one save_halt wrote (the hash written with it), and the version it declared then is
# one this build reads. Anything else — hand-edited, written by an older save_halt without a
# hash or by a newer toolnexus — takes the reading path, which parses it.
_READABLE: LiteralString = (
    "h.checkpoint_version BETWEEN 1 AND %(readable)s"
    " AND h.checkpoint_sha256 = sha256(convert_to(h.checkpoint, 'UTF8'))"
)
# T2 in one statement: a waiting request (``_CLAIMABLE``) whose digest and deadline were
# copied at save_halt, whose deadline is not within a millisecond of now (that close, the
# reading path decides with the reference's clock rule), and whose checkpoint is readable
# (``_READABLE``; an answer is never recorded for a run that cannot resume). It records no
# edit (an answer that may carry one takes the reading path). One row: the recorded digest
# and the row's problem (first column true), or the row as it is (``_WHY``); none: no row.
_RECORD_WAITING = (
    "WITH r AS (UPDATE toolnexus_halts AS h SET status = 'answered', answer = %(answer)s,"
    " answered_by = %(by)s, digest = coalesce(%(digest)s, h.halt_digest), original = NULL,"
    " answered_at = %(now)s, lease_until = NULL, token = h.token + 1, recorded = true"
    " WHERE h.key = %(key)s AND h.halt_digest IS NOT NULL AND "
    + _CLAIMABLE
    + " AND (h.deadline IS NULL OR h.deadline > %(now)s + 0.001) AND "
    + _READABLE
    + " AND (NOT %(plain)s OR h.kind IS NULL OR h.kind <> ALL(%(needy)s))"
    + " RETURNING h.digest, h.problem, h.flagged_at),"
    " w AS (" + _WHY.format("r") + ")"
    " SELECT true, r.digest, NULL, NULL, NULL, NULL, NULL, NULL,"
    " pg_notify(" + CHANNEL_OF_SCHEMA + ", %(note)s), r.problem, r.flagged_at FROM r"
    " UNION ALL SELECT false, NULL, w.status, w.recorded, w.lease_until, w.answered_by,"
    " w.expires_at, w.halted, NULL, NULL, NULL FROM w"
)
# T11: the run is abandoned; who, when and why are kept (and the digest, original, problem).
_CANCEL = (
    "WITH c AS (UPDATE toolnexus_halts SET status = 'cancelled', answer = %(answer)s,"
    " answered_by = %(by)s, answered_at = %(now)s, settled_at = %(now)s, checkpoint = NULL,"
    " lease_until = NULL, token = token + 1, recorded = true WHERE key = %(key)s"
    " RETURNING digest, original, problem, flagged_at)"
    " SELECT c.digest, c.original, c.problem, c.flagged_at,"
    " pg_notify(" + CHANNEL_OF_SCHEMA + ", %(note)s) FROM c"
)
# T4: a host resumes with its own answer; a request with no row gets a bare one (token 1).
# One row: the claim's token, or (token NULL) who holds the row and how (``_WHY``).
_CLAIM = (
    "WITH c AS (INSERT INTO toolnexus_halts AS h (key, request_id, status, answer,"
    " answered_by, digest, original, lease_until, holder, token) VALUES (%(key)s, %(id)s,"
    " 'claimed', %(answer)s, %(by)s, %(digest)s, %(original)s, %(lease)s, %(holder)s, 1)"
    " ON CONFLICT (key) DO UPDATE SET status = 'claimed', answer = EXCLUDED.answer,"
    " answered_by = EXCLUDED.answered_by, digest = EXCLUDED.digest,"
    " original = EXCLUDED.original,"
    " lease_until = EXCLUDED.lease_until, holder = EXCLUDED.holder, answered_at = NULL,"
    " recorded = false,"
    " token = h.token + 1 WHERE " + _CLAIMABLE + " RETURNING h.token),"
    " w AS (" + _WHY.format("c") + ")"
    " SELECT c.token, NULL, NULL, NULL, NULL FROM c"
    " UNION ALL SELECT NULL, w.answered_by, w.status, w.recorded, w.lease_until FROM w"
)
_HOLDER = "SELECT answered_by, status, recorded, lease_until FROM toolnexus_halts WHERE key = %s"
_TAKEN: LiteralString = (
    "UPDATE toolnexus_halts AS h SET status = 'claimed', token = h.token + 1,"
    " lease_until = %(lease)s, holder = %(holder)s WHERE "
)
_RETURN_CLAIM: LiteralString = (
    " RETURNING h.request_id, h.token, h.answer, h.answered_by, h.checkpoint, h.digest"
)
# T5 (and T10): a resumer takes the recorded answer of one request.
_TAKE_ONE = _TAKEN + "h.key = %(key)s AND " + _QUEUED + _RETURN_CLAIM
# T5 (and T10): a worker takes the oldest answer of its queue, skipping rows other takers
# hold (in the subquery, ``h`` is the candidate row).
_TAKE_OLDEST = (
    _TAKEN
    + "h.key = (SELECT h.key FROM toolnexus_halts AS h WHERE h.queue_key = %(queue)s AND "
    + _QUEUED
    + " ORDER BY h.answered_at, h.request_id LIMIT 1 FOR UPDATE SKIP LOCKED)"
    + _RETURN_CLAIM
)
_FENCE: LiteralString = " AND status = 'claimed' AND token = %(token)s"
# T6.
_RENEW = "UPDATE toolnexus_halts SET lease_until = %(lease)s WHERE key = %(key)s" + _FENCE
# T13: held (an infinite hold is double precision 'Infinity', which no clock reaches), with
# what went wrong.
_FLAG = (
    "UPDATE toolnexus_halts SET lease_until = %(lease)s, problem = %(problem)s,"
    " flagged_at = %(now)s WHERE key = %(key)s" + _FENCE
)
# T7: the answer has been applied, so from here it counts as recorded (a lapse or release
# returns the request to the queue, to be finished with the same answer); the resume got past
# whatever was flagged (T13). A recorded row is never answered again: its checkpoint's hash,
# which only the one-statement answer reads, goes.
_PROGRESS = (
    "UPDATE toolnexus_halts SET checkpoint = %(checkpoint)s, kind = %(kind)s, tool = %(tool)s,"
    " conversation_id = %(conversation)s, created_at = %(created)s, expires_at = %(expires)s,"
    " prompt = %(prompt)s, queue_key = %(queue)s, recorded = true, problem = NULL,"
    " flagged_at = NULL, checkpoint_sha256 = NULL, checkpoint_version = NULL,"
    " answered_at = coalesce(answered_at, %(now)s) WHERE key = %(key)s" + _FENCE
)
# T8: settled with the outcome; the checkpoint is dropped, the answer kept.
_SETTLE: LiteralString = (
    "WITH s AS (UPDATE toolnexus_halts SET status = CASE WHEN answered_by = %(expired)s"
    " THEN 'expired' ELSE 'done' END, answered_at = coalesce(answered_at, %(now)s),"
    " settled_at = %(now)s, lease_until = NULL, checkpoint = NULL, outcome = %(outcome)s"
    " WHERE key = %(key)s"
)
_COMPLETE = _SETTLE + " RETURNING 1) " + _NOTIFY + " FROM s"
_COMPLETE_HELD = _SETTLE + _FENCE + " RETURNING 1) " + _NOTIFY + " FROM s"
# T9: a bare claim (no checkpoint: a host-held transcript) is forgotten; a host claim goes
# back to pending without its answer; a taken claim goes back to the queue with its answer.
_RELEASE = (
    "WITH gone AS (DELETE FROM toolnexus_halts WHERE key = %(key)s AND status = 'claimed'"
    " AND checkpoint IS NULL AND token = coalesce(%(token)s, token) RETURNING 1),"
    " back AS (UPDATE toolnexus_halts SET lease_until = NULL,"
    " status = CASE WHEN recorded THEN 'answered' ELSE 'pending' END,"
    " answer = CASE WHEN recorded THEN answer END,"
    " answered_by = CASE WHEN recorded THEN answered_by END,"
    " digest = CASE WHEN recorded THEN digest ELSE '' END,"
    " original = CASE WHEN recorded THEN original END"
    " WHERE key = %(key)s AND status = 'claimed' AND checkpoint IS NOT NULL"
    " AND token = coalesce(%(token)s, token) RETURNING recorded) "
    + _NOTIFY
    + " FROM back WHERE recorded"
)
# T12.
_PURGE = (
    "DELETE FROM toolnexus_halts WHERE status IN ('done', 'expired', 'cancelled')"
    " AND settled_at <= %s"
)
_ANSWER = (
    "SELECT answer, answered_at, answered_by, digest, status, recorded, lease_until,"
    " settled_at, outcome, original, problem, flagged_at, holder FROM toolnexus_halts"
    " WHERE key = %s AND answer IS NOT NULL"
)
# A pending row always has its checkpoint and no recorded answer (T1, T9), so only a claim
# needs those tested: one condition per status keeps the planner's row estimate right.
WAITING_WHERE: LiteralString = (
    " FROM toolnexus_halts WHERE (status = 'pending' OR (status = 'claimed' AND NOT recorded"
    " AND checkpoint IS NOT NULL AND lease_until <= %s))"
)
"""What waits for a human's answer (T1, T9, T10; no flagged row), for the inbox's
announcements to add their terms to."""
PENDING_WHERE: LiteralString = (
    " FROM toolnexus_halts WHERE (status = 'pending' OR (status = 'claimed' AND NOT recorded"
    " AND checkpoint IS NOT NULL AND lease_until <= %s) OR (problem IS NOT NULL"
    " AND status IN ('answered', 'claimed') AND checkpoint IS NOT NULL))"
)
"""What `PostgresStore.list_pending` shows, for it to add its filters to: what waits for a
human, and the unsettled rows a resumer flagged (T13) whatever their lease — the disjuncts
of the partial index ``toolnexus_halts_pending`` (migration 9)."""
PENDING: LiteralString = (
    "SELECT request_id, kind, prompt, tool, conversation_id, created_at, expires_at, status,"
    " recorded, lease_until, problem, flagged_at" + PENDING_WHERE
)


def _unknown(request_id: str) -> UnknownRequest:
    return UnknownRequest(f'no halted run waits on request "{request_id}"')


def _lost(request_id: str, answered_by: object) -> LeaseLost:
    return LeaseLost(
        f'the claim on request "{request_id}" was lost: another resume took it over after '
        "its lease ran out (nothing was written)",
        answered_by=from_bytea(answered_by),
    )


def _note(request_id: str) -> str:
    return row_key(request_id).hex()


# -- answering: T2, T3, T11 ------------------------------------------------------------------


class _Waiting(NamedTuple):
    """A halted run's row as the answering paths read it (`_lock_waiting`)."""

    expires_at: str | None
    checkpoint: object  # its text, when asked for
    problem: str | None
    flagged_at: float | None


async def _lock_waiting(
    cur: AsyncCursor[Any],
    request_id: str,
    now: float,
    *,
    want_checkpoint: bool,
    lock: bool = True,
    cancelling: bool = False,
) -> _Waiting:
    """Lock the halted run waiting on ``request_id``. Without ``lock``, only read it (to say
    why nothing was written). ``cancelling`` also accepts an unsettled row a resumer flagged
    (T13), whatever its lease — an operator's cancel.

    Raises:
        UnknownRequest: no halted run waits on it (no row, or a bare claim's row).
        AnswerConflict: it was answered, is claimed under a live lease, or is settled.
    """
    values = {"key": row_key(request_id), "want": want_checkpoint}
    await cur.execute(_LOCK if lock else _PEEK, values, prepare=True)
    row = await cur.fetchone()
    flagged = row is not None and row[7] is not None and row[0] not in _SETTLED
    if not (cancelling and flagged):
        _check_waiting(request_id, now, row)
    assert row is not None
    return _Waiting(from_bytea(row[4]), row[6], from_bytea(row[7]), row[8])


def _check_waiting(request_id: str, now: float, row: tuple[Any, ...] | None) -> None:
    """Refuse unless ``row`` (``status, recorded, lease_until, answered_by, expires_at,
    halted``, …) is a halted run still waiting for its answer.

    Raises:
        UnknownRequest, AnswerConflict: see `_lock_waiting`.
    """
    if row is None:
        raise _unknown(request_id)
    status, recorded, lease_until, by, _expires, halted = row[:6]
    if not halted and status in ("pending", "claimed"):
        raise _unknown(request_id)
    current = lapsed_status(status, recorded, lease_until, now)
    if current != "pending":
        raise conflict(request_id, from_bytea(by), current, lease_until)


_NEEDY: list[bytes] = [kind.encode() for kind in NEEDS_DATA]  # (as their column values)


async def post_answer(
    cur: AsyncCursor[Any],
    request_id: str,
    text: str,
    reply: Answer,
    answered_by: str | None,
    digest: str | None,
    now: float,
    where: str,
) -> AnswerRecord:
    """T2, or T3 past ``expiresAt``: record the answer (``reply``, checked, encoded as
    ``text``). An answer that may carry edited arguments takes the reading path: they are
    checked against the stored checkpoint under the row lock, and the call they replace kept.

    Raises:
        UnknownRequest, AnswerConflict: see `_lock_waiting`; nothing changed.
        InvalidAnswer: the edited arguments are invalid; nothing changed.
        CheckpointError: the stored checkpoint cannot be read; nothing changed.
        RequestExpired: the expired decline was recorded (and committed) instead.
    """
    # One statement for a decline (every kind takes one) or a plain ``ok`` (recorded only for
    # a kind that takes it: not NEEDS_DATA); data goes through the intake on the reading path.
    if not reply.ok or reply.data is None:
        values = {
            "key": row_key(request_id),
            "answer": text,
            "by": to_bytea(answered_by),
            "digest": digest,
            "now": now,
            "note": _note(request_id),
            "readable": CHECKPOINT_VERSION,
            "plain": reply.ok,
            "needy": _NEEDY,
        }
        await cur.execute(_RECORD_WAITING, values, prepare=True)
        row = await cur.fetchone()
        if row is not None and row[0]:
            tag = row[1] if isinstance(row[1], str) else ""
            parsed = recorded_answer(reply, text)
            problem, flagged_at = from_bytea(row[9]), row[10]
            return AnswerRecord(
                request_id,
                parsed,
                now,
                answered_by,
                tag,
                "answered",
                problem=problem,
                flagged_at=flagged_at,
            )
        # Nothing recorded: unknown, or answered / claimed / settled first (a lost race).
        _check_waiting(request_id, now, None if row is None else row[2:])
    # Still waiting (an edit to check against the stored checkpoint, expired, a checkpoint
    # not proven readable, or saved before migration 5): decide and write under the row
    # lock, which refuses an unknown, answered or settled request as the statement above
    # does, and an unreadable checkpoint as every backend does.
    async with cur.connection.transaction():
        found = await _lock_waiting(cur, request_id, now, want_checkpoint=True)
        audit = recorded_audit(found.checkpoint, request_id, where, reply, digest)
        if audit.answer is not reply:  # the intake's canonical answer is the one recorded
            text = encode_answer(audit.answer)
        expired = is_past(found.expires_at, now)
        tag, original = audit.approved, audit.original
        if expired:
            text, answered_by = encode_answer(expired_decline(request_id)), EXPIRED_BY
            tag, original = audit.halted, None
        await _record(cur, request_id, text, answered_by, tag, original, now)
    if expired:
        raise RequestExpired(
            f'request "{request_id}" expired before it was answered; it was settled with the '
            "expired decline"
        )
    return _recorded(request_id, text, now, answered_by, tag, original, found, where)


async def expire(cur: AsyncCursor[Any], request_id: str, now: float, where: str) -> AnswerRecord:
    """T3: record the expired decline for a pending request, by `EXPIRED_BY`.

    Raises:
        UnknownRequest, AnswerConflict: see `_lock_waiting`; nothing changed.
        CheckpointError: the stored checkpoint cannot be read; nothing changed.
    """
    async with cur.connection.transaction():
        found = await _lock_waiting(cur, request_id, now, want_checkpoint=True)
        tag = stored_digest(found.checkpoint, request_id, where)
        text = encode_answer(expired_decline(request_id))
        await _record(cur, request_id, text, EXPIRED_BY, tag, None, now)
    return _recorded(request_id, text, now, EXPIRED_BY, tag, None, found, where)


async def _record(
    cur: AsyncCursor[Any],
    request_id: str,
    text: str,
    by: str | None,
    tag: str,
    original: str | None,
    now: float,
) -> None:
    values = {
        "key": row_key(request_id),
        "answer": text,
        "by": to_bytea(by),
        "digest": tag,
        "original": original,
        "now": now,
        "note": _note(request_id),
    }
    await cur.execute(_RECORD, values, prepare=True)


def _recorded(
    request_id: str,
    text: str,
    now: float,
    by: str | None,
    tag: str,
    original: str | None,
    found: _Waiting,
    where: str,
) -> AnswerRecord:
    """The record T2/T3 just wrote (the row's problem, if any, stays)."""
    return request_record(
        request_id,
        text,
        now,
        by,
        tag,
        "answered",
        None,
        None,
        where,
        original=original,
        problem=found.problem,
        flagged_at=found.flagged_at,
    )


async def cancel(
    cur: AsyncCursor[Any],
    request_id: str,
    reason: str | None,
    answered_by: str | None,
    now: float,
    where: str,
) -> AnswerRecord:
    """T11: end the halted run without resuming it: a pending one, or an unsettled one a
    resumer flagged (T13), whatever its lease."""
    text = encode_answer(cancelled_answer(request_id, reason))
    values = {
        "key": row_key(request_id),
        "answer": text,
        "by": to_bytea(answered_by),
        "now": now,
        "note": _note(request_id),
    }
    async with cur.connection.transaction():
        await _lock_waiting(cur, request_id, now, want_checkpoint=False, cancelling=True)
        await cur.execute(_CANCEL, values, prepare=True)
        row = await cur.fetchone()
    assert row is not None  # the row is locked: the update cannot miss
    digest, original, problem, flagged_at = row[:4]
    return request_record(
        request_id,
        text,
        now,
        answered_by,
        digest,
        "cancelled",
        now,
        None,
        where,
        original=original,
        problem=from_bytea(problem),
        flagged_at=flagged_at,
    )


# -- resuming: T4–T10 ------------------------------------------------------------------------


_LOAD_WAITING = (
    "SELECT checkpoint, status, recorded, lease_until, answered_by, answer IS NOT NULL"
    " FROM toolnexus_halts WHERE key = %s"
)
_SETTLED = ("done", "expired", "cancelled")


async def load_waiting(
    cur: AsyncCursor[Any], request_id: str, now: float, where: str
) -> Checkpoint | None:
    """The checkpoint a host's own answer would resume (``load_halt`` before T4), read with
    the row's state: a halted run this read already shows claimed by another resume under a
    live lease is refused here — as T4 would refuse it — without the guards and the claim;
    a settled one (done, expired, cancelled: its checkpoint dropped) with the `AnswerConflict`
    its answer record names, without reading that record. Anything else is ``load_halt``'s
    answer: an answered run's checkpoint (T4 then refuses it, or a retrying host takes its
    own recorded answer), ``None`` for no checkpoint (no row, a bare claim's row: the caller
    says why, as after ``load_halt``).

    Raises:
        AnswerConflict: claimed under a live lease (names who, and until when), or settled
            (names who answered it, and how it ended).
        CheckpointError: the stored checkpoint is corrupt or from a newer toolnexus.
    """
    await cur.execute(_LOAD_WAITING, (row_key(request_id),), prepare=True)
    row = await cur.fetchone()
    if row is None:
        return None
    text, status, recorded, lease_until, by, answered = row
    if text is None:
        if answered and status in _SETTLED:
            raise conflict(request_id, from_bytea(by), status)
        return None
    if lapsed_status(status, recorded, lease_until, now) == "claimed":
        raise conflict(request_id, from_bytea(by), "claimed", lease_until)
    return load_checkpoint(text, request_id, where)


async def claim(
    cur: AsyncCursor[Any],
    request_id: str,
    text: str,
    reply: Answer,
    answered_by: str | None,
    digest: str,
    original: str | None,
    now: float,
    lease_until: float,
) -> Claim:
    """T4: take ``request_id`` for resuming with the host's own answer (``reply``, checked,
    encoded as ``text``), recording ``digest`` and ``original`` with it.

    Raises:
        AnswerConflict: answered, claimed under a live lease, or settled.
    """
    key = row_key(request_id)
    values: dict[str, Any] = {
        "key": key,
        "id": request_id.encode(),
        "answer": text,
        "by": to_bytea(answered_by),
        "digest": digest,
        "original": original,
        "lease": lease_until,
        "holder": holder_name(),
        "now": now,
    }
    for attempt in range(_RETRIES):
        await cur.execute(_CLAIM, values, prepare=True)
        row = await cur.fetchone()
        if row is not None and row[0] is not None:
            parsed = recorded_answer(reply, text)
            return Claim(request_id, row[0], parsed, answered_by, lease_until, digest=digest)
        if row is not None:  # not claimable: the row as its holder committed it
            by, status, recorded, lease = row[1:]
            current = lapsed_status(status, recorded, lease, now)
            if current != "pending" or attempt == _RETRIES - 1:
                raise conflict(request_id, from_bytea(by), current, lease)
    raise conflict(request_id, None)


async def take(
    cur: AsyncCursor[Any],
    request_id: str | None,
    queue: str,
    now: float,
    lease_until: float,
    where: str,
) -> Claim | None:
    """T5: take ``request_id``'s recorded answer, or the oldest one answered in ``queue``;
    ``None`` when there is none. The checkpoint comes with it (read with the take: one round
    trip fewer for the resumer); one that cannot be read is handed over as ``None`` with why
    (`taken_claim`), never raised: the row is taken already."""
    values: dict[str, Any] = {"now": now, "lease": lease_until, "holder": holder_name()}
    if request_id is None:
        await cur.execute(_TAKE_OLDEST, {**values, "queue": row_key(queue)}, prepare=True)
    else:
        values["key"] = row_key(request_id)
        await cur.execute(_TAKE_ONE, values, prepare=True)
    row = await cur.fetchone()
    if row is None:
        return None
    rid: str = from_bytea(row[0])
    found = answer_record(rid, row[2], 0.0, from_bytea(row[3]), "", where)
    by = found.answered_by
    return taken_claim(rid, row[1], found.answer, by, lease_until, row[5], row[4], where)


async def renew(cur: AsyncCursor[Any], claim: Claim, lease_until: float) -> Claim:
    """T6: extend the lease of the request's current claim.

    Raises:
        LeaseLost: ``claim`` is no longer the request's current one.
    """
    key = row_key(claim.request_id)
    await cur.execute(
        _RENEW, {"key": key, "token": claim.token, "lease": lease_until}, prepare=True
    )
    if cur.rowcount == 0:
        raise await _lease_lost(cur, claim.request_id)
    return replace(claim, lease_until=lease_until, taken=time.monotonic())


async def flag(
    cur: AsyncCursor[Any], claim: Claim, problem: str, now: float, lease_until: float
) -> None:
    """T13: hold the claimed request until ``lease_until`` (``inf``: for an operator), with
    ``problem``.

    Raises:
        LeaseLost: ``claim`` is no longer the request's current one.
    """
    values: dict[str, Any] = {
        "key": row_key(claim.request_id),
        "token": claim.token,
        "lease": lease_until,
        "problem": problem.encode(),
        "now": now,
    }
    await cur.execute(_FLAG, values, prepare=True)
    if cur.rowcount == 0:
        raise await _lease_lost(cur, claim.request_id)


async def save_progress(
    cur: AsyncCursor[Any], row: HaltRow, queue: str, claim: Claim, now: float
) -> None:
    """T7: replace the claimed run's checkpoint (stored under the claim's request).

    Raises:
        LeaseLost: ``claim`` is no longer the request's current one.
    """
    values: dict[str, Any] = {
        "key": row_key(claim.request_id),
        "token": claim.token,
        "checkpoint": row.checkpoint,
        "kind": row.kind.encode(),
        "tool": row.tool.encode(),
        "conversation": to_bytea(row.conversation_id),
        "created": row.created_at,
        "expires": to_bytea(row.expires_at),
        "prompt": row.prompt.encode(),
        "queue": row_key(queue),
        "now": now,
    }
    await cur.execute(_PROGRESS, values, prepare=True)
    if cur.rowcount == 0:
        raise await _lease_lost(cur, claim.request_id)


async def complete(
    cur: AsyncCursor[Any],
    request_id: str,
    claim: Claim | None,
    outcome: str | None,
    now: float,
) -> None:
    """T8: settle the request ``done`` (``expired`` for the expired decline).

    Raises:
        UnknownRequest: no row for ``request_id``.
        LeaseLost: ``claim`` is no longer the request's current one.
    """
    key = row_key(request_id)
    values: dict[str, Any] = {
        "key": key,
        "expired": _EXPIRED_BY,
        "now": now,
        "outcome": outcome,
        "note": key.hex(),
    }
    settled = False  # a claim on another request is not this request's current one
    if claim is None:
        await cur.execute(_COMPLETE, values, prepare=True)
        settled = cur.rowcount > 0
    elif claim.request_id == request_id:
        values["token"] = claim.token
        await cur.execute(_COMPLETE_HELD, values, prepare=True)
        settled = cur.rowcount > 0
    if not settled:
        await cur.execute(_HOLDER, (key,), prepare=True)
        held = await cur.fetchone()
        if held is None:
            raise _unknown(request_id)
        raise _lost(request_id, held[0])


async def release(cur: AsyncCursor[Any], request_id: str, token: int | None) -> None:
    """T9: give a claimed request back; a stale ``token`` (or no claim) changes nothing."""
    values = {"key": row_key(request_id), "token": token, "note": _note(request_id)}
    await cur.execute(_RELEASE, values, prepare=True)


async def _lease_lost(cur: AsyncCursor[Any], request_id: str) -> LeaseLost:
    await cur.execute(_HOLDER, (row_key(request_id),), prepare=True)
    held = await cur.fetchone()
    return _lost(request_id, None if held is None else held[0])


# -- retention and reads -----------------------------------------------------------------------


async def purge(cur: AsyncCursor[Any], cutoff: float) -> int:
    """T12: delete the requests settled at or before ``cutoff``; how many."""
    await cur.execute(_PURGE, (cutoff,), prepare=True)
    return cur.rowcount


async def answer_of(
    cur: AsyncCursor[Any], request_id: str, now: float, where: str
) -> AnswerRecord | None:
    """The recorded answer and status of ``request_id``; ``None`` while it waits.

    A host claim's own answer (T4) counts as recorded only once it settles.

    Raises:
        StoreError: the stored answer or outcome is not readable JSON (hand-edited).
    """
    await cur.execute(_ANSWER, (row_key(request_id),), prepare=True)
    row = await cur.fetchone()
    if row is None:
        return None
    text, answered_at, by, digest, status, recorded, lease_until, settled_at, kept = row[:9]
    original, problem, flagged_at, holder = row[9:]
    current = lapsed_status(status, recorded, lease_until, now)
    if current == "pending" or (current == "claimed" and not recorded):
        return None
    return request_record(
        request_id,
        text,
        answered_at,
        from_bytea(by),
        digest,
        current,
        settled_at,
        kept,
        where,
        original=original,
        problem=from_bytea(problem),
        flagged_at=flagged_at,
        lease_until=lease_until,
        holder=holder,
    )
