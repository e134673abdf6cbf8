"""`PostgresStore`'s connections: the psycopg_pool pool, and how one operation borrows one.

`Connections` opens the pool on first use (a direct probe first, then the migrations under
their advisory lock), lends one autocommit connection per operation (`Connections.connection`,
``async with``), and turns every psycopg failure into a `StoreError` naming the server (never
its password).

Between operations a few connections stay out of the pool (`Connections.keep`, the pool's
``min_size``, which it keeps open anyway): the next operation takes the last one given back,
without the pool's lock, bookkeeping and logging — on a worker's path that is several
checkouts per request. A connection is kept only when it is idle (no transaction, not broken:
anything else goes back to the pool, which discards it), when nobody waits in the pool for one,
and for at most `HOLD_S` seconds since it left the pool: so the pool still sees each connection
that often (its ``max_lifetime``, its stats) and never waits with one of its own parked here.

The store's own operations borrow a cursor (`Connections.cursor`) rather than the connection:
one cursor per connection, made when the connection leaves the pool and kept with it while it
stays out, so a statement does not build a cursor of its own as ``conn.execute`` does (its
adapters map, its transformer: about a fifth of psycopg's CPU time per statement). A kept
cursor holds its last result until the connection's next operation: at most `keep` results.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncGenerator, Coroutine
from contextlib import asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from .._extras import missing_extra
from ..errors import StoreError
from .postgres_schema import migrate

if TYPE_CHECKING:
    from psycopg import AsyncConnection, AsyncCursor
    from psycopg_pool import AsyncConnectionPool

__all__ = [
    "HOLD_S",
    "Connections",
    "Lent",
    "Pooled",
    "PooledCursor",
    "describe",
    "import_driver",
    "promptly",
]

T = TypeVar("T")

HOLD_S = 30.0
"""The longest a connection stays out of the pool between operations (seconds)."""


def import_driver() -> tuple[Any, Any]:
    """``(psycopg, psycopg_pool)``.

    Raises:
        ImportError: they are not installed (the ``postgres`` extra).
    """
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise missing_extra(
            "the postgres store needs psycopg 3 and psycopg_pool", "postgres"
        ) from exc
    return psycopg, psycopg_pool


class Connections:
    """The pool of one store, opened on first use, and the connections kept out of it.

    Args:
        url: the libpq connection string.
        where: the server as errors name it (`describe`).
        min_size, max_size, timeout: the pool's.
        connect_timeout: how long the probe before the pool may take (seconds).
    """

    __slots__ = (
        "_connect_timeout",
        "_idle",
        "_idle_status",
        "_max_size",
        "_min_size",
        "_opening",
        "_pool",
        "_timeout",
        "_url",
        "_waiting",
        "closed",
        "where",
    )

    def __init__(
        self,
        url: str,
        where: str,
        *,
        min_size: int,
        max_size: int,
        timeout: float,
        connect_timeout: float,
    ) -> None:
        self._url = url
        self.where = where
        self._min_size = min_size
        self._max_size = max_size
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._pool: AsyncConnectionPool[AsyncConnection[Any]] | None = None
        self._opening: asyncio.Lock | None = None
        self._idle: list[Lent] = []
        self._waiting = 0  # operations waiting in the pool for a connection
        # Connected, no transaction open: a connection that may be kept.
        self._idle_status = _psycopg().pq.TransactionStatus.IDLE
        self.closed = False

    @property
    def keep(self) -> int:
        """How many connections may stay out of the pool between operations."""
        return self._min_size

    def connection(self) -> Pooled:
        """A connection for one operation (``async with``); psycopg failures become
        `StoreError`."""
        return Pooled(self)

    def cursor(self) -> PooledCursor:
        """The cursor of a connection, for one operation (``async with``); psycopg failures
        become `StoreError`."""
        return PooledCursor(self)

    async def checkout(self) -> Lent:
        """A connection (with its cursor, once made), and when it left the pool: the last
        one kept, else one from the pool (opening it first)."""
        if self.closed:
            raise StoreError(f"the store for {self.where} is closed")
        idle = self._idle
        while idle:
            lent = idle.pop()
            if time.monotonic() - lent.since < HOLD_S:
                return lent
            await self._give_to_pool(lent.conn)  # held long enough: the pool sees it again
        # The first open waits inside psycopg_pool, whose `wait_for` can swallow a cancel
        # (see `promptly`): a worker stopped as it starts must stop, not open the pool.
        pool = self._pool or await self.pool()
        self._waiting += 1
        try:
            conn = await pool.getconn()
        except _psycopg().Error as exc:
            raise translate(exc, self.where) from exc
        finally:
            self._waiting -= 1
        return Lent(conn, time.monotonic())

    async def give_back(self, lent: Lent) -> None:
        """Keep ``lent`` for the next operation, or return its connection to the pool (see
        the module)."""
        if (
            not self._waiting
            and not self.closed
            and len(self._idle) < self._min_size
            and lent.conn.pgconn.transaction_status == self._idle_status
            and time.monotonic() - lent.since < HOLD_S
        ):
            self._idle.append(lent)
            return
        await self._give_to_pool(lent.conn)

    async def _give_to_pool(self, conn: AsyncConnection[Any]) -> None:
        pool = self._pool
        if pool is None:  # closed meanwhile: nothing to return it to
            await conn.close()
        else:
            await pool.putconn(conn)

    async def pool(self) -> AsyncConnectionPool[AsyncConnection[Any]]:
        """The pool, opened (and the schema migrated) on first use."""
        async with self.translated():
            return self._pool or await promptly(self._open())

    @asynccontextmanager
    async def translated(self) -> AsyncGenerator[None]:
        """psycopg failures inside become `StoreError`; a closed store refuses at once."""
        psycopg, _ = import_driver()
        if self.closed:
            raise StoreError(f"the store for {self.where} is closed")
        try:
            yield
        except psycopg.Error as exc:
            raise translate(exc, self.where) from exc

    async def aclose(self) -> None:
        """Close every connection, kept or pooled; an operation in flight gives its connection
        back to a closed pool, which closes it."""
        self.closed = True
        idle, self._idle = self._idle, []
        for lent in idle:
            await self._give_to_pool(lent.conn)
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def _open(self) -> AsyncConnectionPool[AsyncConnection[Any]]:
        _, psycopg_pool = import_driver()
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
            await self._probe()
            try:
                await pool.open(wait=True, timeout=self._timeout)
                async with pool.connection() as conn:
                    await migrate(conn, where=self.where)
            except BaseException:
                await pool.close()
                raise
            if self.closed:
                await pool.close()
                raise StoreError(f"the store for {self.where} is closed")
            self._pool = pool
            return pool

    async def _probe(self) -> None:
        """One direct connection before the pool: the pool retries a refused connect quietly
        until its ``timeout`` and then names no cause; this fails at once with the driver's."""
        psycopg, _ = import_driver()
        seconds = self._connect_timeout
        try:
            async with asyncio.timeout(seconds + 1):
                conn = await psycopg.AsyncConnection.connect(
                    self._url, autocommit=True, connect_timeout=max(1, math.ceil(seconds))
                )
        except TimeoutError:
            raise StoreError(
                f"cannot reach {self.where} (no answer within {seconds:g} s); check that the "
                "server is up and the URL right"
            ) from None
        await conn.close()


class Lent:
    """A connection out of the pool, when it left it, and its cursor once one was made."""

    __slots__ = ("conn", "cursor", "since")

    def __init__(self, conn: AsyncConnection[Any], since: float) -> None:
        self.conn = conn
        self.since = since
        self.cursor: AsyncCursor[Any] | None = None


class _Borrowed:
    """What `Pooled` and `PooledCursor` share: the connection lent for one operation, given
    back on exit (`Connections.give_back`); a psycopg failure inside is raised as `StoreError`.

    No generator-based context managers (``pool.connection()``, `contextlib`): every statement
    of the store passes here (bench/bench_durable.py, the race, counts them). On autocommit
    connections nothing else differs from ``pool.connection()``: it also commits (a no-op
    outside a transaction) or rolls back (a ``conn.transaction()`` block has rolled back
    already), and a connection left busy (a statement interrupted by a cancel) or broken goes
    back to the pool, which discards it.
    """

    __slots__ = ("_conns", "_lent")

    def __init__(self, conns: Connections) -> None:
        self._conns = conns
        self._lent: Lent | None = None

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        lent, self._lent = self._lent, None
        if lent is not None:
            await self._conns.give_back(lent)
        if exc is not None and isinstance(exc, _psycopg().Error):
            raise translate(exc, self._conns.where) from exc


class Pooled(_Borrowed):
    """``async with store._connection() as conn``: a connection lent for one operation (see
    `_Borrowed`)."""

    __slots__ = ()

    async def __aenter__(self) -> AsyncConnection[Any]:
        self._lent = await self._conns.checkout()
        return self._lent.conn


class PooledCursor(_Borrowed):
    """``async with store._cursor() as cur``: the cursor of a connection lent for one
    operation (see `_Borrowed`), made on first use and kept with the connection;
    ``cur.connection`` for a transaction."""

    __slots__ = ()

    async def __aenter__(self) -> AsyncCursor[Any]:
        lent = self._lent = await self._conns.checkout()
        if lent.cursor is None:
            lent.cursor = lent.conn.cursor()
        return lent.cursor


def _psycopg() -> Any:
    """The psycopg module (imported by the store's constructor already)."""
    import psycopg

    return psycopg


async def promptly(work: Coroutine[Any, Any, T]) -> T:
    """Await ``work`` in a task of its own, so that a cancel of the caller is raised at once.

    psycopg_pool waits with `asyncio.wait_for`, which on Python 3.11 swallows a cancel that
    arrives just as the awaited event completes (the pool opening, a connection handed over):
    awaited inline, such a read returns normally and the cancelled `wait_for_answer` then
    parks until its timeout, for ever without one. Here the caller awaits `asyncio.wait`,
    which never swallows a cancel; the orphaned work is cancelled and its result dropped.
    """
    task = asyncio.ensure_future(work)
    try:
        await asyncio.wait((task,))
    except BaseException:
        task.cancel()
        task.add_done_callback(_drop)
        raise
    return task.result()


def _drop(task: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned task's outcome, so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()


def describe(params: dict[str, Any]) -> str:
    """``PostgreSQL user@host:port/db`` from parsed conninfo, never the password."""
    user = params.get("user")
    host = params.get("host") or params.get("hostaddr") or "localhost"
    port = params.get("port")
    dbname = params.get("dbname") or user or ""
    where = f"{user}@{host}" if user else str(host)
    if port:
        where += f":{port}"
    return f"PostgreSQL {where}/{dbname}"


def translate(exc: BaseException, where: str) -> StoreError:
    """The `StoreError` for a psycopg (or psycopg_pool) failure."""
    name = type(exc).__name__
    if name in ("PoolTimeout", "PoolClosed", "TooManyRequests"):
        text = f"no connection to {where} was available ({exc})"
    elif name == "OperationalError":
        text = f"cannot reach {where} ({exc}); check that the server is up and the URL right"
    else:
        text = f"{where} failed: {exc}"
    return StoreError(text)
