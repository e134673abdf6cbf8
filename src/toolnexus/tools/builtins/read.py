"""The ``read`` built-in: a UTF-8 text file, whole or a window of lines.

``read{path, offset?, limit?}``: ``offset`` is the 1-based first line, ``limit`` the number of
lines. A file whose lower-cased extension is in `toolnexus.MEDIA_TYPES` (png, jpg, jpeg, gif,
webp, pdf, mp3, wav) comes back as a content part instead: the output ``<path> (<mime>, <n>
bytes)`` and one part with the file's bytes, which the model sees as an image, a document or
audio (COMPAT §5); ``offset`` and ``limit`` do not apply to it, and one over the process-wide
``max_part_bytes`` is refused unread.

For a text file, without ``offset`` or ``limit`` the file comes back exactly as stored; with a
window the lines are joined by ``\\n`` (the last line's newline dropped). A missing file, a
directory, a non-regular file, a binary file (a NUL byte in the first 8 KiB) or invalid UTF-8
is an error, and so is an ``offset`` past the last line. The file is read only as far as the
output cap needs, so a huge file costs no more than its first ``max_output_bytes``.
"""

from __future__ import annotations

import asyncio
import base64
import codecs
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from ..._types import JSONSchema, Tool, ToolContext, ToolResult
from ...parts import MEDIA_TYPES, get_max_part_bytes
from ._args import int_arg, text_arg
from ._confine import Paths
from ._files import SNIFF_BYTES, looks_binary
from ._options import BuiltinOptions
from ._output import BuiltinError, builtin_tool

__all__ = ["READ_SCHEMA", "read_tool"]

READ_SCHEMA: JSONSchema = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Path of the file to read"},
        "offset": {"type": "number", "description": "1-based line to start from"},
        "limit": {"type": "number", "description": "Maximum number of lines to read"},
    },
    "required": ["path"],
    "additionalProperties": False,
}

_DESCRIPTION = (
    "Read a UTF-8 text file. With offset (1-based line) and/or limit (number of lines) only "
    "that window of lines is returned. Long output is truncated; page through with offset. "
    "Images (png, jpg, gif, webp), PDFs and audio (mp3, wav) are shown to you as they are."
)


def read_tool(options: BuiltinOptions) -> Tool:
    """The ``read`` built-in under ``options``."""
    paths = options.paths()
    cap = options.max_output_bytes

    async def run(args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        return await asyncio.to_thread(_read, args, paths, cap)

    return builtin_tool("read", _DESCRIPTION, READ_SCHEMA, run, max_output_bytes=cap)


def _read(args: dict[str, Any], paths: Paths, cap: int) -> ToolResult:
    raw = text_arg(args, "path")
    offset = int_arg(args, "offset", 1, minimum=1) or 1
    limit = int_arg(args, "limit", None, minimum=0)
    with paths.locate(raw) as entry:
        fd = entry.open_regular()
        name = entry.path.name
    suffix = Path(name).suffix
    media = MEDIA_TYPES.get(suffix[1:].lower()) if suffix else None
    if media is not None:
        return _read_media(fd, raw, name, *media)
    with os.fdopen(fd, "rb") as handle:
        if looks_binary(handle.read(SNIFF_BYTES)):
            raise BuiltinError(f"{raw} is a binary file")
        handle.seek(0)
        data, seen, more = _window(handle, offset, limit, cap)
    if offset > 1 and seen < offset:
        raise BuiltinError(f"offset {offset} is past the end of {raw} ({seen} lines)")
    windowed = args.get("offset") is not None or limit is not None
    if windowed and data.endswith(b"\n"):
        data = data[:-1]
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(data, final=not more)
    except UnicodeDecodeError:
        raise BuiltinError(f"{raw} is not valid UTF-8 text") from None
    return ToolResult(text)


def _read_media(fd: int, raw: str, name: str, mime: str, kind: str) -> ToolResult:
    """A media file (opened confined, as ``fd``) as one content part: its bytes
    base64-encoded, named by its basename."""
    limit = get_max_part_bytes()
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if limit is not None and size > limit:
            raise BuiltinError(f"{raw} is {size} bytes, over the maxPartBytes limit of {limit}")
        data = handle.read()
    encoded = base64.b64encode(data).decode("ascii")
    part = {"type": kind, "mimeType": mime, "data": encoded, "name": name}
    return ToolResult(f"{raw} ({mime}, {len(data)} bytes)", parts=[part])


def _window(handle: BinaryIO, offset: int, limit: int | None, cap: int) -> tuple[bytes, int, bool]:
    """The bytes of the lines in the window (at most about ``cap + 1`` of them), the number of
    lines seen, and whether reading stopped at the cap with more left to read."""
    parts: list[bytes] = []
    size = 0
    seen = 0
    for line in _lines(handle, cap + 1):
        seen += 1
        if seen < offset:
            continue
        if limit is not None and seen >= offset + limit:
            break
        parts.append(line)
        size += len(line)
        if size > cap:
            return b"".join(parts), seen, True
    return b"".join(parts), seen, False


def _lines(handle: BinaryIO, bound: int) -> Iterator[bytes]:
    """The file's lines; a line longer than ``bound`` yields only its first ``bound`` bytes
    (the caller stops there) while the rest of it is skipped, so memory stays bounded."""
    while True:
        piece = handle.readline(bound)
        if not piece:
            return
        if len(piece) == bound and not piece.endswith(b"\n"):
            while True:
                rest = handle.readline(bound)
                if not rest or rest.endswith(b"\n"):
                    break
        yield piece
