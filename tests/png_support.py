"""Real image bytes for the content-part tests: a small PNG built with zlib and struct."""

from __future__ import annotations

import struct
import zlib


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def make_png(width: int = 2, height: int = 2, rgb: tuple[int, int, int] = (255, 0, 0)) -> bytes:
    """A valid ``width`` × ``height`` truecolour PNG filled with ``rgb``."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    row = b"\x00" + bytes(rgb) * width  # filter type 0, then the pixels
    pixels = zlib.compress(row * height)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", pixels)
        + _chunk(b"IEND", b"")
    )


def read_png_size(data: bytes) -> tuple[int, int]:
    """The width and height a PNG's IHDR declares (checks the signature and the chunk CRC)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR"
    assert length == 13
    crc = struct.unpack(">I", data[29:33])[0]
    assert zlib.crc32(data[12:29]) & 0xFFFFFFFF == crc
    width, height = struct.unpack(">II", data[16:24])
    return width, height
