"""`PostgresStore`: conversations, halted runs and agent handle tables in PostgreSQL.

The scale-out store: every worker process, on any machine, opens the same database; a
webhook landing on any worker can resume any run, and two workers racing on one answer
resolve to exactly one resume. Built on psycopg 3 (async) with a `psycopg_pool` connection
pool; both come with the ``postgres`` extra and are imported only when a store is created.

- Each operation runs on a pooled autocommit connection, on the cursor kept with it, lent by
  `toolnexus.stores.postgres_conn` (which also opens the pool and turns psycopg failures into
  `StoreError`). Every fixed statement is executed ``prepare=True``: prepared on each
  connection at its first use, not after psycopg's default five — a worker's pool has several
  connections, each of which would otherwise send every statement's text to be parsed and
  planned five times (for the racing statements' CTEs, several times the cost of running
  them prepared, on the client and more on the server). The run store's statements are in
  `toolnexus.stores.postgres_runs`: the request states of `toolnexus.stores.requests`
  (T1–T13) with the in-memory store's semantics, the racing ones (``claim``, ``take``, the
  fenced writes of a claim's holder) one statement each, so PostgreSQL's row lock decides
  every race.
- Migrations (`toolnexus.stores.postgres_schema`) run when the pool opens, under an advisory
  lock.
- `wait_for_answer` and `wait_for_queued` ``LISTEN`` on the channel of the store's schema
  (`toolnexus.stores.postgres_listen.CHANNEL` in ``public``) on one dedicated connection per
  store; whatever records, settles or requeues an answer ``NOTIFY``s in the
  statement or transaction that commits it, so the notification is sent exactly when the
  change is visible. The payload is the hex of the request's key (ids may be longer than a
  payload or hold U+0000).
- An agent runtime's handle table is one row per handle; `PostgresStore.save_handles` upserts
  the rows it is given in one statement (``INSERT … SELECT FROM unnest(…) ON CONFLICT DO
  UPDATE``), so a save costs what changed, whatever the size of the tree.
- Leases, ``answered_at``, handle ``updated_at`` and ages use the caller's clock (injectable),
  not the server's.

Every psycopg failure surfaces as a `StoreError` naming the server (never its password). A
store belongs to the event loop that first used it, like the pool under it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, LiteralString, Self

from .._types import Message
from ..errors import StoreError, UsageError
from ..loop.checkpoint import Checkpoint
from ..suspension import Answer
from . import postgres_runs as runs
from ._codec import check_id, decode_messages, encode_messages
from ._handlerows import check_runtime_id, decode_handle_row, encode_handle_rows
from ._runrows import halt_row, listed, load_checkpoint
from .asked import asked_of, encode_asked
from .checks import (
    check_answer,
    check_claim,
    check_filters,
    check_flag,
    check_limit,
    check_optional_text,
    check_request_id,
    check_seconds,
    encode_answer,
    encode_original,
    encode_outcome,
)
from .postgres_conn import (
    Connections,
    Pooled,
    PooledCursor,
    describe,
    import_driver,
    promptly,
)
from .postgres_inbox import PostgresInboxIndex, pending_filters
from .postgres_listen import CHANNEL, Listener
from .postgres_schema import from_bytea as _s
from .postgres_schema import row_key as _key
from .postgres_schema import to_bytea as _b
from .postgres_sessions import PostgresSessions
from .requests import DEFAULT_LEASE_S, AnswerRecord, Claim, PendingEntry

__all__ = ["CHANNEL", "PostgresStore"]

_GET = "SELECT messages FROM toolnexus_conversations WHERE key = %s"
_SAVE = (
    "INSERT INTO toolnexus_conversations (key, id, messages, updated_at) VALUES (%s, %s, %s, %s)"
    " ON CONFLICT (key) DO UPDATE SET messages = EXCLUDED.messages,"
    " updated_at = EXCLUDED.updated_at"
)
_DELETE = "DELETE FROM toolnexus_conversations WHERE key = %s"
_SAVE_HANDLES = (
    "INSERT INTO toolnexus_runtime_handles (runtime_key, handle_key, runtime_id, handle_id,"
    " data, updated_at) SELECT %(rkey)s, h.key, %(rid)s, h.id, h.data, %(at)s"
    " FROM unnest(%(keys)s::bytea[], %(ids)s::bytea[], %(data)s::text[]) AS h (key, id, data)"
    " ON CONFLICT (runtime_key, handle_key) DO UPDATE SET data = EXCLUDED.data,"
    " updated_at = EXCLUDED.updated_at"
)
_LOAD_HANDLES = (
    "SELECT handle_id, data FROM toolnexus_runtime_handles WHERE runtime_key = %s"
    " ORDER BY handle_id"
)
_DELETE_HANDLES = "DELETE FROM toolnexus_runtime_handles WHERE runtime_key = %s"
# T1: saving again replaces the checkpoint, its index columns and what it asked (migration 12:
# kept when the checkpoint goes), and keeps the status. The checkpoint's hash and declared
# version go with its text (the one-statement answer's proof that it is readable, migration
# 9): the server hashes the text it stores (sent once).
_SAVE_HALT = (
    "INSERT INTO toolnexus_halts (key, request_id, status, checkpoint, kind, tool,"
    " conversation_id, created_at, expires_at, prompt, queue_key, halt_digest, deadline,"
    " checkpoint_sha256, checkpoint_version, asked)"
    " VALUES (%(key)s, %(id)s, 'pending', %(checkpoint)s, %(kind)s, %(tool)s,"
    " %(conversation)s, %(created)s, %(expires)s, %(prompt)s, %(queue)s, %(digest)s,"
    " %(deadline)s, sha256(convert_to(%(checkpoint)s, 'UTF8')), %(version)s, %(asked)s)"
    " ON CONFLICT (key) DO UPDATE SET checkpoint = EXCLUDED.checkpoint,"
    " kind = EXCLUDED.kind, tool = EXCLUDED.tool, conversation_id = EXCLUDED.conversation_id,"
    " created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at,"
    " prompt = EXCLUDED.prompt, queue_key = EXCLUDED.queue_key,"
    " halt_digest = EXCLUDED.halt_digest, deadline = EXCLUDED.deadline,"
    " checkpoint_sha256 = EXCLUDED.checkpoint_sha256,"
    " checkpoint_version = EXCLUDED.checkpoint_version, asked = EXCLUDED.asked"
)
_LOAD_HALT = "SELECT checkpoint FROM toolnexus_halts WHERE key = %s"


class PostgresStore(PostgresInboxIndex):
    """A `ConversationStore`, `RunStore`, `AnswerChannel` and `RuntimeStore` in PostgreSQL.

    Example:
        >>> store = PostgresStore("postgresql://app@db.internal/app", max_size=20)
        >>> # async with store: await store.save("c1", [...]); await store.take()

    Args:
        url: a libpq connection string or URL (``postgresql://user@host:port/db``).
        min_size: connections the pool keeps open.
        max_size: the most connections the pool opens (plus one for ``LISTEN``, opened by
            the first `wait_for_answer` or `wait_for_queued`).
        timeout: seconds to wait for a free pooled connection (and for the pool to fill).
        connect_timeout: seconds the first connection may take (default 5, never more than
            ``timeout``; a ``connect_timeout`` in the URL wins): an unreachable server fails
            the open within it, with the driver's reason in the `StoreError`.
        clock: the time source for leases, ``answered_at`` and ages (default `time.time`).

    Raises:
        ImportError: psycopg is not installed (the ``postgres`` extra).
        UsageError: the URL cannot be parsed, or the sizes or timeout are not sensible.
    """

    def __init__(
        self,
        url: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 30.0,
        connect_timeout: float = 5.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        psycopg, _ = import_driver()
        for name, size, low in (("min_size", min_size, 0), ("max_size", max_size, 1)):
            if isinstance(size, bool) or not isinstance(size, int) or size < low:  # pyright: ignore[reportUnnecessaryIsInstance]
                raise UsageError(f"{name} must be an int >= {low}, got {size!r}")
        if max_size < min_size:
            raise UsageError(f"max_size ({max_size}) must be >= min_size ({min_size})")
        if not isinstance(url, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UsageError(f"the postgres url must be a string, got {type(url).__name__}")
        try:
            params: dict[str, Any] = psycopg.conninfo.conninfo_to_dict(url)
        except psycopg.Error as exc:
            raise UsageError(f"cannot parse the postgres connection string: {exc}") from exc
        wait_s = check_seconds(timeout, "timeout", positive=True)
        given = params.get("connect_timeout")
        connect_s = min(check_seconds(connect_timeout, "connect_timeout", positive=True), wait_s)
        if given is not None and str(given).isdigit() and int(given) > 0:
            connect_s = float(given)
        self._url = url
        self._where = describe(params)
        # The LISTEN connection is opened outside the pool: bound its connect the same way.
        self._listen_kwargs: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in params:
            self._listen_kwargs["connect_timeout"] = max(1, round(wait_s))
        self._conns = Connections(
            url,
            self._where,
            min_size=min_size,
            max_size=max_size,
            timeout=wait_s,
            connect_timeout=connect_s,
        )
        self._now = clock or time.time
        self._listener: Listener | None = None
        self._heard = -1  # the listener's count when wait_for_queued last returned

    def __repr__(self) -> str:
        return f"PostgresStore({self._where!r})"

    @property
    def sessions(self) -> PostgresSessions:
        """The approvals inbox's sessions (`toolnexus.stores.sessions`)."""
        return PostgresSessions(self._connection, self._now)

    # -- conversations --------------------------------------------------------------------

    async def get(self, id: str) -> list[Message] | None:
        """The transcript stored under ``id``, or ``None``.

        Raises:
            StoreError: the database failed, or the stored row is not a transcript.
        """
        key = check_id(id)
        row = await self._one(_GET, (_key(key),))
        return None if row is None else decode_messages(row[0], key, self._where)

    async def save(self, id: str, messages: list[Message]) -> None:
        """Store ``messages`` under ``id``, replacing any previous transcript."""
        key = check_id(id)
        text = encode_messages(messages)
        async with self._cursor() as cur:
            await cur.execute(_SAVE, (_key(key), key.encode(), text, time.time()), prepare=True)

    async def delete(self, id: str) -> bool:
        """Forget ``id``; True when a transcript was deleted."""
        key = check_id(id)
        async with self._cursor() as cur:
            await cur.execute(_DELETE, (_key(key),), prepare=True)
            return cur.rowcount > 0

    # -- the runtime store (handle tables) ------------------------------------------------

    async def save_handles(self, runtime_id: str, rows: list[dict[str, Any]]) -> None:
        """Insert or replace these handle rows of ``runtime_id`` (keyed by ``row["id"]``).

        One statement (atomic on its own), writing only ``rows``. A handle given twice keeps
        its last row.

        Raises:
            UsageError: ``rows`` is not a list of JSON-serialisable dicts with string ids.
            StoreError: the database failed; nothing changed.
        """
        rid = check_runtime_id(runtime_id)
        encoded = encode_handle_rows(rows)
        if not encoded:
            return
        values: dict[str, Any] = {
            "rkey": _key(rid),
            "rid": rid.encode(),
            "at": self._now(),
            "keys": [_key(hid) for hid, _ in encoded],
            "ids": [hid.encode() for hid, _ in encoded],
            "data": [data for _, data in encoded],
        }
        async with self._cursor() as cur:
            await cur.execute(_SAVE_HANDLES, values, prepare=True)

    async def load_handles(self, runtime_id: str) -> list[dict[str, Any]]:
        """Every stored handle row of ``runtime_id``, in handle-id order.

        Raises:
            StoreError: the database failed, or a stored row is not a handle's JSON object.
        """
        rid = check_runtime_id(runtime_id)
        async with self._cursor() as cur:
            await cur.execute(_LOAD_HANDLES, (_key(rid),), prepare=True)
            found = await cur.fetchall()
        return [decode_handle_row(rid, _s(hid), data, self._where) for hid, data in found]

    async def delete_handles(self, runtime_id: str) -> bool:
        """Forget the whole handle table of ``runtime_id``; True when rows were deleted."""
        rid = check_runtime_id(runtime_id)
        async with self._cursor() as cur:
            await cur.execute(_DELETE_HANDLES, (_key(rid),), prepare=True)
            return cur.rowcount > 0

    # -- the run store: T1 and reads ------------------------------------------------------

    async def save_halt(self, checkpoint: Checkpoint) -> None:
        """T1: insert or replace the halted run waiting on ``checkpoint.pending.id``.

        Replacing keeps the row's status (a claimed run stays claimed).
        """
        row = halt_row(checkpoint)
        values: dict[str, Any] = {
            "key": _key(row.request_id),
            "id": row.request_id.encode(),
            "checkpoint": row.checkpoint,
            "kind": row.kind.encode(),
            "tool": row.tool.encode(),
            "conversation": _b(row.conversation_id),
            "created": row.created_at,
            "expires": _b(row.expires_at),
            "prompt": row.prompt.encode(),
            "queue": _key(checkpoint.queue),
            "digest": row.digest,
            "deadline": row.deadline,
            "version": row.version,
            "asked": encode_asked(asked_of(checkpoint)),
        }
        async with self._cursor() as cur:
            await cur.execute(_SAVE_HALT, values, prepare=True)

    async def load_halt(self, request_id: str) -> Checkpoint | None:
        """The checkpoint waiting on ``request_id`` (any status), or ``None``.

        Raises:
            CheckpointError: the stored checkpoint is corrupt or from a newer toolnexus.
        """
        rid = check_request_id(request_id)
        row = await self._one(_LOAD_HALT, (_key(rid),))
        if row is None or row[0] is None:
            return None
        return load_checkpoint(row[0], rid, self._where)

    async def load_waiting(self, request_id: str) -> Checkpoint | None:
        """`load_halt` for a resume with the host's own answer: refuses (`AnswerConflict`) a
        halted run the row already shows claimed under a live lease, as the claim would, or
        settled, as its answer record would."""
        rid = check_request_id(request_id)
        async with self._cursor() as cur:
            return await runs.load_waiting(cur, rid, self._now(), self._where)

    async def answer_record(self, request_id: str) -> AnswerRecord | None:
        """The recorded answer and status of ``request_id``; ``None`` while pending/unknown.

        Raises:
            StoreError: the stored answer or outcome was hand-edited into something else.
        """
        rid = check_request_id(request_id)
        async with self._cursor() as cur:
            return await runs.answer_of(cur, rid, self._now(), self._where)

    async def list_pending(
        self,
        *,
        kind: str | None = None,
        tool: str | None = None,
        conversation_id: str | None = None,
        older_than: float | None = None,
        newer_than: float | None = None,
        limit: int = 100,
    ) -> list[PendingEntry]:
        """Requests waiting for a human (``pending``, or T10 back to pending), and the
        unsettled ones a resumer flagged (T13), oldest first.

        ``older_than`` / ``newer_than`` are ages in seconds (see `RunStore.list_pending`).
        """
        kind, tool, conversation_id, older_than, newer_than = check_filters(
            kind, tool, conversation_id, older_than, newer_than
        )
        size = check_limit(limit)
        now = self._now()
        sql, args = pending_filters(kind, tool, conversation_id, older_than, newer_than, now)
        sql.append(" ORDER BY created_at, request_id LIMIT %s")
        args.append(size)
        async with self._cursor() as cur:
            await cur.execute("".join(sql), args)
            rows = await cur.fetchall()
        return [listed(tuple(_s(value) for value in row), now) for row in rows]

    # -- answering: T2, T3, T11 -----------------------------------------------------------

    async def post_answer(
        self,
        request_id: str,
        answer: Answer,
        *,
        answered_by: str | None = None,
        digest: str | None = None,
    ) -> AnswerRecord:
        """T2/T3: record ``answer`` exactly once, queue it and NOTIFY (see `RunStore`).

        Raises:
            UnknownRequest: no halted run waits on ``request_id``.
            AnswerMismatch: ``answer.id`` is not ``request_id``.
            UsageError: ``answer`` is not a well-typed `Answer` (or its wire dict).
            AnswerConflict: already answered, claimed under a live lease, or cancelled.
            RequestExpired: past its ``expiresAt``; the expired decline was recorded instead.
        """
        rid = check_request_id(request_id)
        reply = check_answer(answer, rid)
        text = encode_answer(reply)
        who = check_optional_text(answered_by, "answered_by")
        tag = check_optional_text(digest, "digest")
        async with self._cursor() as cur:
            return await runs.post_answer(cur, rid, text, reply, who, tag, self._now(), self._where)

    async def expire(self, request_id: str) -> AnswerRecord:
        """T3: record the expired decline for a pending request (answered by `EXPIRED_BY`).

        Raises:
            UnknownRequest: no halted run waits on ``request_id``.
            AnswerConflict: it was answered or cancelled first.
        """
        rid = check_request_id(request_id)
        async with self._cursor() as cur:
            return await runs.expire(cur, rid, self._now(), self._where)

    async def cancel(
        self,
        request_id: str,
        *,
        reason: str | None = None,
        answered_by: str | None = None,
    ) -> AnswerRecord:
        """T11: end the halted run without resuming it, and NOTIFY its waiters.

        Raises:
            UnknownRequest: no halted run waits on ``request_id``.
            AnswerConflict: it was answered, claimed under a live lease, or settled first.
        """
        rid = check_request_id(request_id)
        note = check_optional_text(reason, "reason")
        who = check_optional_text(answered_by, "answered_by")
        async with self._cursor() as cur:
            return await runs.cancel(cur, rid, note, who, self._now(), self._where)

    # -- resuming: T4–T10 -----------------------------------------------------------------

    async def claim(
        self,
        request_id: str,
        answer: Answer,
        *,
        answered_by: str | None = None,
        digest: str = "",
        lease_s: float = DEFAULT_LEASE_S,
        original: Mapping[str, Any] | None = None,
    ) -> Claim:
        """T4: atomically take ``request_id`` for resuming with ``answer``, by any worker,
        recording ``digest`` and ``original`` with it (see `RunStore.claim`).

        A request with no row is recorded too (a resume from a host-held transcript).

        Raises:
            AnswerConflict: answered, claimed under a live lease, or cancelled.
        """
        rid = check_request_id(request_id)
        text = encode_answer(answer)
        who = check_optional_text(answered_by, "answered_by")
        tag = check_optional_text(digest, "digest") or ""
        lease = check_seconds(lease_s, "lease_s", positive=True)
        edited = encode_original(original)
        now = self._now()
        async with self._cursor() as cur:
            return await runs.claim(cur, rid, text, answer, who, tag, edited, now, now + lease)

    async def take(
        self,
        request_id: str | None = None,
        *,
        lease_s: float = DEFAULT_LEASE_S,
        queue: str = "",
    ) -> Claim | None:
        """T5: take an answered request for resuming: ``request_id``, or the oldest one
        answered in ``queue`` (the checkpoint's `Checkpoint.queue`).

        ``None`` when there is nothing to take. Without an id, concurrent workers skip the
        rows others are taking (``FOR UPDATE SKIP LOCKED``): nobody waits, nobody doubles.
        """
        lease = check_seconds(lease_s, "lease_s", positive=True)
        lane = check_optional_text(queue, "queue") or ""
        rid = None if request_id is None else check_request_id(request_id)
        now = self._now()
        async with self._cursor() as cur:
            return await runs.take(cur, rid, lane, now, now + lease, self._where)

    async def renew(self, claim: Claim, *, lease_s: float = DEFAULT_LEASE_S) -> Claim:
        """T6: extend the lease; the returned `Claim` carries the new ``lease_until``.

        Raises:
            LeaseLost: the claim is no longer the request's current one.
        """
        lease = check_seconds(lease_s, "lease_s", positive=True)
        held = check_claim(claim)
        async with self._cursor() as cur:
            return await runs.renew(cur, held, self._now() + lease)

    async def flag(self, request_id: str, claim: Claim, problem: str, *, hold_s: float) -> None:
        """T13: hold the claimed request for ``hold_s`` seconds (``math.inf``: until an
        operator acts; stored as ``'Infinity'``) with ``problem`` (see `RunStore.flag`).

        Raises:
            UsageError: a bad ``problem``, ``hold_s`` or ``claim``.
            LeaseLost: the claim is no longer the request's current one.
        """
        _, held, text, hold = check_flag(request_id, claim, problem, hold_s)
        now = self._now()
        async with self._cursor() as cur:
            await runs.flag(cur, held, text, now, now + hold)

    async def save_progress(self, checkpoint: Checkpoint, claim: Claim) -> None:
        """T7: replace the claimed run's checkpoint (the calls the resume resolved).

        From here the claim's answer counts as recorded: a lapse or a release returns the
        request to ``answered``, never to ``pending``.

        Raises:
            LeaseLost: the claim is no longer the request's current one.
        """
        row = halt_row(checkpoint, digest=False)  # T7 keeps the digest T1 stored
        held = check_claim(claim)
        async with self._cursor() as cur:
            await runs.save_progress(cur, row, checkpoint.queue, held, self._now())

    async def complete(
        self,
        request_id: str,
        claim: Claim | None = None,
        *,
        outcome: dict[str, Any] | None = None,
    ) -> None:
        """T8: settle the request ``done`` (``expired`` for the expired decline) and NOTIFY.

        Without ``claim`` the write is not fenced (for callers that hold no claim).

        Raises:
            UnknownRequest: no row for ``request_id``.
            LeaseLost: ``claim`` is no longer the request's current one.
        """
        rid = check_request_id(request_id)
        kept = encode_outcome(outcome)
        held = None if claim is None else check_claim(claim)
        async with self._cursor() as cur:
            await runs.complete(cur, rid, held, kept, self._now())

    async def release(self, request_id: str, claim: Claim | None = None) -> None:
        """T9: the resume failed before finishing: give the request back.

        A stale ``claim`` (or a request that is not claimed) changes nothing.
        """
        rid = check_request_id(request_id)
        held = None if claim is None else check_claim(claim)
        if held is not None and held.request_id != rid:
            return
        async with self._cursor() as cur:
            await runs.release(cur, rid, None if held is None else held.token)

    # -- retention: T12 -------------------------------------------------------------------

    async def purge(self, *, older_than: float) -> int:
        """T12: delete requests settled more than ``older_than`` seconds ago; the count."""
        age = check_seconds(older_than, "older_than")
        async with self._cursor() as cur:
            return await runs.purge(cur, self._now() - age)

    # -- waiting --------------------------------------------------------------------------

    async def wait_for_answer(
        self, request_id: str, *, timeout: float | None
    ) -> AnswerRecord | None:
        """Wait until ``request_id`` leaves ``pending``; ``None`` after ``timeout`` seconds.

        The store LISTENs before it reads the row, so an answer committed at any moment is
        either read or announced. A lost ``LISTEN`` connection wakes every waiter, which
        re-reads its row and listens again on a new connection. A cancel is raised at once
        in every phase (see `promptly`), and the waiter is always unregistered.

        Raises:
            StoreError: the database is unreachable, or the store was closed.
        """
        rid = check_request_id(request_id)
        limit = None if timeout is None else check_seconds(timeout, "timeout")
        loop = asyncio.get_running_loop()
        deadline = None if limit is None else loop.time() + limit
        note = _key(rid).hex()
        while True:
            listener = self._listening()
            waiter = listener.register(note)
            try:
                record = await promptly(self._look(listener, rid))
                if record is not None:
                    return record
                if deadline is not None and loop.time() >= deadline:
                    return None
                try:
                    async with asyncio.timeout_at(deadline):
                        await waiter
                except TimeoutError:
                    return None
            finally:
                listener.unregister(note, waiter)

    async def wait_for_queued(self, *, timeout: float) -> None:
        """Return when an answer may have been queued for a resumer, or after ``timeout``.

        Any notification on the channel wakes it (a spurious return is harmless: the worker
        drains again); a lease running out (T10) is noticed at the next drain. It returns at
        once when it could have missed one: on the first wait, when LISTEN was not active
        (first use, a lost connection), or when a notification came since the last wait
        returned (while the worker was draining).

        Raises:
            StoreError: the database is unreachable, or the store was closed.
        """
        limit = check_seconds(timeout, "timeout")
        deadline = asyncio.get_running_loop().time() + limit
        listener = self._listening()
        waiter = listener.register(None)
        try:
            started = await promptly(self._listen(listener))
            if started or listener.heard != self._heard:
                return
            async with asyncio.timeout_at(deadline):
                await waiter
        except TimeoutError:
            return
        finally:
            listener.unregister(None, waiter)
            self._heard = listener.heard

    def _listening(self) -> Listener:
        if self._conns.closed:
            raise StoreError(f"the store for {self._where} is closed")
        if self._listener is None:
            self._listener = Listener(self._url, self._listen_kwargs)
        return self._listener

    async def _listen(self, listener: Listener) -> bool:
        async with self._conns.translated():
            return await listener.start()

    async def _look(self, listener: Listener, request_id: str) -> AnswerRecord | None:
        await self._listen(listener)
        return await self.answer_record(request_id)

    # -- lifecycle ------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the pool and the LISTEN connection; parked waiters get `StoreError`."""
        if self._conns.closed:
            return
        self._conns.closed = True
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.aclose()
        await self._conns.aclose()

    async def open(self) -> None:
        """Connect now (and migrate): an unreachable server fails here, within
        ``connect_timeout`` seconds, with the driver's reason in the `StoreError`.

        Optional — the first operation opens the store too. ``async with store`` calls it.
        """
        await self._conns.pool()

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- plumbing -------------------------------------------------------------------------

    async def _one(self, sql: LiteralString, args: tuple[object, ...]) -> tuple[Any, ...] | None:
        async with self._cursor() as cur:
            await cur.execute(sql, args, prepare=True)
            return await cur.fetchone()

    def _connection(self) -> Pooled:
        """A pooled autocommit connection for one operation; psycopg failures become
        `StoreError` (see `toolnexus.stores.postgres_conn`)."""
        return self._conns.connection()

    def _cursor(self) -> PooledCursor:
        """`_connection`'s cursor, kept with the connection: what the store's own operations
        run their statements on (see `toolnexus.stores.postgres_conn`)."""
        return self._conns.cursor()
