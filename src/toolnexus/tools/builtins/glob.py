"""The ``glob`` built-in: list files whose relative path matches a glob.

``glob{pattern, path?, limit?}`` walks ``path`` (default the cwd or the workspace) and answers
the matching files' paths relative to it, one per line, sorted, at most ``limit`` (default 100).
The pattern syntax is in `_globs`; ``.git``/``node_modules`` and symlinks are not listed.
No match answers an empty output (``metadata={"count": 0}``).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from ..._types import JSONSchema, Tool, ToolContext, ToolResult
from ._args import int_arg, optional_text_arg, text_arg
from ._confine import Paths, walk_files
from ._globs import GlobMatcher
from ._options import BuiltinOptions
from ._output import builtin_tool

__all__ = ["GLOB_SCHEMA", "glob_tool"]

GLOB_SCHEMA: JSONSchema = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "description": "Glob pattern, e.g. **/*.py"},
        "path": {"type": "string", "description": "Directory to search (default: the cwd)"},
        "limit": {"type": "number", "description": "Maximum number of results (default 100)"},
    },
    "required": ["pattern"],
    "additionalProperties": False,
}

_DESCRIPTION = (
    "List files matching a glob pattern (*, ?, **, [abc], {a,b}) under a directory. Output: "
    "newline-separated paths relative to that directory. A pattern without / matches names."
)

DEFAULT_LIMIT = 100


def glob_tool(options: BuiltinOptions) -> Tool:
    """The ``glob`` built-in under ``options``."""
    paths = options.paths()

    async def run(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        return await asyncio.to_thread(_glob, args, paths)

    return builtin_tool(
        "glob", _DESCRIPTION, GLOB_SCHEMA, run, max_output_bytes=options.max_output_bytes
    )


def _glob(args: dict[str, Any], paths: Paths) -> ToolResult:
    matcher = GlobMatcher.compile(text_arg(args, "pattern"))
    raw = optional_text_arg(args, "path")
    limit = int_arg(args, "limit", DEFAULT_LIMIT, minimum=1) or DEFAULT_LIMIT
    with paths.locate(raw if raw is not None else ".") as entry:
        dir_fd = entry.open_dir()
    try:
        files = walk_files(dir_fd)
    finally:
        os.close(dir_fd)
    found: list[str] = []
    for relative in files:
        if matcher.matches(relative):
            found.append(relative)
            if len(found) >= limit:
                break
    return ToolResult("\n".join(found), metadata={"count": len(found)})
