"""`PostgresStore`: conversations, halted runs and agent handle tables in PostgreSQL.

The scale-out store: every worker process, on any machine, opens the same database; a
webhook landing on any worker can resume any run, and two workers racing on one answer
resolve to exactly one resume. Built on psycopg 3 (async) with a `psycopg_pool` connection
pool; both come with the ``postgres`` extra and are imported only when a store is created.

- Each operation is one statement on a pooled autocommit connection (prepared by psycopg
  after a few uses). ``claim`` and ``post_answer`` are one ``INSERT … ON CONFLICT DO UPDATE
  … WHERE`` that takes a pending (or lease-expired) request and does nothing otherwise, so
  PostgreSQL's row lock decides every race.
- Migrations (`toolnexus.stores.postgres_schema`) run when the pool opens, under an advisory
  lock.
- `wait_for_answer` uses ``LISTEN toolnexus_answers`` on one dedicated connection per
  store; ``post_answer`` and ``complete`` ``NOTIFY`` in the same statement that records the
  answer, so the notification is sent exactly when the answer is committed. The payload is
  the hex of the request's key (ids may be longer than a payload or hold U+0000).
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
import hashlib
import time
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, LiteralString, Self

from .._types import Message
from ..errors import StoreError, UnknownRequest, UsageError
from ..loop.checkpoint import Checkpoint
from ..suspension import Answer
from ._codec import check_id, decode_messages, encode_messages
from ._handlerows import check_runtime_id, decode_handle_row, encode_handle_rows
from ._runrows import answer_record, halt_row, load_checkpoint, pending, stored_digest
from .checks import (
    check_filters,
    check_limit,
    check_optional_text,
    check_request_id,
    check_seconds,
    conflict,
    encode_answer,
)
from .postgres_schema import migrate
from .requests import DEFAULT_LEASE_S, AnswerRecord, PendingEntry

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["CHANNEL", "PostgresStore"]

CHANNEL = "toolnexus_answers"
"""The ``LISTEN/NOTIFY`` channel that announces answered requests."""

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
_SAVE_HALT = (
    "INSERT INTO toolnexus_halts (key, request_id, status, checkpoint, kind, tool,"
    " conversation_id, created_at, expires_at, prompt)"
    " VALUES (%s, %s, 'pending', %s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (key) DO UPDATE SET checkpoint = EXCLUDED.checkpoint,"
    " kind = EXCLUDED.kind, tool = EXCLUDED.tool, conversation_id = EXCLUDED.conversation_id,"
    " created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at,"
    " prompt = EXCLUDED.prompt"
)
_LOAD_HALT = "SELECT checkpoint FROM toolnexus_halts WHERE key = %s"
# Takes a request in one statement: inserts a row for an unknown request, or updates a row
# that is pending or whose lease ran out; any other row is locked, left alone, not returned.
_TAKE = (
    "INSERT INTO toolnexus_halts AS h (key, request_id, status, answer, answered_by, digest,"
    " lease_until, answered_at) VALUES (%(key)s, %(id)s, %(status)s, %(answer)s, %(by)s,"
    " %(digest)s, %(lease)s, %(at)s)"
    " ON CONFLICT (key) DO UPDATE SET status = EXCLUDED.status,"
    " answer = EXCLUDED.answer, answered_by = EXCLUDED.answered_by,"
    " digest = EXCLUDED.digest, lease_until = EXCLUDED.lease_until,"
    " answered_at = EXCLUDED.answered_at"
    " WHERE h.status = 'pending' OR (h.status = 'claimed' AND h.lease_until <= %(now)s)"
    " RETURNING 1"
)
_POST = f"WITH taken AS ({_TAKE}) SELECT pg_notify('{CHANNEL}', %(note)s) FROM taken"
_HOLDER = "SELECT answered_by, status, lease_until FROM toolnexus_halts WHERE key = %s"
_COMPLETE = (
    "WITH done AS (UPDATE toolnexus_halts SET status = 'answered',"
    " answered_at = coalesce(answered_at, %s), lease_until = NULL, checkpoint = NULL"
    f" WHERE key = %s RETURNING 1) SELECT pg_notify('{CHANNEL}', %s) FROM done"
)
_RELEASE = (
    "WITH gone AS (DELETE FROM toolnexus_halts WHERE key = %(key)s"
    " AND status = 'claimed' AND checkpoint IS NULL RETURNING 1)"
    " UPDATE toolnexus_halts SET status = 'pending', lease_until = NULL, answer = NULL,"
    " answered_by = NULL, digest = '' WHERE key = %(key)s AND status = 'claimed'"
    " AND checkpoint IS NOT NULL"
)
_ANSWER = (
    "SELECT answer, answered_at, answered_by, digest FROM toolnexus_halts"
    " WHERE key = %s AND status = 'answered' AND answer IS NOT NULL"
)
_PENDING = (
    "SELECT request_id, kind, prompt, tool, conversation_id, created_at, expires_at"
    " FROM toolnexus_halts WHERE status = 'pending' AND checkpoint IS NOT NULL"
)


def _import() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise ImportError(
            "the postgres store needs psycopg 3 and psycopg_pool: pip install 'toolnexus[postgres]'"
        ) from exc
    return psycopg, psycopg_pool


def _b(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def _s(value: object) -> Any:
    return bytes(value).decode() if isinstance(value, bytes | memoryview) else value  # pyright: ignore[reportUnknownArgumentType]


def _key(id: str) -> bytes:
    """The primary key for an id: its sha256 (see `toolnexus.stores.postgres_schema`)."""
    return hashlib.sha256(id.encode()).digest()


class PostgresStore:
    """A `ConversationStore`, `RunStore`, `AnswerChannel` and `RuntimeStore` in PostgreSQL.

    Example:
        >>> store = PostgresStore("postgresql://app@db.internal/app", max_size=20)
        >>> # async with store: await store.save("c1", [...]); await store.claim(...)

    Args:
        url: a libpq connection string or URL (``postgresql://user@host:port/db``).
        min_size: connections the pool keeps open.
        max_size: the most connections the pool opens (plus one for ``LISTEN``, opened by
            the first `wait_for_answer`).
        timeout: seconds to wait for the server at open, and for a free pooled connection.
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
        clock: Callable[[], float] | None = None,
    ) -> None:
        psycopg, _ = _import()
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
        self._timeout = check_seconds(timeout, "timeout", positive=True)
        self._url = url
        self._where = _describe(params)
        # The LISTEN connection is opened outside the pool: bound its connect the same way.
        self._listen_kwargs: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in params:
            self._listen_kwargs["connect_timeout"] = max(1, round(self._timeout))
        self._min_size = min_size
        self._max_size = max_size
        self._now = clock or time.time
        self._pool: AsyncConnectionPool[AsyncConnection[Any]] | None = None
        self._opening: asyncio.Lock | None = None
        self._listener: _Listener | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"PostgresStore({self._where!r})"

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
        async with self._connection() as conn:
            await conn.execute(_SAVE, (_key(key), key.encode(), text, time.time()))

    async def delete(self, id: str) -> bool:
        """Forget ``id``; True when a transcript was deleted."""
        key = check_id(id)
        async with self._connection() as conn:
            cur = await conn.execute(_DELETE, (_key(key),))
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
        async with self._connection() as conn:
            await conn.execute(_SAVE_HANDLES, values)

    async def load_handles(self, runtime_id: str) -> list[dict[str, Any]]:
        """Every stored handle row of ``runtime_id``, in handle-id order.

        Raises:
            StoreError: the database failed, or a stored row is not a handle's JSON object.
        """
        rid = check_runtime_id(runtime_id)
        async with self._connection() as conn:
            cur = await conn.execute(_LOAD_HANDLES, (_key(rid),))
            found = await cur.fetchall()
        return [decode_handle_row(rid, _s(hid), data, self._where) for hid, data in found]

    async def delete_handles(self, runtime_id: str) -> bool:
        """Forget the whole handle table of ``runtime_id``; True when rows were deleted."""
        rid = check_runtime_id(runtime_id)
        async with self._connection() as conn:
            cur = await conn.execute(_DELETE_HANDLES, (_key(rid),))
            return cur.rowcount > 0

    # -- the run store --------------------------------------------------------------------

    async def save_halt(self, checkpoint: Checkpoint) -> None:
        """Insert or replace the halted run waiting on ``checkpoint.pending.id``.

        Replacing keeps the row's status (a claimed run stays claimed).
        """
        row = halt_row(checkpoint)
        values = (
            _key(row.request_id),
            row.request_id.encode(),
            row.checkpoint,
            row.kind.encode(),
            row.tool.encode(),
            _b(row.conversation_id),
            row.created_at,
            _b(row.expires_at),
            row.prompt.encode(),
        )
        async with self._connection() as conn:
            await conn.execute(_SAVE_HALT, values)

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

    async def claim(
        self,
        request_id: str,
        answer: Answer,
        *,
        answered_by: str | None = None,
        digest: str = "",
        lease_s: float = DEFAULT_LEASE_S,
    ) -> None:
        """Atomically take ``request_id`` for resuming with ``answer`` (see `RunStore.claim`).

        Raises:
            AnswerConflict: already answered, or claimed under a live lease, by any worker.
        """
        rid = check_request_id(request_id)
        values: dict[str, Any] = {
            "key": _key(rid),
            "id": rid.encode(),
            "status": "claimed",
            "answer": encode_answer(answer),
            "by": _b(check_optional_text(answered_by, "answered_by")),
            "digest": check_optional_text(digest, "digest") or "",
            "at": None,
        }
        now = self._now()
        values["lease"] = now + check_seconds(lease_s, "lease_s", positive=True)
        values["now"] = now
        await self._take(_TAKE, rid, values)

    async def post_answer(
        self,
        request_id: str,
        answer: Answer,
        *,
        answered_by: str | None = None,
        digest: str | None = None,
    ) -> None:
        """Record ``answer`` exactly once and NOTIFY the parked run (see `AnswerChannel`)."""
        rid = check_request_id(request_id)
        text = encode_answer(answer)
        who = check_optional_text(answered_by, "answered_by")
        if check_optional_text(digest, "digest") is None:
            row = await self._one(_LOAD_HALT, (_key(rid),))
            digest = stored_digest(None if row is None else row[0], rid, self._where)
        now = self._now()
        key = _key(rid)
        values: dict[str, Any] = {
            "key": key,
            "id": rid.encode(),
            "status": "answered",
            "answer": text,
            "by": _b(who),
            "digest": digest,
            "lease": None,
            "at": now,
            "now": now,
            "note": key.hex(),
        }
        await self._take(_POST, rid, values)

    async def complete(self, request_id: str) -> None:
        """Mark ``request_id`` answered, drop its checkpoint, and NOTIFY waiters.

        Raises:
            UnknownRequest: no row for ``request_id``.
        """
        rid = check_request_id(request_id)
        async with self._connection() as conn:
            key = _key(rid)
            cur = await conn.execute(_COMPLETE, (self._now(), key, key.hex()))
            if cur.rowcount == 0:
                raise UnknownRequest(f'no halted run waits on request "{request_id}"')

    async def release(self, request_id: str) -> None:
        """Give a claimed request back (the resume failed): it can be claimed again."""
        rid = check_request_id(request_id)
        async with self._connection() as conn:
            await conn.execute(_RELEASE, {"key": _key(rid)})

    async def answer_record(self, request_id: str) -> AnswerRecord | None:
        """The accepted answer for ``request_id`` once it is answered, else ``None``."""
        rid = check_request_id(request_id)
        row = await self._one(_ANSWER, (_key(rid),))
        if row is None:
            return None
        return answer_record(rid, row[0], row[1], _s(row[2]), row[3], self._where)

    async def wait_for_answer(
        self, request_id: str, *, timeout: float | None
    ) -> AnswerRecord | None:
        """Wait until ``request_id`` is answered; ``None`` after ``timeout`` seconds.

        The store LISTENs before it reads the row, so an answer committed at any moment is
        either read or announced. A lost ``LISTEN`` connection wakes every waiter, which
        re-reads its row and listens again on a new connection.

        Raises:
            StoreError: the database is unreachable.
        """
        rid = check_request_id(request_id)
        limit = None if timeout is None else check_seconds(timeout, "timeout")
        loop = asyncio.get_running_loop()
        deadline = None if limit is None else loop.time() + limit
        note = _key(rid).hex()
        listener = self._listener
        if listener is None:
            listener = self._listener = _Listener(self._url, self._listen_kwargs)
        while True:
            waiter = listener.register(note)
            try:
                async with self._translated():
                    await listener.start()
                record = await self.answer_record(rid)
                if record is not None:
                    return record
                if deadline is not None and loop.time() >= deadline:
                    return None
                async with asyncio.timeout_at(deadline):
                    await waiter
            except TimeoutError:
                return None
            finally:
                listener.unregister(note, waiter)

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
        """Requests still waiting (status ``pending``), oldest first (see `RunStore`)."""
        kind, tool, conversation_id, older_than, newer_than = check_filters(
            kind, tool, conversation_id, older_than, newer_than
        )
        size = check_limit(limit)
        now = self._now()
        sql: list[LiteralString] = [_PENDING]
        args: list[object] = []
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
        sql.append(" ORDER BY created_at, request_id LIMIT %s")
        args.append(size)
        async with self._connection() as conn:
            cur = await conn.execute("".join(sql), args)
            rows = await cur.fetchall()
        return [pending(*(_s(value) for value in row)) for row in rows]

    # -- lifecycle ------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the pool and the LISTEN connection; parked waiters get `StoreError`."""
        if self._closed:
            return
        self._closed = True
        listener, self._listener = self._listener, None
        if listener is not None:
            await listener.aclose()
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- plumbing -------------------------------------------------------------------------

    async def _take(self, sql: LiteralString, rid: str, values: dict[str, Any]) -> None:
        async with self._connection() as conn:
            cur = await conn.execute(sql, values)
            if cur.rowcount == 0:
                cur = await conn.execute(_HOLDER, (values["key"],))
                row = await cur.fetchone()
                if row is None:
                    raise conflict(rid, None)
                raise conflict(rid, _s(row[0]), row[1], row[2])

    async def _one(self, sql: LiteralString, args: tuple[object, ...]) -> tuple[Any, ...] | None:
        async with self._connection() as conn:
            cur = await conn.execute(sql, args)
            return await cur.fetchone()

    @asynccontextmanager
    async def _connection(self) -> AsyncGenerator[AsyncConnection[Any]]:
        async with self._translated():
            pool = self._pool or await self._open()
            async with pool.connection() as conn:
                yield conn

    @asynccontextmanager
    async def _translated(self) -> AsyncGenerator[None]:
        psycopg, _ = _import()
        if self._closed:
            raise StoreError(f"the store for {self._where} is closed")
        try:
            yield
        except psycopg.Error as exc:
            raise _translate(exc, self._where) from exc

    async def _open(self) -> AsyncConnectionPool[AsyncConnection[Any]]:
        _, psycopg_pool = _import()
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is not None:
                return self._pool
            pool: AsyncConnectionPool[AsyncConnection[Any]] = psycopg_pool.AsyncConnectionPool(
                self._url,
                min_size=self._min_size,
                max_size=self._max_size,
                open=False,
                timeout=self._timeout,
                kwargs={"autocommit": True},
                name="toolnexus",
            )
            try:
                await pool.open(wait=True, timeout=self._timeout)
                async with pool.connection() as conn:
                    await migrate(conn, where=self._where)
            except BaseException:
                await pool.close()
                raise
            if self._closed:
                await pool.close()
                raise StoreError(f"the store for {self._where} is closed")
            self._pool = pool
            return pool


class _Listener:
    """One LISTEN connection and the waiters parked on it, keyed by NOTIFY payload."""

    __slots__ = ("_conn", "_kwargs", "_starting", "_task", "_url", "_waiters")

    def __init__(self, url: str, kwargs: dict[str, Any]) -> None:
        self._url = url
        self._kwargs = kwargs
        self._waiters: dict[str, set[asyncio.Future[None]]] = {}
        self._conn: AsyncConnection[Any] | None = None
        self._task: asyncio.Task[None] | None = None
        self._starting = asyncio.Lock()

    def register(self, key: str) -> asyncio.Future[None]:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(key, set()).add(waiter)
        return waiter

    def unregister(self, key: str, waiter: asyncio.Future[None]) -> None:
        waiters = self._waiters.get(key)
        if waiters is not None:
            waiters.discard(waiter)
            if not waiters:
                del self._waiters[key]

    async def start(self) -> None:
        """Make sure LISTEN is active (connecting again after a lost connection)."""
        if self._task is not None and not self._task.done():
            return
        async with self._starting:
            if self._task is not None and not self._task.done():
                return
            psycopg, _ = _import()
            conn: AsyncConnection[Any] = await psycopg.AsyncConnection.connect(
                self._url, **self._kwargs
            )
            try:
                await conn.execute(f"LISTEN {CHANNEL}")
            except BaseException:
                await conn.close()
                raise
            self._conn = conn
            self._task = asyncio.create_task(self._listen(conn), name="toolnexus-pg-listen")

    async def _listen(self, conn: AsyncConnection[Any]) -> None:
        psycopg, _ = _import()
        try:
            async for note in conn.notifies():
                self._wake(self._waiters.get(note.payload, ()))
        except psycopg.Error:
            pass  # the connection is gone: every waiter re-reads and listens anew
        finally:
            self._wake([w for ws in self._waiters.values() for w in ws])
            await conn.close()

    def _wake(self, waiters: Any) -> None:
        for waiter in list(waiters):
            if not waiter.done():
                waiter.set_result(None)

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                if (current := asyncio.current_task()) is not None and current.cancelling():
                    raise
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()


def _describe(params: dict[str, Any]) -> str:
    """``PostgreSQL user@host:port/db`` from parsed conninfo, never the password."""
    user = params.get("user")
    host = params.get("host") or params.get("hostaddr") or "localhost"
    port = params.get("port")
    dbname = params.get("dbname") or user or ""
    where = f"{user}@{host}" if user else str(host)
    if port:
        where += f":{port}"
    return f"PostgreSQL {where}/{dbname}"


def _translate(exc: BaseException, where: str) -> StoreError:
    name = type(exc).__name__
    if name in ("PoolTimeout", "PoolClosed", "TooManyRequests"):
        text = f"no connection to {where} was available ({exc})"
    elif name == "OperationalError":
        text = f"cannot reach {where} ({exc}); check that the server is up and the URL right"
    else:
        text = f"{where} failed: {exc}"
    return StoreError(text)
