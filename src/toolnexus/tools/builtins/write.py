"""The ``write`` built-in: create or overwrite a file with the given text.

``write{path, content}`` makes missing parent directories, writes ``content`` as UTF-8 and
answers ``Wrote <n> bytes to <path>`` (``metadata={"bytes": n}``). A path naming a directory is
an error.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..._types import JSONSchema, Tool, ToolContext, ToolResult
from ._args import text_arg
from ._confine import Paths
from ._files import write_file
from ._options import BuiltinOptions
from ._output import BuiltinError, builtin_tool

__all__ = ["WRITE_SCHEMA", "write_tool"]

WRITE_SCHEMA: JSONSchema = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Path of the file to write"},
        "content": {"type": "string", "description": "The full content of the file"},
    },
    "required": ["path", "content"],
    "additionalProperties": False,
}

_DESCRIPTION = (
    "Write content to a file, creating it (and its parent directories) or replacing it "
    "entirely. Prefer edit or apply_patch to change part of an existing file."
)


def write_tool(options: BuiltinOptions) -> Tool:
    """The ``write`` built-in under ``options``."""
    paths = options.paths()

    async def run(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        return await asyncio.to_thread(_write, args, paths)

    return builtin_tool(
        "write", _DESCRIPTION, WRITE_SCHEMA, run, max_output_bytes=options.max_output_bytes
    )


def _write(args: dict[str, Any], paths: Paths) -> ToolResult:
    raw = text_arg(args, "path")
    content = text_arg(args, "content", allow_empty=True)
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise BuiltinError("content is not valid Unicode text") from None
    with paths.locate(raw, write=True, make_parents=True) as entry:
        write_file(entry, data)
    return ToolResult(f"Wrote {len(data)} bytes to {raw}", metadata={"bytes": len(data)})
