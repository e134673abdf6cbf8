"""The descriptor walk behind workspace confinement (`_confine`): symlinks it follows and
refuses, parents it makes, and what it does when the tree is not what it expects."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from builtin_support import Builtin


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (ws / "sub" / "f.txt").write_text("inside\n")
    return ws


async def test_a_relative_symlink_climbing_out_is_refused(builtin: Builtin, ws: Path) -> None:
    (ws / "up").symlink_to("../outside")
    write = builtin("write", workspace=str(ws))

    result = await write.execute({"path": "up/new.txt", "content": "x"})

    assert "outside the workspace" in result.output
    assert list((ws.parent / "outside").iterdir()) == []


async def test_a_chain_of_symlinks_inside_is_followed(builtin: Builtin, ws: Path) -> None:
    (ws / "a").symlink_to("sub")
    (ws / "sub" / "b").symlink_to(str(ws / "sub" / "f.txt"))
    read = builtin("read", workspace=str(ws))

    result = await read.execute({"path": "a/b"})

    assert result.output == "inside\n"


async def test_dot_dot_through_a_symlink_is_physical(builtin: Builtin, ws: Path) -> None:
    """``link/..`` is the parent of where ``link`` points (as the kernel has it), not ``.``."""
    (ws / "sub" / "deep").mkdir()
    (ws / "jump").symlink_to("sub/deep")
    read = builtin("read", workspace=str(ws))

    result = await read.execute({"path": "jump/../f.txt"})

    assert result.output == "inside\n"


async def test_a_symlink_loop_is_an_error(builtin: Builtin, ws: Path) -> None:
    (ws / "x").symlink_to("y")
    (ws / "y").symlink_to("x")
    read = builtin("read", workspace=str(ws))

    result = await read.execute({"path": "x/f.txt"})

    assert result.is_error
    assert "too many levels of symbolic links" in result.output


async def test_missing_parents_are_made_inside_only(builtin: Builtin, ws: Path) -> None:
    write = builtin("write", workspace=str(ws))

    made = await write.execute({"path": "n1/n2/n3.txt", "content": "deep"})
    refused = await write.execute({"path": "n4/../../outside/x.txt", "content": "x"})

    assert made.output == "Wrote 4 bytes to n1/n2/n3.txt"
    assert (ws / "n1" / "n2" / "n3.txt").read_text() == "deep"
    assert "outside the workspace" in refused.output
    assert not (ws / "n4").exists()
    assert list((ws.parent / "outside").iterdir()) == []


async def test_a_fifo_is_refused_without_blocking(builtin: Builtin, ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    read = builtin("read", workspace=str(ws))
    write = builtin("write", workspace=str(ws))

    results = [
        await read.execute({"path": "pipe"}),
        await write.execute({"path": "pipe", "content": "x"}),
    ]

    assert all("not a regular file" in r.output for r in results), results


async def test_a_workspace_replaced_under_the_toolkit_is_refused(
    builtin: Builtin, ws: Path
) -> None:
    read = builtin("read", workspace=str(ws))
    ws.rename(ws.parent / "moved")
    ws.mkdir()
    (ws / "sub").mkdir()
    (ws / "sub" / "f.txt").write_text("impostor\n")

    result = await read.execute({"path": "sub/f.txt"})

    assert result.is_error
    assert "workspace directory was replaced" in result.output


async def test_a_patch_deleting_a_symlink_removes_the_link_not_its_target(
    builtin: Builtin, ws: Path
) -> None:
    (ws / "link").symlink_to("sub/f.txt")
    patch = builtin("apply_patch", workspace=str(ws))

    result = await patch.execute(
        {"patchText": "*** Begin Patch\n*** Delete File: link\n*** End Patch"}
    )

    assert not result.is_error, result.output
    assert not (ws / "link").is_symlink()
    assert (ws / "sub" / "f.txt").read_text() == "inside\n"


async def test_without_a_workspace_paths_resolve_from_the_cwd_as_before(
    builtin: Builtin, in_tmp: Path
) -> None:
    (in_tmp / "here.txt").write_text("cwd\n")
    (in_tmp / "ln").symlink_to("/etc")
    read = builtin("read")

    relative = await read.execute({"path": "here.txt"})
    absolute = await read.execute({"path": str(in_tmp / "here.txt")})
    through_link = await read.execute({"path": "ln/hostname"})

    assert relative.output == absolute.output == "cwd\n"
    assert through_link.output == Path("/etc/hostname").read_text()
