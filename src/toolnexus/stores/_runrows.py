"""How a halted run becomes a SQL row and back, shared by the SQLite and Postgres stores.

A ``halts`` row keeps the checkpoint as its JSON text plus the pending-index columns copied
from it, so `list_pending` never parses a checkpoint. Decoding is the store's side of the
boundary: a row hand-edited into garbage is a `CheckpointError` (checkpoint) or a
`StoreError` (answer) that names the request, and the row is never touched.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, NamedTuple, cast

from ..errors import StoreError
from ..loop.checkpoint import Checkpoint
from ..suspension import Answer, parse_timestamp
from .checks import (
    answer_digests,
    call_digest,
    carries_edit,
    encode_checkpoint,
    halted_call,
    load_checkpoint,
)
from .requests import AnswerRecord, PendingEntry, RequestStatus

__all__ = [
    "HaltRow",
    "answer_record",
    "halt_row",
    "lapsed_status",
    "load_checkpoint",
    "needs_checkpoint",
    "pending",
    "recorded_answer",
    "recorded_digests",
    "request_record",
    "stored_digest",
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


def halt_row(checkpoint: Checkpoint, *, digest: bool = True) -> HaltRow:
    """Encode a checkpoint and its pending-index columns.

    ``digest=False`` leaves out the halted call's digest and deadline (``""``, ``None``), for
    a write that does not store them (the Postgres progress write, every SQLite write).

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


def needs_checkpoint(answer: Answer, digest: str | None) -> bool:
    """Whether recording ``answer`` reads the stored checkpoint (`recorded_digests`)."""
    return digest is None or carries_edit(answer)


def recorded_digests(
    text: object, request_id: str, where: str, answer: Answer, digest: str | None
) -> tuple[str, str]:
    """The digests T2/T3 record: ``(for answer, for the expired decline instead)``.

    A ``digest`` the caller passed is recorded as it is; otherwise the stored checkpoint's
    (``text``, read when `needs_checkpoint`) `answer_digests`: what ``answer`` approves — the
    edited arguments when it edits — and the halted call as it is. An edit is checked either
    way.

    Raises:
        CheckpointError: the stored checkpoint is needed and cannot be read.
        InvalidAnswer: the answer's edited arguments are invalid; nothing may be recorded.
    """
    if not needs_checkpoint(answer, digest) or text is None:
        return digest or "", digest or ""
    approved, halted = answer_digests(load_checkpoint(text, request_id, where), answer)
    return (digest, digest) if digest is not None else (approved, halted)


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
) -> AnswerRecord:
    """`answer_record` with the request's status, when it settled and the run's outcome.

    Raises:
        StoreError: the stored answer or outcome is not readable JSON (hand-edited); the row
            is left as it is.
    """
    record = answer_record(request_id, answer, answered_at, answered_by, digest, where)
    return replace(
        record,
        status=cast(RequestStatus, status),
        settled_at=float(settled_at) if isinstance(settled_at, int | float) else None,
        outcome=None if outcome is None else _outcome(request_id, outcome, where),
    )


def _outcome(request_id: str, text: object, where: str) -> dict[str, Any]:
    problem = "not a JSON object"
    try:
        parsed = json.loads(text)  # pyright: ignore[reportArgumentType]
    except (TypeError, ValueError, RecursionError) as exc:
        parsed, problem = None, str(exc)
    if not isinstance(parsed, dict):
        raise StoreError(
            f"the outcome recorded for request {request_id!r} in {where} cannot be read "
            f"({problem}); the stored row was left as it is"
        )
    return cast(dict[str, Any], parsed)
