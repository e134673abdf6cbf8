"""Reading a text file for a built-in, with the errors the model should see.

A file is *text* when its first 8 KiB hold no NUL byte and it decodes as UTF-8. Files are read
and written as bytes, so line endings (``\\r\\n``) survive an edit untouched. Files are opened
through a `Located` entry (a descriptor of the parent directory and a no-follow open), never
by path string; see `_confine`.
"""

from __future__ import annotations

import os

from ._confine import Located
from ._output import BuiltinError

__all__ = ["SNIFF_BYTES", "looks_binary", "read_all", "read_text_file", "write_file"]

SNIFF_BYTES = 8192


def looks_binary(head: bytes) -> bool:
    """Whether the first bytes of a file say it is not text (a NUL byte)."""
    return b"\0" in head


def read_all(fd: int) -> bytes:
    """Everything left to read from ``fd`` (closed afterwards)."""
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def read_text_file(entry: Located) -> str:
    """The whole UTF-8 text of the file; missing, directory or binary raise `BuiltinError`."""
    data = read_all(entry.open_regular())
    raw = entry.raw
    if looks_binary(data[:SNIFF_BYTES]):
        raise BuiltinError(f"{raw} is a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise BuiltinError(f"{raw} is not valid UTF-8 text") from None


def write_file(entry: Located, data: bytes) -> None:
    """Create or truncate the file and write ``data`` (the entry itself is never a symlink
    followed: one that appeared since the walk makes this fail closed)."""
    fd = entry.open_regular(os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
