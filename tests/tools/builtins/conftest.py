"""Fixtures for the built-in tools: a tool by name, built under given options.

::

    async def test_something(builtin, tmp_path):
        read = builtin("read", workspace=str(tmp_path))
        result = await read.execute({"path": "a.txt"})
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builtin_support import Builtin, Fifo

from toolnexus._types import Tool
from toolnexus.tools.builtins import create_builtin_tools


@pytest.fixture
def builtin() -> Builtin:
    """``builtin(name, **options)``: the built-in ``name`` under the ``builtins`` options."""

    def make(name: str, **options: Any) -> Tool:
        for tool in create_builtin_tools(options):
            if tool.name == name:
                return tool
        raise LookupError(name)

    return make


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run the test with ``tmp_path`` as the process cwd (relative paths resolve there)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Fifo]:
    """A `Fifo` at ``tmp_path / "signal.fifo"``."""
    pipe = Fifo(tmp_path / "signal.fifo")
    yield pipe
    pipe.close()


@pytest.fixture
def real_tmp(tmp_path: Path) -> str:
    """``tmp_path`` with every symlink resolved, as ``pwd`` prints it."""
    return os.path.realpath(tmp_path)
