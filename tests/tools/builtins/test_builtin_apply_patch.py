"""The ``apply_patch`` built-in on real files: atomic, all or nothing (CONTRACT §4A)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from builtin_support import Builtin


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"])


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def names(directory: Path) -> list[str]:
    return sorted(os.listdir(directory))


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "src").mkdir()
    (in_tmp / "src/app.py").write_text("def greet():\n    print('Hi')\n")
    (in_tmp / "old.txt").write_text("obsolete\n")
    (in_tmp / "notes.txt").write_bytes(b"crlf\r\nfile\r\n")
    return in_tmp


async def test_add_update_move_and_delete_apply_together(builtin: Builtin, project: Path) -> None:
    text = patch(
        "*** Add File: docs/hello.txt",
        "+Hello",
        "*** Update File: src/app.py",
        "*** Move to: src/main.py",
        "@@ def greet():",
        "-    print('Hi')",
        "+    print('Hello')",
        "*** Delete File: old.txt",
    )

    result = await builtin("apply_patch").execute({"patchText": text})

    assert not result.is_error, result.output
    assert result.output == ("Applied patch: 3 file operations")
    assert result.metadata == {"added": 1, "updated": 1, "deleted": 1}
    assert (project / "docs/hello.txt").read_text() == "Hello"  # no final newline added
    assert (project / "src/main.py").read_text() == "def greet():\n    print('Hello')\n"
    assert not (project / "src/app.py").exists()
    assert not (project / "old.txt").exists()


async def test_a_non_matching_hunk_changes_nothing(builtin: Builtin, project: Path) -> None:
    before = snapshot(project)
    text = patch(
        "*** Add File: new.txt",
        "+created?",
        "*** Delete File: old.txt",
        "*** Update File: notes.txt",
        "-crlf",
        "+CRLF",
        "*** Update File: src/app.py",
        "-    print('this line is not in the file')",
        "+    print('x')",
    )

    result = await builtin("apply_patch").execute({"patchText": text})

    assert result.is_error
    assert result.output.startswith("apply_patch: hunk does not match file contents")
    assert "src/app.py: hunk 1" in result.output
    assert snapshot(project) == before
    assert not (project / "new.txt").exists()


async def test_a_later_failing_section_leaves_earlier_files_untouched(
    builtin: Builtin, project: Path
) -> None:
    before = snapshot(project)
    text = patch(
        "*** Update File: src/app.py",
        "-    print('Hi')",
        "+    print('changed')",
        "*** Update File: missing.py",
        "-x",
        "+y",
    )

    result = await builtin("apply_patch").execute({"patchText": text})

    assert result.is_error
    assert "file not found: missing.py" in result.output
    assert snapshot(project) == before


async def test_a_write_failure_before_the_renames_changes_nothing(
    builtin: Builtin, project: Path
) -> None:
    before = snapshot(project)
    text = patch(
        "*** Update File: src/app.py",
        "-    print('Hi')",
        "+    print('changed')",
        "*** Add File: fresh/deep/new.txt",
        "+new",
        "*** Add File: old.txt/child.txt",
        "+cannot live under a file",
    )

    result = await builtin("apply_patch").execute({"patchText": text})

    assert result.is_error
    assert "nothing was changed" in result.output
    assert snapshot(project) == before
    assert names(project) == ["notes.txt", "old.txt", "src"]
    assert names(project / "src") == ["app.py"]


async def test_adding_an_existing_file_is_an_error(builtin: Builtin, project: Path) -> None:
    before = snapshot(project)

    result = await builtin("apply_patch").execute(
        {"patchText": patch("*** Add File: old.txt", "+replaced")}
    )

    assert result.is_error
    assert result.output == "apply_patch: file already exists: old.txt"
    assert snapshot(project) == before


async def test_moving_onto_an_existing_file_is_an_error(builtin: Builtin, project: Path) -> None:
    before = snapshot(project)
    text = patch("*** Update File: old.txt", "*** Move to: notes.txt")

    result = await builtin("apply_patch").execute({"patchText": text})

    assert result.is_error
    assert snapshot(project) == before


async def test_deleting_a_missing_file_is_an_error(builtin: Builtin, project: Path) -> None:
    result = await builtin("apply_patch").execute(
        {"patchText": patch("*** Delete File: ghost.txt")}
    )

    assert result.is_error
    assert "file not found: ghost.txt" in result.output


async def test_a_binary_file_can_be_deleted(builtin: Builtin, project: Path) -> None:
    (project / "blob.bin").write_bytes(b"\x00\x01")

    result = await builtin("apply_patch").execute({"patchText": patch("*** Delete File: blob.bin")})

    assert not result.is_error
    assert not (project / "blob.bin").exists()


async def test_deleting_a_symlink_removes_the_link_only(builtin: Builtin, project: Path) -> None:
    (project / "link.txt").symlink_to(project / "old.txt")

    result = await builtin("apply_patch").execute({"patchText": patch("*** Delete File: link.txt")})

    assert not result.is_error
    assert not (project / "link.txt").is_symlink()
    assert (project / "old.txt").read_text() == "obsolete\n"


async def test_later_sections_see_earlier_ones(builtin: Builtin, project: Path) -> None:
    text = patch(
        "*** Add File: a.txt",
        "+one",
        "*** Update File: a.txt",
        "-one",
        "+two",
    )

    result = await builtin("apply_patch").execute({"patchText": text})

    assert not result.is_error
    assert (project / "a.txt").read_text() == "two"  # an added file gets no final newline


async def test_crlf_files_keep_their_line_endings(builtin: Builtin, project: Path) -> None:
    text = patch("*** Update File: notes.txt", " crlf", "-file", "+FILE")

    await builtin("apply_patch").execute({"patchText": text})

    assert (project / "notes.txt").read_bytes() == b"crlf\r\nFILE\r\n"


async def test_an_updated_file_keeps_its_permissions(builtin: Builtin, project: Path) -> None:
    script = project / "run.sh"
    script.write_text("echo a\n")
    script.chmod(0o751)

    await builtin("apply_patch").execute(
        {"patchText": patch("*** Update File: run.sh", "-echo a", "+echo b")}
    )

    assert script.stat().st_mode & 0o777 == 0o751
    assert script.read_text() == "echo b\n"


async def test_no_temporary_files_are_left_behind(builtin: Builtin, project: Path) -> None:
    await builtin("apply_patch").execute(
        {"patchText": patch("*** Update File: old.txt", "-obsolete", "+current")}
    )

    assert names(project) == ["notes.txt", "old.txt", "src"]


async def test_a_malformed_patch_is_an_error(builtin: Builtin, project: Path) -> None:
    result = await builtin("apply_patch").execute({"patchText": "diff --git a/x b/x"})

    assert result.is_error
    assert result.output == "apply_patch: missing '*** Begin Patch'"


async def test_a_move_target_outside_the_workspace_is_refused(
    builtin: Builtin, project: Path
) -> None:
    workspace = project / "src"
    before = snapshot(project)
    text = patch("*** Update File: app.py", "*** Move to: ../stolen.py")

    result = await builtin("apply_patch", workspace=str(workspace)).execute({"patchText": text})

    assert result.is_error
    assert "outside the workspace" in result.output
    assert snapshot(project) == before
