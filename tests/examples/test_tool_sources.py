"""The tool-sources example runs as a user runs it: MCP server from mcp.json, skills, elicitation.

The agent is started from an unrelated directory (the paths in ``mcp.json`` must not depend on
the cwd) against the scripted local model, and the confirmation is typed on its stdin.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tool_sources"
SERVER = EXAMPLE / "notes_server.py"


def run_agent(tmp_path: Path, typed: str) -> tuple[str, int]:
    """Run the agent with ``typed`` on stdin; its stdout and the notes server's pid."""
    pidfile = tmp_path / "notes.pid"
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
    }
    env["NOTES_PIDFILE"] = str(pidfile)
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE / "agent.py")],
        input=typed,
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "toolnexus:" not in proc.stderr, proc.stderr  # e.g. a server that failed to close
    return proc.stdout, int(pidfile.read_text())


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie does not count)."""
    proc = subprocess.run(
        ["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True, check=False
    )
    state = proc.stdout.strip()
    return bool(state) and not state.startswith("Z")


def servers_left() -> list[str]:
    """Live processes running this example's notes server."""
    proc = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True, check=True)
    return [
        line
        for line in proc.stdout.splitlines()
        if str(SERVER) in line and not line.lstrip().startswith("Z")
    ]


@pytest.mark.parametrize(
    ("typed", "outcome"),
    [
        ("y\n", "deleted note #1: [done] Book the offsite venue"),
        ("n\n", "kept note #1: the user did not confirm (decline)"),
    ],
)
def test_tool_sources_agent_uses_mcp_skills_and_elicitation(
    tmp_path: Path, typed: str, outcome: str
) -> None:
    out, server_pid = run_agent(tmp_path, typed)
    lines = out.splitlines()

    # The toolkit: the MCP server connected, its tools prefixed, the skill tool, read only.
    assert "mcp servers: {'notes': 'connected'}" in lines
    assert "tools: notes_add_note, notes_list_notes, notes_delete_note, skill, read" in lines
    assert (
        "   - **note-cleanup**: Tidy the notes store by deleting finished notes, with the "
        "user's confirmation." in lines
    )

    # Both skills were loaded through the skill tool, with their helper files listed.
    assert '-> skill({"name": "meeting-notes"})' in lines
    assert '   <skill_content name="meeting-notes">' in lines
    assert f"   <file>{EXAMPLE}/skills/meeting-notes/template.md</file>" in lines
    assert '   <skill_content name="note-cleanup">' in lines
    assert f"   <file>{EXAMPLE}/skills/note-cleanup/rules.md</file>" in lines
    assert lines.count("   </skill_content>") == 2

    # The confined read built-in opened the template; the MCP tools did the work.
    assert f'-> read({{"path": "{EXAMPLE}/skills/meeting-notes/template.md"}})' in lines
    assert "   Attendees: {attendees}" in lines
    assert "   saved note #3: 2025-06-12 standup" in lines
    listing = lines.index("-> notes_list_notes({})")
    assert lines[listing + 1 : listing + 4] == [
        "   #1 [done] Book the offsite venue",
        "   #2 Reading list",
        "   #3 2025-06-12 standup",
    ]

    # delete_note asked through MCP elicitation; the answer typed on stdin decided.
    asked = lines.index('?? Delete note #1 "[done] Book the offsite venue"? This cannot be undone.')
    assert lines[asked - 2] == '-> notes_delete_note({"note_id": 1})'
    assert lines[asked + 1] == f"   approve? [y/N] {typed.strip()}"
    assert lines[asked + 2] == f"   {outcome}"
    assert lines[-1] == (
        f"status=done turns=7: Done. Standup: saved note #3: 2025-06-12 standup. "
        f"Cleanup: {outcome}."
    )

    # Closing the toolkit stopped the server: no process is left behind.
    assert not running(server_pid)
    assert servers_left() == []
