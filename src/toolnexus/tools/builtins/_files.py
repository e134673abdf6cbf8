"""Reading a text file for a built-in, with the errors the model should see.

A file is *text* when its first 8 KiB hold no NUL byte and it decodes as UTF-8. Files are read
and written as bytes, so line endings (``\\r\\n``) survive an edit untouched.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ._output import BuiltinError

__all__ = ["SNIFF_BYTES", "check_regular_file", "looks_binary", "read_text_file"]

SNIFF_BYTES = 8192


def looks_binary(head: bytes) -> bool:
    """Whether the first bytes of a file say it is not text (a NUL byte)."""
    return b"\0" in head


def check_regular_file(path: Path, raw: str) -> None:
    """Raise `BuiltinError` unless ``path`` is an existing regular file."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise BuiltinError(f"file not found: {raw}") from None
    except PermissionError:
        raise BuiltinError(f"permission denied: {raw}") from None
    if stat.S_ISDIR(mode):
        raise BuiltinError(f"{raw} is a directory, not a file")
    if not stat.S_ISREG(mode):
        raise BuiltinError(f"{raw} is not a regular file")


def read_text_file(path: Path, raw: str) -> str:
    """The whole UTF-8 text of ``path``; missing, directory or binary raise `BuiltinError`."""
    check_regular_file(path, raw)
    try:
        data = path.read_bytes()
    except PermissionError:
        raise BuiltinError(f"permission denied: {raw}") from None
    if looks_binary(data[:SNIFF_BYTES]):
        raise BuiltinError(f"{raw} is a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise BuiltinError(f"{raw} is not valid UTF-8 text") from None
