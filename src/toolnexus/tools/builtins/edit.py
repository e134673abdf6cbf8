"""The ``edit`` built-in: replace an exact string in a file.

``edit{path, oldString, newString, replaceAll?}``. ``oldString`` must occur exactly once
(occurrences may overlap: ``"aa"`` in ``"aaa"`` is two), unless ``replaceAll`` replaces every
non-overlapping occurrence. Absent, ambiguous, identical old/new strings, a missing, binary or
non-UTF-8 file are errors, and on any error the file is not touched. Answers
``Edited <path> (<n> replacement[s])`` with ``metadata={"replacements": n}``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..._types import JSONSchema, Tool, ToolContext, ToolResult
from ._args import bool_arg, text_arg
from ._confine import Paths
from ._files import read_text_file, write_file
from ._options import BuiltinOptions
from ._output import BuiltinError, builtin_tool

__all__ = ["EDIT_SCHEMA", "edit_tool"]

EDIT_SCHEMA: JSONSchema = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Path of the file to edit"},
        "oldString": {"type": "string", "description": "The exact text to replace"},
        "newString": {"type": "string", "description": "The text to put in its place"},
        "replaceAll": {
            "type": "boolean",
            "description": "Replace every occurrence (default: exactly one must exist)",
        },
    },
    "required": ["path", "oldString", "newString"],
    "additionalProperties": False,
}

_DESCRIPTION = (
    "Replace an exact string in a file. oldString must match the file exactly (whitespace "
    "included) and occur once; include surrounding lines to make it unique, or set replaceAll."
)


def edit_tool(options: BuiltinOptions) -> Tool:
    """The ``edit`` built-in under ``options``."""
    paths = options.paths()

    async def run(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        return await asyncio.to_thread(_edit, args, paths)

    return builtin_tool(
        "edit", _DESCRIPTION, EDIT_SCHEMA, run, max_output_bytes=options.max_output_bytes
    )


def _edit(args: dict[str, Any], paths: Paths) -> ToolResult:
    raw = text_arg(args, "path")
    old = text_arg(args, "oldString")
    new = text_arg(args, "newString", allow_empty=True)
    replace_all = bool_arg(args, "replaceAll")
    if old == new:
        raise BuiltinError("oldString and newString are identical; nothing to change")
    with paths.locate(raw, write=True) as entry:
        content = read_text_file(entry)
        updated, count = _replaced(content, old, new, raw, replace_all=replace_all)
        try:
            data = updated.encode("utf-8")
        except UnicodeEncodeError:
            raise BuiltinError("newString is not valid Unicode text") from None
        write_file(entry, data)
    plural = "" if count == 1 else "s"
    return ToolResult(
        f"Edited {raw} ({count} replacement{plural})", metadata={"replacements": count}
    )


def _replaced(content: str, old: str, new: str, raw: str, *, replace_all: bool) -> tuple[str, int]:
    first = content.find(old)
    if first < 0:
        raise BuiltinError(f"oldString not found in {raw}")
    if replace_all:
        return content.replace(old, new), content.count(old)
    if content.find(old, first + 1) >= 0:
        count = content.count(old)
        raise BuiltinError(
            f"oldString is not unique in {raw} ({max(count, 2)} occurrences); "
            "include more surrounding text or set replaceAll"
        )
    return content[:first] + new + content[first + len(old) :], 1
