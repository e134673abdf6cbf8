"""A small MCP server for the tool-sources example: a notes store, built with the ``mcp`` SDK.

Run by the agent through ``mcp.json`` (stdio). Three tools:

- ``add_note(title, body)`` stores a note and returns its id;
- ``list_notes()`` lists every note, one line each;
- ``delete_note(note_id)`` asks the user to confirm (MCP elicitation, form mode) and deletes
  only on an accepted, checked confirmation.

The confirmation is a ``Resolve``-d parameter: the SDK asks in whichever way the client
negotiated (an input-required result on protocol 2026-07-28, a mid-call
``elicitation/create`` request before it), so the tool body only ever sees the outcome.

Notes live in memory for the life of the process and start with two seed notes. With
``NOTES_PIDFILE`` set, the server writes its pid there on start (the example's test uses it to
check that the agent stopped the server).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Annotated

from mcp.server.mcpserver import AcceptedElicitation, Elicit, ElicitationResult, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field


@dataclass(slots=True)
class Note:
    title: str
    body: str


NOTES: dict[int, Note] = {
    1: Note("[done] Book the offsite venue", "Booked the lake house for 14-16 May."),
    2: Note("Reading list", "Designing Data-Intensive Applications; The Pragmatic Programmer."),
}

server = MCPServer("notes", instructions="A notes store: add, list and delete notes.")


class DeleteConfirmation(BaseModel):
    """The form the user fills in before a note is deleted."""

    confirm: bool = Field(description="Delete the note for good")


@server.tool(structured_output=False)
def add_note(title: str, body: str) -> str:
    """Store a new note. Returns its id."""
    note_id = max(NOTES, default=0) + 1
    NOTES[note_id] = Note(title.strip(), body.strip())
    return f"saved note #{note_id}: {title.strip()}"


@server.tool(structured_output=False)
def list_notes() -> str:
    """Every note, one per line: ``#id title``."""
    if not NOTES:
        return "no notes"
    return "\n".join(f"#{note_id} {note.title}" for note_id, note in sorted(NOTES.items()))


async def ask_before_deleting(note_id: int) -> Elicit[DeleteConfirmation]:
    """The question `delete_note` needs answered; an unknown id fails without asking."""
    note = NOTES.get(note_id)
    if note is None:
        raise ToolError(f"there is no note #{note_id}")
    return Elicit(
        f'Delete note #{note_id} "{note.title}"? This cannot be undone.', DeleteConfirmation
    )


@server.tool(structured_output=False)
def delete_note(
    note_id: int,
    confirmation: Annotated[ElicitationResult[DeleteConfirmation], Resolve(ask_before_deleting)],
) -> str:
    """Delete a note. The user is asked to confirm first."""
    if not isinstance(confirmation, AcceptedElicitation) or not confirmation.data.confirm:
        return f"kept note #{note_id}: the user did not confirm ({confirmation.action})"
    note = NOTES.pop(note_id, None)
    if note is None:
        return f"note #{note_id} was already gone"
    return f"deleted note #{note_id}: {note.title}"


def main() -> None:
    pidfile = os.environ.get("NOTES_PIDFILE")
    if pidfile:
        with open(pidfile, "w", encoding="utf-8") as out:
            out.write(str(os.getpid()))
    server.run()  # stdio


if __name__ == "__main__":
    main()
