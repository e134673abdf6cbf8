"""Workspace confinement of every path-taking built-in (DESIGN §7)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from builtin_support import Builtin


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """``ws`` (the workspace) beside ``outside``; inside ``ws``: a file, a symlink to an outside
    file, a symlink to the outside directory and a symlink to a file inside."""
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (ws / "inside.txt").write_text("inside\n")
    (ws / "to_secret").symlink_to(outside / "secret.txt")
    (ws / "to_outside").symlink_to(outside)
    (ws / "to_inside").symlink_to(ws / "inside.txt")
    return {"ws": ws, "outside": outside}


def escapes(layout: dict[str, Path]) -> list[str]:
    return [
        "../outside/secret.txt",
        str(layout["outside"] / "secret.txt"),
        "to_secret",
        "to_outside/secret.txt",
        "sub/../../outside/secret.txt",
    ]


def calls(path: str) -> list[tuple[str, dict[str, Any]]]:
    patch = "*** Begin Patch\n*** Update File: {p}\n@@\n-secret\n+owned\n*** End Patch"
    delete = "*** Begin Patch\n*** Delete File: {p}\n*** End Patch"
    add = "*** Begin Patch\n*** Add File: {p}/../new.txt\n+x\n*** End Patch"
    return [
        ("read", {"path": path}),
        ("write", {"path": path, "content": "owned\n"}),
        ("edit", {"path": path, "oldString": "secret", "newString": "owned"}),
        ("grep", {"pattern": "secret", "path": path}),
        ("apply_patch", {"patchText": patch.format(p=path)}),
        ("apply_patch", {"patchText": delete.format(p=path)}),
        ("apply_patch", {"patchText": add.format(p=path)}),
    ]


@pytest.mark.parametrize("which", range(5))
@pytest.mark.parametrize("call", range(7))
async def test_a_path_escaping_the_workspace_is_refused(
    builtin: Builtin, layout: dict[str, Path], which: int, call: int
) -> None:
    path = escapes(layout)[which]
    name, args = calls(path)[call]
    tool = builtin(name, workspace=str(layout["ws"]))

    result = await tool.execute(args)

    assert result.is_error, result.output
    assert "outside the workspace" in result.output
    assert (layout["outside"] / "secret.txt").read_text() == "secret\n"
    assert sorted(p.name for p in layout["outside"].iterdir()) == ["secret.txt"]


@pytest.mark.parametrize("path", ["..", "/", "to_outside"])
async def test_glob_outside_the_workspace_is_refused(
    builtin: Builtin, layout: dict[str, Path], path: str
) -> None:
    glob = builtin("glob", workspace=str(layout["ws"]))

    result = await glob.execute({"pattern": "**/*", "path": path})

    assert result.is_error
    assert "outside the workspace" in result.output


async def test_relative_paths_resolve_from_the_workspace(
    builtin: Builtin, layout: dict[str, Path], in_tmp: Path
) -> None:
    read = builtin("read", workspace=str(layout["ws"]))

    result = await read.execute({"path": "inside.txt"})

    assert result.output == "inside\n"


async def test_an_absolute_path_inside_the_workspace_is_allowed(
    builtin: Builtin, layout: dict[str, Path]
) -> None:
    read = builtin("read", workspace=str(layout["ws"]))

    result = await read.execute({"path": str(layout["ws"] / "inside.txt")})

    assert result.output == "inside\n"


async def test_a_symlink_that_stays_inside_is_followed(
    builtin: Builtin, layout: dict[str, Path]
) -> None:
    edit = builtin("edit", workspace=str(layout["ws"]))

    result = await edit.execute({"path": "to_inside", "oldString": "inside", "newString": "in"})

    assert not result.is_error
    assert (layout["ws"] / "inside.txt").read_text() == "in\n"


async def test_walks_never_follow_a_symlink_out_of_the_workspace(
    builtin: Builtin, layout: dict[str, Path]
) -> None:
    grep = builtin("grep", workspace=str(layout["ws"]))

    result = await grep.execute({"pattern": "secret"})

    assert not result.is_error
    assert result.output == ""


async def test_a_workspace_given_through_a_symlink_still_confines(
    builtin: Builtin, layout: dict[str, Path], tmp_path: Path
) -> None:
    (tmp_path / "ws_link").symlink_to(layout["ws"])
    read = builtin("read", workspace=str(tmp_path / "ws_link"))

    inside = await read.execute({"path": "inside.txt"})
    outside = await read.execute({"path": "../outside/secret.txt"})

    assert inside.output == "inside\n"
    assert outside.is_error


async def test_a_nul_byte_in_a_path_is_an_error(builtin: Builtin, layout: dict[str, Path]) -> None:
    read = builtin("read", workspace=str(layout["ws"]))

    result = await read.execute({"path": "inside.txt\0../x"})

    assert result.is_error
    assert "NUL" in result.output
