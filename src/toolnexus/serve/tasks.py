"""Where a served agent keeps its A2A tasks: the `TaskStore` seam and its four backends.

A task is kept as one JSON object in the reference (A2A 0.3) shape — ``{id, contextId,
status: {state, message?, timestamp}, artifacts?}`` with lowercase, hyphenated states — plus
one private key, ``"_toolnexus"``, that never leaves the server: which request the task's run
waits on, the agent handle that runs it, the wire dialect it was created on. Every wire
rendering strips it (`toolnexus.serve.wire`).

Backends, chosen by `toolnexus.serve.tasks_url.resolve_task_store`:

- ``None`` — the client's own store when it is durable (SQLite or Postgres: the tasks live in
  the same database as the runs, so a served agent survives a restart), else in memory;
- ``"memory"`` — `InMemoryTaskStore` (process lifetime);
- ``"file:<dir>"`` — `FileTaskStore`, one ``<sanitized id>.json`` per task, written atomically;
- ``"sqlite:///path.db"`` / ``"postgresql://…"`` — a store opened from the URL;
- any object with the `TaskStore` methods — used as it is.

Written here rather than on a2a-sdk's ``TaskStore``: that seam stores protobuf ``Task``
messages and has no way to find the task waiting in a context; ours stores the JSON the
contract pins and answers the two queries a follow-up and ListTasks need.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, cast

from ..errors import UsageError

__all__ = [
    "PRIVATE",
    "TERMINAL",
    "WAITING",
    "FileTaskStore",
    "InMemoryTaskStore",
    "TaskStore",
    "task_state",
]

PRIVATE = "_toolnexus"
"""The key of a stored task that holds the server's own bookkeeping (never sent)."""

TERMINAL: frozenset[str] = frozenset({"completed", "failed", "canceled", "rejected"})
"""States a task never leaves."""

WAITING: frozenset[str] = frozenset({"input-required", "auth-required"})
"""States in which a task waits for its caller's follow-up."""


def task_state(task: dict[str, Any]) -> str:
    """The state of a stored task (``""`` when it has none)."""
    status: Any = task.get("status") or {}
    if not isinstance(status, dict):
        return ""
    return str(cast(dict[str, Any], status).get("state") or "")


def _context(task: dict[str, Any]) -> str | None:
    value = task.get("contextId")
    return value if isinstance(value, str) else None


class TaskStore(ABC):
    """The A2A task store seam: `get`, `save`, `list`; `aclose` releases what it holds."""

    @abstractmethod
    async def get(self, id: str) -> dict[str, Any] | None:
        """The task ``id`` (a copy), or ``None``."""

    @abstractmethod
    async def save(self, task: dict[str, Any]) -> None:
        """Insert or replace ``task`` (keyed by ``task["id"]``)."""

    async def list(
        self, *, context_id: str | None = None, state: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        """Tasks, most recently updated first, filtered by context and/or state.

        The default lists nothing: a store that only gets and saves (the reference's seam)
        serves every task by id, but not ListTasks, a follow-up naming only its context, or
        the recovery of tasks another process left working."""
        return []

    async def aclose(self) -> None:
        """Release connections or files (default: nothing to release)."""
        return None


def _checked(task: object) -> dict[str, Any]:
    if not isinstance(task, dict) or not isinstance(cast(dict[str, Any], task).get("id"), str):
        raise UsageError("a task must be a dict with a string id")
    return cast(dict[str, Any], task)


class InMemoryTaskStore(TaskStore):
    """Tasks in a dict, for the life of the process."""

    def __init__(self) -> None:
        self._tasks: dict[str, tuple[float, str]] = {}

    async def get(self, id: str) -> dict[str, Any] | None:
        found = self._tasks.get(id)
        return cast(dict[str, Any], json.loads(found[1])) if found is not None else None

    async def save(self, task: dict[str, Any]) -> None:
        checked = _checked(task)
        self._tasks[checked["id"]] = (time.time(), json.dumps(checked))

    async def list(
        self, *, context_id: str | None = None, state: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        rows = sorted(self._tasks.values(), key=lambda r: r[0], reverse=True)
        out: list[dict[str, Any]] = []
        for _, text in rows:
            task = cast(dict[str, Any], json.loads(text))
            if context_id is not None and _context(task) != context_id:
                continue
            if state is not None and task_state(task) != state:
                continue
            out.append(task)
            if len(out) >= limit:
                break
        return out


_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


class FileTaskStore(TaskStore):
    """One ``<sanitized id>.json`` per task in ``dir`` (created); writes are atomic
    (temporary file, then replace); a file that cannot be read counts as absent."""

    def __init__(self, dir: str | os.PathLike[str]) -> None:
        self.dir = Path(dir)
        self.dir.mkdir(parents=True, exist_ok=True)

    def _path(self, id: str) -> Path:
        return self.dir / f"{_UNSAFE.sub('_', id)}.json"

    async def get(self, id: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self._read, self._path(id), id)

    @staticmethod
    def _read(path: Path, id: str | None) -> dict[str, Any] | None:
        try:
            task: Any = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(task, dict):
            return None
        found = cast(dict[str, Any], task)
        if id is not None and found.get("id") != id:
            return None  # two ids that sanitize alike: not this one
        return found

    async def save(self, task: dict[str, Any]) -> None:
        checked = _checked(task)
        await asyncio.to_thread(self._write, self._path(checked["id"]), json.dumps(checked))

    def _write(self, path: Path, text: str) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".task-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    async def list(
        self, *, context_id: str | None = None, state: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        def scan() -> list[dict[str, Any]]:
            files = sorted(self.dir.glob("*.json"), key=_mtime, reverse=True)
            out: list[dict[str, Any]] = []
            for path in files:
                task = self._read(path, None)
                if task is None:
                    continue
                if context_id is not None and _context(task) != context_id:
                    continue
                if state is not None and task_state(task) != state:
                    continue
                out.append(task)
                if len(out) >= limit:
                    break
            return out

        return await asyncio.to_thread(scan)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
