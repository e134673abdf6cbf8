"""The ``write`` built-in (CONTRACT §4A)."""

from __future__ import annotations

from pathlib import Path

from builtin_support import Builtin


async def test_write_creates_the_file_and_its_parents(builtin: Builtin, in_tmp: Path) -> None:
    result = await builtin("write").execute({"path": "a/b/c.txt", "content": "héllo\n"})

    assert not result.is_error
    assert result.output == "Wrote 7 bytes to a/b/c.txt"
    assert result.metadata == {"bytes": 7}
    assert (in_tmp / "a/b/c.txt").read_bytes() == "héllo\n".encode()


async def test_write_overwrites_an_existing_file(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "a.txt").write_text("old content that is longer")

    await builtin("write").execute({"path": "a.txt", "content": "new"})

    assert (in_tmp / "a.txt").read_text() == "new"


async def test_an_empty_content_makes_an_empty_file(builtin: Builtin, in_tmp: Path) -> None:
    result = await builtin("write").execute({"path": "empty", "content": ""})

    assert result.output == "Wrote 0 bytes to empty"
    assert (in_tmp / "empty").read_bytes() == b""


async def test_writing_to_a_directory_is_an_error(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "d").mkdir()

    result = await builtin("write").execute({"path": "d", "content": "x"})

    assert result.is_error
    assert result.output == "write: d is a directory, not a file"


async def test_a_parent_that_is_a_file_is_an_error(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "f").write_text("file")

    result = await builtin("write").execute({"path": "f/child.txt", "content": "x"})

    assert result.is_error
    assert "a parent path is a file" in result.output


async def test_a_missing_content_is_an_error(builtin: Builtin, in_tmp: Path) -> None:
    result = await builtin("write").execute({"path": "a.txt"})

    assert result.is_error
    assert not (in_tmp / "a.txt").exists()


async def test_unencodable_content_is_an_error(builtin: Builtin, in_tmp: Path) -> None:
    result = await builtin("write").execute({"path": "a.txt", "content": "bad \ud800"})

    assert result.is_error
    assert not (in_tmp / "a.txt").exists()
