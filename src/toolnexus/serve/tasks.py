"""Where a served agent keeps its A2A tasks: the `TaskStore` seam and the in-memory backend.

A task is kept as one JSON object in the reference (A2A 0.3) shape — ``{id, contextId,
status: {state, message?, timestamp}, artifacts?}`` with lowercase, hyphenated states — plus
one private key, ``"_toolnexus"``, that never leaves the server: which request the task's run
waits on, the agent handle that runs it, the wire dialect it was created on, the caller that
owns it. Every wire rendering strips it (`toolnexus.serve.wire`).

Backends, chosen by `toolnexus.serve.tasks_url.resolve_task_store`:

- ``None`` — the client's own store when it is durable (SQLite or Postgres: the tasks live in
  the same database as the runs, so a served agent survives a restart), else in memory;
- ``"memory"`` — `InMemoryTaskStore` (process lifetime);
- ``"file:<dir>"`` — `toolnexus.serve.tasks_file.FileTaskStore`, one file per task;
- ``"sqlite:///path.db"`` / ``"postgresql://…"`` — a store opened from the URL;
- any object with the `TaskStore` methods — used as it is.

Each backend finds a context's tasks through an index (never by reading every task), and
keeps each context's *claim*: which task holds the context — one message at a time per
conversation. `TaskStore.claim_context` takes it in one conditional write (a new task is
saved in the same write), `TaskStore.hold_context` renews it while the task's run goes on,
and `TaskStore.save` gives it up in the write that saves the task out of ``submitted`` /
``working``. A claim lapses ``lease_s`` after it was last held, so a process that died
mid-run leaves its context busy for that long at most.

Written here rather than on a2a-sdk's ``TaskStore``: that seam stores protobuf ``Task``
messages and has no way to find the task waiting in a context; ours stores the JSON the
contract pins and answers the queries a follow-up and ListTasks need.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, cast

from ..errors import UsageError

__all__ = [
    "ACTIVE",
    "PRIVATE",
    "TERMINAL",
    "WAITING",
    "InMemoryTaskStore",
    "TaskStore",
    "checked",
    "context_of",
    "owner_of",
    "task_state",
    "visible",
]

PRIVATE = "_toolnexus"
"""The key of a stored task that holds the server's own bookkeeping (never sent)."""

TERMINAL: frozenset[str] = frozenset({"completed", "failed", "canceled", "rejected"})
"""States a task never leaves."""

WAITING: frozenset[str] = frozenset({"input-required", "auth-required"})
"""States in which a task waits for its caller's follow-up."""

ACTIVE: frozenset[str] = frozenset({"submitted", "working"})
"""States in which a task holds its context (its run goes on)."""


def task_state(task: dict[str, Any]) -> str:
    """The state of a stored task (``""`` when it has none)."""
    status: Any = task.get("status") or {}
    if not isinstance(status, dict):
        return ""
    return str(cast(dict[str, Any], status).get("state") or "")


def owner_of(task: dict[str, Any]) -> str | None:
    """The caller that created ``task`` (``None``: made when the server named no caller)."""
    owner = cast(dict[str, Any], task.get(PRIVATE) or {}).get("owner")
    return owner if isinstance(owner, str) else None


def visible(task: dict[str, Any], caller: str | None) -> bool:
    """Whether ``caller`` may see ``task``: its own, or one made without a caller; every
    task when the server names no caller (``caller`` ``None``)."""
    owner = owner_of(task)
    return caller is None or owner is None or owner == caller


class TaskStore(ABC):
    """The A2A task store seam: `get`, `save`, `list`, the context claim
    (`claim_context`, `hold_context`); `aclose` releases what it holds."""

    @abstractmethod
    async def get(self, id: str) -> dict[str, Any] | None:
        """The task ``id`` (a copy), or ``None``."""

    @abstractmethod
    async def save(self, task: dict[str, Any]) -> None:
        """Insert or replace ``task`` (keyed by ``task["id"]``); a task saved in a state out of
        `ACTIVE` gives up the claim it holds on its context."""

    async def list(
        self,
        *,
        context_id: str | None = None,
        state: str | None = None,
        limit: int = 100,
        caller: str | None = None,
    ) -> list[dict[str, Any]]:
        """Tasks, most recently updated first, filtered by context and/or state; with
        ``caller``, only those it may see (`visible`: its own and those made without one).

        The default lists nothing: a store that only gets and saves (the reference's seam)
        serves every task by id, but not ListTasks, a follow-up naming only its context, or
        the recovery of tasks another process left working."""
        return []

    async def claim_context(
        self,
        context_id: str,
        task_id: str,
        *,
        lease_s: float,
        task: dict[str, Any] | None = None,
    ) -> str | None:
        """Make ``task_id`` the task that holds ``context_id`` for ``lease_s`` seconds, in one
        conditional write — unless another task holds it: then that task's id, and nothing
        is written. ``task`` (the new task itself) is saved in the same write when the claim
        is taken. A claim is free when nobody took it, its holder was saved out of `ACTIVE`,
        or its lease ran out; its own holder takes it again (a renewal).

        The default keeps no claims (a host's store): it saves ``task`` and returns ``None``,
        leaving the server's in-process check alone to refuse a second message."""
        if task is not None:
            await self.save(task)
        return None

    async def hold_context(self, context_id: str, task_id: str, *, lease_s: float) -> bool:
        """Renew ``task_id``'s claim on ``context_id`` for ``lease_s`` more seconds (``0``:
        give it up) — only while it holds it; whether it did."""
        return True

    async def aclose(self) -> None:
        """Release connections or files (default: nothing to release)."""
        return None


def checked(task: object) -> dict[str, Any]:
    """``task`` when it is a dict with a string id (what every store keeps)."""
    if not isinstance(task, dict) or not isinstance(cast(dict[str, Any], task).get("id"), str):
        raise UsageError("a task must be a dict with a string id")
    return cast(dict[str, Any], task)


def context_of(task: dict[str, Any]) -> str | None:
    """The task's ``contextId`` when it is a string."""
    value = task.get("contextId")
    return value if isinstance(value, str) else None


@dataclass(slots=True)
class _Row:
    """A stored task: its JSON, and what the queries filter on (read without decoding it)."""

    at: float
    context: str | None
    state: str
    owner: str | None
    text: str


class InMemoryTaskStore(TaskStore):
    """Tasks in a dict, for the life of the process, indexed by context: a message that
    names a context reads that context's tasks only."""

    def __init__(self) -> None:
        self._tasks: dict[str, _Row] = {}
        self._by_context: dict[str, dict[str, None]] = {}
        self._claims: dict[str, tuple[str, float]] = {}  # context -> (task id, until)

    async def get(self, id: str) -> dict[str, Any] | None:
        found = self._tasks.get(id)
        return cast(dict[str, Any], json.loads(found.text)) if found is not None else None

    async def save(self, task: dict[str, Any]) -> None:
        self._save(checked(task))

    def _save(self, task: dict[str, Any]) -> None:
        tid, context, state = task["id"], context_of(task), task_state(task)
        before = self._tasks.get(tid)
        if before is not None and before.context != context and before.context is not None:
            self._by_context.get(before.context, {}).pop(tid, None)
        self._tasks[tid] = _Row(time.time(), context, state, owner_of(task), json.dumps(task))
        if context is not None:
            self._by_context.setdefault(context, {})[tid] = None
            if state not in ACTIVE and self._claims.get(context, ("",))[0] == tid:
                del self._claims[context]

    async def list(
        self,
        *,
        context_id: str | None = None,
        state: str | None = None,
        limit: int = 100,
        caller: str | None = None,
    ) -> list[dict[str, Any]]:
        if context_id is None:
            rows = list(self._tasks.values())
        else:
            rows = [self._tasks[t] for t in self._by_context.get(context_id, {})]
        kept = [
            r
            for r in rows
            if (state is None or r.state == state)
            and (caller is None or r.owner is None or r.owner == caller)
        ]
        kept.sort(key=lambda r: r.at, reverse=True)
        return [cast(dict[str, Any], json.loads(r.text)) for r in kept[:limit]]

    async def claim_context(
        self,
        context_id: str,
        task_id: str,
        *,
        lease_s: float,
        task: dict[str, Any] | None = None,
    ) -> str | None:
        now = time.monotonic()
        held = self._claims.get(context_id)
        if held is not None and held[0] != task_id and held[1] > now:
            return held[0]
        self._claims[context_id] = (task_id, now + lease_s)
        if task is not None:
            self._save(checked(task))
        return None

    async def hold_context(self, context_id: str, task_id: str, *, lease_s: float) -> bool:
        held = self._claims.get(context_id)
        if held is None or held[0] != task_id:
            return False
        self._claims[context_id] = (task_id, time.monotonic() + lease_s)
        return True
