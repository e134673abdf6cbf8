"""The PostgreSQL store's inbox queries (`toolnexus.stores.inbox_index.InboxIndex`).

Read through the partial indexes of migration 7: ``toolnexus_halts_pending`` for the waiting
rows and their counts, ``toolnexus_halts_history`` / ``toolnexus_halts_answerer`` for the
audit newest first, ``toolnexus_halts_unannounced`` for the rows no inbox announced yet; and
those of migration 12: ``toolnexus_halts_runs`` for the runs in flight and
``toolnexus_halts_id_prefix`` for the ids that begin with a prefix. The
announcing step is one ``UPDATE … WHERE key IN (SELECT … FOR UPDATE SKIP LOCKED)``, so two
inbox processes never hand out one request twice. Text columns are ``BYTEA`` (see
`toolnexus.stores.postgres_schema`): the search decodes them and folds case with ``lower``
(ASCII as `toolnexus.stores.inbox_index.matches_text` does; other letters as the locale).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, LiteralString

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
)
from .postgres_runs import PENDING, WAITING_WHERE
from .postgres_schema import from_bytea, row_key
from .requests import PendingEntry, RequestStatus

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = [
    "PostgresInboxIndex",
    "bytes_end",
    "history_query",
    "pending_filters",
    "unannounced_query",
]

# One decode and one fold per row: the four columns joined by U+001F, which a needle
# holding none cannot match across. ``lower`` is ten times faster here than an ASCII-only
# ``translate``; it folds ASCII as the other stores do (and, in a non-C locale, other letters
# too: the one place the backends may differ).
TEXT_MATCH: LiteralString = (
    " AND lower(convert_from(coalesce(prompt, ''::bytea) || '\\x1f'::bytea"
    " || coalesce(tool, ''::bytea) || '\\x1f'::bytea || request_id || '\\x1f'::bytea"
    " || coalesce(conversation_id, ''::bytea), 'UTF8')) LIKE %s"
)
_KEYS: LiteralString = "SELECT key" + WAITING_WHERE
_LOAD_HALTS: LiteralString = (
    "SELECT request_id, checkpoint FROM toolnexus_halts WHERE key = ANY(%s)"
    " AND checkpoint IS NOT NULL"
)
_HISTORY: LiteralString = (
    "SELECT request_id, kind, prompt, tool, conversation_id, created_at, status, answer,"
    " answered_by, answered_at, digest, settled_at, recorded, lease_until, original, problem,"
    " flagged_at, asked FROM toolnexus_halts"
    " WHERE answered_at IS NOT NULL AND answer IS NOT NULL"
    " AND (status IN ('answered', 'done', 'expired', 'cancelled')"
    " OR (status = 'claimed' AND recorded))"
)
# The runs in flight, by the partial index ``toolnexus_halts_runs``: answered, or claimed under
# a live lease — but a host's own claim (T4, not recorded) whose lease ran out, pending again.
_RUNS: LiteralString = (
    "SELECT request_id, kind, prompt, tool, conversation_id, created_at, status, answered_by,"
    " answered_at, recorded, lease_until, holder, problem, flagged_at FROM toolnexus_halts"
    " WHERE status IN ('answered', 'claimed')"
    " AND (status = 'answered' OR recorded OR lease_until > %s)"
    " ORDER BY created_at, request_id LIMIT %s OFFSET %s"
)
# A range on the index of the ids' first 64 bytes (``bytea`` compares bytewise: UTF-8's
# order, the other stores' order); the whole prefix checked on the rows it finds.
_HEAD: LiteralString = "substr(request_id, 1, 64)"
_IDS_FROM: LiteralString = "SELECT request_id FROM toolnexus_halts WHERE " + _HEAD + " >= %s"
_IDS_BELOW: LiteralString = " AND " + _HEAD + " < %s"
_IDS_ORDER: LiteralString = (
    " AND substr(request_id, 1, %s) = %s ORDER BY " + _HEAD + ", request_id LIMIT %s"
)
_STATUS: dict[str, LiteralString] = {
    "answered": " AND (status = 'answered' OR (status = 'claimed' AND lease_until <= %s))",
    "claimed": " AND status = 'claimed' AND lease_until > %s",
    "done": " AND status = 'done'",
    "expired": " AND status = 'expired'",
    "cancelled": " AND status = 'cancelled'",
}


def pending_filters(
    kind: str | None,
    tool: str | None,
    conversation_id: str | None,
    older_than: float | None,
    newer_than: float | None,
    now: float,
    text: str | None = None,
    *,
    select: LiteralString = PENDING,
) -> tuple[list[LiteralString], list[object]]:
    """The listing's query (``select``: `PENDING`, or another column list ending in
    `PENDING_WHERE` or `WAITING_WHERE`; then each filter given) and its arguments."""
    sql: list[LiteralString] = [select]
    args: list[object] = [now]
    if kind is not None:
        sql.append(" AND kind = %s")
        args.append(kind.encode())
    if tool is not None:
        sql.append(" AND tool = %s")
        args.append(tool.encode())
    if conversation_id is not None:
        sql.append(" AND conversation_id = %s")
        args.append(conversation_id.encode())
    # The same float arithmetic as the in-memory store, so ages agree to the last bit.
    if older_than is not None:
        sql.append(" AND %s - created_at >= %s")
        args += (now, older_than)
    if newer_than is not None:
        sql.append(" AND %s - created_at <= %s")
        args += (now, newer_than)
    if text is not None:
        sql.append(TEXT_MATCH)
        args.append(like_pattern(text))
    return sql, args


def _entry(row: tuple[Any, ...]) -> PendingEntry:
    return pending(*(from_bytea(value) for value in row))


def _listed(row: tuple[Any, ...], now: float) -> PendingEntry:
    return listed(tuple(from_bytea(value) for value in row), now)


class PostgresInboxIndex:
    """The `InboxIndex` methods of `PostgresStore` (a mixin)."""

    __slots__ = ()

    _where: str
    _now: Callable[[], float]

    def _connection(self) -> AbstractAsyncContextManager[AsyncConnection[Any]]:
        """A pooled autocommit connection (`PostgresStore` provides it)."""
        raise NotImplementedError

    async def _rows(self, sql: LiteralString, args: list[object]) -> list[tuple[Any, ...]]:
        async with self._connection() as conn:
            cur = await conn.execute(sql, args)
            return await cur.fetchall()

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
        sql, args = pending_filters(*filters, now, needle)
        sql.append(" ORDER BY created_at, request_id LIMIT %s OFFSET %s")
        rows = await self._rows("".join(sql), [*args, size, start])
        return [_listed(row, now) for row in rows]

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
        sql, args = pending_filters(*filters, self._now(), needle)
        inner = "".join(sql)
        query: LiteralString = "SELECT kind, count(*) FROM (" + inner + ") AS w GROUP BY kind"
        rows = await self._rows(query, args)
        return {str(from_bytea(kind)): int(n) for kind, n in rows}

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
        only = None if request_id is None else check_request_id(request_id)
        who = check_optional_text(answered_by, "answered_by")
        wanted = check_history_status(status)
        of_kind = check_optional_text(kind, "kind")
        needle = check_search(text)
        after = None if answered_after is None else check_seconds(answered_after, "answered_after")
        start = check_offset(offset)
        size = check_limit(limit)
        now = self._now()
        filters = (only, who, wanted, of_kind, needle, after)
        sql, args = history_query(filters, now, tool=of_tool)
        sql.append(" ORDER BY answered_at DESC, request_id DESC LIMIT %s OFFSET %s")
        rows = await self._rows("".join(sql), [*args, size, start])
        return [_history_entry(row, now, self._where) for row in rows]

    async def list_runs(self, *, offset: int = 0, limit: int = 100) -> list[RunEntry]:
        """The requests between an answer and their end, oldest first (see `InboxIndex`)."""
        start = check_offset(offset)
        size = check_limit(limit)
        now = self._now()
        rows = await self._rows(_RUNS, [now, size, start])
        return [run_entry(tuple(from_bytea(value) for value in row), now) for row in rows]

    async def find_request_ids(self, prefix: str, *, limit: int = 10) -> list[str]:
        """The ids that begin with ``prefix``, in order (see `InboxIndex`)."""
        start = check_prefix(prefix).encode()
        size = check_limit(limit)
        head = start[:64]
        end = bytes_end(head)
        sql: LiteralString = _IDS_FROM + ("" if end is None else _IDS_BELOW) + _IDS_ORDER
        bounds = [head] if end is None else [head, end]
        rows = await self._rows(sql, [*bounds, len(start), start, size])
        return [str(from_bytea(rid)) for (rid,) in rows]

    async def load_halts(self, request_ids: Sequence[str]) -> dict[str, Checkpoint]:
        """Many checkpoints in one read, by request id (see `InboxIndex.load_halts`)."""
        ids = check_ids(request_ids)
        if not ids:
            return {}
        rows = await self._rows(_LOAD_HALTS, [[row_key(rid) for rid in ids]])
        return parsed_halts([(from_bytea(rid), text) for rid, text in rows], self._where)

    async def take_unannounced(self, *, limit: int = 100) -> list[PendingEntry]:
        """Pending requests nobody announced yet, now marked announced (see `InboxIndex`)."""
        size = check_limit(limit)
        query, args = unannounced_query(self._now())
        rows = await self._rows(query, [*args, size])
        entries = [_entry(row) for row in rows]
        return sorted(entries, key=lambda e: (e.created_at, e.request_id))


def bytes_end(head: bytes) -> bytes | None:
    """The least byte string above every one that begins with ``head`` (its trailing 0xFF
    bytes dropped, the last one left raised by one); ``None`` when there is none."""
    stem = head.rstrip(b"\xff")
    return None if not stem else stem[:-1] + bytes([stem[-1] + 1])


def history_query(
    filters: tuple[str | None, str | None, str | None, str | None, str | None, float | None],
    now: float,
    *,
    tool: str | None = None,
) -> tuple[list[LiteralString], list[object]]:
    """`list_history`'s query without its order and limit: ``filters`` are the request id,
    who answered, the status, the kind, the search text and the answered-after moment;
    ``tool`` keeps that tool's requests."""
    only, who, wanted, of_kind, needle, after = filters
    sql: list[LiteralString] = [_HISTORY]
    args: list[object] = []
    if only is not None:
        sql.append(" AND key = %s")
        args.append(row_key(only))
    if who is not None:
        sql.append(" AND answered_by = %s")
        args.append(who.encode())
    if wanted is not None:
        sql.append(_STATUS[wanted])
        if wanted in ("answered", "claimed"):
            args.append(now)
    if of_kind is not None:
        sql.append(" AND kind = %s")
        args.append(of_kind.encode())
    if tool is not None:
        sql.append(" AND tool = %s")
        args.append(tool.encode())
    if after is not None:
        sql.append(" AND answered_at > %s")
        args.append(after)
    if needle is not None:
        sql.append(TEXT_MATCH)
        args.append(like_pattern(needle))
    return sql, args


def unannounced_query(now: float) -> tuple[LiteralString, list[object]]:
    """`take_unannounced`'s statement (its last argument, the limit, to append)."""
    sql, args = pending_filters(None, None, None, None, None, now, select=_KEYS)
    query: LiteralString = (
        "UPDATE toolnexus_halts SET announced = true WHERE key IN ("
        + "".join(sql)
        + " AND NOT announced ORDER BY created_at, request_id LIMIT %s"
        " FOR UPDATE SKIP LOCKED) AND NOT announced RETURNING request_id, kind, prompt,"
        " tool, conversation_id, created_at, expires_at"
    )
    return query, args


def _history_entry(row: tuple[Any, ...], now: float, where: str) -> HistoryEntry:
    rid, kind, prompt, tool, conversation_id, created_at, status, text = row[:8]
    who, answered_at, digest, settled_at, recorded, lease_until = row[8:14]
    original, problem, flagged_at, asked = row[14:]
    rid = from_bytea(rid)
    current: RequestStatus = lapsed_status(status, recorded, lease_until, now)  # pyright: ignore[reportAssignmentType]
    record = request_record(
        rid,
        text,
        answered_at,
        from_bytea(who),
        digest,
        current,
        settled_at,
        None,
        where,
        original=original,
        problem=from_bytea(problem),
        flagged_at=flagged_at,
    )
    return HistoryEntry(
        request_id=rid,
        kind=from_bytea(kind) or "",
        prompt=from_bytea(prompt) or "",
        tool=from_bytea(tool) or "",
        conversation_id=from_bytea(conversation_id),
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
