"""The SQLite store's inbox queries (`toolnexus.stores.inbox_index.InboxIndex`).

Scans, so they run on the worker thread (``_call``), each one job. They read the ``halts``
table through its partial indexes (migration 6): ``halts_pending`` for the waiting rows and
their counts, ``halts_history`` / ``halts_answerer`` for the audit newest first,
``halts_unannounced`` for the rows no inbox has announced yet, ``halts_runs`` (migration 11)
for the runs in flight, and the primary key's index for the ids that begin with a prefix.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from ..loop.checkpoint import Checkpoint
from ._runrows import lapsed_status, listed, pending, request_record, run_entry
from .asked import decode_asked
from .checks import (
    check_filters,
    check_limit,
    check_optional_text,
    check_request_id,
    check_seconds,
)
from .inbox_index import (
    HistoryEntry,
    RunEntry,
    check_history_status,
    check_ids,
    check_offset,
    check_prefix,
    check_search,
    like_pattern,
    parsed_halts,
    prefix_end,
)
from .requests import PendingEntry, RequestStatus
from .sqlite_runs import TEXT_MATCH, WAITING_WHERE, list_pending, pending_filters
from .sqlite_schema import immediate

__all__ = ["SqliteInboxIndex"]

T = TypeVar("T")

_HISTORY = (
    "SELECT request_id, kind, prompt, tool, conversation_id, created_at, status, answer,"
    " answered_by, answered_at, digest, settled_at, recorded, lease_until, original, problem,"
    " flagged_at, asked FROM halts"
    " WHERE answered_at IS NOT NULL AND answer IS NOT NULL"
    " AND (status IN ('answered', 'done', 'expired', 'cancelled')"
    " OR (status = 'claimed' AND recorded = 1))"
)
# A status filter, with the lapse of T10 applied by the caller's clock.
_STATUS = {
    "answered": " AND (status = 'answered' OR (status = 'claimed' AND lease_until <= ?))",
    "claimed": " AND status = 'claimed' AND lease_until > ?",
    "done": " AND status = 'done'",
    "expired": " AND status = 'expired'",
    "cancelled": " AND status = 'cancelled'",
}
_MARK = "UPDATE halts SET announced = 1 WHERE request_id = ?"
# The runs in flight, by the partial index ``halts_runs``: answered, or claimed under a live
# lease — but a host's own claim (T4, not recorded) whose lease ran out, pending again.
_RUNS = (
    "SELECT request_id, kind, prompt, tool, conversation_id, created_at, status, answered_by,"
    " answered_at, recorded, lease_until, holder, problem, flagged_at FROM halts"
    " WHERE status IN ('answered', 'claimed')"
    " AND (status = 'answered' OR recorded = 1 OR lease_until > ?)"
    " ORDER BY created_at, request_id LIMIT ? OFFSET ?"
)
# A range on the primary key (``BINARY``: UTF-8 byte order, code point order); the prefix is
# checked on the rows found, so no upper bound is needed when `prefix_end` has none.
_IDS_FROM = "SELECT request_id FROM halts WHERE request_id >= ?"
_IDS_BELOW = " AND request_id < ?"
_IDS_ORDER = " AND substr(request_id, 1, ?) = ? ORDER BY request_id LIMIT ?"


def _count(where: str, args: list[object], conn: sqlite3.Connection) -> dict[str, int]:
    sql = f"SELECT kind, count(*) FROM halts{where} GROUP BY kind"
    return {str(kind): int(n) for kind, n in conn.execute(sql, args).fetchall()}


def _history(
    filters: tuple[str | None, str | None, str | None, str | None, float | None, str | None],
    offset: int,
    limit: int,
    now: float,
    conn: sqlite3.Connection,
    tool: str | None = None,
) -> list[tuple[Any, ...]]:
    who, status, kind, text, after, only = filters
    sql = [_HISTORY]
    args: list[object] = []
    if only is not None:
        sql.append(" AND request_id = ?")
        args.append(only)
    if who is not None:
        sql.append(" AND answered_by = ?")
        args.append(who)
    if status is not None:
        sql.append(_STATUS[status])
        if status in ("answered", "claimed"):
            args.append(now)
    if kind is not None:
        sql.append(" AND kind = ?")
        args.append(kind)
    if tool is not None:
        sql.append(" AND tool = ?")
        args.append(tool)
    if after is not None:
        sql.append(" AND answered_at > ?")
        args.append(after)
    if text is not None:
        sql.append(TEXT_MATCH)
        args.append(like_pattern(text))
    sql.append(" ORDER BY answered_at DESC, request_id DESC LIMIT ? OFFSET ?")
    return conn.execute("".join(sql), [*args, limit, offset]).fetchall()


def _find_ids(prefix: str, limit: int, conn: sqlite3.Connection) -> list[str]:
    end = prefix_end(prefix)
    sql = _IDS_FROM + ("" if end is None else _IDS_BELOW) + _IDS_ORDER
    bounds = [prefix] if end is None else [prefix, end]
    rows = conn.execute(sql, [*bounds, len(prefix), prefix, limit]).fetchall()
    return [str(row[0]) for row in rows]


def _load_halts(ids: list[str], conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    marks = ", ".join("?" * len(ids))
    sql = f"SELECT request_id, checkpoint FROM halts WHERE request_id IN ({marks})"
    return conn.execute(sql, ids).fetchall()


def _take_unannounced(limit: int, now: float, conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    where, args = pending_filters(None, None, None, None, None, now, where=WAITING_WHERE)
    sql = (
        "SELECT request_id, kind, prompt, tool, conversation_id, created_at, expires_at"
        f" FROM halts{where} AND announced = 0 ORDER BY created_at, request_id LIMIT ?"
    )
    with immediate(conn):
        rows = conn.execute(sql, [*args, limit]).fetchall()
        conn.executemany(_MARK, [(row[0],) for row in rows])
    return rows


class SqliteInboxIndex:
    """The `InboxIndex` methods of `SqliteStore` (a mixin, as `SqliteRunStore` is)."""

    __slots__ = ()

    _path: str
    _now: Callable[[], float]

    async def _call(self, job: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``job`` on the worker (`SqliteStore` provides it)."""
        raise NotImplementedError

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
        """`RunStore.list_pending` with a text search and an offset (see `InboxIndex`)."""
        filters = check_filters(kind, tool, conversation_id, older_than, newer_than)
        needle = check_search(text)
        start = check_offset(offset)
        size = check_limit(limit)
        now = self._now()
        job = partial(list_pending, *filters, size, now, text=needle, offset=start)
        return [listed(row, now) for row in await self._call(job)]

    async def count_pending(
        self,
        *,
        tool: str | None = None,
        conversation_id: str | None = None,
        older_than: float | None = None,
        newer_than: float | None = None,
        text: str | None = None,
    ) -> dict[str, int]:
        """How many requests wait, per kind (see `InboxIndex.count_pending`)."""
        filters = check_filters(None, tool, conversation_id, older_than, newer_than)
        needle = check_search(text)
        where, args = pending_filters(*filters, self._now(), needle)
        return await self._call(partial(_count, where, args))

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
        """Answered, cancelled and expired requests, newest first (see `InboxIndex`)."""
        of_tool = check_optional_text(tool, "tool")
        filters = (
            check_optional_text(answered_by, "answered_by"),
            check_history_status(status),
            check_optional_text(kind, "kind"),
            check_search(text),
            None if answered_after is None else check_seconds(answered_after, "answered_after"),
            None if request_id is None else check_request_id(request_id),
        )
        start = check_offset(offset)
        size = check_limit(limit)
        now = self._now()
        rows = await self._call(partial(_history, filters, start, size, now, tool=of_tool))
        return [_history_entry(row, now, self._path) for row in rows]

    async def list_runs(self, *, offset: int = 0, limit: int = 100) -> list[RunEntry]:
        """The requests between an answer and their end, oldest first (see `InboxIndex`)."""
        start = check_offset(offset)
        size = check_limit(limit)
        now = self._now()
        rows = await self._call(lambda conn: conn.execute(_RUNS, (now, size, start)).fetchall())
        return [run_entry(row, now) for row in rows]

    async def find_request_ids(self, prefix: str, *, limit: int = 10) -> list[str]:
        """The ids that begin with ``prefix``, in order (see `InboxIndex`)."""
        start = check_prefix(prefix)
        size = check_limit(limit)
        return await self._call(partial(_find_ids, start, size))

    async def load_halts(self, request_ids: Sequence[str]) -> dict[str, Checkpoint]:
        """Many checkpoints in one read, by request id (see `InboxIndex.load_halts`)."""
        ids = check_ids(request_ids)
        if not ids:
            return {}
        rows = await self._call(partial(_load_halts, ids))
        return parsed_halts(rows, self._path)

    async def take_unannounced(self, *, limit: int = 100) -> list[PendingEntry]:
        """Pending requests nobody announced yet, now marked announced (see `InboxIndex`)."""
        size = check_limit(limit)
        rows = await self._call(partial(_take_unannounced, size, self._now()))
        return [pending(*row) for row in rows]


def _history_entry(row: tuple[Any, ...], now: float, where: str) -> HistoryEntry:
    rid, kind, prompt, tool, conversation_id, created_at, status, text = row[:8]
    who, answered_at, digest, settled_at, recorded, lease_until = row[8:14]
    original, problem, flagged_at, asked = row[14:]
    current: RequestStatus = lapsed_status(status, recorded, lease_until, now)  # pyright: ignore[reportAssignmentType]
    record = request_record(
        rid,
        text,
        answered_at,
        who,
        digest,
        current,
        settled_at,
        None,
        where,
        original=original,
        problem=problem,
        flagged_at=flagged_at,
    )
    return HistoryEntry(
        request_id=rid,
        kind=kind or "",
        prompt=prompt or "",
        tool=tool or "",
        conversation_id=conversation_id,
        created_at=float(created_at or 0.0),
        status=current,
        answer=record.answer,
        answered_by=record.answered_by,
        answered_at=record.answered_at,
        digest=record.digest,
        settled_at=record.settled_at,
        original=record.original,
        problem=record.problem,
        flagged_at=record.flagged_at,
        asked=decode_asked(asked),
    )
