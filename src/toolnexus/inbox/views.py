"""What the inbox's routes do with the store: read the pages' data, record answers.

`Views` is the toolkit-less side of answering: it reads the halted checkpoint (for the
request, the call, the digest and the context), turns a form or a JSON body into an `Answer`
(`toolnexus.inbox.forms`), checks it, and records it with `RunStore.post_answer` or
`RunStore.cancel` — exactly once; a loser is told who won. HTTP lives in
`toolnexus.inbox.app`.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from .._ages import age_seconds
from ..errors import (
    AnswerConflict,
    AnswerMismatch,
    CheckpointError,
    RequestExpired,
    UnknownRequest,
    UsageError,
)
from ..intake import AnswerRefused, intake
from ..loop.checkpoint import Checkpoint
from ..stores.checks import halted_accepts, halted_call, is_past
from ..stores.inbox_index import HistoryEntry, InboxIndex
from ..stores.lookup import read_request
from ..stores.requests import SETTLED, AnswerRecord, PendingEntry, RunStore
from .auth import InboxUser
from .detail import RequestView, decision_of, detail_body, message_text, note_of, resolved_text
from .forms import Parsed, to_answer
from .html import Markup, iso
from .pages import ListRow, history_body, list_body

if TYPE_CHECKING:
    from starlette.requests import Request as HttpRequest

__all__ = ["Outcome", "Views", "unreadable_message"]

MAX_PER_PAGE = 200
EXPORT_MAX = 100_000
EXPORT_COLUMNS = (
    "request_id",
    "kind",
    "tool",
    "prompt",
    "conversation_id",
    "status",
    "decision",
    "answered_by",
    "answered_at",
    "reason",
    "digest",
    "original_arguments",
    "original_digest",
    "problem",
)


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

        Raises:
            CheckpointError: the stored checkpoint of a request still waiting cannot be read
                (one answered or settled is shown from its audit row).
        """
        facts = await read_request(self.store, self.index, rid)
        if facts is None:
            return None
        checkpoint, record = facts.checkpoint, facts.record
        if checkpoint is None:
            return RequestView(
                request=facts.request,
                tool=facts.tool,
                digest=facts.digest,
                conversation_id=facts.conversation_id,
                created_at=facts.created_at,
                record=record,
            )
        req = checkpoint.pending
        schema = next(
            (
                slot.input_schema
                for slot in checkpoint.outstanding
                if slot.request is not None and slot.request.id == rid
            ),
            None,
        )
        path_raw: Any = (req.data or {}).get("path")
        path = (
            tuple(str(p) for p in cast(list[Any], path_raw)) if isinstance(path_raw, list) else ()
        )
        users = [m for m in checkpoint.messages if m.get("role") == "user"]
        assistant = checkpoint.messages[-1] if checkpoint.messages else None
        if assistant is not None and assistant.get("role") != "assistant":
            assistant = None
        return RequestView(
            request=req,
            tool=facts.tool,
            arguments=facts.arguments or "{}",
            digest=facts.digest,
            conversation_id=facts.conversation_id,
            created_at=facts.created_at,
            path=path,
            user_text=message_text(users[-1] if users else None),
            assistant_text=message_text(assistant),
            record=record,
            expired=record is None and is_past(req.expiresAt, time.time()),
            schema=schema if isinstance(schema, dict) else None,
            edit_schema=schema,
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
            path_raw: Any = (checkpoint.pending.data or {}).get("path")
            path = (
                tuple(str(p) for p in cast(list[Any], path_raw))
                if isinstance(path_raw, list)
                else ()
            )
            rows.append(ListRow(e, arguments, path))
        return rows

    async def _pending(
        self, params: Mapping[str, str]
    ) -> tuple[list[PendingEntry], dict[str, int], int, bool, int]:
        page = _int(params, "page", 1, 1_000_000)
        size = _int(params, "per_page", self.per_page, MAX_PER_PAGE)
        filters: dict[str, Any] = {
            "tool": _text(params, "tool"),
            "conversation_id": _text(params, "conversation"),
            "older_than": _age(params),
            "text": _text(params, "q"),
        }
        kind = _text(params, "kind")
        entries, counts = await asyncio.gather(
            self.index.search_pending(
                kind=kind, offset=(page - 1) * size, limit=size + 1, **filters
            ),
            self.index.count_pending(**filters),
        )
        total = counts.get(kind, 0) if kind is not None else sum(counts.values())
        return entries[:size], counts, total, len(entries) > size, page

    async def list_page(self, request: HttpRequest, base: str) -> Markup:
        params = _params(request)
        entries, counts, total, more, page = await self._pending(params)
        rows = await self._rows(entries)
        return list_body(
            rows, base=base, counts=counts, params=params, page=page, more=more, total=total
        )

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
        rows: list[dict[str, Any]] = []
        offset = 0
        while offset < EXPORT_MAX:
            chunk = await self._history(params, offset, 500)
            rows += [_history_json(h) for h in chunk]
            if len(chunk) < 500:
                break
            offset += 500
        if fmt == "jsonl":
            return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=EXPORT_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: _csv_cell(r.get(k)) for k in EXPORT_COLUMNS})
        return out.getvalue()

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


def _history_json(h: HistoryEntry) -> dict[str, Any]:
    record = AnswerRecord(
        h.request_id, h.answer, h.answered_at, h.answered_by, h.digest, h.status, h.settled_at
    )
    return {
        "request_id": h.request_id,
        "kind": h.kind,
        "tool": h.tool,
        "prompt": h.prompt,
        "conversation_id": h.conversation_id,
        "status": h.status,
        "decision": decision_of(record),
        "answered_by": h.answered_by,
        "answered_at": iso(h.answered_at),
        "reason": note_of(record),
        "digest": h.digest,
        "original_arguments": (h.original or {}).get("arguments"),
        "original_digest": (h.original or {}).get("digest"),
        "problem": h.problem,
    }


def _csv_cell(value: Any) -> str:
    """A CSV cell that a spreadsheet will not run as a formula."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
