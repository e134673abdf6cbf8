"""The ``edit`` built-in (CONTRACT §4A)."""

from __future__ import annotations

from pathlib import Path

from builtin_support import Builtin


async def test_a_unique_string_is_replaced(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "a.py").write_text("x = 1\ny = 2\n")

    result = await builtin("edit").execute(
        {"path": "a.py", "oldString": "y = 2", "newString": "y = 3"}
    )

    assert not result.is_error
    assert result.output == "Edited a.py (1 replacement)"
    assert (in_tmp / "a.py").read_text() == "x = 1\ny = 3\n"


async def test_replace_all_replaces_every_occurrence(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "a.txt").write_text("a-a-a")

    result = await builtin("edit").execute(
        {"path": "a.txt", "oldString": "a", "newString": "b", "replaceAll": True}
    )

    assert result.output == "Edited a.txt (3 replacements)"
    assert result.metadata == {"replacements": 3}
    assert (in_tmp / "a.txt").read_text() == "b-b-b"


async def test_a_missing_old_string_is_an_error_and_writes_nothing(
    builtin: Builtin, in_tmp: Path
) -> None:
    (in_tmp / "a.txt").write_bytes(b"keep me\r\n")

    result = await builtin("edit").execute(
        {"path": "a.txt", "oldString": "absent", "newString": "x"}
    )

    assert result.is_error
    assert result.output == "edit: oldString not found in a.txt"
    assert (in_tmp / "a.txt").read_bytes() == b"keep me\r\n"


async def test_a_non_unique_old_string_is_an_error_and_writes_nothing(
    builtin: Builtin, in_tmp: Path
) -> None:
    (in_tmp / "a.txt").write_text("dup dup")

    result = await builtin("edit").execute({"path": "a.txt", "oldString": "dup", "newString": "x"})

    assert result.is_error
    assert "oldString is not unique in a.txt (2 occurrences)" in result.output
    assert (in_tmp / "a.txt").read_text() == "dup dup"


async def test_overlapping_occurrences_are_not_unique(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "a.txt").write_text("aaa")

    result = await builtin("edit").execute({"path": "a.txt", "oldString": "aa", "newString": "b"})

    assert result.is_error
    assert (in_tmp / "a.txt").read_text() == "aaa"


async def test_identical_strings_are_an_error(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "a.txt").write_text("same")

    result = await builtin("edit").execute(
        {"path": "a.txt", "oldString": "same", "newString": "same"}
    )

    assert result.is_error
    assert "identical" in result.output


async def test_an_empty_old_string_is_an_error(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "a.txt").write_text("text")

    result = await builtin("edit").execute({"path": "a.txt", "oldString": "", "newString": "x"})

    assert result.is_error
    assert (in_tmp / "a.txt").read_text() == "text"


async def test_editing_a_missing_file_is_an_error(builtin: Builtin, in_tmp: Path) -> None:
    result = await builtin("edit").execute({"path": "no.txt", "oldString": "a", "newString": "b"})

    assert result.is_error
    assert result.output == "edit: file not found: no.txt"


async def test_editing_a_binary_file_is_an_error(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "x.bin").write_bytes(b"ab\x00cd")

    result = await builtin("edit").execute({"path": "x.bin", "oldString": "ab", "newString": "x"})

    assert result.is_error
    assert (in_tmp / "x.bin").read_bytes() == b"ab\x00cd"


async def test_line_endings_elsewhere_in_the_file_survive(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "a.txt").write_bytes(b"one\r\ntwo\r\n")

    await builtin("edit").execute({"path": "a.txt", "oldString": "two", "newString": "2"})

    assert (in_tmp / "a.txt").read_bytes() == b"one\r\n2\r\n"
