"""The ``grep`` built-in: search file contents with a regular expression.

``grep{pattern, path?, include?, limit?}`` walks ``path`` (a directory, default the cwd or the
workspace; a single file works too), in sorted order of the relative paths, and answers one
``<relative path>:<line number>:<line>`` line per matching line, at most ``limit`` (default
100) of them. ``include`` is a glob on the files searched (see `_globs`). Binary files (a NUL
byte in the first 8 KiB) are skipped, invalid UTF-8 elsewhere is read with U+FFFD, and
``.git``/``node_modules`` and symlinks are not entered. The regex is Python's ``re`` syntax,
searched per line; an invalid one is an error. No match answers an empty output
(``metadata={"count": 0}``).
"""

from __future__ import annotations

import asyncio
import os
import re
import stat
from collections.abc import Generator
from contextlib import closing
from typing import Any

from ..._types import JSONSchema, Tool, ToolContext, ToolResult
from ._args import int_arg, optional_text_arg, text_arg
from ._confine import Paths, open_beneath, walk_files
from ._files import SNIFF_BYTES, looks_binary
from ._globs import GlobMatcher
from ._options import BuiltinOptions
from ._output import BuiltinError, builtin_tool

__all__ = ["GREP_SCHEMA", "grep_tool"]

GREP_SCHEMA: JSONSchema = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "Regular expression to search for"},
        "path": {"type": "string", "description": "Directory to search (default: the cwd)"},
        "include": {"type": "string", "description": "Glob of the files to search, e.g. *.py"},
        "limit": {"type": "number", "description": "Maximum number of matches (default 100)"},
    },
    "required": ["pattern"],
    "additionalProperties": False,
}

_DESCRIPTION = (
    "Search file contents with a regular expression (Python re syntax) under a directory. "
    "Output: one file:line:text line per match, paths relative to the searched directory."
)

DEFAULT_LIMIT = 100


def grep_tool(options: BuiltinOptions) -> Tool:
    """The ``grep`` built-in under ``options``."""
    paths = options.paths()
    cap = options.max_output_bytes

    async def run(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        return await asyncio.to_thread(_grep, args, paths, cap)

    return builtin_tool("grep", _DESCRIPTION, GREP_SCHEMA, run, max_output_bytes=cap)


def _grep(args: dict[str, Any], paths: Paths, cap: int) -> ToolResult:
    pattern = text_arg(args, "pattern")
    try:
        regex = re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise BuiltinError(f"invalid regex {pattern!r}: {exc}") from None
    raw = optional_text_arg(args, "path")
    include = optional_text_arg(args, "include")
    limit = int_arg(args, "limit", DEFAULT_LIMIT, minimum=1) or DEFAULT_LIMIT
    matcher = GlobMatcher.compile(include) if include is not None else None
    with paths.locate(raw if raw is not None else ".") as entry:
        info = entry.lstat()
        if info is not None and stat.S_ISREG(info.st_mode):
            return _search([(entry.name, entry.dir_fd)], regex, matcher, limit, cap)
        if info is None or not stat.S_ISDIR(info.st_mode):
            raise BuiltinError(f"path not found: {raw}")
        dir_fd = entry.open_dir()
    try:
        return _search([(f, dir_fd) for f in walk_files(dir_fd)], regex, matcher, limit, cap)
    finally:
        os.close(dir_fd)


def _search(
    files: list[tuple[str, int]],
    regex: re.Pattern[str],
    matcher: GlobMatcher | None,
    limit: int,
    cap: int,
) -> ToolResult:
    matches: list[str] = []
    size = 0
    for relative, dir_fd in files:
        if matcher is not None and not matcher.matches(relative):
            continue
        with closing(_matching_lines(dir_fd, relative, regex)) as lines:
            for number, line in lines:
                entry = f"{relative}:{number}:{line}"
                matches.append(entry)
                size += len(entry) + 1
                if len(matches) >= limit or size > cap:
                    return _result(matches)
    return _result(matches)


def _result(matches: list[str]) -> ToolResult:
    return ToolResult("\n".join(matches), metadata={"count": len(matches)})


def _matching_lines(
    dir_fd: int, relative: str, regex: re.Pattern[str]
) -> Generator[tuple[int, str], None, None]:
    """The matching lines of a text file; none for a binary, unreadable or non-regular file
    (or one swapped for a symlink since the walk: it is opened without following)."""
    fd = open_beneath(dir_fd, relative, os.O_RDONLY | os.O_NONBLOCK)
    if fd is None:
        return
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return
        os.set_blocking(fd, True)
    except OSError:
        os.close(fd)
        return
    with os.fdopen(fd, "rb") as handle:
        try:
            if looks_binary(handle.read(SNIFF_BYTES)):
                return
            handle.seek(0)
            for number, raw in enumerate(handle, start=1):
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
                if regex.search(line):
                    yield number, line
        except OSError:
            return
