"""The ``read`` built-in (CONTRACT §4A)."""

from __future__ import annotations

from pathlib import Path

import pytest
from builtin_support import Builtin


async def test_a_file_comes_back_exactly(builtin: Builtin, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"one\r\ntwo\n\nthree")

    result = await builtin("read").execute({"path": str(tmp_path / "a.txt")})

    assert not result.is_error
    assert result.output == "one\r\ntwo\n\nthree"


async def test_a_relative_path_resolves_from_the_cwd(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "a.txt").write_text("here\n")

    result = await builtin("read").execute({"path": "a.txt"})

    assert result.output == "here\n"


async def test_offset_and_limit_give_a_window_of_lines(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "a.txt").write_text("1\n2\n3\n4\n5\n")

    result = await builtin("read").execute({"path": "a.txt", "offset": 2, "limit": 3})

    assert result.output == "2\n3\n4"


async def test_offset_alone_reads_to_the_end(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "a.txt").write_text("1\n2\n3")

    result = await builtin("read").execute({"path": "a.txt", "offset": 2})

    assert result.output == "2\n3"


async def test_an_offset_past_the_end_is_an_error(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "a.txt").write_text("1\n2\n")

    result = await builtin("read").execute({"path": "a.txt", "offset": 9})

    assert result.is_error
    assert result.output == "read: offset 9 is past the end of a.txt (2 lines)"


@pytest.mark.parametrize(("key", "value"), [("offset", 0), ("limit", -1), ("offset", "x")])
async def test_a_bad_window_is_an_error(
    builtin: Builtin, in_tmp: Path, key: str, value: object
) -> None:
    (in_tmp / "a.txt").write_text("1\n")

    result = await builtin("read").execute({"path": "a.txt", key: value})

    assert result.is_error
    assert key in result.output


async def test_a_missing_file_is_an_error(builtin: Builtin, in_tmp: Path) -> None:
    result = await builtin("read").execute({"path": "nope.txt"})

    assert result.is_error
    assert result.output == "read: file not found: nope.txt"


async def test_a_directory_is_an_error(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "d").mkdir()

    result = await builtin("read").execute({"path": "d"})

    assert result.is_error
    assert result.output == "read: d is a directory, not a file"


async def test_a_binary_file_is_an_error(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "x.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

    result = await builtin("read").execute({"path": "x.bin"})

    assert result.is_error
    assert result.output == "read: x.bin is a binary file"


async def test_invalid_utf8_is_an_error(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "latin.txt").write_bytes("café".encode("latin-1"))

    result = await builtin("read").execute({"path": "latin.txt"})

    assert result.is_error
    assert "not valid UTF-8" in result.output


async def test_a_fifo_is_refused_instead_of_blocking(builtin: Builtin, in_tmp: Path) -> None:
    import os

    os.mkfifo(in_tmp / "pipe")

    result = await builtin("read").execute({"path": "pipe"})

    assert result.is_error
    assert "not a regular file" in result.output


async def test_a_huge_file_is_truncated_with_a_notice(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "big.txt").write_text("line\n" * 100_000)
    read = builtin("read", max_output_bytes=12)

    result = await read.execute({"path": "big.txt"})

    assert not result.is_error
    assert result.output == "line\nline\nli\n[truncated: output exceeded 12 bytes]"


async def test_a_huge_single_line_is_truncated(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "min.js").write_text("é" * 3_000_000)
    read = builtin("read", max_output_bytes=5)

    result = await read.execute({"path": "min.js"})

    assert result.output == "éé\n[truncated: output exceeded 5 bytes]"


async def test_lines_after_a_long_line_are_numbered_correctly(
    builtin: Builtin, in_tmp: Path
) -> None:
    (in_tmp / "a.txt").write_text("x" * 500 + "\nsecond\nthird\n")
    read = builtin("read", max_output_bytes=100)

    result = await read.execute({"path": "a.txt", "offset": 2, "limit": 1})

    assert result.output == "second"
