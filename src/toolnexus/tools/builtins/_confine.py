"""Where a built-in's path argument points, and the optional workspace around it.

Without a workspace a path is used as given: a relative one resolves from the process cwd at
call time. With a workspace (``builtins={"workspace": "/srv/job-42"}``) every path-taking
built-in is confined to that root:

- a relative path resolves from the workspace, an absolute one is taken as is;
- the result is the *real* path (every symlink and ``..`` resolved by the OS), and it must be
  the root or lie under it — so ``../x``, ``/etc/passwd`` and a symlink inside the workspace
  that points outside are all refused;
- the tools then touch that real path, never the path as typed, so a check and the use that
  follows it see the same file.

The directory walks of ``grep`` and ``glob`` never follow symlinks (to files or directories)
and skip ``.git`` and ``node_modules``, with or without a workspace.

The workspace confines the file tools. ``bash`` starts in it, but a shell command can still
reach anything the process can: hosts that run untrusted models pair a workspace with
``"bash": False`` or an allowlist, and an OS sandbox.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ._output import BuiltinError

__all__ = ["SKIPPED_DIRS", "Paths", "walk_files"]

SKIPPED_DIRS = frozenset({".git", "node_modules"})


class Paths:
    """Resolves path arguments, confined to ``workspace`` when one is set."""

    __slots__ = ("base_dir", "root")

    def __init__(self, workspace: Path | None = None, *, base_dir: Path | None = None) -> None:
        self.root = workspace
        self.base_dir = base_dir

    @property
    def base(self) -> Path:
        """Where relative paths start: the workspace, else ``base_dir``, else the cwd (now)."""
        if self.root is not None:
            return self.root
        return self.base_dir if self.base_dir is not None else Path.cwd()

    def resolve(self, raw: str) -> Path:
        """The real path ``raw`` names; outside the workspace raises `BuiltinError`."""
        candidate = self._candidate(raw)
        real = Path(os.path.realpath(candidate))
        self._check(raw, real)
        return real

    def resolve_entry(self, raw: str) -> Path:
        """The directory entry ``raw`` names, its last component *not* followed.

        For removing a file: deleting a symlink removes the link, not what it points to.
        """
        candidate = self._candidate(raw)
        name = candidate.name
        if name in ("", ".", "..") or os.path.basename(os.path.normpath(candidate)) != name:
            raise BuiltinError(f"{raw}: not a file path")
        entry = Path(os.path.realpath(candidate.parent)) / name
        self._check(raw, entry)
        return entry

    def _candidate(self, raw: str) -> Path:
        if not raw:
            raise BuiltinError("path must not be empty")
        if "\0" in raw:
            raise BuiltinError("path must not contain a NUL character")
        path = Path(raw)
        return path if path.is_absolute() else self.base / path

    def _check(self, raw: str, real: Path) -> None:
        root = self.root
        if root is not None and real != root and root not in real.parents:
            raise BuiltinError(
                f"{raw}: path is outside the workspace (resolves outside baseDir {root})"
            )


def walk_files(root: Path) -> list[tuple[str, Path]]:
    """Every regular file under ``root`` as ``(relative posix path, path)``, sorted by the
    relative path (code-point order), so a capped result does not depend on the filesystem.

    Symlinks are never followed or listed; unreadable directories are skipped.
    """
    found: list[tuple[str, Path]] = []
    pending = [root]
    while pending:
        directory = pending.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISDIR(mode):
                if entry.name not in SKIPPED_DIRS:
                    pending.append(Path(entry.path))
            elif stat.S_ISREG(mode):
                path = Path(entry.path)
                found.append((path.relative_to(root).as_posix(), path))
    found.sort(key=lambda item: item[0])
    return found
