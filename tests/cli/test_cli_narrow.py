"""The command line in a real terminal of 80 and 60 columns (a pseudo-terminal, pexpect): the
tables of ``pending``, ``runs`` and ``history`` show every request id whole, on one line, so it
can be copied into the next command — the prompt wraps, and the less important columns go
first — and nothing is drawn past the terminal's edge; ``--help`` shows flags as flags
(``--approve``, never ``--approve <bool>``) and fits the width too.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pexpect
import pytest
from requests_support import HERE, halt_named, into_states

SGR = re.compile(r"\x1b\[[0-9;]*m")
LONG = "Refund order A-1 of the customer whose name is long enough to wrap the prompt twice?"
IDS = [f"pnd-1a2517af3c2-{n}-5c1e0f{n:02d}" for n in range(1, 4)]


def terminal(args: list[str], columns: int) -> list[str]:
    """``toolnexus *args`` in a pseudo-terminal ``columns`` wide; the lines it drew (rich's
    styling taken out)."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env.update(TERM="xterm-256color", PYTHONIOENCODING="utf-8")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "toolnexus", *args],
        cwd=str(HERE),
        env=env,
        encoding="utf-8",
        timeout=40,
        dimensions=(50, columns),
    )
    try:
        child.expect(pexpect.EOF)
        drawn = child.before or ""
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, drawn
    return SGR.sub("", drawn).replace("\r\n", "\n").splitlines()


def column(lines: list[str], name: str) -> list[str]:
    """The text of each row in the column headed ``name`` (its wrapped lines joined)."""
    header = lines[1]
    start = header.index(f"┃ {name}") + 2
    end = header.index("┃", start)
    rows: list[str] = []
    for line in lines[3:-1]:
        piece = line[start:end].strip()
        if line[2] != " ":  # a new row begins where the first column has text
            rows.append(piece)
        else:
            rows[-1] += " " + piece
    return rows


def assert_fits(lines: list[str], columns: int) -> None:
    too_wide = [line for line in lines if len(line) > columns]
    assert too_wide == [], "\n".join(lines)


def assert_whole(rid: str, lines: list[str]) -> None:
    """``rid`` is on one line, whole, with nothing cut from it (``…``)."""
    assert any(re.search(rf"(^|\s){re.escape(rid)}(\s|$)", line) for line in lines), (
        rid,
        "\n".join(lines),
    )
    assert not any(f"{rid[:12]}…" in line for line in lines)


@pytest.fixture
async def store_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    await halt_named(url, *({"rid": rid, "prompt": LONG} for rid in IDS))
    return url


@pytest.mark.parametrize("columns", [80, 60])
async def test_pending_shows_every_id_whole_and_wraps_the_prompt(
    store_url: str, columns: int
) -> None:
    lines = terminal(["pending", "--store", store_url], columns)
    assert_fits(lines, columns)
    for rid in IDS:
        assert_whole(rid, lines)
    header = lines[1]
    assert "prompt" in header  # the prompt column stays, wrapped: its first 60 characters
    assert column(lines, "prompt") == [LONG[:59] + "…"] * len(IDS)
    if columns == 60:
        for gone in ("kind", "tool", "conversation"):
            assert gone not in header  # the less important columns went first


@pytest.mark.parametrize("command", ["runs", "history"])
async def test_the_runs_and_the_history_show_every_id_whole_at_80_columns(
    tmp_path: Path, command: str
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    await into_states(url)
    lines = terminal([command, "--store", url], 80)
    assert_fits(lines, 80)
    expected = ["st-queued", "st-held", "st-flagged"]
    if command == "history":
        expected += ["st-edited", "st-declined", "st-cancelled"]
    for rid in expected:
        assert_whole(rid, lines)


@pytest.mark.parametrize("command", ["answer", "worker", "history", "pending", "show"])
async def test_help_shows_flags_as_flags_within_80_columns(command: str) -> None:
    lines = terminal([command, "--help"], 80)
    assert_fits(lines, 80)
    text = "\n".join(lines)
    assert "<bool>" not in text
    if command != "worker":
        assert re.search(r"^\s+--json\s{2,}Machine-readable", text, re.M), text
    assert re.search(r"^\s+--help\s{2,}Show this message", text, re.M), text
    if command == "answer":
        for flag in ("--approve", "--decline", "--wait"):
            assert re.search(rf"^\s+{flag}\s{{2,}}\w", text, re.M), text
        assert re.search(r"^\s+--store URL\s", text, re.M), text


async def test_the_command_list_fits_60_columns_without_cutting_a_summary() -> None:
    lines = terminal(["--help"], 60)
    assert_fits(lines, 60)
    commands = lines[lines.index("Commands:") + 1 :]
    assert len(commands) >= 12
    assert not any(line.endswith("...") for line in commands), "\n".join(commands)
