"""The history exported: one row per answered request, as JSON lines or CSV.

Both formats hold the same columns (`EXPORT_COLUMNS`): who decided what and when, the digest
of what was approved, and — for an approval with edited arguments — the model's arguments,
the approved ones and each change with its values (`toolnexus._edit_diff`): in JSON lines a
list of ``{"path", "change", "before", "after"}``, in CSV one line of text per change
(``amount: 300 → 45``). A CSV cell never starts a spreadsheet formula.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from typing import Any

from .._edit_diff import Change, change_text
from ..intake import EDIT_KEY
from ..stores.inbox_index import HistoryEntry
from ..stores.requests import AnswerRecord
from .detail import decision_of, edit_diff, note_of
from .html import iso

__all__ = ["EXPORT_COLUMNS", "approved_arguments", "export_text", "history_edits", "history_json"]

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
    "arguments",
    "edits",
)
"""The columns of both exports, in order (``arguments`` and ``edits`` came last, after the
columns a reader of earlier exports knows)."""

_COMPACT = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def record_of(h: HistoryEntry) -> AnswerRecord:
    """The `AnswerRecord` a history row holds (to reuse what reads records)."""
    return AnswerRecord(
        h.request_id,
        h.answer,
        h.answered_at,
        h.answered_by,
        h.digest,
        h.status,
        h.settled_at,
        original=h.original,
    )


def history_edits(h: HistoryEntry) -> list[Change]:
    """What an edited approval changed in the model's arguments (``[]``: no edit)."""
    return [] if h.original is None else edit_diff(h.original, h.answer)


def approved_arguments(h: HistoryEntry) -> str | None:
    """The arguments of the call as it was decided on, as JSON text: the edited ones for an
    approval with edits, else the model's (``None`` when the store did not keep them)."""
    data = h.answer.data or {}
    if h.original is not None and EDIT_KEY in data:
        return _COMPACT.encode(data[EDIT_KEY])
    if h.asked is not None:
        return h.asked.arguments if h.asked.tool else None
    return None


def history_json(h: HistoryEntry) -> dict[str, Any]:
    """One exported row (the JSON lines' object; ``edits`` a list of changes)."""
    record = record_of(h)
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
        "arguments": approved_arguments(h),
        "edits": [c.to_dict() for c in history_edits(h)],
    }


def _csv_cell(value: Any) -> str:
    """A CSV cell that a spreadsheet will not run as a formula."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def export_text(entries: Iterable[HistoryEntry], fmt: str) -> str:
    """``entries`` as JSON lines (``fmt="jsonl"``) or CSV."""
    if fmt == "jsonl":
        return "".join(json.dumps(history_json(h), ensure_ascii=False) + "\n" for h in entries)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=EXPORT_COLUMNS)
    writer.writeheader()
    for h in entries:
        row = history_json(h)
        row["edits"] = "\n".join(change_text(c) for c in history_edits(h))
        writer.writerow({k: _csv_cell(row.get(k)) for k in EXPORT_COLUMNS})
    return out.getvalue()
