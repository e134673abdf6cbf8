"""Walking a skills tree: symlinks followed, cycles cut, order fixed.

Both discovery (every ``SKILL.md`` under a root) and the ``skill`` tool's sibling sampler walk
the same way:

- **Symlinks are followed**, to directories and to files alike, so a skills folder can be
  assembled from links into other checkouts.
- **Cycles are cut by real path**: a directory whose resolved path was already entered is not
  entered again, so a link back to an ancestor (or two links to one place) is harmless. The
  path kept is the first one reached.
- **The walk is breadth-first**, level by level, each level in code-point order of the
  relative path, so of two ways into one directory the shallower is the one kept. Callers sort
  what it found themselves (`by_depth_then_path` for discovery, `by_path` for the sibling
  sample), so the same tree always yields the same sequence and "first wins" among duplicate
  skill names is reproducible.
- ``.git`` and ``node_modules`` directories below the starting point are not entered, as in the
  other toolnexus ports (they are large and never hold skills).
- A directory that cannot be listed is passed over (logged at debug level); the walk goes on.

Paths are yielded as reached, joined onto the absolute starting directory, never resolved: a
skill reached through a link lives where the link is.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

__all__ = ["SKILL_FILE", "WalkEntry", "by_depth_then_path", "by_path", "walk_files"]

log = logging.getLogger("toolnexus")

SKILL_FILE = "SKILL.md"
"""The file name that marks a skill folder (exact case)."""

_NOT_ENTERED = frozenset({".git", "node_modules"})


@dataclass(frozen=True, slots=True)
class WalkEntry:
    """One non-directory entry met by the walk.

    Attributes:
        path: the absolute path as reached (symlinks not resolved).
        name: the entry's file name.
        regular: True when the path (links followed) is a regular file; False for a dangling
            link, a FIFO, a socket or a device.
        rel: the ``/``-separated path relative to the walk's start.
    """

    path: str
    name: str
    regular: bool
    rel: str = ""


def by_depth_then_path(entry: WalkEntry) -> tuple[int, str]:
    """Sort key: segment count relative to the start, then the relative path (code points)."""
    return (entry.rel.count("/"), entry.rel)


def by_path(entry: WalkEntry) -> str:
    """Sort key: the ``/``-separated relative path in code-point order."""
    return entry.rel


def walk_files(start: str, visited: set[str] | None = None) -> list[WalkEntry]:
    """Every non-directory entry under ``start``, in breadth-first, sorted-per-level order.

    Args:
        start: an absolute directory path.
        visited: real paths of directories already entered; shared between calls so that
            overlapping roots are walked once. A fresh set is used when omitted.
    """
    seen = set[str]() if visited is None else visited
    found: list[WalkEntry] = []
    level: list[tuple[str, str]] = [(start, "")]
    while level:
        below: list[tuple[str, str]] = []
        for directory, rel in level:
            real = os.path.realpath(directory)
            if real in seen:
                continue
            seen.add(real)
            try:
                with os.scandir(directory) as listing:
                    entries = list(listing)
            except OSError as exc:
                log.debug("toolnexus: cannot list %s: %s", directory, exc)
                continue
            for entry in entries:
                path = os.path.join(directory, entry.name)
                child = f"{rel}/{entry.name}" if rel else entry.name
                if not _is_dir(entry):
                    found.append(WalkEntry(path, entry.name, _is_regular(entry), child))
                elif entry.name not in _NOT_ENTERED:
                    below.append((path, child))
        level = sorted(below, key=lambda item: item[1])
    return found


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows symlinks
    except OSError:
        return False


def _is_regular(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()  # follows symlinks; False for FIFOs, devices, dangling links
    except OSError:
        return False
