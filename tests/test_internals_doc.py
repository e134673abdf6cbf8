"""docs/internals.md walks the one lifecycle with file anchors; this holds its tables against the
code: every row names a file of the package that defines the function it names (``Class.method``
as a method of that class, ``name`` as a module-level function or class)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
SRC = ROOT / "src" / "toolnexus"
DOC = (ROOT / "docs" / "internals.md").read_text(encoding="utf-8")
SECTION = DOC.split("## The one lifecycle", 1)[1].split("\n## ", 1)[0]
ROW = re.compile(r"^\|[^\n]*\| `([\w/]+\.py)` \| `([\w.]+)` \|$", re.M)
ANCHORS = ROW.findall(SECTION)


def defines(path: Path, name: str) -> bool:
    """Whether the module at ``path`` defines ``name`` (``Class.method`` or a top-level name)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    owner, _, member = name.rpartition(".")
    for node in tree.body:
        kinds = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
        if not owner and isinstance(node, kinds) and node.name == name:
            return True
        if owner and isinstance(node, ast.ClassDef) and node.name == owner:
            return any(
                isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == member
                for item in node.body
            )
    return False


def test_the_lifecycle_tables_name_every_kind_of_halted_run() -> None:
    assert len(ANCHORS) >= 15
    files = {file for file, _ in ANCHORS}
    for kind in ("client_answers.py", "worker.py", "serve/a2a_life.py", "agents/resuming.py"):
        assert kind in files
    assert "serve/mcp_halts.py" in files


@pytest.mark.parametrize(("file", "name"), ANCHORS, ids=[f"{f}:{n}" for f, n in ANCHORS])
def test_each_anchor_names_a_function_its_file_defines(file: str, name: str) -> None:
    path = SRC / file
    assert path.is_file(), f"docs/internals.md names {file}, which is not in src/toolnexus"
    assert defines(path, name), f"{file} defines no {name}"
