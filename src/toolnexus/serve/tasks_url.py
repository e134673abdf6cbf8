"""Which task store a served agent keeps its A2A tasks in: `resolve_task_store`.

It chooses among every backend — the in-memory and file stores of `toolnexus.serve.tasks`, the
SQLite and Postgres ones of `toolnexus.serve.tasks_sql` — so it stands above both (as
`toolnexus.stores.url` stands above the run stores):

- ``None`` — the client's own store when it is durable (SQLite or Postgres: the tasks live in
  the same database as the runs, so a served agent survives a restart), else in memory;
- ``"memory"`` — `InMemoryTaskStore` (process lifetime);
- ``"file:<dir>"`` — `FileTaskStore`, one ``<sanitized id>.json`` per task, written atomically;
- ``"sqlite:///path.db"`` / ``"postgresql://…"`` — a store opened from the URL;
- any object with the `TaskStore` methods — used as it is; one with only ``get`` and ``save`` (the
  reference's seam) lists nothing, as `TaskStore.list` by default.
"""

from __future__ import annotations

from typing import Any, cast

from ..errors import UsageError
from .tasks import FileTaskStore, InMemoryTaskStore, TaskStore
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
    if not callable(getattr(store, "list", None)):
        return _GetSave(store), False  # the reference's seam: lists nothing (`TaskStore.list`)
    return cast(TaskStore, store), False


class _GetSave(TaskStore):
    """A host's store with only ``get`` and ``save``, as a `TaskStore`."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def get(self, id: str) -> dict[str, Any] | None:
        return await self.inner.get(id)

    async def save(self, task: dict[str, Any]) -> None:
        await self.inner.save(task)
