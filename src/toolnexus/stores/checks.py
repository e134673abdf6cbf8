"""Argument checks and encodings shared by every run-store backend.

Each backend validates with these before it touches its rows, so a bad argument is the same
`UsageError` everywhere and changes nothing; stored text goes through the same encoders, so
what one backend accepts every backend accepts.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple, cast

from ..errors import (
    AnswerConflict,
    CheckpointError,
    InvalidAnswer,
    LeaseLost,
    UsageError,
)
from ..intake import Accepts, accepts
from ..loop.checkpoint import Checkpoint, Outstanding
from ..loop.edits import encode_arguments, proposed_edit
from ..suspension import (
    Answer,
    answer_problem,
    cancelled_answer,
    check_answer,
    format_timestamp,
    parse_timestamp,
)
from .requests import Claim, PendingEntry, RequestStatus

__all__ = [
    "AUDIT_KEYS",
    "AnswerAudit",
    "answer_audit",
    "answer_digests",
    "call_digest",
    "cancelled_answer",
    "check_answer",
    "check_claim",
    "check_filters",
    "check_flag",
    "check_hold",
    "check_limit",
    "check_optional_text",
    "check_problem",
    "check_request_id",
    "check_seconds",
    "conflict",
    "edit_audit",
    "encode_answer",
    "encode_checkpoint",
    "encode_original",
    "encode_outcome",
    "filter_entries",
    "halted_accepts",
    "halted_call",
    "halted_request",
    "is_past",
    "load_checkpoint",
    "pending_entry",
]


# The text ``json.dumps(value, sort_keys=True, separators=(",", ":"))`` gives, without
# building an encoder per call. Stored digests depend on it: never change its settings.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def call_digest(name: str, arguments: str) -> str:
    """sha256 over the halted call's tool name and canonicalised arguments."""
    try:
        canonical = _CANONICAL.encode(json.loads(arguments or "{}"))
    except ValueError:
        canonical = arguments
    return hashlib.sha256(f"{name}\n{canonical}".encode()).hexdigest()


def halted_call(checkpoint: Checkpoint) -> tuple[str, str]:
    """``(tool name, raw arguments)`` of the call the checkpoint's pending Request belongs to
    (``("", "{}")`` for a halt at the model call, which has no tool call)."""
    slot = _halted_slot(checkpoint)
    return ("", "{}") if slot is None else (slot.name, slot.arguments)


def _halted_slot(checkpoint: Checkpoint) -> Outstanding | None:
    for slot in checkpoint.outstanding:
        if slot.request is not None and slot.request.id == checkpoint.pending.id:
            return slot
    return checkpoint.outstanding[0] if checkpoint.outstanding else None


class AnswerAudit(NamedTuple):
    """What recording an answer keeps about the call it approves (`answer_audit`)."""

    approved: str
    """The digest of what the answer approves: the call with the edited arguments, if any."""
    halted: str
    """The digest of the halted call as the model made it."""
    original: dict[str, Any] | None
    """`edit_audit`: the model's call when the answer edits it, else ``None``."""


AUDIT_KEYS = ("tool", "arguments", "digest")
"""The keys of an `edit_audit` record, in order."""


def answer_audit(checkpoint: Checkpoint, answer: Answer) -> AnswerAudit:
    """The digests an answer records and, when it edits the call, the model's original.

    The digests differ only when ``answer`` approves the pending ``approval`` with edited
    arguments (`toolnexus.loop.edits`): then what is approved is the call with those
    arguments, and ``original`` keeps the call the model made. A halt at the model call has
    no call to edit: its answer is recorded as it is.

    ``answer`` was accepted by the answer intake (`toolnexus.intake`) already: an edit it
    carries is the one that will run.
    """
    slot = _halted_slot(checkpoint)
    if slot is None:
        halted = call_digest(*halted_call(checkpoint))
        return AnswerAudit(halted, halted, None)
    halted = call_digest(slot.name, slot.arguments)
    request = halted_request(checkpoint, answer.id)
    edit = proposed_edit(request, answer) if slot.input_schema is not False else None
    if edit is None:
        return AnswerAudit(halted, halted, None)
    original = {"tool": slot.name, "arguments": slot.arguments, "digest": halted}
    return AnswerAudit(call_digest(slot.name, encode_arguments(edit.value)), halted, original)


def answer_digests(checkpoint: Checkpoint, answer: Answer) -> tuple[str, str]:
    """``(what answer approves, the halted call as it is)``: the digests an answer records
    (see `answer_audit`)."""
    audit = answer_audit(checkpoint, answer)
    return audit.approved, audit.halted


def edit_audit(checkpoint: Checkpoint, answer: Answer) -> dict[str, Any] | None:
    """The model's call, for the audit, when ``answer`` approves it with edited arguments:
    ``{"tool": name, "arguments": the model's raw arguments JSON text, "digest": its digest}``;
    ``None`` when the answer does not edit. What `RunStore.post_answer` records by itself,
    and what a caller of `RunStore.claim` passes as ``original``.

    Example::

        claim = await store.claim(rid, answer, digest=answer_digests(cp, answer)[0],
                                  original=edit_audit(cp, answer))
    """
    return answer_audit(checkpoint, answer).original


def encode_original(value: object) -> str | None:
    """An `edit_audit` record (or ``None``) as the JSON text a store keeps.

    Raises:
        UsageError: not ``None`` or a mapping of exactly the `AUDIT_KEYS` to strings.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise UsageError(
            f"original must be None or what edit_audit() returns, got {type(value).__name__}"
        )
    given = cast(Mapping[object, object], value)
    if set(given) != set(AUDIT_KEYS):
        keys = sorted(map(repr, given))
        raise UsageError(f"original must have exactly the keys {list(AUDIT_KEYS)}, got {keys}")
    kept: dict[str, str] = {}
    for key in AUDIT_KEYS:
        text = given[key]
        if not isinstance(text, str):
            raise UsageError(f"original[{key!r}] must be a string, got {type(text).__name__}")
        kept[key] = _checked_text(text, f"original[{key!r}]")
    return _answer_encoder.encode(kept)


def halted_accepts(checkpoint: Checkpoint, request_id: str | None = None) -> Accepts:
    """What answers the request a stored halted run waits on (``request_id``, default its
    pending one), as a process without the toolkit knows it: the halted call's tool and the
    input schema the checkpoint keeps for edits."""
    rid = request_id or checkpoint.pending.id
    for slot in checkpoint.outstanding:
        if slot.request is not None and slot.request.id == rid:
            return accepts(slot.request, tool=slot.name, edit_schema=slot.input_schema)
    request = checkpoint.pending
    first = checkpoint.outstanding[0] if checkpoint.outstanding else None
    if first is None:
        return accepts(request)
    return accepts(request, tool=first.name, edit_schema=first.input_schema)


def pending_entry(checkpoint: Checkpoint, status: RequestStatus = "pending") -> PendingEntry:
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


def halted_request(checkpoint: Checkpoint, request_id: str) -> Any:
    """The Request of the outstanding call waiting on ``request_id`` (else the pending one)."""
    for slot in checkpoint.outstanding:
        if slot.request is not None and slot.request.id == request_id:
            return slot.request
    return checkpoint.pending


_answer_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def is_past(expires_at: str | None, now: float) -> bool:
    """Whether an ``expiresAt`` lies at or before ``now`` (an unreadable one counts as past)."""
    if not expires_at:
        return False
    try:
        deadline = parse_timestamp(expires_at)
    except ValueError:
        return True
    return datetime.fromtimestamp(now, UTC) >= deadline


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


def check_hold(value: object) -> float:
    """`RunStore.flag`'s ``hold_s``: seconds > 0, ``math.inf`` allowed (held until an operator
    acts); anything else — NaN, zero, negative, not a number — is a `UsageError`."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or math.isnan(value)
        or value <= 0
    ):
        raise UsageError(
            f"hold_s must be a number of seconds > 0 (math.inf: until an operator acts), "
            f"got {value!r}"
        )
    return float(value)


def check_problem(value: object) -> str:
    """`RunStore.flag`'s ``problem``: non-blank, valid Unicode text, else `UsageError`."""
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"a problem must be a non-empty string, got {value!r}")
    return _checked_text(value, "the problem")


def check_flag(
    request_id: object, claim: object, problem: object, hold_s: object
) -> tuple[str, Claim, str, float]:
    """`RunStore.flag`'s arguments, checked: ``(request id, claim, problem, hold)``.

    Raises:
        UsageError: a bad ``problem``, ``hold_s`` or ``claim``.
        LeaseLost: the claim is on another request.
    """
    rid = check_request_id(request_id)
    held = check_claim(claim)
    text = check_problem(problem)
    hold = check_hold(hold_s)
    if held.request_id != rid:
        raise LeaseLost(f'the claim is on request "{held.request_id}", not "{rid}"')
    return rid, held, text, hold


def check_claim(value: object) -> Claim:
    """``value`` when it is a `Claim` as a store hands it out, else `UsageError`."""
    if not isinstance(value, Claim):
        raise UsageError(f"a claim must be the Claim claim() or take() returned, got {value!r}")
    check_request_id(value.request_id)
    if isinstance(value.token, bool) or not isinstance(value.token, int):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UsageError(f"the claim's token must be an int, got {value.token!r}")
    return value


def check_limit(value: object) -> int:
    """``list_pending``'s limit: an int >= 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"limit must be an int >= 0, got {value!r}")
    return value


def encode_checkpoint(checkpoint: object) -> str:
    """The checkpoint's JSON text, as every store keeps it.

    Raises:
        UsageError: not a `Checkpoint`, one with no usable request id, or one holding text
            that is not valid Unicode. (No outstanding call is a halt at the model call.)
    """
    if not isinstance(checkpoint, Checkpoint):
        raise UsageError(f"save_halt takes a Checkpoint, got {type(checkpoint).__name__}")
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
        UsageError: not a well-typed `Answer`, or its data is not JSON (NaN, sets, objects,
            cycles).
    """
    if not isinstance(answer, Answer):
        raise UsageError(f"the answer must be an Answer, got {type(answer).__name__}")
    problem = answer_problem(answer)
    if problem:
        raise InvalidAnswer(f"toolnexus: the answer is malformed: {problem}")
    try:
        text = _answer_encoder.encode(answer.to_dict())
    except (TypeError, ValueError, RecursionError) as exc:
        raise UsageError(f"the answer must be JSON-serialisable: {exc}") from exc
    return _checked_text(text, "the answer")


def encode_outcome(outcome: object) -> str | None:
    """A resumed run's outcome (a JSON object, or ``None``) as compact JSON text.

    Raises:
        UsageError: not a dict of JSON data.
    """
    if outcome is None:
        return None
    if not isinstance(outcome, dict):
        raise UsageError(f"the outcome must be a dict or None, got {type(outcome).__name__}")
    try:
        text = _answer_encoder.encode(outcome)
    except (TypeError, ValueError, RecursionError) as exc:
        raise UsageError(f"the outcome must be JSON-serialisable: {exc}") from exc
    return _checked_text(text, "the outcome")


def conflict(
    request_id: str,
    answered_by: str | None,
    status: object = "answered",
    lease_until: object = None,
) -> AnswerConflict:
    """The `AnswerConflict` every backend raises for a request someone else holds or settled.

    Tells an answered request ("was already answered by ana") from a cancelled one ("was
    cancelled by ana") and from one that another resume holds right now ("is being answered
    right now by ana: another resume claimed it (lease until …)"), which becomes claimable
    again if that resume dies and its lease runs out.
    """
    who = f" by {answered_by}" if answered_by else ""
    if status == "cancelled":
        text = f'request "{request_id}" was cancelled{who}'
    elif status == "expired":
        text = f'request "{request_id}" expired before it was answered'
    elif status != "claimed":
        text = f'request "{request_id}" was already answered{who}'
    else:
        until = ""
        if isinstance(lease_until, int | float) and math.isfinite(lease_until):
            moment = datetime.fromtimestamp(lease_until, UTC)
            until = f" (lease until {format_timestamp(moment)})"
        elif lease_until == math.inf:  # flagged for an operator (T13)
            until = " (held until an operator acts)"
        text = (
            f'request "{request_id}" is being answered right now{who}: '
            f"another resume claimed it{until}"
        )
    known = status if isinstance(status, str) and status else None
    return AnswerConflict(text, answered_by=answered_by, status=known)


def _checked_text(text: str, what: str) -> str:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise UsageError(f"{what} must be valid Unicode text: {exc.reason}") from exc
    return text


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


def filter_entries(
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
