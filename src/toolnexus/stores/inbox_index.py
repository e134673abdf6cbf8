"""What an approvals inbox and the command line ask of a run store beyond `RunStore`: search,
counts, history, the runs in flight, ids by their first characters, and announcing each new
request once.

Every backend (memory, SQLite, Postgres) implements `InboxIndex` over the same rows as the
request state machine of `toolnexus.stores.requests`; one contract suite runs against all
three. The queries are indexed so that a page of 10,000 pending requests stays fast:

- `InboxIndex.search_pending`: `RunStore.list_pending`'s filters plus a text search and an
  offset, for paging (like it, the pending requests and the unsettled ones a resumer flagged
  for an operator, T13);
- `InboxIndex.count_pending`: how many requests of each kind wait (the same filters, no kind);
- `InboxIndex.list_history`: the requests that were answered, declined, cancelled or expired,
  newest answer first, by person, status, kind or tool;
- `InboxIndex.list_runs`: the requests between an answer and their end — queued for a resumer
  or held by one (with who holds it and until when) — oldest first;
- `InboxIndex.find_request_ids`: the ids that begin with a prefix (an operator types the first
  characters of an id), in order, from the primary key's index (SQLite) or an index of each
  id's first 64 bytes (Postgres);
- `InboxIndex.take_unannounced`: the pending requests nobody has announced yet, marked
  announced in the same step — so two inbox processes on one store notify once.

The text search is a case-insensitive substring match (ASCII letters fold; the others match
as they are) on the prompt, the tool, the request id and the conversation id (joined by
U+001F, so one decode per row). Postgres folds with ``lower``: in a database whose locale is
not C, letters beyond ASCII fold too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..errors import UsageError
from ..loop.checkpoint import Checkpoint
from ..suspension import Answer
from .asked import Asked
from .checks import check_optional_text
from .requests import PendingEntry, RequestStatus

__all__ = [
    "HISTORY_STATUSES",
    "HistoryEntry",
    "InboxIndex",
    "RunEntry",
    "check_history_status",
    "check_ids",
    "check_offset",
    "check_prefix",
    "check_search",
    "like_pattern",
    "matches_text",
    "parsed_halts",
    "prefix_end",
]

HISTORY_STATUSES: frozenset[str] = frozenset(
    {"answered", "claimed", "done", "expired", "cancelled"}
)
"""The statuses a request in the history can have."""


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One answered (or cancelled, or expired) request, as the audit lists it.

    Attributes:
        request_id, kind, prompt, tool, conversation_id, created_at: as in `PendingEntry`.
        status: where the request is now (``answered``, ``claimed``, ``done``, ``expired``,
            ``cancelled``).
        answer: the recorded answer (the expired decline, the cancel's decline).
        answered_by: who answered (``None`` when nobody was named).
        answered_at: when (seconds since the epoch).
        digest: sha256 of the approved call's name and arguments: what was approved.
        settled_at: when it reached a final state (``None`` before).
        original: the model's call when the answer approved it with edited arguments
            (``{"tool", "arguments", "digest"}``, see `AnswerRecord.original`), else ``None``:
            with ``answer`` (the edited arguments) and ``digest``, the whole edit.
        problem: what a resumer reported when it flagged the request (T13), else ``None``.
        flagged_at: when it was flagged (``None``: never).
        asked: what the request asked — its call and the conversation around it — as the
            store kept it with the checkpoint (`toolnexus.stores.asked`); ``None`` for a
            row saved before the store kept it (or a claim made with no halted run).
    """

    request_id: str
    kind: str
    prompt: str
    tool: str
    conversation_id: str | None
    created_at: float
    status: RequestStatus
    answer: Answer
    answered_by: str | None
    answered_at: float
    digest: str
    settled_at: float | None = None
    original: dict[str, Any] | None = None
    problem: str | None = None
    flagged_at: float | None = None
    asked: Asked | None = None


@dataclass(frozen=True, slots=True)
class RunEntry:
    """One request between its answer and its end: queued for a resumer, or held by one.

    Attributes:
        request_id, kind, prompt, tool, conversation_id, created_at: as in `PendingEntry`
            (empty for a claim made for a request that had no row: a host-held transcript).
        status: ``answered`` (queued: waiting for a resumer, T2/T9/T10) or ``claimed`` (a
            resumer holds it under a live lease, T4/T5).
        answered_by, answered_at: who answered and when; ``answered_at`` is ``None`` for a
            host resuming with its own answer (T4), recorded only once applied (T7).
        lease_until: while ``claimed``, when the lease runs out (``math.inf``: held for an
            operator); else ``None``.
        holder: while ``claimed``, who holds it (`toolnexus.stores.requests.holder_name`;
            ``None`` when the claim was taken before stores recorded it).
        problem, flagged_at: what a resumer flagged (T13), and when.
    """

    request_id: str
    kind: str
    prompt: str
    tool: str
    conversation_id: str | None
    created_at: float
    status: RequestStatus
    answered_by: str | None = None
    answered_at: float | None = None
    lease_until: float | None = None
    holder: str | None = None
    problem: str | None = None
    flagged_at: float | None = None


@runtime_checkable
class InboxIndex(Protocol):
    """The inbox's queries over a run store's rows (see the module docstring)."""

    async def search_pending(
        self,
        *,
        kind: str | None = None,
        tool: str | None = None,
        conversation_id: str | None = None,
        older_than: float | None = None,
        newer_than: float | None = None,
        text: str | None = None,
        offset: int = 0,
        limit: int = 100,
    ) -> list[PendingEntry]:
        """`RunStore.list_pending` with a text search and an offset, oldest first (the
        unsettled requests a resumer flagged included, with their status and problem)."""
        ...

    async def count_pending(
        self,
        *,
        tool: str | None = None,
        conversation_id: str | None = None,
        older_than: float | None = None,
        newer_than: float | None = None,
        text: str | None = None,
    ) -> dict[str, int]:
        """How many requests `search_pending` lists, per kind, under the same filters (kinds
        with none absent)."""
        ...

    async def list_history(
        self,
        *,
        answered_by: str | None = None,
        status: str | None = None,
        kind: str | None = None,
        tool: str | None = None,
        text: str | None = None,
        answered_after: float | None = None,
        request_id: str | None = None,
        offset: int = 0,
        limit: int = 100,
    ) -> list[HistoryEntry]:
        """Requests with a recorded answer (or cancel), newest answer first.

        ``answered_after`` (seconds since the epoch) keeps those answered strictly later;
        ``request_id`` keeps that one request (its audit row); ``tool`` those of that tool.
        A host's own claim (T4) shows once it has been applied or settled."""
        ...

    async def list_runs(self, *, offset: int = 0, limit: int = 100) -> list[RunEntry]:
        """The requests between an answer and their end, oldest request first: answered
        (queued for a resumer) and claimed under a live lease, whoever answered — a host's
        own claim (T4) included. A claim whose lease ran out shows as what it is again
        (queued; a T4 claim is pending, and not listed here)."""
        ...

    async def find_request_ids(self, prefix: str, *, limit: int = 10) -> list[str]:
        """The ids of the requests the store keeps, whatever their status, that begin with
        ``prefix``, in code point order (an id equal to ``prefix`` first), at most
        ``limit``: what resolves an id an operator typed in part."""
        ...

    async def load_halts(self, request_ids: Sequence[str]) -> dict[str, Checkpoint]:
        """`RunStore.load_halt` for many requests in one read (a page of the list): the
        checkpoints found, by request id; an unreadable one is left out (its own
        `RunStore.load_halt` says why)."""
        ...

    async def take_unannounced(self, *, limit: int = 100) -> list[PendingEntry]:
        """Pending requests not announced yet, oldest first, now marked announced: each is
        handed out once, across every process sharing the store."""
        ...


def check_search(value: object) -> str | None:
    """A search text: ``None``/empty means no search."""
    text = check_optional_text(value, "text")
    return text or None


MAX_IDS = 500
"""The most request ids one `InboxIndex.load_halts` takes."""


def check_ids(values: object) -> list[str]:
    """A list (or tuple) of request ids, at most `MAX_IDS`, duplicates dropped."""
    from .checks import check_request_id

    if isinstance(values, str) or not isinstance(values, list | tuple):
        raise UsageError(f"request_ids must be a list of request ids, got {type(values).__name__}")
    listed: list[object] = list(values)  # pyright: ignore[reportUnknownArgumentType]
    if len(listed) > MAX_IDS:
        raise UsageError(f"at most {MAX_IDS} request ids at once, got {len(listed)}")
    return list(dict.fromkeys(check_request_id(v) for v in listed))


def check_prefix(value: object) -> str:
    """The beginning of a request id: a non-empty string."""
    from .checks import check_request_id

    return check_request_id(value)


_TOP = 0x10FFFF


def prefix_end(prefix: str) -> str | None:
    """The least string above every string that begins with ``prefix``, in code point order
    (UTF-8's byte order, SQLite's ``BINARY``): ``prefix`` with its last character raised by one
    (past the surrogates; a last U+10FFFF dropped first). ``None`` when nothing is above (a
    prefix of U+10FFFF only). With it, ``prefix <= id < prefix_end(prefix)`` is a range an
    index answers.

    >>> prefix_end("pnd-1a"), prefix_end("a\U0010ffff")
    ('pnd-1b', 'b')
    """
    stem = prefix.rstrip(chr(_TOP))
    if not stem:
        return None
    cp = ord(stem[-1]) + 1
    if 0xD800 <= cp <= 0xDFFF:
        cp = 0xE000
    return stem[:-1] + chr(cp)


def check_offset(value: object) -> int:
    """A paging offset: an int >= 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"offset must be an int >= 0, got {value!r}")
    return value


def check_history_status(value: object) -> str | None:
    """A history status filter: ``None`` or one of `HISTORY_STATUSES`."""
    status = check_optional_text(value, "status")
    if status is not None and status not in HISTORY_STATUSES:
        raise UsageError(f"status must be one of {sorted(HISTORY_STATUSES)}, got {status!r}")
    return status


def _fold(text: str) -> str:
    """ASCII letters lower-cased, everything else as it is (SQLite's ``LIKE`` rule)."""
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def matches_text(needle: str, *fields: str | None) -> bool:
    """Whether ``needle`` occurs in ``fields`` joined by U+001F, case-insensitively (ASCII):
    in one of them, for a needle without U+001F (the rule the SQL backends apply)."""
    return _fold(needle) in _fold("\x1f".join(f or "" for f in fields))


def like_pattern(needle: str) -> str:
    """``needle`` as a ``LIKE`` pattern (``%`` around, ``\\`` escaping ``%``, ``_`` and
    itself), ASCII letters folded; the column side must be folded the same way."""
    escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{_fold(escaped)}%"


def parsed_halts(rows: Sequence[tuple[object, object]], where: str) -> dict[str, Checkpoint]:
    """``(request id, checkpoint text)`` rows as checkpoints; unreadable ones left out."""
    from ..errors import CheckpointError
    from .checks import load_checkpoint

    out: dict[str, Checkpoint] = {}
    for rid, text in rows:
        if not isinstance(rid, str) or text is None:
            continue
        try:
            out[rid] = load_checkpoint(text, rid, where)
        except CheckpointError:
            continue
    return out
