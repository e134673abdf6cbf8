"""Which task store a served agent keeps its A2A tasks in: `resolve_task_store`.

It chooses among every backend — the in-memory store of `toolnexus.serve.tasks`, the file
store of `toolnexus.serve.tasks_file`, the SQLite and Postgres ones of
`toolnexus.serve.tasks_sql` — so it stands above them all (as
`toolnexus.stores.url` stands above the run stores):

- ``None`` — the client's own store when it is durable (SQLite or Postgres: the tasks live in
  the same database as the runs, so a served agent survives a restart), else in memory;
- ``"memory"`` — `InMemoryTaskStore` (process lifetime);
- ``"file:<dir>"`` — `FileTaskStore`, one ``<sanitized id>.json`` per task, written atomically;
- ``"sqlite:///path.db"`` / ``"postgresql://…"`` — a store opened from the URL;
- a `TaskStore` — used as it is; any other object with its ``get`` / ``save`` (and ``list``)
  methods — used through `TaskStore`'s defaults for the rest (no context claims: the server's
  in-process check alone refuses a second message on a busy context); one with only ``get`` and
  ``save`` (the reference's seam) lists nothing.
"""

from __future__ import annotations

from typing import Any, cast

from ..errors import UsageError
from .tasks import InMemoryTaskStore, TaskStore, visible
from .tasks_file import FileTaskStore
from .tasks_sql import sql_task_store

__all__ = ["resolve_store", "resolve_task_store"]


def resolve_store(store: Any = None) -> TaskStore:
    """The reference's name: `resolve_task_store` without the ownership flag."""
    return resolve_task_store(store)[0]


def resolve_task_store(store: Any = None, *, runs: Any = None) -> tuple[TaskStore, bool]:
    """The task store for ``store`` (see the module docs), and whether the server owns it
    (opened it, so it closes it).

    Args:
        store: ``None``, ``"memory"``, ``"file:<dir>"``, a store URL, a `TaskStore`, or a
            SQLite / Postgres store object (its database gets the tasks).
        runs: the served client's store, used when ``store`` is ``None``.

    Raises:
        UsageError: an unknown string (``Unknown A2A store: "<s>" (expected "memory" or
            "file:<dir>")``).
    """
    if store is None:
        found = sql_task_store(runs) if runs is not None else None
        return (found or InMemoryTaskStore()), False
    if isinstance(store, str):
        if store == "memory":
            return InMemoryTaskStore(), False
        if store.startswith("file:"):
            return FileTaskStore(store[len("file:") :]), False
        if store.startswith(("sqlite:", "postgres://", "postgresql://")):
            from ..stores.url import resolve_store

            opened = sql_task_store(resolve_store(store), owns=True)
            assert opened is not None
            return opened, True
        raise UsageError(f'Unknown A2A store: "{store}" (expected "memory" or "file:<dir>")')
    if isinstance(store, TaskStore):
        return store, False
    found = sql_task_store(store)
    if found is not None:
        return found, False
    for name in ("get", "save"):
        if not callable(getattr(store, name, None)):
            raise UsageError(f"an A2A task store needs async get/save; {store!r} lacks {name}")
    return _Adapted(store), False


class _Adapted(TaskStore):
    """A host's object with ``get`` / ``save`` / ``list`` as a `TaskStore` (the server does
    not close it): its ``list`` is asked without ``caller``, whose filter is applied here. One
    without ``list`` (the reference's seam) lists nothing."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def get(self, id: str) -> dict[str, Any] | None:
        return cast(dict[str, Any] | None, await self.inner.get(id))

    async def save(self, task: dict[str, Any]) -> None:
        await self.inner.save(task)

    async def list(
        self,
        *,
        context_id: str | None = None,
        state: str | None = None,
        limit: int = 100,
        caller: str | None = None,
    ) -> list[dict[str, Any]]:
        if not callable(getattr(self.inner, "list", None)):
            return []  # the reference's seam: no ListTasks, no look-up by context
        found = cast(
            list[dict[str, Any]],
            await self.inner.list(context_id=context_id, state=state, limit=limit),
        )
        return [t for t in found if visible(t, caller)]
