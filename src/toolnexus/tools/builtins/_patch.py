"""The ``apply_patch`` grammar: parsing a patch and applying an update to a text, in memory.

::

    *** Begin Patch
    *** Add File: docs/new.md
    +first line
    +second line
    *** Update File: src/app.py
    *** Move to: src/main.py
    @@ def greet():
    -    print("Hi")
    +    print("Hello")
    *** Delete File: old.txt
    *** End Patch

- ``*** Add File: p`` is followed by the new file's lines, each prefixed with ``+``; every line
  ends with a newline in the file.
- ``*** Delete File: p`` has no body.
- ``*** Update File: p`` (optionally followed by ``*** Move to: q``) is followed by hunks. A
  hunk starts at an ``@@`` line (the first one may omit it); text after ``@@ `` names a line to
  find first, at or after the previous hunk (several ``@@`` lines narrow it step by step).
  Then `` `` (space) context, ``-`` removed and ``+`` added lines; an empty line counts as an
  empty context line. ``*** End of File`` after a hunk anchors it to the end of the file.
- Hunks apply in order, each searched from where the previous one ended: exactly first, then
  ignoring trailing whitespace, then ignoring surrounding whitespace. A hunk with no ``-`` or
  context lines inserts after its ``@@`` anchor, or at the end of the file without one.
- ``\\r\\n`` files keep their line endings; a missing final newline stays missing.

Pure functions: nothing here touches the filesystem (`apply_patch` stages and writes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["FileOp", "Hunk", "PatchError", "apply_hunks", "parse_patch"]

BEGIN = "*** Begin Patch"
END = "*** End Patch"
END_OF_FILE = "*** End of File"
MOVE_TO = "*** Move to: "
_HEADERS: tuple[tuple[str, Literal["add", "update", "delete"]], ...] = (
    ("*** Add File: ", "add"),
    ("*** Update File: ", "update"),
    ("*** Delete File: ", "delete"),
)
_SHOWN_LINES = 6


class PatchError(Exception):
    """The patch is malformed or does not apply."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Hunk:
    """One change in an updated file."""

    anchors: tuple[str, ...] = ()
    old: tuple[str, ...] = ()
    new: tuple[str, ...] = ()
    at_end: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class FileOp:
    """One ``*** Add/Update/Delete File`` section."""

    kind: Literal["add", "update", "delete"]
    path: str
    move_to: str | None = None
    content: str = ""
    hunks: tuple[Hunk, ...] = ()


def parse_patch(text: str) -> list[FileOp]:
    """The file operations of a patch, in order.

    Raises:
        PatchError: a missing envelope, an unknown line, an empty hunk or file path.
    """
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    if start >= len(lines) or lines[start].strip() != BEGIN:
        raise PatchError(f"missing {BEGIN!r}")
    if lines[-1].strip() != END:
        raise PatchError(f"missing {END!r}")
    body = lines[start + 1 : -1]
    ops: list[FileOp] = []
    i = 0
    while i < len(body):
        line = body[i]
        if not line.strip():
            i += 1
            continue
        header = _header(line)
        if header is None:
            raise PatchError(f"unexpected line: {line}")
        kind, path = header
        end = i + 1
        while end < len(body) and _header(body[end]) is None:
            end += 1
        ops.append(_section(kind, path, body[i + 1 : end]))
        i = end
    if not ops:
        raise PatchError("the patch contains no file operations")
    return ops


def _header(line: str) -> tuple[Literal["add", "update", "delete"], str] | None:
    for prefix, kind in _HEADERS:
        if line.startswith(prefix):
            path = line[len(prefix) :].strip()
            if not path:
                raise PatchError(f"{line.strip()!r}: missing file path")
            return kind, path
    return None


def _section(kind: Literal["add", "update", "delete"], path: str, lines: list[str]) -> FileOp:
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    if kind == "delete":
        if lines:
            raise PatchError(f"Delete File {path}: unexpected line {lines[0]!r}")
        return FileOp(kind="delete", path=path)
    if kind == "add":
        content: list[str] = []
        for line in lines:
            if not line.startswith("+"):
                raise PatchError(f"Add File {path}: every line must start with '+', got {line!r}")
            content.append(line[1:])
        # The body lines joined, no newline added after the last (as the toolnexus package).
        return FileOp(kind="add", path=path, content="\n".join(content))
    move_to: str | None = None
    if lines and lines[0].startswith(MOVE_TO):
        move_to = lines[0][len(MOVE_TO) :].strip()
        if not move_to:
            raise PatchError(f"Update File {path}: '*** Move to:' without a path")
        lines = lines[1:]
    hunks = _hunks(path, lines)
    if not hunks and move_to is None:
        raise PatchError(f"Update File {path}: no hunks")
    return FileOp(kind="update", path=path, move_to=move_to, hunks=tuple(hunks))


class _HunkBuilder:
    __slots__ = ("anchors", "at_end", "new", "old")

    def __init__(self) -> None:
        self.anchors: list[str] = []
        self.old: list[str] = []
        self.new: list[str] = []
        self.at_end = False

    @property
    def has_lines(self) -> bool:
        return bool(self.old or self.new)

    def build(self, path: str) -> Hunk:
        if not self.has_lines:
            raise PatchError(f"Update File {path}: a hunk has no lines")
        return Hunk(
            anchors=tuple(self.anchors),
            old=tuple(self.old),
            new=tuple(self.new),
            at_end=self.at_end,
        )


def _hunks(path: str, lines: list[str]) -> list[Hunk]:
    hunks: list[Hunk] = []
    current: _HunkBuilder | None = None
    for line in lines:
        if line.startswith("@@"):
            if current is not None and current.has_lines:
                hunks.append(current.build(path))
                current = None
            current = current or _HunkBuilder()
            anchor = line[2:].strip()
            if anchor:
                current.anchors.append(anchor)
            continue
        if line.strip() == END_OF_FILE:
            if current is None or not current.has_lines:
                raise PatchError(f"Update File {path}: {END_OF_FILE!r} outside a hunk")
            current.at_end = True
            hunks.append(current.build(path))
            current = None
            continue
        if line.startswith("*** "):
            raise PatchError(f"Update File {path}: unexpected line {line!r}")
        current = current or _HunkBuilder()
        if line.startswith("+"):
            current.new.append(line[1:])
        elif line.startswith("-"):
            current.old.append(line[1:])
        elif line.startswith(" ") or not line:
            current.old.append(line[1:])
            current.new.append(line[1:])
        else:
            raise PatchError(
                f"Update File {path}: a hunk line must start with ' ', '-' or '+', got {line!r}"
            )
    if current is not None:
        hunks.append(current.build(path))
    return hunks


# --- applying ----------------------------------------------------------------------------

_Same = Callable[[str, str], bool]
_LEVELS: tuple[_Same, ...] = (
    lambda a, b: a == b,
    lambda a, b: a.rstrip() == b.rstrip(),
    lambda a, b: a.strip() == b.strip(),
)


def apply_hunks(content: str, hunks: Sequence[Hunk], path: str) -> str:
    """``content`` with every hunk applied.

    Raises:
        PatchError: a hunk (or its ``@@`` anchor) does not match; nothing is half-applied,
            the caller simply keeps the original.
    """
    eol = "\r\n" if "\r\n" in content else "\n"
    lines = content.split(eol) if content else []
    final_newline = not content or content.endswith(eol)
    if content and final_newline:
        lines.pop()
    edits: list[tuple[int, int, tuple[str, ...]]] = []
    cursor = 0
    for number, hunk in enumerate(hunks, start=1):
        for anchor in hunk.anchors:
            found = _find(lines, (anchor,), cursor, at_end=False)
            if found is None:
                raise PatchError(f"{path}: hunk {number}: context line not found: {anchor!r}")
            cursor = found + 1
        if not hunk.old:
            at = cursor if hunk.anchors and not hunk.at_end else len(lines)
            edits.append((at, 0, hunk.new))
            cursor = at
            continue
        found = _find(lines, hunk.old, cursor, at_end=hunk.at_end)
        if found is None:
            shown = "\n".join(hunk.old[:_SHOWN_LINES])
            more = "\n..." if len(hunk.old) > _SHOWN_LINES else ""
            raise PatchError(
                f"hunk does not match file contents ({path}: hunk {number}; expected lines:\n"
                f"{shown}{more})"
            )
        edits.append((found, len(hunk.old), hunk.new))
        cursor = found + len(hunk.old)
    for at, length, new in reversed(edits):
        lines[at : at + length] = new
    if not lines:
        return ""
    return eol.join(lines) + (eol if final_newline else "")


def _find(lines: list[str], wanted: Sequence[str], start: int, *, at_end: bool) -> int | None:
    """Where ``wanted`` occurs in ``lines`` at or after ``start``, trying stricter matches first
    (and, for an end-anchored hunk, the end of the file before anywhere else)."""
    size = len(wanted)
    last = len(lines) - size
    if last < start:
        return None
    for same in _LEVELS:
        if at_end and _matches_at(lines, wanted, last, same):
            return last
        for i in range(start, last + 1):
            if _matches_at(lines, wanted, i, same):
                return i
    return None


def _matches_at(lines: list[str], wanted: Sequence[str], at: int, same: _Same) -> bool:
    return all(same(lines[at + k], wanted[k]) for k in range(len(wanted)))
