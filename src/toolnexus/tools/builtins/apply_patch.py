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
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._types import JSONSchema, Tool, ToolContext, ToolResult
from ._args import text_arg
from ._confine import Located, Paths
from ._files import read_text_file
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
    """The files as the patch leaves them, in memory, keyed by their place under the root
    (every symlink resolved): text, or ``None`` (gone)."""

    paths: Paths
    files: dict[str, str | None] = field(default_factory=lambda: {})
    removals: dict[str, str] = field(default_factory=lambda: {})

    def apply(self, op: FileOp) -> str:
        """Stage one operation; the summary line for it."""
        key, present = self._look(op.path)
        if op.kind == "add":
            if self._exists(key, present):
                raise PatchError(f"file already exists: {op.path}")
            self.files[key] = op.content
            return f"A {op.path}"
        if op.kind == "delete":
            self._check_file(key, op.path)
            self._remove(key, op.path, present)
            return f"D {op.path}"
        updated = apply_hunks(self._read(key, op.path), op.hunks, op.path)
        if op.move_to is None:
            self.files[key] = updated
            return f"M {op.path}"
        target, target_present = self._look(op.move_to)
        if target != key:
            if self._exists(target, target_present):
                raise PatchError(f"Move to {op.move_to}: the file already exists")
            self._remove(key, op.path, present)
        self.files[target] = updated
        return f"M {op.path} -> {op.move_to}"

    def _look(self, raw: str) -> tuple[str, bool]:
        """Where ``raw`` leads, and whether something is there now."""
        try:
            with self.paths.locate(raw, write=True, plan=True) as entry:
                return entry.key, entry.lstat() is not None
        except BuiltinError as exc:
            raise BuiltinError(f"nothing was changed: {exc}") from None

    def _exists(self, key: str, present: bool) -> bool:
        if key in self.files:
            return self.files[key] is not None
        return present

    def _check_file(self, key: str, raw: str) -> None:
        if key in self.files:
            if self.files[key] is None:
                raise PatchError(f"{raw}: the file was deleted earlier in this patch")
            return
        try:
            with self.paths.locate(raw) as entry:
                os.close(entry.open_regular())
        except BuiltinError as exc:
            raise PatchError(str(exc)) from None

    def _read(self, key: str, raw: str) -> str:
        if key in self.files:
            staged = self.files[key]
            if staged is None:
                raise PatchError(f"{raw}: the file was deleted earlier in this patch")
            return staged
        try:
            with self.paths.locate(raw) as entry:
                return read_text_file(entry)
        except BuiltinError as exc:
            raise PatchError(str(exc)) from None

    def _remove(self, key: str, raw: str, present: bool) -> None:
        self.files[key] = None
        if present:
            # Remove the entry as named: a symlink goes, not the file it points to.
            self.removals[key] = raw

    def commit(self) -> None:
        """Write everything: temporaries first, then renames, then deletions."""
        writes = {k: c for k, c in self.files.items() if c is not None}
        made: list[tuple[str, ...]] = []
        temps: dict[str, tuple[Located, str]] = {}
        try:
            try:
                for key, content in writes.items():
                    entry = self.paths.locate(key, write=True, make_parents=True)
                    made += entry.made
                    try:
                        temps[key] = (entry, _write_temp(entry, content.encode("utf-8")))
                    except BaseException:
                        entry.close()
                        raise
            except (OSError, UnicodeEncodeError, BuiltinError) as exc:
                for entry, temp in temps.values():
                    _unlink_quietly(entry.dir_fd, temp)
                for parts in reversed(made):
                    self._rmdir_quietly(parts)
                raise BuiltinError(f"nothing was changed: {_reason(exc)}") from None
            for entry, temp in temps.values():
                os.replace(temp, entry.name, src_dir_fd=entry.dir_fd, dst_dir_fd=entry.dir_fd)
        finally:
            for entry, _ in temps.values():
                entry.close()
        for key, raw in self.removals.items():
            if self.files.get(key) is None:
                with self.paths.locate(raw, write=True, follow=False) as entry:
                    _unlink_quietly(entry.dir_fd, entry.name)

    def _rmdir_quietly(self, parts: tuple[str, ...]) -> None:
        where = str(self._root.joinpath(*parts))
        with (
            contextlib.suppress(OSError, BuiltinError),
            self.paths.locate(where, write=True, follow=False) as entry,
        ):
            os.rmdir(entry.name, dir_fd=entry.dir_fd)

    @property
    def _root(self) -> Path:
        return self.paths.root if self.paths.root is not None else Path("/")


def _write_temp(entry: Located, data: bytes) -> str:
    """A new temporary file beside the entry holding ``data``, with the entry's mode."""
    info = entry.lstat()
    existing = info.st_mode & 0o7777 if info is not None and stat.S_ISREG(info.st_mode) else None
    mode = 0o666 if existing is None else existing  # a new file gets the umask, as usual
    temp = f".{entry.name}.{secrets.token_hex(6)}.patch-tmp"
    fd = os.open(
        temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=entry.dir_fd
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if existing is not None:
                os.fchmod(handle.fileno(), existing)  # os.open applied the umask
    except BaseException:
        _unlink_quietly(entry.dir_fd, temp)
        raise
    return temp


def _unlink_quietly(dir_fd: int, name: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dir_fd)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc)
