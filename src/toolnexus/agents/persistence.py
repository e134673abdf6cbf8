"""The runtime store: the handle table, so a suspended tree survives the process.

Every handle has a row — state, inbox, budget, usage, lineage, last result, pending request and
halted checkpoint — and the runtime saves the rows of the handles that changed.

A backend that offers ``save_handles`` / ``load_handles`` (the `RuntimeStore` Protocol) is used
directly: `SqliteStore` and `PostgresStore` keep one SQL row per handle, so a save costs what
changed, never the whole tree. The process-lifetime memory store persists nothing. Any other
`ConversationStore` (a host's own) keeps the table as one document under the reserved
conversation id ``__toolnexus_runtime__/<runtime id>``, rewritten whole on every save.
"""

from __future__ import annotations

from typing import Any, Protocol, cast, runtime_checkable

from ..errors import CheckpointError, StoreError
from ..loop.checkpoint import Checkpoint
from ..stores._handlerows import LEGACY_PREFIX
from ..stores.base import ConversationStore
from ..stores.memory import InMemoryConversationStore
from ..suspension import Request
from .handle import ROOT_ID, Handle
from .types import Budget, InboxItem, TaskResult

__all__ = [
    "InMemoryRuntimeStore",
    "NullRuntimeStore",
    "RuntimeStore",
    "as_runtime_store",
    "handle_from_json",
    "rebuild",
]


@runtime_checkable
class RuntimeStore(Protocol):
    """Where a runtime's handle table lives."""

    async def save_handles(self, runtime_id: str, rows: list[dict[str, Any]]) -> None:
        """Insert or replace these handle rows (keyed by ``row["id"]``)."""
        ...

    async def load_handles(self, runtime_id: str) -> list[dict[str, Any]]:
        """Every stored row of ``runtime_id``."""
        ...


class InMemoryRuntimeStore:
    """The process-lifetime handle table."""

    def __init__(self) -> None:
        self._tables: dict[str, dict[str, dict[str, Any]]] = {}

    async def save_handles(self, runtime_id: str, rows: list[dict[str, Any]]) -> None:
        table = self._tables.setdefault(runtime_id, {})
        for row in rows:
            table[str(row["id"])] = row

    async def load_handles(self, runtime_id: str) -> list[dict[str, Any]]:
        return list(self._tables.get(runtime_id, {}).values())

    async def delete_handles(self, runtime_id: str) -> bool:
        """Forget the whole table of ``runtime_id``; True when there was one."""
        return bool(self._tables.pop(runtime_id, None))


class _DocumentRuntimeStore:
    """The handle table as one document in a conversation store."""

    def __init__(self, store: ConversationStore) -> None:
        self._store = store
        self._tables: dict[str, dict[str, dict[str, Any]]] = {}

    async def save_handles(self, runtime_id: str, rows: list[dict[str, Any]]) -> None:
        table = self._tables.get(runtime_id)
        if table is None:
            table = {str(r["id"]): r for r in await self.load_handles(runtime_id)}
            self._tables[runtime_id] = table
        for row in rows:
            table[str(row["id"])] = row
        await self._store.save(LEGACY_PREFIX + runtime_id, list(table.values()))

    async def load_handles(self, runtime_id: str) -> list[dict[str, Any]]:
        rows = await self._store.get(LEGACY_PREFIX + runtime_id)
        if rows is None:
            return []
        if not all(isinstance(r, dict) and isinstance(r.get("id"), str) for r in rows):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise StoreError(f"the stored handle table of runtime {runtime_id!r} is malformed")
        return [dict(r) for r in rows]

    async def delete_handles(self, runtime_id: str) -> bool:
        """Forget the whole table of ``runtime_id``; True when there was one."""
        self._tables.pop(runtime_id, None)
        return await self._store.delete(LEGACY_PREFIX + runtime_id)


class NullRuntimeStore:
    """No persistence: the tree lives in this process only (the default without a store)."""

    async def save_handles(self, runtime_id: str, rows: list[dict[str, Any]]) -> None:
        del runtime_id, rows

    async def load_handles(self, runtime_id: str) -> list[dict[str, Any]]:
        del runtime_id
        return []


def as_runtime_store(backend: object) -> RuntimeStore:
    """The runtime store for a backend.

    The backend itself when it keeps handle tables (`SqliteStore`, `PostgresStore`, any object
    with ``save_handles`` / ``load_handles``); for the process-lifetime memory store, no
    persistence at all; for any other conversation store, a document table on it.
    """
    if isinstance(backend, RuntimeStore):
        return backend
    if isinstance(backend, InMemoryConversationStore):
        return NullRuntimeStore()
    if isinstance(backend, ConversationStore):
        return _DocumentRuntimeStore(backend)
    return NullRuntimeStore()


def handle_from_json(row: dict[str, Any], parent: Handle) -> Handle:
    """Rebuild one handle (without its children) from its stored row."""
    h = Handle(str(row["id"]), str(row.get("agent")), parent, Budget.from_json(row.get("budget")))
    state = row.get("state")
    h.state = state if state in ("idle", "running", "suspended", "closed") else "idle"
    h.inbox.extend(InboxItem.from_json(i) for i in cast(list[Any], row.get("inbox") or []))
    h.tokens = int(row.get("tokens") or 0)
    h.own_tokens = int(row.get("own_tokens") or 0)
    h.turns = int(row.get("turns") or 0)
    h.run_turns = int(row.get("run_turns") or 0)
    h.tool_calls = int(row.get("tool_calls") or 0)
    started = row.get("started_at")
    h.started_at = float(started) if isinstance(started, int | float) else None
    h.next_child = int(row.get("next_child") or 1)
    key = row.get("task_key")
    h.task_key = key if isinstance(key, str) else None
    h.spawned = bool(row.get("spawned"))
    h.by_host = bool(row.get("by_host"))
    gate = row.get("gate")
    h.gate = cast(dict[str, Any], gate) if isinstance(gate, dict) else None
    call = row.get("task_call")
    h.task_call = call if isinstance(call, str) else None
    if row.get("result") is not None:
        h.result = TaskResult.from_json(row["result"])
    try:
        if isinstance(row.get("pending"), dict):
            h.pending = Request.from_dict(cast(dict[str, Any], row["pending"]))
        if row.get("checkpoint") is not None:
            h.checkpoint = Checkpoint.from_json(row["checkpoint"])
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"the stored checkpoint of {h.id} is malformed: {exc}") from exc
    return h


def rebuild(root: Handle, rows: list[dict[str, Any]]) -> list[Handle]:
    """Hang the handles of the stored ``rows`` under ``root``; return them, parents first.

    Lineage comes from each row's parent; siblings keep their spawn order (the ``.n``). A
    handle that was running when its process died comes back idle, with an ``interrupted``
    result.
    """
    root_row = {str(r.get("id")): r for r in rows}.get(ROOT_ID)
    if root_row is not None:
        root.next_child = int(root_row.get("next_child") or 1)
        root.tokens = int(root_row.get("tokens") or 0)
    kids: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("id") != ROOT_ID:
            kids.setdefault(str(row.get("parent") or ROOT_ID), []).append(row)
    built: list[Handle] = []

    def build(parent: Handle) -> None:
        for row in sorted(kids.get(parent.id, []), key=_spawn_order):
            h = handle_from_json(row, parent)
            parent.children.append(h)
            built.append(h)
            if h.state == "running":
                h.state = "idle"
                h.result = TaskResult(
                    text="the process stopped while this handle was running",
                    status="interrupted",
                    is_error=True,
                )
            build(h)

    build(root)
    return built


def _spawn_order(row: dict[str, Any]) -> int:
    """The per-parent counter at the end of a handle id (``root/a.3`` ⇒ 3)."""
    tail = str(row.get("id", "")).rsplit(".", 1)[-1]
    return int(tail) if tail.isdigit() else 0
