"""Glob patterns for ``glob`` and ``grep``'s ``include``, matched against relative paths.

- ``*`` matches within one path segment, ``?`` one character of a segment;
- ``**`` matches across segments, and ``**/`` also matches no directory at all
  (``**/*.py`` finds ``a.py`` and ``src/a.py``);
- ``[abc]``, ``[a-z]`` and ``[!abc]`` are character classes; ``{a,b}`` alternatives (nestable);
- a pattern without ``/`` is matched against the file name alone, so ``*.py`` matches at any
  depth; a pattern with ``/`` against the whole relative path (a leading ``./`` is ignored).

A malformed class or brace is taken literally rather than rejected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["GlobMatcher", "glob_regex"]


@dataclass(frozen=True, slots=True)
class GlobMatcher:
    """A compiled glob: ``matcher.matches("src/a.py")``."""

    regex: re.Pattern[str]
    basename_only: bool

    @classmethod
    def compile(cls, pattern: str) -> GlobMatcher:
        """Compile ``pattern`` (see the module docstring for the syntax)."""
        while pattern.startswith("./"):
            pattern = pattern[2:]
        return cls(glob_regex(pattern), "/" not in pattern)

    def matches(self, relative: str) -> bool:
        """Whether the relative posix path ``relative`` matches."""
        subject = relative.rsplit("/", 1)[-1] if self.basename_only else relative
        return self.regex.fullmatch(subject) is not None


def glob_regex(pattern: str) -> re.Pattern[str]:
    """The anchored regular expression for a glob ``pattern``."""
    body, _ = _translate(pattern, 0, nested=False)
    return re.compile(body, re.DOTALL)


def _translate(pattern: str, start: int, *, nested: bool) -> tuple[str, int]:
    """Translate from ``start``; inside braces stop at the ``,`` or ``}`` that ends an item."""
    out: list[str] = []
    i = start
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if nested and c in ",}":
            break
        if c == "*":
            if pattern.startswith("**", i):
                if pattern.startswith("**/", i):
                    out.append("(?:.*/)?")
                    i += 3
                else:
                    out.append(".*")
                    i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = _class_end(pattern, i)
            if end < 0:
                out.append(re.escape(c))
            else:
                out.append(_class(pattern[i + 1 : end]))
                i = end
        elif c == "{":
            group, after = _braces(pattern, i)
            if group is None:
                out.append(re.escape(c))
            else:
                out.append(group)
                i = after
                continue
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out), i


def _class_end(pattern: str, start: int) -> int:
    """The index of the ``]`` closing the class opened at ``start``, or -1."""
    i = start + 1
    if i < len(pattern) and pattern[i] in "!^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1  # a leading ] is a member
    end = pattern.find("]", i)
    return end


def _class(members: str) -> str:
    negate = members[:1] in ("!", "^")
    if negate:
        members = members[1:]
    escaped = "".join("\\" + ch if ch in "\\]^[" else ch for ch in members)
    return f"[^/{escaped}]" if negate else f"[{escaped}]"


def _braces(pattern: str, start: int) -> tuple[str | None, int]:
    """``{a,b}`` at ``start`` as ``(?:a|b)`` and the index after ``}``; ``None`` if unclosed."""
    items: list[str] = []
    i = start + 1
    while True:
        item, i = _translate(pattern, i, nested=True)
        items.append(item)
        if i >= len(pattern):
            return None, start
        if pattern[i] == "}":
            return "(?:" + "|".join(items) + ")", i + 1
        i += 1  # past the comma
