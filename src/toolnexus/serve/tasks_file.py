"""`FileTaskStore`: A2A tasks as files in a directory, for a host without a database.

Layout (format 1)::

    <dir>/<sanitized id>.json           a task, written atomically (temporary file, replace)
    <dir>/.contexts/<ctx hash>/<id hash>   a context's index: one small file per task, holding
                                        the task id (a message naming a context reads those
                                        tasks only)
    <dir>/.contexts/<ctx hash>.claim    the context's claim: ``{"task", "until"}``
    <dir>/.contexts/.format-1           the index is complete (built once from a directory of
                                        tasks saved before it existed)

The hashes are sha256 hex digits: any id or context id (``/``, ``..``, 5,000 characters) names
a file safely. A claim is read and written under an exclusive lock of ``.contexts/.lock``
(``fcntl.flock``, so separate processes sharing the directory take turns; where ``fcntl`` is
missing the lock holds within one process).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import tempfile
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from .tasks import ACTIVE, TaskStore, checked, context_of, task_state, visible

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: claims hold within one process
    fcntl = None

__all__ = ["FileTaskStore"]

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
_FORMAT = ".format-1"
_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class FileTaskStore(TaskStore):
    """One ``<sanitized id>.json`` per task in ``dir`` (created); writes are atomic
    (temporary file, then replace); a file that cannot be read counts as absent. Each context
    has an index and a claim beside the tasks (see the module docs)."""

    def __init__(self, dir: str | os.PathLike[str]) -> None:
        self.dir = Path(dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._contexts = self.dir / ".contexts"
        self._contexts.mkdir(exist_ok=True)
        self._indexed = False

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
        checked(task)
        await asyncio.to_thread(self._save, task, json.dumps(task))

    def _save(self, task: dict[str, Any], text: str) -> None:
        tid, context = task["id"], context_of(task)
        self._write(self._path(tid), text)
        if context is None:
            return
        self._index(tid, context)
        if task_state(task) not in ACTIVE:
            with self._locked():
                held = self._holder(context)
                if held is not None and held[0] == tid:
                    self._claim_path(context).unlink(missing_ok=True)

    def _index(self, tid: str, context: str) -> None:
        folder = self._contexts / _hash(context)
        entry = folder / _hash(tid)
        if not entry.exists():
            folder.mkdir(exist_ok=True)
            self._write(entry, tid)

    def _write(self, path: Path, text: str) -> None:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".task-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    async def list(
        self,
        *,
        context_id: str | None = None,
        state: str | None = None,
        limit: int = 100,
        caller: str | None = None,
    ) -> list[dict[str, Any]]:
        def scan() -> list[dict[str, Any]]:
            if context_id is None:
                files = [(p, None) for p in self.dir.glob("*.json")]
            else:
                files = [(self._path(t), t) for t in self._context_ids(context_id)]
            files.sort(key=lambda f: _mtime(f[0]), reverse=True)
            out: list[dict[str, Any]] = []
            for path, id in files:
                task = self._read(path, id)
                if task is None:
                    continue
                if context_id is not None and context_of(task) != context_id:
                    continue
                if state is not None and task_state(task) != state:
                    continue
                if not visible(task, caller):
                    continue
                out.append(task)
                if len(out) >= limit:
                    break
            return out

        return await asyncio.to_thread(scan)

    def _context_ids(self, context: str) -> list[str]:
        """The ids of the tasks saved in ``context`` (by its index)."""
        self._build_index()
        folder = self._contexts / _hash(context)
        try:
            entries = list(folder.iterdir())
        except OSError:
            return []
        ids: list[str] = []
        for entry in entries:
            if entry.name.startswith("."):
                continue  # a temporary file being written
            try:
                ids.append(entry.read_text(encoding="utf-8"))
            except OSError:
                continue
        return ids

    def _build_index(self) -> None:
        """Index the tasks of a directory written before the index existed (once)."""
        if self._indexed:
            return
        marker = self._contexts / _FORMAT
        if not marker.exists():
            for path in self.dir.glob("*.json"):
                task = self._read(path, None)
                context = context_of(task) if task is not None else None
                if task is not None and context is not None and isinstance(task["id"], str):
                    self._index(task["id"], context)
            self._write(marker, "1")
        self._indexed = True

    # -- the context claim -----------------------------------------------------------------

    def _claim_path(self, context: str) -> Path:
        return self._contexts / f"{_hash(context)}.claim"

    def _holder(self, context: str) -> tuple[str, float] | None:
        try:
            raw: Any = json.loads(self._claim_path(context).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(raw, dict):
            return None
        claim = cast(dict[str, Any], raw)
        holder, until = claim.get("task"), claim.get("until")
        if not isinstance(holder, str) or not isinstance(until, int | float):
            return None
        return holder, float(until)

    def _set_claim(self, context: str, task_id: str, lease_s: float) -> None:
        claim = {"task": task_id, "until": time.time() + lease_s}
        self._write(self._claim_path(context), json.dumps(claim))

    @contextmanager
    def _locked(self) -> Generator[None]:
        """The claims' lock: this process's threads, then the other processes'."""
        key = str(self._contexts.resolve())
        with _LOCKS_GUARD:
            here = _LOCKS.setdefault(key, threading.Lock())
        with here, open(self._contexts / ".lock", "a+b") as f:
            if fcntl is not None:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                if fcntl is not None:
                    fcntl.flock(f.fileno(), fcntl.LOCK_UN)

    async def claim_context(
        self,
        context_id: str,
        task_id: str,
        *,
        lease_s: float,
        task: dict[str, Any] | None = None,
    ) -> str | None:
        text = json.dumps(checked(task)) if task is not None else None

        def claim() -> str | None:
            with self._locked():
                held = self._holder(context_id)
                if held is not None and held[0] != task_id and held[1] > time.time():
                    return held[0]
                self._set_claim(context_id, task_id, lease_s)
                if task is not None and text is not None:
                    self._write(self._path(task_id), text)
                    self._index(task_id, context_id)
                return None

        return await asyncio.to_thread(claim)

    async def hold_context(self, context_id: str, task_id: str, *, lease_s: float) -> bool:
        def hold() -> bool:
            with self._locked():
                held = self._holder(context_id)
                if held is None or held[0] != task_id:
                    return False
                self._set_claim(context_id, task_id, lease_s)
                return True

        return await asyncio.to_thread(hold)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
