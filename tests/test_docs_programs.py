"""Every docs block marked ``<!-- check: program -->`` runs, as a program of its own.

The marker kinds this file runs (the others — ``fragment``, ``json`` — are read, not run):

- ``program``: the block is a whole script; it runs in a fresh directory with this
  interpreter and must exit 0 without a traceback. ``program-stdin-y`` gets ``y`` lines on
  its stdin (a terminal approval).
- ``file <name>``: the block is saved as ``<name>`` beside the programs of the same page (a
  server a program starts, say).
- ``pytest``: the block is a test module; ``pytest`` runs it and it must pass.

The programs talk to the scripted model (`toolnexus.testing.ScriptedModel`) on loopback and
to servers they start themselves: none reaches the network. Each is a subprocess, so a block
that leaks a task, a thread or a child process is caught by its exit (and the timeout).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
MARKED = re.compile(r"<!-- check: ([a-z-]+)(?: (\S+))? -->\n```[a-z]*\n(.*?)\n```", re.S)
RUN_KINDS = ("program", "program-stdin-y", "pytest")
TIMEOUT_S = 120


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    kind: str
    name: str | None
    code: str

    @property
    def id(self) -> str:
        return f"{self.page.name}:{self.line}"


def blocks() -> list[Block]:
    found: list[Block] = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in MARKED.finditer(text):
            kind, name, code = m.groups()
            line = text[: m.start()].count("\n") + 1
            found.append(Block(page, line, kind, name, code + "\n"))
    return found


ALL = blocks()
RUN = [b for b in ALL if b.kind in RUN_KINDS]


def test_the_pages_have_runnable_blocks() -> None:
    assert len(RUN) >= 20
    assert {b.kind for b in ALL} >= {"program", "pytest", "file", "fragment"}


def _environment() -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and not k.startswith(("TOOLNEXUS_", "OTEL_"))
    }
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONWARNINGS"] = "error::RuntimeWarning"  # a never-awaited coroutine fails the run
    return env


@pytest.mark.parametrize("block", RUN, ids=[b.id for b in RUN])
def test_the_marked_block_runs(block: Block, tmp_path: Path) -> None:
    for other in ALL:
        if other.page == block.page and other.kind == "file" and other.name:
            (tmp_path / other.name).write_text(other.code, encoding="utf-8")
    if block.kind == "pytest":
        script = tmp_path / "test_block.py"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(script)]
    else:
        script = tmp_path / "program.py"
        command = [sys.executable, str(script)]
    script.write_text(block.code, encoding="utf-8")
    done = subprocess.run(
        command,
        cwd=tmp_path,
        env=_environment(),
        input="y\n" * 20 if block.kind == "program-stdin-y" else "",
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    report = (
        f"{block.id} exited {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    )
    assert done.returncode == 0, report
    assert "Traceback" not in done.stderr, report
