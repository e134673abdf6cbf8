"""Many requests answered at once: approve or decline a selection, from the list or the API.

Each request is answered on its own, as one click on its page would: read from its checkpoint,
the reply (approve, or decline with the reason given) turned into its `Answer` by the intake,
recorded once with who (`Views.quick`). Approving is offered only where the answer needs no
form — an approval or an authorization (`QUICK_SHAPES`); a decline suits every kind. One that
fails leaves the others recorded, and says why (`BulkItem`):

- ``conflict``: someone answered (or cancelled) it first — by whom;
- ``refused``: the intake does not take that reply (it needs its form: which answers it takes);
- ``forbidden``: the person may not answer its kind;
- ``expired``: it expired before the answer (the expired decline was recorded instead);
- ``not_found``: no such request waits;
- ``unreadable``: its stored state cannot be read.

Sent twice (a double click, a reload of the result), a request this person already answered
the same way is ``already``: nothing is recorded again, and it is not a failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..stores.requests import EXPIRED_BY, AnswerRecord
from .auth import InboxUser
from .detail import note_of, resolved_text
from .html import Markup, el, href, quote_id
from .views import Outcome, QuickAction, Views

__all__ = ["MAX_BULK", "BulkItem", "Why", "answer_many", "bulk_section", "parse_ids"]

MAX_BULK = 200
"""The most requests one bulk action answers."""

Result = Literal["recorded", "already", "failed"]
Why = Literal["conflict", "refused", "forbidden", "expired", "not_found", "unreadable"]


@dataclass(frozen=True, slots=True)
class BulkItem:
    """How one request of a bulk action went."""

    id: str
    result: Result
    why: Why | None = None
    message: str = ""
    answered_by: str | None = None
    """Who answered it first (a ``conflict``), or who answered it (``already``)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "result": self.result}
        if self.why is not None:
            out["why"] = self.why
        if self.message:
            out["error" if self.result == "failed" else "message"] = self.message
        if self.answered_by is not None:
            out["answered_by"] = self.answered_by
        return out


def parse_ids(raw: Sequence[object]) -> list[str] | str:
    """The distinct request ids of a selection, in order; or why it is not one."""
    ids: list[str] = []
    for value in raw:
        if not isinstance(value, str) or not value:
            return "every id must be a non-empty string"
        if value not in ids:
            ids.append(value)
    if not ids:
        return "select at least one request"
    if len(ids) > MAX_BULK:
        return f"at most {MAX_BULK} requests at once, got {len(ids)}"
    return ids


def _same(record: AnswerRecord, action: QuickAction, reason: str | None, user: InboxUser) -> bool:
    """Whether ``record`` is this person's own answer of this very action (a double submit)."""
    if record.answered_by != user.name or record.status in ("cancelled", "expired"):
        return False
    if action == "approve":
        return record.answer.ok and not (record.answer.data or {})
    return not record.answer.ok and note_of(record) == (reason or "").strip()


_WHY: dict[int, Why] = {
    400: "refused",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    500: "unreadable",
}


async def _one(
    views: Views, rid: str, action: QuickAction, reason: str | None, user: InboxUser
) -> BulkItem:
    outcome: Outcome = await views.quick(rid, action, reason, user)
    if outcome.status == 303:
        return BulkItem(rid, "recorded")
    if outcome.status == 409:
        record = await views.store.answer_record(rid)
        if record is not None and _same(record, action, reason, user):
            return BulkItem(
                rid, "already", message=f"Already {resolved_text(record)}", answered_by=user.name
            )
        if record is not None and (record.answered_by == EXPIRED_BY or record.status == "expired"):
            return BulkItem(rid, "failed", "expired", outcome.message)
        who = record.answered_by if record is not None else None
        return BulkItem(rid, "failed", "conflict", outcome.message, who)
    return BulkItem(rid, "failed", _WHY.get(outcome.status, "refused"), outcome.message)


async def answer_many(
    views: Views, ids: Sequence[str], action: QuickAction, reason: str | None, user: InboxUser
) -> list[BulkItem]:
    """Answer each of ``ids`` with ``action`` as ``user``, one after the other (each its own
    record: a failure leaves the others recorded)."""
    return [await _one(views, rid, action, reason, user) for rid in ids]


_DONE = {"approve": "approved", "decline": "declined"}


def bulk_section(items: Sequence[BulkItem], action: QuickAction, *, base: str) -> Markup:
    """What a bulk action did, for the top of the list: how many were recorded, and each that
    failed with why (a link to its page)."""
    recorded = sum(1 for i in items if i.result == "recorded")
    already = sum(1 for i in items if i.result == "already")
    failed = [i for i in items if i.result == "failed"]
    summary = f"{recorded} {_DONE[action]}"
    if already:
        summary += f", {already} already answered by you (nothing recorded again)"
    if failed:
        summary += f", {len(failed)} failed"
    rows = [
        el(
            "li",
            el("a", item.id, href=href(base, f"requests/{quote_id(item.id)}")),
            ": ",
            item.message,
            data_request_id=item.id,
            data_why=item.why,
        )
        for item in failed
    ]
    listed = el("ul", Markup("".join(rows)), id="bulk-failed") if rows else Markup("")
    return el(
        "section",
        el("p", summary + ".", id="bulk-summary"),
        listed,
        id="bulk-result",
        role="status",
        class_="notice" if failed else "done",
        data_action=action,
        data_recorded=recorded,
        data_failed=len(failed),
    )
