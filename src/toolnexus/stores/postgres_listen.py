"""The ``LISTEN`` connection a `PostgresStore`'s waiters park on, and the channel it listens to.

Whatever records, settles or requeues an answer ``NOTIFY``s the channel of the store's schema
in the statement or transaction that commits it (`toolnexus.stores.postgres_runs`); parked
runs (`PostgresStore.wait_for_answer`) and idle workers (`PostgresStore.wait_for_queued`)
wait here, one connection per store, for a notification with their request's key.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final, LiteralString

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["CHANNEL", "CHANNEL_OF_SCHEMA", "Listener"]

CHANNEL: Final = "toolnexus_answers"
"""The ``LISTEN/NOTIFY`` channel that announces answered, settled and requeued requests, for a
store whose tables are in the ``public`` schema. A store in another schema uses
``toolnexus_answers_<first 16 hex digits of md5(schema)>`` (`CHANNEL_OF_SCHEMA`): channels
are per database, and stores sharing one in separate schemas must not wake each other."""

# The channel of the schema a statement's tables are in, as the server computes it (the NOTIFY
# in each writing statement, and the LISTEN connection's own lookup).
CHANNEL_OF_SCHEMA: LiteralString = (
    "(CASE WHEN current_schema() = 'public' THEN '" + CHANNEL + "'"
    " ELSE '" + CHANNEL + "_' || left(md5(current_schema()), 16) END)"
)


class Listener:
    """One ``LISTEN`` connection and the waiters parked on it.

    A waiter registered for a key wakes on a notification with that payload; a waiter
    registered for ``None`` (`PostgresStore.wait_for_queued`) wakes on any notification.
    Losing the connection wakes every waiter, so each re-reads and listens anew. ``heard``
    counts the notifications (and lost connections), so a worker can tell that something
    happened between two of its waits.
    """

    __slots__ = ("_conn", "_kwargs", "_starting", "_task", "_url", "_waiters", "heard")

    def __init__(self, url: str, kwargs: dict[str, Any]) -> None:
        self._url = url
        self._kwargs = kwargs
        self._waiters: dict[str | None, set[asyncio.Future[None]]] = {}
        self._conn: AsyncConnection[Any] | None = None
        self._task: asyncio.Task[None] | None = None
        self._starting = asyncio.Lock()
        self.heard = 0

    def register(self, key: str | None) -> asyncio.Future[None]:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(key, set()).add(waiter)
        return waiter

    def unregister(self, key: str | None, waiter: asyncio.Future[None]) -> None:
        waiters = self._waiters.get(key)
        if waiters is not None:
            waiters.discard(waiter)
            if not waiters:
                del self._waiters[key]

    async def start(self) -> bool:
        """Make sure LISTEN is active (connecting again after a lost connection).

        Returns True when it was not: notifications sent until now were not heard.

        Raises:
            psycopg.Error: the server cannot be reached.
        """
        if self._task is not None and not self._task.done():
            return False
        async with self._starting:
            if self._task is not None and not self._task.done():
                return False
            import psycopg
            from psycopg import sql

            conn: AsyncConnection[Any] = await psycopg.AsyncConnection.connect(
                self._url, **self._kwargs
            )
            try:
                found = await (await conn.execute("SELECT " + CHANNEL_OF_SCHEMA)).fetchone()
                channel = CHANNEL if found is None or found[0] is None else str(found[0])
                await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
            except BaseException:
                await conn.close()
                raise
            self._conn = conn
            self._task = asyncio.create_task(self._listen(conn), name="toolnexus-pg-listen")
            return True

    async def _listen(self, conn: AsyncConnection[Any]) -> None:
        import psycopg

        try:
            async for note in conn.notifies():
                self.heard += 1
                self._wake(self._waiters.get(note.payload, ()))
                self._wake(self._waiters.get(None, ()))
        except psycopg.Error:
            pass  # the connection is gone: every waiter re-reads and listens anew
        finally:
            self.heard += 1
            self._wake([w for ws in self._waiters.values() for w in ws])
            await conn.close()

    @staticmethod
    def _wake(waiters: Iterable[asyncio.Future[None]]) -> None:
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
