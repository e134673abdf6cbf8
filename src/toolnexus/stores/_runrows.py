"""How a halted run becomes a SQL row and back, shared by the SQLite and Postgres stores.

A ``halts`` row keeps the checkpoint as its JSON text plus the pending-index columns copied
from it, so `list_pending` never parses a checkpoint. Decoding is the store's side of the
boundary: a row hand-edited into garbage is a `CheckpointError` (checkpoint) or a
`StoreError` (answer) that names the request, and the row is never touched.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any, NamedTuple, cast

from ..errors import CheckpointError, StoreError
from ..intake import intake
from ..loop.checkpoint import Checkpoint
from ..suspension import Answer, parse_timestamp
from .checks import (
    answer_audit,
    call_digest,
    encode_checkpoint,
    encode_original,
    halted_accepts,
    halted_call,
    halted_request,
    load_checkpoint,
)
from .inbox_index import RunEntry
from .requests import AnswerRecord, Claim, PendingEntry, RequestStatus

__all__ = [
    "HaltRow",
    "Recorded",
    "answer_record",
    "halt_row",
    "lapsed_status",
    "listed",
    "load_checkpoint",
    "pending",
    "recorded_answer",
    "recorded_audit",
    "request_record",
    "run_entry",
    "stored_digest",
    "taken_claim",
]


class HaltRow(NamedTuple):
    """The values `save_halt` writes, in the order the SQL statements bind them."""

    request_id: str
    checkpoint: str
    kind: str
    tool: str
    conversation_id: str | None
    created_at: float
    expires_at: str | None
    prompt: str
    digest: str
    """The halted call's digest (`call_digest`), what an answer records."""
    deadline: float | None
    """``expires_at`` as epoch seconds (``0.0`` when unreadable: counts as past)."""
    version: int | None
    """The checkpoint format version the text declares (`written_version`)."""


# How `Checkpoint.dumps` begins: the version first, compact separators.
_WRITTEN_VERSION = re.compile(r'\{"version":([1-9][0-9]{0,8}),')


def written_version(text: str) -> int | None:
    """The version a checkpoint's text declares, read from its first bytes as
    `Checkpoint.dumps` writes them; ``None`` when it does not begin that way."""
    found = _WRITTEN_VERSION.match(text)
    return None if found is None else int(found.group(1))


def halt_row(checkpoint: Checkpoint, *, digest: bool = True) -> HaltRow:
    """Encode a checkpoint and its pending-index columns.

    ``digest=False`` leaves out the halted call's digest, deadline and version (``""``,
    ``None``, ``None``), for a write that does not store them (the Postgres progress write,
    every SQLite write).

    Raises:
        UsageError: see `toolnexus.stores.runs.encode_checkpoint`.
    """
    text = encode_checkpoint(checkpoint)
    name, arguments = halted_call(checkpoint)
    req = checkpoint.pending
    return HaltRow(
        req.id,
        text,
        req.kind,
        name,
        checkpoint.conversation_id,
        checkpoint.created_at,
        req.expiresAt,
        req.prompt,
        call_digest(name, arguments) if digest else "",
        _deadline(req.expiresAt) if digest else None,
        written_version(text) if digest else None,
    )


def _deadline(expires_at: str | None) -> float | None:
    """``expiresAt`` in epoch seconds, the rule of `toolnexus.stores.checks.is_past`."""
    if not expires_at:
        return None
    try:
        return parse_timestamp(expires_at).timestamp()
    except ValueError:
        return 0.0


def stored_digest(text: object, request_id: str, where: str) -> str:
    """The digest of the halted call in a stored checkpoint; ``""`` when none is stored."""
    if text is None:
        return ""
    return call_digest(*halted_call(load_checkpoint(text, request_id, where)))


class Recorded(NamedTuple):
    """The answer T2/T3 record and the columns they write beside it (`recorded_audit`)."""

    answer: Answer
    """The answer the intake accepted (a surface's reply made canonical: an option as the
    request spells it); the one to record."""
    approved: str
    """The digest recorded with the answer: what it approves."""
    halted: str
    """The digest recorded with the expired decline instead: the halted call as it is."""
    original: str | None
    """The `toolnexus.stores.checks.edit_audit` record as JSON text (``None``: no edit)."""


def recorded_audit(
    text: object, request_id: str, where: str, answer: Answer, digest: str | None
) -> Recorded:
    """What T2/T3 record for ``answer``, read from the stored checkpoint ``text``.

    The checkpoint is always read: an answer is never recorded for a run that cannot resume
    (every backend refuses alike). The answer goes through the answer intake
    (`toolnexus.intake`) against the request and the halted call the checkpoint keeps — a
    question takes its answers, a form data that fits its schema, an approval's edit fits the
    tool's schema … — and the accepted answer is the one recorded. A ``digest`` the caller
    passed is recorded as it is; otherwise the checkpoint's `answer_audit`: what the answer
    approves — the edited arguments when it edits — and the halted call as it is, and the
    model's call an edit replaces (``original``).

    Raises:
        CheckpointError: the stored checkpoint cannot be read; nothing may be recorded.
        InvalidAnswer: the request does not take the answer (`AnswerRefused`, naming what it
            takes); nothing may be recorded.
    """
    if text is None:  # no checkpoint: the caller refused the request before
        return Recorded(answer, digest or "", digest or "", None)
    checkpoint = load_checkpoint(text, request_id, where)
    accepted = intake(
        halted_request(checkpoint, request_id),
        answer,
        known=halted_accepts(checkpoint, request_id),
    )
    audit = answer_audit(checkpoint, accepted)
    original = encode_original(audit.original)
    if digest is not None:
        return Recorded(accepted, digest, digest, original)
    return Recorded(accepted, audit.approved, audit.halted, original)


def recorded_answer(reply: Answer, text: str) -> Answer:
    """The answer as a store gives it back once recorded: ``reply`` read back from ``text``,
    its JSON (`toolnexus.stores.checks.encode_answer` of it). Without ``data`` the round trip
    changes nothing (its other fields were checked, its text is valid Unicode): ``reply``
    itself, without the decode."""
    if reply.data is None:
        return reply
    return Answer.from_dict(json.loads(text))


def answer_record(
    request_id: str,
    answer: object,
    answered_at: object,
    answered_by: object,
    digest: object,
    where: str,
) -> AnswerRecord:
    """Rebuild an `AnswerRecord` from its stored columns.

    Raises:
        StoreError: the stored answer is not an Answer's JSON (hand-edited); row untouched.
    """
    try:
        parsed = Answer.from_dict(json.loads(answer))  # pyright: ignore[reportArgumentType]
    except (TypeError, ValueError, RecursionError) as exc:
        raise StoreError(
            f"the answer recorded for request {request_id!r} in {where} cannot be read "
            f"({exc}); the stored row was left as it is"
        ) from exc
    return AnswerRecord(
        request_id,
        parsed,
        float(answered_at) if isinstance(answered_at, int | float) else 0.0,
        answered_by if isinstance(answered_by, str) else None,
        digest if isinstance(digest, str) else "",
    )


def pending(
    request_id: str,
    kind: str,
    prompt: str,
    tool: str,
    conversation_id: str | None,
    created_at: float,
    expires_at: str | None,
) -> PendingEntry:
    """A pending-index row as `list_pending` returns it."""
    return PendingEntry(
        request_id, kind, prompt, tool, conversation_id, created_at, expires_at, "pending"
    )


def listed(row: tuple[Any, ...], now: float) -> PendingEntry:
    """A row of the listing (`pending`'s columns, then ``status, recorded, lease_until,
    problem, flagged_at``) as `list_pending` returns it: a flagged row (T13) with its status
    as of ``now`` and its problem."""
    status, recorded, lease_until, problem, flagged_at = row[7:12]
    entry = pending(*row[:7])
    if problem is None and status == "pending":
        return entry
    current = cast(RequestStatus, lapsed_status(status, recorded, lease_until, now))
    at = float(flagged_at) if isinstance(flagged_at, int | float) else None
    return replace(entry, status=current, problem=problem, flagged_at=at)


def taken_claim(
    request_id: str,
    token: int,
    answer: Answer,
    answered_by: str | None,
    lease_until: float,
    digest: object,
    text: object,
    where: str,
) -> Claim:
    """The `Claim` of a take (T5), with the stored checkpoint ``text`` read — or, when it
    cannot be read, ``checkpoint=None`` and why in ``unreadable``: the row is taken already,
    so the take hands it over rather than raise (the resumer flags it, T13)."""
    checkpoint: Checkpoint | None = None
    unreadable: str | None = None
    if text is not None:
        try:
            checkpoint = load_checkpoint(text, request_id, where)
        except CheckpointError as exc:
            unreadable = str(exc)
    return Claim(
        request_id,
        token,
        answer,
        answered_by,
        lease_until,
        checkpoint=checkpoint,
        digest=digest if isinstance(digest, str) else "",
        unreadable=unreadable,
    )


def run_entry(row: tuple[Any, ...], now: float) -> RunEntry:
    """A row of the runs in flight (``request_id, kind, prompt, tool, conversation_id,
    created_at, status, answered_by, answered_at, recorded, lease_until, holder, problem,
    flagged_at``, text decoded) as `InboxIndex.list_runs` returns it, T10 applied at ``now``."""
    rid, kind, prompt, tool, conversation_id, created_at, status, who, answered_at = row[:9]
    recorded, lease_until, holder, problem, flagged_at = row[9:]
    current = cast(RequestStatus, lapsed_status(status, recorded, lease_until, now))
    claimed = current == "claimed"
    return RunEntry(
        rid,
        kind or "",
        prompt or "",
        tool or "",
        conversation_id,
        float(created_at or 0.0),
        current,
        who if isinstance(who, str) else None,
        float(answered_at) if isinstance(answered_at, int | float) else None,
        float(lease_until) if claimed and isinstance(lease_until, int | float) else None,
        holder if claimed and isinstance(holder, str) else None,
        problem if isinstance(problem, str) else None,
        float(flagged_at) if isinstance(flagged_at, int | float) else None,
    )


def lapsed_status(status: object, recorded: object, lease_until: object, now: float) -> str:
    """A row's status with T10 applied: a claim whose lease ran out counts as given back,
    ``answered`` when its answer was recorded before the claim, else ``pending``."""
    if status == "claimed" and isinstance(lease_until, int | float) and lease_until <= now:
        return "answered" if recorded else "pending"
    return status if isinstance(status, str) else ""


def request_record(
    request_id: str,
    answer: object,
    answered_at: object,
    answered_by: object,
    digest: object,
    status: str,
    settled_at: object,
    outcome: object,
    where: str,
    *,
    original: object = None,
    problem: object = None,
    flagged_at: object = None,
    lease_until: object = None,
    holder: object = None,
) -> AnswerRecord:
    """`answer_record` with the request's status, when it settled, the run's outcome, the
    model's call an edit replaced (``original``, JSON text) and a resumer's ``problem``; and,
    while ``status`` is ``claimed``, the claim's lease and holder (else both ``None``: a
    lapsed or finished claim holds nothing).

    Raises:
        StoreError: the stored answer, outcome or original is not readable JSON
            (hand-edited); the row is left as it is.
    """
    record = answer_record(request_id, answer, answered_at, answered_by, digest, where)
    return replace(
        record,
        status=cast(RequestStatus, status),
        settled_at=float(settled_at) if isinstance(settled_at, int | float) else None,
        outcome=None if outcome is None else _object(request_id, outcome, where, "outcome"),
        original=None if original is None else _object(request_id, original, where, "original"),
        problem=problem if isinstance(problem, str) else None,
        flagged_at=float(flagged_at) if isinstance(flagged_at, int | float) else None,
        lease_until=float(lease_until)
        if status == "claimed" and isinstance(lease_until, int | float)
        else None,
        holder=holder if status == "claimed" and isinstance(holder, str) else None,
    )


def _object(request_id: str, text: object, where: str, what: str) -> dict[str, Any]:
    problem = "not a JSON object"
    try:
        parsed = json.loads(text)  # pyright: ignore[reportArgumentType]
    except (TypeError, ValueError, RecursionError) as exc:
        parsed, problem = None, str(exc)
    if not isinstance(parsed, dict):
        raise StoreError(
            f"the {what} recorded for request {request_id!r} in {where} cannot be read "
            f"({problem}); the stored row was left as it is"
        )
    return cast(dict[str, Any], parsed)
