"""The SQLite run store's jobs: each function is one logical operation on one connection.

`SqliteStore` runs each of these inline on the event loop's connection or on its worker
thread (see `toolnexus.stores.sqlite`), in one go. The transitions are those of the table in
`toolnexus.stores.requests`; each statement names the row (T1–T13) it implements.

Two ways to be exactly once across processes:

* The hot claims (T4, T5) are *optimistic*: read the row, then write it with one ``UPDATE``
  whose ``WHERE`` repeats what was read (the token, and the state that allows the move). The
  write matches no row when another connection wrote in between; the job then runs again in
  one ``BEGIN IMMEDIATE`` transaction, where nobody can, so the loser gets a conflict that
  names a consistent holder. The winner's path is one read and one commit.
* The rarer writes that read a checkpoint or a deadline first (T2, T3, T11) and the give-back
  (T9) run in one ``BEGIN IMMEDIATE`` transaction: two processes racing serialise on
  SQLite's write lock.

The holder's writes (T6–T9, T13) are *fenced*: they match only ``status = 'claimed' AND token = ?``,
so a stale holder changes nothing and gets `LeaseLost` (a stale release is simply ignored).
A lapsed lease (T10) is nobody's write: every query compares ``lease_until`` with the
caller's clock.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

from ..errors import AnswerConflict, LeaseLost, UnknownRequest
from ..suspension import Answer, expired_decline
from ._runrows import (
    HaltRow,
    answer_record,
    lapsed_status,
    recorded_audit,
    stored_digest,
)
from .checks import conflict, encode_answer, is_past
from .inbox_index import like_pattern
from .requests import EXPIRED_BY, holder_name
from .sqlite_schema import immediate
from .sqlite_watch import AnswerRow, AnswerWatch, answer_row

__all__ = [
    "AnswerRow",
    "AnswerWatch",
    "ClaimRow",
    "answer_row",
    "cancel",
    "claim",
    "complete",
    "expire",
    "flag",
    "list_pending",
    "load_halt",
    "pending_filters",
    "post_answer",
    "purge",
    "release",
    "renew",
    "save_halt",
    "save_progress",
    "take",
    "take_next",
]

T = TypeVar("T")

_SETTLED = ("done", "expired", "cancelled")


class ClaimRow(NamedTuple):
    """What a take hands back: the new token, the answer, who gave it, the lease, the digest
    recorded with the answer and the stored checkpoint's text (read by the caller)."""

    token: int
    answer: Answer
    answered_by: str | None
    lease_until: float
    digest: str
    checkpoint: str | None


# T1. Saving again replaces the checkpoint, its index columns and what it asked (migration
# 10: kept when the checkpoint goes), and keeps the status.
_SAVE_HALT = (
    "INSERT INTO halts (request_id, status, checkpoint, kind, tool, conversation_id,"
    " created_at, expires_at, prompt, queue, asked)"
    " VALUES (?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (request_id) DO UPDATE SET checkpoint = excluded.checkpoint,"
    " kind = excluded.kind, tool = excluded.tool, conversation_id = excluded.conversation_id,"
    " created_at = excluded.created_at, expires_at = excluded.expires_at,"
    " prompt = excluded.prompt, queue = excluded.queue, asked = excluded.asked"
)
# The columns a resume's progress (T7) replaces.
_CHECKPOINT_COLUMNS = (
    "checkpoint = ?, kind = ?, tool = ?, conversation_id = ?, created_at = ?, expires_at = ?,"
    " prompt = ?, queue = ?"
)
_LOAD_HALT = "SELECT checkpoint FROM halts WHERE request_id = ?"
_STATE = (
    "SELECT status, token, recorded, lease_until, answered_by, checkpoint IS NULL, expires_at,"
    " problem IS NOT NULL FROM halts WHERE request_id = ?"
)
_EXISTS = "SELECT 1 FROM halts WHERE request_id = ?"
_WHO = "SELECT answered_by FROM halts WHERE request_id = ?"

# T4 on a request with no row: a bare row, so that it is answered only once too.
_INSERT_CLAIM = (
    "INSERT INTO halts (request_id, status, answer, answered_by, digest, original,"
    " lease_until, holder, token) VALUES (?, 'claimed', ?, ?, ?, ?, ?, ?, 1)"
    " ON CONFLICT (request_id) DO NOTHING"
)
# T4 (and T10 for a claim made with its own answer): pending, or such a claim run out.
_CLAIM = (
    "UPDATE halts SET status = 'claimed', answer = ?, answered_by = ?, digest = ?,"
    " original = ?, answered_at = NULL, token = ?, lease_until = ?, holder = ?"
    " WHERE request_id = ? AND token = ? AND recorded = 0"
    " AND (status = 'pending' OR (status = 'claimed' AND lease_until <= ?))"
)
# T4's common case in one statement: a pending request (or such a claim run out) is taken
# and its new token read back. Anything else falls back to reading the row (to refuse, or to
# claim a request that has no row).
_CLAIM_PENDING = (
    "UPDATE halts SET status = 'claimed', answer = ?, answered_by = ?, digest = ?,"
    " original = ?, answered_at = NULL, token = token + 1, lease_until = ?, holder = ?"
    " WHERE request_id = ? AND recorded = 0"
    " AND (status = 'pending' OR (status = 'claimed' AND lease_until <= ?)) RETURNING token"
)
# T5 (and T10 for a take): a recorded answer, queued or taken by a claim that ran out. The
# same terms as the partial index ``halts_queue``, so the queue's head is read from it.
_IS_QUEUED = (
    "recorded = 1 AND status IN ('answered', 'claimed')"
    " AND (status = 'answered' OR lease_until <= ?)"
)
# What a take reads: the checkpoint too, handed to the resumer with the claim.
_TAKEN_COLUMNS = "token, answer, answered_by, digest, checkpoint"
_QUEUED = f"SELECT {_TAKEN_COLUMNS} FROM halts WHERE request_id = ? AND {_IS_QUEUED}"
_QUEUE_HEAD = (
    f"SELECT request_id, {_TAKEN_COLUMNS} FROM halts WHERE queue = ? AND {_IS_QUEUED}"
    " ORDER BY answered_at, request_id LIMIT 1"
)
_TAKE = (
    "UPDATE halts SET status = 'claimed', token = ?, lease_until = ?, holder = ?"
    f" WHERE request_id = ? AND token = ? AND {_IS_QUEUED}"
)
# T6–T9 and T13 write only while the row is claimed under the holder's token.
_FENCE = " AND status = 'claimed' AND token = ?"
_RENEW = f"UPDATE halts SET lease_until = ? WHERE request_id = ?{_FENCE}"
# T13: held (an infinite lease is REAL Inf, which no clock reaches), with what went wrong.
_FLAG = (
    f"UPDATE halts SET lease_until = ?, problem = ?, flagged_at = ? WHERE request_id = ?{_FENCE}"
)
# T7 also records the answer: the approved call ran with it, so a lapse or a release returns
# the request to ``answered``, to be finished with the same answer. The resume got past
# whatever was flagged (T13): the problem goes.
_PROGRESS = (
    f"UPDATE halts SET {_CHECKPOINT_COLUMNS}, recorded = 1, problem = NULL, flagged_at = NULL,"
    f" answered_at = coalesce(answered_at, ?) WHERE request_id = ?{_FENCE}"
)
# T8: done, or expired for the expired decline; the checkpoint goes, the outcome stays.
_COMPLETE = (
    "UPDATE halts SET status = CASE WHEN answered_by = ? THEN 'expired' ELSE 'done' END,"
    " answered_at = coalesce(answered_at, ?), settled_at = ?, lease_until = NULL,"
    " checkpoint = NULL, outcome = ? WHERE request_id = ?"
)
_COMPLETE_HELD = _COMPLETE + _FENCE
# T9: the claimed row, to give it back.
_HELD = (
    "SELECT token, recorded, checkpoint IS NULL FROM halts"
    " WHERE request_id = ? AND status = 'claimed'"
)
_FORGET = "DELETE FROM halts WHERE request_id = ?"
_REQUEUE = "UPDATE halts SET status = 'answered', lease_until = NULL WHERE request_id = ?"
_UNCLAIM = (
    "UPDATE halts SET status = 'pending', lease_until = NULL, answer = NULL,"
    " answered_by = NULL, digest = '', original = NULL WHERE request_id = ?"
)
# T2/T3: the answer recorded and queued; any stale holder fenced out by the new token.
_RECORD = (
    "UPDATE halts SET status = 'answered', answer = ?, answered_by = ?, digest = ?,"
    " original = ?, answered_at = ?, lease_until = NULL, token = token + 1, recorded = 1"
    " WHERE request_id = ?"
)
# T11 (the digest, the original and a problem stay, for the audit).
_CANCEL = (
    "UPDATE halts SET status = 'cancelled', answer = ?, answered_by = ?, answered_at = ?,"
    " settled_at = ?, checkpoint = NULL, lease_until = NULL, token = token + 1, recorded = 1"
    " WHERE request_id = ?"
)
# T12, by the partial index ``halts_settled``.
_PURGE = "DELETE FROM halts WHERE status IN ('done', 'expired', 'cancelled') AND settled_at <= ?"
# What `list_pending` shows: what waits for a human — pending, or a claim made with its own
# answer that ran out (T10) — and the unsettled rows a resumer flagged (T13), whatever their
# lease. The first three terms are those of the partial index ``halts_pending`` (migration
# 7), which holds every filter column.
_PENDING_COLUMNS = (
    "SELECT request_id, kind, prompt, tool, conversation_id, created_at, expires_at, status,"
    " recorded, lease_until, problem, flagged_at FROM halts"
)
PENDING_WHERE = (
    " WHERE checkpoint IS NOT NULL AND status IN ('pending', 'answered', 'claimed')"
    " AND (recorded = 0 OR problem IS NOT NULL)"
    " AND (status = 'pending' OR problem IS NOT NULL OR lease_until <= ?)"
)
"""What `list_pending` shows, with the caller's clock as its one argument."""
WAITING_WHERE = (
    " WHERE recorded = 0 AND status IN ('pending', 'claimed')"
    " AND checkpoint IS NOT NULL AND (status = 'pending' OR lease_until <= ?)"
)
"""What waits for a human's answer (no flagged row), with the caller's clock as its one
argument: the terms of the partial index ``halts_unannounced`` but ``announced = 0``."""
# The inbox's search (`toolnexus.stores.inbox_index`): LIKE folds ASCII case, as the
# pattern does; the four columns are joined by U+001F, which a needle holding none cannot
# match across.
TEXT_MATCH = (
    " AND (coalesce(prompt, '') || char(31) || coalesce(tool, '') || char(31) || request_id"
    " || char(31) || coalesce(conversation_id, '')) LIKE ? ESCAPE '\\'"
)


class _Overtaken(Exception):
    """An optimistic write matched no row: another connection wrote in between."""


class _State(NamedTuple):
    """A row as the answering and claiming jobs read it."""

    status: str
    token: int
    recorded: int
    lease_until: float | None
    answered_by: str | None
    bare: int  # no checkpoint: a claim made for a request that had no row
    expires_at: str | None
    flagged: int  # carries a problem (T13)


# -- T1 and reads -------------------------------------------------------------------------


_COLUMNS = 8
"""The `HaltRow` fields this schema stores (its digest and deadline are read from the
checkpoint when an answer comes)."""


def save_halt(row: HaltRow, queue: str, asked: str, conn: sqlite3.Connection) -> None:
    # One upsert: a halt is nearly always new (a resume records its progress by T7, not
    # here), and a replace keeps the row's status.
    conn.execute(_SAVE_HALT, (*row[:_COLUMNS], queue, asked))


def load_halt(request_id: str, conn: sqlite3.Connection) -> object:
    found = conn.execute(_LOAD_HALT, (request_id,)).fetchone()
    return None if found is None else found[0]


def pending_filters(
    kind: str | None,
    tool: str | None,
    conversation_id: str | None,
    older_than: float | None,
    newer_than: float | None,
    now: float,
    text: str | None = None,
    *,
    where: str = PENDING_WHERE,
) -> tuple[str, list[object]]:
    """The listing's ``WHERE`` (``where``: `PENDING_WHERE`, or `WAITING_WHERE`; then each
    filter given) and its args."""
    sql = [where]
    args: list[object] = [now]
    for column, value in (("kind", kind), ("tool", tool), ("conversation_id", conversation_id)):
        if value is not None:
            sql.append(f" AND {column} = ?")
            args.append(value)
    # The same float arithmetic as the in-memory store, so ages agree to the last bit.
    if older_than is not None:
        sql.append(" AND ? - created_at >= ?")
        args += (now, older_than)
    if newer_than is not None:
        sql.append(" AND ? - created_at <= ?")
        args += (now, newer_than)
    if text is not None:
        sql.append(TEXT_MATCH)
        args.append(like_pattern(text))
    return "".join(sql), args


def list_pending(
    kind: str | None,
    tool: str | None,
    conversation_id: str | None,
    older_than: float | None,
    newer_than: float | None,
    limit: int,
    now: float,
    conn: sqlite3.Connection,
    *,
    text: str | None = None,
    offset: int = 0,
) -> list[tuple[Any, ...]]:
    where, args = pending_filters(kind, tool, conversation_id, older_than, newer_than, now, text)
    sql = f"{_PENDING_COLUMNS}{where} ORDER BY created_at, request_id LIMIT ? OFFSET ?"
    return conn.execute(sql, [*args, limit, offset]).fetchall()


# -- answering: T2, T3, T11 (on the worker, which wakes the parked runs) ------------------


def post_answer(
    watch: AnswerWatch,
    where: str,
    request_id: str,
    answer: str,
    reply: Answer,
    answered_by: str | None,
    digest: str | None,
    now: float,
    conn: sqlite3.Connection,
) -> tuple[AnswerRow, bool]:
    """T2, or T3 past the deadline: the recorded row, and whether it was the expired decline.

    ``answer`` is ``reply`` (checked by `check_answer`) encoded; the intake checks it against
    the stored checkpoint here, inside the transaction.

    Raises:
        UnknownRequest, AnswerConflict: see `RunStore.post_answer`; nothing was written.
        InvalidAnswer: the request does not take the answer; nothing was written.
        CheckpointError: the stored checkpoint cannot be read; nothing was written.
    """
    with immediate(conn):
        state = _halted(conn, request_id, now)
        audit = recorded_audit(load_halt(request_id, conn), request_id, where, reply, digest)
        if audit.answer is not reply:  # the intake's canonical answer is the one recorded
            answer = encode_answer(audit.answer)
        expired = is_past(state.expires_at, now)
        tag, original = audit.approved, audit.original
        if expired:
            answer, answered_by = encode_answer(expired_decline(request_id)), EXPIRED_BY
            tag, original = audit.halted, None
        conn.execute(_RECORD, (answer, answered_by, tag, original, now, request_id))
        found = _recorded(conn, request_id)
    watch.wake(conn, request_id)
    watch.wake_queued()
    return found, expired


def expire(
    watch: AnswerWatch, where: str, request_id: str, now: float, conn: sqlite3.Connection
) -> AnswerRow:
    """T3: record the expired decline for a pending request."""
    with immediate(conn):
        _halted(conn, request_id, now)
        digest = stored_digest(load_halt(request_id, conn), request_id, where)
        decline = encode_answer(expired_decline(request_id))
        conn.execute(_RECORD, (decline, EXPIRED_BY, digest, None, now, request_id))
        found = _recorded(conn, request_id)
    watch.wake(conn, request_id)
    watch.wake_queued()
    return found


def cancel(
    watch: AnswerWatch,
    request_id: str,
    answer: str,
    answered_by: str | None,
    now: float,
    conn: sqlite3.Connection,
) -> AnswerRow:
    """T11: settle a pending request — or an unsettled one a resumer flagged (T13), whatever
    its lease — as cancelled, its checkpoint dropped."""
    with immediate(conn):
        state = _state(conn, request_id)
        if state is None or not (state.flagged and state.status not in _SETTLED):
            _check_halted(request_id, state, now)
        conn.execute(_CANCEL, (answer, answered_by, now, now, request_id))
        found = _recorded(conn, request_id)
    watch.wake(conn, request_id)
    return found


# -- resuming: T4–T10 (inline when they can be) -------------------------------------------


def claim(
    request_id: str,
    answer: str,
    answered_by: str | None,
    digest: str,
    original: str | None,
    now: float,
    lease_s: float,
    conn: sqlite3.Connection,
) -> int:
    """T4: take a pending (or unknown) request with the host's own answer; the new token.

    Raises:
        AnswerConflict: answered, claimed under a live lease, or settled (names who).
    """
    until = now + lease_s
    recorded = (answer, answered_by, digest, original)
    holder = holder_name()

    def attempt() -> int:
        state = _state(conn, request_id)
        if state is None:
            values = (request_id, *recorded, until, holder)
            if conn.execute(_INSERT_CLAIM, values).rowcount == 0:
                raise _Overtaken
            return 1
        _refuse_unless_pending(request_id, state, now)
        token = state.token + 1
        values = (*recorded, token, until, holder, request_id, state.token, now)
        if conn.execute(_CLAIM, values).rowcount == 0:
            raise _Overtaken
        return token

    # (`fetchall`: the statement runs to its end, so an autocommit write commits here.)
    values = (*recorded, until, holder, request_id, now)
    taken = conn.execute(_CLAIM_PENDING, values).fetchall()
    return int(taken[0][0]) if taken else _optimistic(conn, attempt)


def take(
    where: str, request_id: str, now: float, lease_s: float, conn: sqlite3.Connection
) -> ClaimRow | None:
    """T5 for one request: ``None`` unless its answer is recorded and nobody holds it."""
    until = now + lease_s

    def attempt() -> ClaimRow | None:
        found = conn.execute(_QUEUED, (request_id, now)).fetchone()
        return None if found is None else _hold(conn, where, request_id, found, now, until)

    return _optimistic(conn, attempt)


def take_next(
    where: str, queue: str, now: float, lease_s: float, conn: sqlite3.Connection
) -> tuple[str, ClaimRow] | None:
    """T5 for the head of ``queue``: its oldest recorded answer nobody holds, or ``None``."""
    until = now + lease_s

    def attempt() -> tuple[str, ClaimRow] | None:
        found = conn.execute(_QUEUE_HEAD, (queue, now)).fetchone()
        if found is None:
            return None
        request_id, *held = found
        return request_id, _hold(conn, where, request_id, held, now, until)

    return _optimistic(conn, attempt)


def renew(request_id: str, token: int, until: float, conn: sqlite3.Connection) -> None:
    """T6. Raises `LeaseLost` when the token is no longer the request's current one."""
    if conn.execute(_RENEW, (until, request_id, token)).rowcount == 0:
        raise _lease_lost(conn, request_id)


def flag(
    request_id: str,
    token: int,
    until: float,
    problem: str,
    now: float,
    conn: sqlite3.Connection,
) -> None:
    """T13: hold the claimed request until ``until`` with ``problem``.

    Raises:
        LeaseLost: ``token`` is no longer the request's current one.
    """
    if conn.execute(_FLAG, (until, problem, now, request_id, token)).rowcount == 0:
        raise _lease_lost(conn, request_id)


def save_progress(
    row: HaltRow,
    queue: str,
    request_id: str,
    token: int,
    now: float,
    conn: sqlite3.Connection,
) -> None:
    """T7: the claimed run's new checkpoint; its answer now counts as recorded.

    Raises:
        LeaseLost: ``token`` is no longer the request's current one.
    """
    values = (*row[1:_COLUMNS], queue, now, request_id, token)
    if conn.execute(_PROGRESS, values).rowcount == 0:
        raise _lease_lost(conn, request_id)


def complete(
    request_id: str,
    held: tuple[str, int] | None,
    outcome: str | None,
    now: float,
    conn: sqlite3.Connection,
) -> None:
    """T8: settle the request; fenced by ``held`` (the claim's request id and token) if given.

    Raises:
        UnknownRequest: no row for ``request_id``.
        LeaseLost: ``held`` is no longer the request's current claim, or is another
            request's.
    """
    settle = (EXPIRED_BY, now, now, outcome)
    if held is None:
        if conn.execute(_COMPLETE, (*settle, request_id)).rowcount == 0:
            raise _unknown(request_id)
        return
    holder, token = held
    fenced = (*settle, request_id, token)
    if holder == request_id and conn.execute(_COMPLETE_HELD, fenced).rowcount == 1:
        return
    if not _exists(conn, request_id):
        raise _unknown(request_id)
    if holder != request_id:
        raise LeaseLost(f'the claim is on request "{holder}", not "{request_id}"')
    raise _lease_lost(conn, request_id)


def release(request_id: str, token: int | None, conn: sqlite3.Connection) -> bool:
    """T9: give a claimed request back; True when its answer is queued again.

    A claim made for a request with no row is forgotten; one made with its own answer goes
    back to ``pending``, forgetting that answer. A stale ``token`` changes nothing.
    """
    with immediate(conn):
        found = conn.execute(_HELD, (request_id,)).fetchone()
        if found is None or (token is not None and found[0] != token):
            return False
        _, recorded, bare = found
        if bare:
            conn.execute(_FORGET, (request_id,))
            return False
        conn.execute(_REQUEUE if recorded else _UNCLAIM, (request_id,))
        return bool(recorded)


# -- retention: T12 -----------------------------------------------------------------------


def purge(cutoff: float, conn: sqlite3.Connection) -> int:
    """Delete the requests settled at or before ``cutoff``; how many."""
    return conn.execute(_PURGE, (cutoff,)).rowcount


# -- the rules ----------------------------------------------------------------------------


def _optimistic(conn: sqlite3.Connection, attempt: Callable[[], T]) -> T:
    """Run ``attempt`` as it is; when another connection wrote in between its read and its
    write, run it again in one transaction, where it cannot lose."""
    try:
        return attempt()
    except _Overtaken:
        with immediate(conn):
            return attempt()


def _state(conn: sqlite3.Connection, request_id: str) -> _State | None:
    found = conn.execute(_STATE, (request_id,)).fetchone()
    return None if found is None else _State(*found)


def _halted(conn: sqlite3.Connection, request_id: str, now: float) -> _State:
    """The row of a halted run that is still pending (T10 applied), for T2, T3 and T11.

    Raises:
        UnknownRequest: no halted run waits on ``request_id``.
        AnswerConflict: it was answered, is claimed under a live lease, or was settled.
    """
    return _check_halted(request_id, _state(conn, request_id), now)


def _check_halted(request_id: str, state: _State | None, now: float) -> _State:
    """`_halted` for a row read already."""
    if state is None or (state.bare and state.status in ("pending", "claimed")):
        raise _unknown(request_id)
    _refuse_unless_pending(request_id, state, now)
    return state


def _refuse_unless_pending(request_id: str, state: _State, now: float) -> None:
    status = lapsed_status(state.status, state.recorded, state.lease_until, now)
    if status != "pending":
        raise _conflict(request_id, state, status)


def _conflict(request_id: str, state: _State, status: str) -> AnswerConflict:
    who = state.answered_by if isinstance(state.answered_by, str) else None
    return conflict(request_id, who, status, state.lease_until)


def _hold(
    conn: sqlite3.Connection,
    where: str,
    request_id: str,
    found: Any,
    now: float,
    until: float,
) -> ClaimRow:
    """T5's write, for a row read as queued with ``(token, answer, answered_by, digest,
    checkpoint)``.

    The answer is decoded first, so a hand-edited one is a `StoreError` that takes nothing;
    the checkpoint is read by the caller, after the take (which then never fails on it).
    """
    token, text, who, digest, checkpoint = found
    answer = answer_record(request_id, text, None, who, None, where).answer
    values = (token + 1, until, holder_name(), request_id, token, now)
    if conn.execute(_TAKE, values).rowcount == 0:
        raise _Overtaken
    by = who if isinstance(who, str) else None
    tag = digest if isinstance(digest, str) else ""
    return ClaimRow(token + 1, answer, by, until, tag, checkpoint)


def _recorded(conn: sqlite3.Connection, request_id: str) -> AnswerRow:
    found = answer_row(request_id, conn)
    assert found is not None  # just written, in this transaction
    return found


def _exists(conn: sqlite3.Connection, request_id: str) -> bool:
    return conn.execute(_EXISTS, (request_id,)).fetchone() is not None


def _unknown(request_id: str) -> UnknownRequest:
    return UnknownRequest(f'no halted run waits on request "{request_id}"')


def _lease_lost(conn: sqlite3.Connection, request_id: str) -> LeaseLost:
    row = conn.execute(_WHO, (request_id,)).fetchone()
    who = row[0] if row is not None and isinstance(row[0], str) else None
    return LeaseLost(
        f'the claim on request "{request_id}" was lost: another resume took it over after '
        "its lease ran out (nothing was written)",
        answered_by=who,
    )
