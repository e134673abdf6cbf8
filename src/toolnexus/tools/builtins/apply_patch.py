"""The ``apply_patch`` built-in: add, update, move and delete files from one patch, atomically.

``apply_patch{patchText}`` takes the grammar described in `_patch`. The whole patch is parsed
and applied in memory first — every file read, every hunk matched, every path checked (against
the workspace too) — and only when all of it succeeds are files written: each new content goes
to a temporary file beside its target, then all of them are renamed into place, then deletions
run. Any failure before the renames (a malformed patch, a hunk that does not match, a missing
file, an ``Add File`` over an existing file, a ``Move to`` onto an existing file, a path outside
the workspace) is an error and leaves every file byte for byte as it was. Several sections may
touch the same file; each sees the previous one's result.

Answers exactly ``Applied patch: <n> file operation[s]`` (the toolnexus package's text), with
``metadata={"added", "updated", "deleted"}`` counts. An ``Add File`` body is its lines joined
by ``\n``, with no newline added after the last.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._types import JSONSchema, Tool, ToolContext, ToolResult
from ._args import text_arg
from ._confine import Paths
from ._files import check_regular_file, read_text_file
from ._options import BuiltinOptions
from ._output import BuiltinError, builtin_tool
from ._patch import FileOp, PatchError, apply_hunks, parse_patch

__all__ = ["APPLY_PATCH_SCHEMA", "apply_patch_tool"]

APPLY_PATCH_SCHEMA: JSONSchema = {
    "type": "object",
    "properties": {
        "patchText": {
            "type": "string",
            "description": "The full patch, from '*** Begin Patch' to '*** End Patch'",
        }
    },
    "required": ["patchText"],
    "additionalProperties": False,
}

_DESCRIPTION = """Apply a patch that adds, updates, moves or deletes files. All or nothing: \
if any hunk does not match, no file is changed. Format:
*** Begin Patch
*** Add File: path/new.txt
+each line of the new file, prefixed with +
*** Update File: path/old.py
*** Move to: path/renamed.py   (optional)
@@ a line near the change, to locate it (optional)
 unchanged context line (space prefix)
-removed line
+added line
*** Delete File: path/gone.txt
*** End Patch"""


def apply_patch_tool(options: BuiltinOptions) -> Tool:
    """The ``apply_patch`` built-in under ``options``."""
    paths = options.paths()

    async def run(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        return await asyncio.to_thread(_apply, args, paths)

    return builtin_tool(
        "apply_patch",
        _DESCRIPTION,
        APPLY_PATCH_SCHEMA,
        run,
        max_output_bytes=options.max_output_bytes,
    )


def _apply(args: dict[str, Any], paths: Paths) -> ToolResult:
    text = text_arg(args, "patchText")
    try:
        ops = parse_patch(text)
        stage = _Stage(paths)
        for op in ops:
            stage.apply(op)
    except PatchError as exc:
        raise BuiltinError(str(exc)) from None
    stage.commit()
    plural = "" if len(ops) == 1 else "s"
    return ToolResult(
        f"Applied patch: {len(ops)} file operation{plural}",
        metadata={
            "added": sum(op.kind == "add" for op in ops),
            "updated": sum(op.kind == "update" for op in ops),
            "deleted": sum(op.kind == "delete" for op in ops),
        },
    )


@dataclass(slots=True)
class _Stage:
    """The files as the patch leaves them, in memory: real path → text, or ``None`` (gone)."""

    paths: Paths
    files: dict[Path, str | None] = field(default_factory=lambda: {})
    removals: dict[Path, Path] = field(default_factory=lambda: {})

    def apply(self, op: FileOp) -> str:
        """Stage one operation; the summary line for it."""
        path = self.paths.resolve(op.path)
        if op.kind == "add":
            if self._exists(path):
                raise PatchError(f"file already exists: {op.path}")
            self.files[path] = op.content
            return f"A {op.path}"
        if op.kind == "delete":
            self._check_file(path, op.path)
            self._remove(path, op.path)
            return f"D {op.path}"
        updated = apply_hunks(self._read(path, op.path), op.hunks, op.path)
        if op.move_to is None:
            self.files[path] = updated
            return f"M {op.path}"
        target = self.paths.resolve(op.move_to)
        if target != path:
            if self._exists(target):
                raise PatchError(f"Move to {op.move_to}: the file already exists")
            self._remove(path, op.path)
        self.files[target] = updated
        return f"M {op.path} -> {op.move_to}"

    def _exists(self, path: Path) -> bool:
        if path in self.files:
            return self.files[path] is not None
        return path.exists() or path.is_symlink()

    def _check_file(self, path: Path, raw: str) -> None:
        if path in self.files:
            if self.files[path] is None:
                raise PatchError(f"{raw}: the file was deleted earlier in this patch")
            return
        try:
            check_regular_file(path, raw)
        except BuiltinError as exc:
            raise PatchError(str(exc)) from None

    def _read(self, path: Path, raw: str) -> str:
        if path in self.files:
            staged = self.files[path]
            if staged is None:
                raise PatchError(f"{raw}: the file was deleted earlier in this patch")
            return staged
        try:
            return read_text_file(path, raw)
        except BuiltinError as exc:
            raise PatchError(str(exc)) from None

    def _remove(self, path: Path, raw: str) -> None:
        self.files[path] = None
        if path.exists():
            # Remove the entry as named: a symlink goes, not the file it points to.
            self.removals[path] = self.paths.resolve_entry(raw)

    def commit(self) -> None:
        """Write everything: temporaries first, then renames, then deletions."""
        writes = {p: c for p, c in self.files.items() if c is not None}
        made_dirs: list[Path] = []
        temps: dict[Path, Path] = {}
        try:
            for path, content in writes.items():
                _make_parents(path.parent, made_dirs)
                temps[path] = _write_temp(path, content.encode("utf-8"))
        except (OSError, UnicodeEncodeError) as exc:
            for temp in temps.values():
                temp.unlink(missing_ok=True)
            for directory in reversed(made_dirs):
                _rmdir_quietly(directory)
            raise BuiltinError(f"nothing was changed: {_reason(exc)}") from None
        for path, temp in temps.items():
            os.replace(temp, path)
        for path, entry in self.removals.items():
            if self.files.get(path) is None:
                entry.unlink(missing_ok=True)


def _make_parents(directory: Path, made: list[Path]) -> None:
    missing: list[Path] = []
    probe = directory
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for path in reversed(missing):
        path.mkdir()
        made.append(path)


def _write_temp(path: Path, data: bytes) -> Path:
    try:
        existing: int | None = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        existing = None
    mode = 0o666 if existing is None else existing  # a new file gets the umask, as usual
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.patch-tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if existing is not None:
            os.chmod(temp, existing)  # os.open applied the umask; keep the file's own mode
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp


def _rmdir_quietly(directory: Path) -> None:
    with contextlib.suppress(OSError):
        directory.rmdir()


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc)
