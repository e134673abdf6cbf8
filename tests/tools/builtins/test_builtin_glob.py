"""The ``glob`` built-in (CONTRACT §4A)."""

from __future__ import annotations

from pathlib import Path

import pytest
from builtin_support import Builtin


@pytest.fixture
def tree(in_tmp: Path) -> Path:
    for name in ("a.py", "src/b.py", "src/deep/c.py", "src/d.txt", "docs/e.md"):
        (in_tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (in_tmp / name).write_text("")
    return in_tmp


async def test_double_star_matches_at_any_depth(builtin: Builtin, tree: Path) -> None:
    result = await builtin("glob").execute({"pattern": "**/*.py"})

    assert not result.is_error
    assert result.output == "a.py\nsrc/b.py\nsrc/deep/c.py"
    assert result.metadata == {"count": 3}


async def test_a_pattern_with_a_slash_matches_the_whole_path(builtin: Builtin, tree: Path) -> None:
    result = await builtin("glob").execute({"pattern": "src/*.py"})

    assert result.output == "src/b.py"


async def test_a_pattern_without_a_slash_matches_names(builtin: Builtin, tree: Path) -> None:
    result = await builtin("glob").execute({"pattern": "*.{md,txt}"})

    assert result.output == "docs/e.md\nsrc/d.txt"


async def test_paths_are_relative_to_path(builtin: Builtin, tree: Path) -> None:
    result = await builtin("glob").execute({"pattern": "**/*", "path": "src"})

    assert result.output == "b.py\nd.txt\ndeep/c.py"


async def test_results_are_capped_at_limit(builtin: Builtin, tree: Path) -> None:
    result = await builtin("glob").execute({"pattern": "**/*", "limit": 2})

    assert result.output == "a.py\ndocs/e.md"


async def test_the_default_limit_is_one_hundred(builtin: Builtin, in_tmp: Path) -> None:
    for i in range(150):
        (in_tmp / f"f{i:03}.txt").write_text("")

    result = await builtin("glob").execute({"pattern": "*.txt"})

    assert result.output.splitlines()[-1] == "f099.txt"
    assert result.metadata == {"count": 100}


async def test_no_match_is_an_empty_output(builtin: Builtin, tree: Path) -> None:
    result = await builtin("glob").execute({"pattern": "*.rs"})

    assert not result.is_error
    assert result.output == ""


async def test_a_path_that_is_not_a_directory_is_an_error(builtin: Builtin, tree: Path) -> None:
    result = await builtin("glob").execute({"pattern": "*", "path": "a.py"})

    assert result.is_error
    assert result.output == "glob: not a directory: a.py"


async def test_symlinks_are_not_listed(builtin: Builtin, tree: Path) -> None:
    (tree / "link.py").symlink_to(tree / "a.py")
    (tree / "linkdir").symlink_to(tree / "src")

    result = await builtin("glob").execute({"pattern": "**/*.py"})

    assert result.output == "a.py\nsrc/b.py\nsrc/deep/c.py"
