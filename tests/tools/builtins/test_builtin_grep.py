"""The ``grep`` built-in (CONTRACT §4A)."""

from __future__ import annotations

from pathlib import Path

import pytest
from builtin_support import Builtin


@pytest.fixture
def tree(in_tmp: Path) -> Path:
    (in_tmp / "src").mkdir()
    (in_tmp / "src/a.py").write_text("import os\ndef main():\n    return os.sep\n")
    (in_tmp / "src/b.txt").write_text("main course\n")
    (in_tmp / "README.md").write_text("# main\n")
    return in_tmp


async def test_matches_are_file_line_text_in_path_order(builtin: Builtin, tree: Path) -> None:
    result = await builtin("grep").execute({"pattern": "main"})

    assert not result.is_error
    assert result.output == "README.md:1:# main\nsrc/a.py:2:def main():\nsrc/b.txt:1:main course"
    assert result.metadata == {"count": 3}


async def test_the_pattern_is_a_regular_expression(builtin: Builtin, tree: Path) -> None:
    result = await builtin("grep").execute({"pattern": r"^\s+return \w+\.sep$"})

    assert result.output == "src/a.py:3:    return os.sep"


async def test_include_filters_the_files(builtin: Builtin, tree: Path) -> None:
    result = await builtin("grep").execute({"pattern": "main", "include": "*.py"})

    assert result.output == "src/a.py:2:def main():"


async def test_path_limits_the_search_and_paths_are_relative_to_it(
    builtin: Builtin, tree: Path
) -> None:
    result = await builtin("grep").execute({"pattern": "main", "path": "src"})

    assert result.output == "a.py:2:def main():\nb.txt:1:main course"


async def test_path_may_name_a_single_file(builtin: Builtin, tree: Path) -> None:
    result = await builtin("grep").execute({"pattern": "os", "path": "src/a.py"})

    assert result.output == "a.py:1:import os\na.py:3:    return os.sep"


async def test_results_are_capped_at_limit(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "many.txt").write_text("hit\n" * 500)

    default = await builtin("grep").execute({"pattern": "hit"})
    three = await builtin("grep").execute({"pattern": "hit", "limit": 3})

    assert len(default.output.splitlines()) == 100
    assert three.output == "many.txt:1:hit\nmany.txt:2:hit\nmany.txt:3:hit"


async def test_an_invalid_regex_is_an_error(builtin: Builtin, tree: Path) -> None:
    result = await builtin("grep").execute({"pattern": "(unclosed"})

    assert result.is_error
    assert result.output.startswith("grep: invalid regex '(unclosed'")


async def test_binary_files_are_skipped(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "blob.bin").write_bytes(b"needle\x00\x01\x02")
    (in_tmp / "text.txt").write_text("needle\n")

    result = await builtin("grep").execute({"pattern": "needle"})

    assert result.output == "text.txt:1:needle"


async def test_git_and_node_modules_are_not_searched(builtin: Builtin, in_tmp: Path) -> None:
    for folder in (".git", "node_modules"):
        (in_tmp / folder).mkdir()
        (in_tmp / folder / "f.txt").write_text("needle\n")

    result = await builtin("grep").execute({"pattern": "needle"})

    assert result.output == ""
    assert result.metadata == {"count": 0}


async def test_a_missing_path_is_an_error(builtin: Builtin, in_tmp: Path) -> None:
    result = await builtin("grep").execute({"pattern": "x", "path": "nowhere"})

    assert result.is_error
    assert result.output == "grep: path not found: nowhere"


async def test_huge_output_is_truncated(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "wide.txt").write_text(("w" * 1000 + "\n") * 50)
    grep = builtin("grep", max_output_bytes=2000)

    result = await grep.execute({"pattern": "w"})

    assert result.output.endswith("\n[truncated: output exceeded 2000 bytes]")
    assert len(result.output.encode()) <= 2000 + len("\n[truncated: output exceeded 2000 bytes]")
