"""Walking a skills tree: symlinks followed, cycles cut, order fixed.

Both discovery (every ``SKILL.md`` under a root) and the ``skill`` tool's sibling sampler walk
the same way:

- **Symlinks are followed**, to directories and to files alike, so a skills folder can be
  assembled from links into other checkouts.
- **Cycles are cut by real path**: a directory whose resolved path was already entered is not
  entered again, so a link back to an ancestor (or two links to one place) is harmless. The
  path kept is the first one reached.
- **The order is sorted**: a depth-first walk over entries sorted by name (code point order),
  which lists paths in component-wise sorted order. The same tree always yields the same
  sequence, so "first wins" among duplicate skill names is reproducible.
- ``.git`` and ``node_modules`` directories below the starting point are not entered, as in the
  other toolnexus ports (they are large and never hold skills).
- A directory that cannot be listed is passed over (logged at debug level); the walk goes on.

Paths are yielded as reached, joined onto the absolute starting directory, never resolved: a
skill reached through a link lives where the link is.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["SKILL_FILE", "WalkEntry", "walk_files"]

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
    """

    path: str
    name: str
    regular: bool


def walk_files(start: str, visited: set[str] | None = None) -> Iterator[WalkEntry]:
    """Every non-directory entry under ``start``, depth-first in sorted order.

    Args:
        start: an absolute directory path.
        visited: real paths of directories already entered; shared between calls so that
            overlapping roots are walked once. A fresh set is used when omitted.
    """
    seen = set[str]() if visited is None else visited
    # A stack of entries still to visit: a directory is listed when popped, so popping in
    # reverse-sorted push order gives a sorted depth-first (pre-order) sequence.
    stack: list[WalkEntry | str] = [start]
    while stack:
        item = stack.pop()
        if isinstance(item, WalkEntry):
            yield item
            continue
        real = os.path.realpath(item)
        if real in seen:
            continue
        seen.add(real)
        try:
            with os.scandir(item) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            log.debug("toolnexus: cannot list %s: %s", item, exc)
            continue
        for entry in reversed(entries):
            path = os.path.join(item, entry.name)
            if not _is_dir(entry):
                stack.append(WalkEntry(path, entry.name, _is_regular(entry)))
            elif entry.name not in _NOT_ENTERED:
                stack.append(path)


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
