"""What the inbox's routes do with the store: read the pages' data, record answers.

`Views` is the toolkit-less side of answering: it reads the halted checkpoint (for the
request, the call, the digest and the context), turns a form or a JSON body into an `Answer`
(`toolnexus.inbox.forms`), checks it, and records it with `RunStore.post_answer` or
`RunStore.cancel` — exactly once; a loser is told who won. HTTP lives in
`toolnexus.inbox.app`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .._ages import age_seconds
from ..errors import (
    AnswerConflict,
    AnswerMismatch,
    CheckpointError,
    RequestExpired,
    UnknownRequest,
    UsageError,
)
from ..intake import AnswerRefused, Approve, Decline, intake
from ..loop.checkpoint import Checkpoint
from ..stores.asked import agent_path
from ..stores.checks import call_digest, halted_accepts, halted_call, is_past
from ..stores.inbox_index import HistoryEntry, InboxIndex
from ..stores.lookup import read_request
from ..stores.requests import SETTLED, AnswerRecord, PendingEntry, RunStore
from .auth import InboxUser
from .detail import RequestView, decision_of, detail_body, note_of, resolved_text
from .exports import EXPORT_COLUMNS as EXPORT_COLUMNS  # (where it was defined before)
from .exports import export_text
from .forms import Parsed, to_answer
from .html import Markup, iso
from .pages import ListRow, history_body, list_body

if TYPE_CHECKING:
    from starlette.requests import Request as HttpRequest

__all__ = ["QUICK_SHAPES", "Outcome", "QuickAction", "Views", "unreadable_message"]

QuickAction = Literal["approve", "decline"]
"""What one click (or a bulk action) does: approve, or decline."""
QUICK_SHAPES: frozenset[str] = frozenset({"approval", "authorization"})
"""The answers that need no form (`toolnexus.intake.Accepts.shape`): approved with a click."""

MAX_PER_PAGE = 200
EXPORT_MAX = 100_000


@dataclass(frozen=True, slots=True)
class Outcome:
    """How an answer or a cancel went: 303 (recorded) or the error status and why."""

    status: int
    message: str = ""
    errors: Mapping[str, str] = field(default_factory=lambda: {})


def _text(params: Mapping[str, str], name: str) -> str | None:
    value = params.get(name, "").strip()
    return value or None


def _int(params: Mapping[str, str], name: str, default: int, top: int) -> int:
    raw = params.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= top:
        raise UsageError(f"{name} must be a whole number from 1 to {top}, got {raw!r}")
    return int(raw)


def _age(params: Mapping[str, str]) -> float | None:
    raw = _text(params, "age")
    if raw is None:
        return None
    seconds = age_seconds(raw)
    if seconds is None:
        raise UsageError(f"age takes an age such as 90s, 15m, 2h or 1d, got {raw!r}")
    return seconds


def _filters(params: Mapping[str, str]) -> tuple[str | None, dict[str, Any]]:
    """The kind and the other filters of the list's query."""
    filters: dict[str, Any] = {
        "tool": _text(params, "tool"),
        "conversation_id": _text(params, "conversation"),
        "older_than": _age(params),
        "text": _text(params, "q"),
    }
    return _text(params, "kind"), filters


def _params(request: HttpRequest) -> dict[str, str]:
    return {k: v for k, v in request.query_params.items() if v != ""}


def unreadable_message(rid: str, exc: CheckpointError) -> str:
    """What the inbox says of a request whose stored checkpoint cannot be read: why, without
    where (the store's error names the database file or server; the log keeps it)."""
    cause = exc.__cause__
    reason = str(cause) if cause is not None else "it is not a checkpoint this toolnexus reads"
    if len(reason) > 200:
        reason = reason[:199] + "…"
    return (
        f"The stored state of request {rid} cannot be read ({reason}): it cannot be answered. "
        "Its run can still be cancelled."
    )


def _outcome_summary(outcome: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if outcome is None:
        return None
    return {k: outcome[k] for k in ("status", "text", "turns", "pending", "limit") if k in outcome}


class Views:
    """The inbox's reads and writes over one store."""

    def __init__(self, store: RunStore, index: InboxIndex, *, per_page: int) -> None:
        self.store = store
        self.index = index
        self.per_page = per_page

    # -- reading ---------------------------------------------------------------------------

    async def request_view(self, rid: str) -> RequestView | None:
        """The detail page's data for ``rid``; ``None`` when the store knows no such request.

        The one read of a request (`toolnexus.stores.lookup.read_request`, which the command
        line's ``show`` reads too): a waiting request from its checkpoint, an answered one from
        what the store kept with its row and its answer record.

        Raises:
            CheckpointError: the stored checkpoint of a request still waiting cannot be read
                (one answered or settled is shown from its audit row).
        """
        facts = await read_request(self.store, self.index, rid)
        if facts is None:
            return None
        asked, checkpoint, record = facts.asked, facts.checkpoint, facts.record
        arguments = facts.arguments
        schema = None
        if checkpoint is not None:
            schema = next(
                (
                    slot.input_schema
                    for slot in checkpoint.outstanding
                    if slot.request is not None and slot.request.id == rid
                ),
                None,
            )
        req = facts.request
        return RequestView(
            request=req,
            tool=facts.tool,
            arguments=arguments if arguments is not None else "{}",
            digest=call_digest(facts.tool, arguments) if arguments is not None else facts.digest,
            conversation_id=facts.conversation_id,
            created_at=facts.created_at,
            path=asked.path if asked is not None else (),
            user_text=asked.user_text if asked is not None else "",
            assistant_text=asked.assistant_text if asked is not None else "",
            context_cut=asked.cut if asked is not None else False,
            record=record,
            kept=arguments is not None,
            expired=record is None and is_past(req.expiresAt, time.time()),
            schema=schema if isinstance(schema, dict) else None,
            edit_schema=schema if checkpoint is not None else None,
        )

    def detail(self, view: RequestView, **options: Any) -> Markup:
        return detail_body(view, **options)

    async def status(self, rid: str) -> dict[str, Any] | None:
        """The request's state as JSON data (for the page that follows the run)."""
        record = await self.store.answer_record(rid)
        if record is None:
            checkpoint = await self.store.load_halt(rid)
            if checkpoint is None:
                return None
            expired = is_past(checkpoint.pending.expiresAt, time.time())
            return {"id": rid, "status": "expired" if expired else "pending"}
        return _record_json(record)

    async def _unreadable(self, rid: str) -> bool:
        """Whether ``rid``'s checkpoint cannot be read (else it was answered since)."""
        try:
            await self.store.load_halt(rid)
        except CheckpointError:
            return True
        return False

    async def _rows(self, entries: list[PendingEntry]) -> list[ListRow]:
        loaded = await self.index.load_halts([e.request_id for e in entries])
        rows: list[ListRow] = []
        for e in entries:
            checkpoint = loaded.get(e.request_id)
            if checkpoint is None:  # answered since, or unreadable (marked; its page says why)
                rows.append(ListRow(e, unreadable=await self._unreadable(e.request_id)))
                continue
            _, arguments = halted_call(checkpoint)
            quick = halted_accepts(checkpoint).shape in QUICK_SHAPES
            rows.append(ListRow(e, arguments, agent_path(checkpoint.pending), quick=quick))
        return rows

    async def _pending(
        self, params: Mapping[str, str]
    ) -> tuple[list[PendingEntry], dict[str, int], int, bool, int]:
        page = _int(params, "page", 1, 1_000_000)
        size = _int(params, "per_page", self.per_page, MAX_PER_PAGE)
        kind, filters = _filters(params)
        entries, counts = await asyncio.gather(
            self.index.search_pending(
                kind=kind, offset=(page - 1) * size, limit=size + 1, **filters
            ),
            self.index.count_pending(**filters),
        )
        total = counts.get(kind, 0) if kind is not None else sum(counts.values())
        return entries[:size], counts, total, len(entries) > size, page

    async def list_page(
        self,
        request: HttpRequest,
        base: str,
        *,
        params: Mapping[str, str] | None = None,
        user: InboxUser | None = None,
        csrf: str = "",
        notice: Markup | None = None,
    ) -> Markup:
        """The list page's ``<main>`` for the request's filters (or ``params``); with a
        ``user`` and their ``csrf``, the forms that answer from the list (and ``notice``, what
        a bulk action did, at its top)."""
        params = _params(request) if params is None else dict(params)
        entries, counts, total, more, page = await self._pending(params)
        rows = await self._rows(entries)
        return list_body(
            rows,
            base=base,
            counts=counts,
            params=params,
            page=page,
            more=more,
            total=total,
            csrf=csrf,
            may_answer=user.may_answer if user is not None else None,
            notice=notice,
        )

    async def counts(self, request: HttpRequest) -> dict[str, Any]:
        """The list's counts for the request's filters (what its live script shows):
        ``{"counts": {kind: n}, "total": n}``, ``total`` of the kind filtered on, if any."""
        kind, filters = _filters(_params(request))
        counts = await self.index.count_pending(**filters)
        total = counts.get(kind, 0) if kind is not None else sum(counts.values())
        return {"counts": counts, "total": total}

    async def _history(
        self, params: Mapping[str, str], offset: int, limit: int
    ) -> list[HistoryEntry]:
        return await self.index.list_history(
            answered_by=_text(params, "by"),
            status=_text(params, "status"),
            kind=_text(params, "kind"),
            text=_text(params, "q"),
            offset=offset,
            limit=limit,
        )

    async def history_page(self, request: HttpRequest, base: str) -> Markup:
        params = _params(request)
        page = _int(params, "page", 1, 1_000_000)
        size = _int(params, "per_page", self.per_page, MAX_PER_PAGE)
        found = await self._history(params, (page - 1) * size, size + 1)
        return history_body(
            found[:size], base=base, params=params, page=page, more=len(found) > size
        )

    async def export(self, request: HttpRequest, fmt: str) -> str:
        """Every history row matching the filters, as JSON lines or CSV."""
        params = _params(request)
        rows: list[HistoryEntry] = []
        offset = 0
        while offset < EXPORT_MAX:
            chunk = await self._history(params, offset, 500)
            rows += chunk
            if len(chunk) < 500:
                break
            offset += 500
        return export_text(rows, fmt)

    async def api_pending(self, request: HttpRequest) -> dict[str, Any]:
        params = _params(request)
        entries, counts, total, more, page = await self._pending(params)
        return {
            "requests": [_entry_json(e) for e in entries],
            "counts": counts,
            "total": total,
            "page": page,
            "more": more,
        }

    async def api_detail(self, rid: str) -> dict[str, Any] | None:
        view = await self.request_view(rid)
        if view is None:
            return None
        out: dict[str, Any] = {
            "request": view.request.to_dict(),
            "tool": view.tool,
            "arguments": view.arguments,
            "digest": view.digest,
            "conversation_id": view.conversation_id,
            "path": list(view.path),
            "expired": view.expired,
        }
        out["status"] = _record_json(view.record) if view.record is not None else None
        return out

    # -- answering -------------------------------------------------------------------------

    async def _refusal(self, rid: str, conflict: AnswerConflict | None = None) -> Outcome:
        """Why ``rid`` cannot be answered now: settled or answered (409), held by a resume
        that brought its own answer (409, the store's words), or unknown (404)."""
        record = await self.store.answer_record(rid)
        if record is not None:
            return Outcome(409, f"Already {resolved_text(record)}: your answer changed nothing.")
        if conflict is not None:
            return Outcome(409, f"{conflict}: your answer changed nothing.")
        return Outcome(404, f"No request {rid} is waiting.")

    async def _halted(self, rid: str, user: InboxUser) -> tuple[Checkpoint | None, Outcome | None]:
        try:
            checkpoint = await self.store.load_halt(rid)
        except CheckpointError as exc:
            return None, Outcome(500, unreadable_message(rid, exc))
        except UsageError:
            return None, Outcome(404, "That is not a request id.")
        if checkpoint is None:
            return None, await self._refusal(rid)
        if not user.may_answer(checkpoint.pending.kind):
            return None, Outcome(
                403, f"{user.name} may not answer {checkpoint.pending.kind} requests."
            )
        if await self.store.answer_record(rid) is not None:
            return None, await self._refusal(rid)
        return checkpoint, None

    async def _flagged(self, rid: str, user: InboxUser) -> bool | Outcome:
        """Whether ``rid`` is held for an operator (its run cannot go on without one: it may be
        cancelled whatever its state); an `Outcome` when ``user`` may not act on it."""
        try:
            record = await self.store.answer_record(rid)
        except UsageError:
            return Outcome(404, "That is not a request id.")
        if record is None or not record.problem or record.status in SETTLED:
            return False
        try:
            checkpoint = await self.store.load_halt(rid)
        except CheckpointError:
            checkpoint = None  # (an unreadable checkpoint is one reason to hold it)
        refused = _may_cancel(user, checkpoint.pending.kind if checkpoint is not None else None)
        return refused if refused is not None else True

    async def _cancellable(self, rid: str, user: InboxUser) -> Outcome | None:
        """Why ``user`` may not cancel the waiting request ``rid`` (``None``: they may) — an
        unreadable checkpoint does not stop a cancel (it is the way out for such a run)."""
        try:
            checkpoint = await self.store.load_halt(rid)
        except CheckpointError:
            if await self.store.answer_record(rid) is not None:
                return await self._refusal(rid)
            return _may_cancel(user, None)
        except UsageError:
            return Outcome(404, "That is not a request id.")
        if checkpoint is None:
            return await self._refusal(rid)
        refused = _may_cancel(user, checkpoint.pending.kind)
        if refused is None and await self.store.answer_record(rid) is not None:
            return await self._refusal(rid)
        return refused

    async def answer(self, rid: str, form: Mapping[str, list[str]], user: InboxUser) -> Outcome:
        """Record the answer a posted form means, as ``user`` (through the intake)."""
        checkpoint, refused = await self._halted(rid, user)
        if checkpoint is None:
            return refused or Outcome(404)
        parsed = to_answer(checkpoint.pending, form, halted_accepts(checkpoint))
        return await self._record(checkpoint, parsed, user)

    async def api_answer(self, rid: str, body: Mapping[str, Any], user: InboxUser) -> Outcome:
        """Record the answer a JSON body (``{ok, data?, reason?}``) gives, as ``user`` (through
        the intake: a plain ``{"ok": true}`` answers only what a bare approval answers)."""
        checkpoint, refused = await self._halted(rid, user)
        if checkpoint is None:
            return refused or Outcome(404)
        wire = {"id": rid, **{k: v for k, v in body.items() if k != "id"}}
        try:
            answer = intake(checkpoint.pending, wire, known=halted_accepts(checkpoint))
        except AnswerRefused as exc:
            return Outcome(400, str(exc), exc.errors)
        except (UsageError, AnswerMismatch) as exc:
            return Outcome(400, str(exc))
        return await self._record(checkpoint, Parsed(answer), user)

    async def quick(
        self, rid: str, action: QuickAction, reason: str | None, user: InboxUser
    ) -> Outcome:
        """Answer ``rid`` with one click, as ``user``: approve one whose answer needs no form
        (`QUICK_SHAPES`), or decline any, with ``reason`` — through the intake, recorded once.
        """
        checkpoint, refused = await self._halted(rid, user)
        if checkpoint is None:
            return refused or Outcome(404)
        shape = halted_accepts(checkpoint)
        reply = Approve() if action == "approve" else Decline(reason)
        try:
            answer = intake(checkpoint.pending, reply, known=shape)
        except AnswerRefused as exc:
            return Outcome(400, str(exc), exc.errors)
        if action == "approve" and shape.shape not in QUICK_SHAPES:
            # (the intake takes a bare approval of a kind it knows nothing of: its page asks)
            kind = checkpoint.pending.kind
            article = "An" if kind[:1] in "aeiou" else "A"
            return Outcome(
                400,
                f"{article} {kind} request is answered on its page, not approved with a click: "
                f"it accepts {shape.describe()}.",
            )
        return await self._record(checkpoint, Parsed(answer), user)

    async def _record(self, checkpoint: Checkpoint, parsed: Parsed, user: InboxUser) -> Outcome:
        rid = checkpoint.pending.id
        if parsed.answer is None:
            message = parsed.message or parsed.errors.get("", "Please correct the fields.")
            return Outcome(400, message, parsed.errors)
        try:
            await self.store.post_answer(rid, parsed.answer, answered_by=user.name)
        except AnswerConflict as exc:
            return await self._refusal(rid, exc)
        except RequestExpired:
            return Outcome(
                409, "This request expired before it was answered; nothing was approved."
            )
        except UnknownRequest:
            return Outcome(404, f"No request {rid} is waiting.")
        except AnswerRefused as exc:  # the store's own intake (a changed checkpoint)
            return Outcome(400, str(exc), exc.errors)
        except UsageError as exc:
            return Outcome(400, str(exc), {"": str(exc)})
        return Outcome(303)

    async def cancel(self, rid: str, reason: str | None, user: InboxUser) -> Outcome:
        """End the run waiting on ``rid`` — or held for an operator (a problem) — as ``user``."""
        flagged = await self._flagged(rid, user)
        if isinstance(flagged, Outcome):
            return flagged
        if not flagged:
            refused = await self._cancellable(rid, user)
            if refused is not None:
                return refused
        try:
            await self.store.cancel(rid, reason=reason, answered_by=user.name)
        except AnswerConflict as exc:
            return await self._refusal(rid, exc)
        except UnknownRequest:
            return Outcome(404, f"No request {rid} is waiting.")
        except UsageError as exc:
            return Outcome(400, str(exc))
        return Outcome(303)


def _may_cancel(user: InboxUser, kind: str | None) -> Outcome | None:
    """Refused (403) when ``user`` may not act on a request of ``kind``; a request whose kind
    cannot be read (its checkpoint is unreadable) only by a user who may answer every kind."""
    if kind is None and user.kinds is not None:
        return Outcome(403, f"{user.name} may not cancel a request whose kind cannot be read.")
    if kind is not None and not user.may_answer(kind):
        return Outcome(403, f"{user.name} may not answer {kind} requests.")
    return None


def _record_json(record: AnswerRecord) -> dict[str, Any]:
    return {
        "id": record.request_id,
        "status": record.status,
        "answered_by": record.answered_by,
        "answered_at": iso(record.answered_at),
        "decision": decision_of(record),
        "reason": note_of(record),
        "digest": record.digest,
        "original": record.original,
        "problem": record.problem,
        "outcome": _outcome_summary(record.outcome),
    }


def _entry_json(e: PendingEntry) -> dict[str, Any]:
    return {
        "id": e.request_id,
        "kind": e.kind,
        "prompt": e.prompt,
        "tool": e.tool,
        "conversation_id": e.conversation_id,
        "created_at": iso(e.created_at),
        "expires_at": e.expires_at,
        "status": e.status,
        "problem": e.problem,
    }
