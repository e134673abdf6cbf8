"""One request as the store knows it, read once for every surface that shows one: the inbox's
detail page and ``toolnexus show``.

`read_request` reads the halted checkpoint (the request, the call and its arguments, the
conversation) and the answer record (who, when, the edit, the outcome, the claim's holder and
lease); once the run has settled its checkpoint is gone, and what is known of the request comes
from the audit row (`InboxIndex.list_history`). The words for a recorded answer
(`decision_of`, `note_of`) and for where a run stands (`run_text`) live here too, so the inbox
and the command line say the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CheckpointError
from ..loop.checkpoint import Checkpoint
from ..suspension import Request
from .asked import Asked, asked_of
from .checks import call_digest
from .inbox_index import HistoryEntry, InboxIndex
from .requests import AnswerRecord, RequestStatus, RunStore

__all__ = ["RUN_TEXT", "RequestFacts", "decision_of", "note_of", "read_request", "run_text"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestFacts:
    """What the store holds about one request.

    Attributes:
        request: the `Request` (rebuilt from the audit row once the checkpoint is gone; kind
            ``unknown`` when the store has no row to rebuild it from).
        tool: the halted call's tool (``""`` for a halt at the model call).
        arguments: the halted call's arguments as the model wrote them (JSON text): from the
            checkpoint while it is kept, then from what the store kept of the request
            (`toolnexus.stores.asked`) or, for a row saved before it kept that, the model's
            call in the edit audit (``record.original``); ``None`` when none of them has it.
        digest: the halted call's digest while halted; the one recorded with the answer after.
        conversation_id, created_at: the run's.
        checkpoint: the halted run (``None`` once settled).
        record: the recorded answer and where the run stands (``None`` while pending).
    """

    request: Request
    tool: str = ""
    arguments: str | None = None
    digest: str = ""
    conversation_id: str | None = None
    created_at: float | None = None
    checkpoint: Checkpoint | None = None
    record: AnswerRecord | None = None
    asked: Asked | None = None
    """What the request asked with its context (`toolnexus.stores.asked`): from the checkpoint,
    or what the store kept; ``None`` for a settled row saved before the store kept that."""

    @property
    def status(self) -> RequestStatus:
        """``pending`` until an answer is recorded, then the record's status."""
        return "pending" if self.record is None else self.record.status


async def read_request(runs: RunStore, index: InboxIndex, request_id: str) -> RequestFacts | None:
    """The facts about ``request_id``; ``None`` when the store knows no such request.

    While the run is halted, what was asked comes from the checkpoint (or from what the store
    kept with the row, which a resume that halted again leaves as the request's own); once
    the checkpoint is gone, from what the store kept (`toolnexus.stores.asked`), else — a row
    saved before it kept that — the model's call in the edit audit, else nothing.

    Raises:
        CheckpointError: the stored checkpoint of a request still waiting cannot be read (one
            answered or settled is read from its audit row instead).
        UsageError: ``request_id`` is not a request id.
    """
    try:
        checkpoint = await runs.load_halt(request_id)
    except CheckpointError:
        if await runs.answer_record(request_id) is None:
            raise
        checkpoint = None
    record = await runs.answer_record(request_id)
    info: HistoryEntry | None = None
    if record is not None:
        found = await index.list_history(request_id=request_id, limit=1)
        info = found[0] if found else None
    kept = info.asked if info is not None else None
    if checkpoint is not None:
        asked = kept or asked_of(checkpoint)
        return RequestFacts(
            request=checkpoint.pending,
            tool=asked.tool,
            arguments=asked.arguments,
            digest=call_digest(asked.tool, asked.arguments),
            conversation_id=checkpoint.conversation_id,
            created_at=checkpoint.created_at,
            checkpoint=checkpoint,
            record=record,
            asked=asked,
        )
    if record is None:
        return None
    request = Request(
        request_id,
        info.kind if info else "unknown",
        info.prompt if info else "",
        url=kept.url if kept is not None else None,
    )
    if kept is not None:
        tool, arguments = kept.tool, kept.arguments
    elif record.original is not None:
        tool, arguments = (
            str(record.original.get("tool", "")),
            str(record.original.get("arguments", "{}")),
        )
    else:
        tool, arguments = (info.tool if info else ""), None
    return RequestFacts(
        request=request,
        tool=tool,
        arguments=arguments,
        digest=record.digest,
        conversation_id=info.conversation_id if info else None,
        created_at=info.created_at if info else None,
        record=record,
        asked=kept,
    )


def decision_of(record: AnswerRecord) -> str:
    """What the recorded answer decided, in one word or two."""
    answer = record.answer
    if record.status == "cancelled" or answer.reason == "cancelled":
        return "cancelled"
    if record.status == "expired" or answer.reason == "expired":
        return "expired"
    if not answer.ok:
        return "declined"
    if answer.data and "arguments" in answer.data:
        return "approved with edits"
    if answer.data:
        return "answered"
    return "approved"


def note_of(record: AnswerRecord) -> str:
    """The reason a person gave with a decline or a cancel (``""`` when none)."""
    data = record.answer.data or {}
    note = data.get("note")
    return note if isinstance(note, str) else ""


RUN_TEXT: dict[str, str] = {
    "answered": "queued: waiting for a worker to resume the run",
    "claimed": "resuming on a worker",
    "done": "done",
    "expired": "expired: the run went on with the expired decline",
    "cancelled": "cancelled: the run was ended",
}
"""Where a request's run stands, by the request's status."""


def run_text(record: AnswerRecord) -> str:
    """Where the run stands, in words, with what a settled run ended with: ``done``, ``done;
    the run halted again on a new request (pnd-…)``, ``failed: the resumed run ended with an
    error`` — the run's own status is told only when it says something the request's does
    not (never ``done (done)``)."""
    status = record.status
    head = RUN_TEXT.get(status, status)
    outcome = record.outcome or {}
    run = outcome.get("status")
    if status not in ("done", "expired") or not isinstance(run, str) or run == "done":
        return head
    if run in ("error", "failed"):
        return "failed: the resumed run ended with an error"
    if run == "pending":
        again = outcome.get("pending")
        named = f" ({again})" if isinstance(again, str) and again else ""
        return f"{head}; the run halted again on a new request{named}"
    if run == "incomplete":
        limit = outcome.get("limit")
        at = f"its {limit} limit" if isinstance(limit, str) and limit else "a limit"
        return f"{head}; the run stopped at {at}"
    return f"{head}; the run ended {run}"
