"""Tool sources: an agent whose toolkit comes from an ``mcp.json`` and a ``skills/`` folder.

Run it (from any directory):

    python examples/tool_sources/agent.py          # asks you before a note is deleted
    python examples/tool_sources/agent.py --yes    # approves every question itself

The toolkit is assembled from three sources:

- ``mcp.json`` starts ``notes_server.py`` (a small MCP server over stdio) whose tools appear as
  ``notes_add_note``, ``notes_list_notes`` and ``notes_delete_note``;
- ``skills/`` holds two skills (``meeting-notes``, ``note-cleanup``) behind the one ``skill``
  tool; the model sees their one-line catalog in the system prompt and loads one on demand;
- the ``read`` built-in, confined to ``skills/``, so the model can open a skill's helper file.
  No other built-in is on: a real model gets no shell, no writes and no network.

``delete_note`` asks for confirmation through MCP elicitation (form mode). The toolkit's
``wait_for`` answers it on the terminal: type ``y`` to approve. Without ``--yes``, end of input
counts as "no".

With no endpoint configured the agent talks to a scripted local model (see
``examples/_model.py``); set ``OPENAI_BASE_URL`` or ``ANTHROPIC_BASE_URL`` for a real one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the shared _model.py

from _model import llm, tool_outputs

from toolnexus import BUILTIN_NAMES, Answer, Request, WaitFor, create_client, create_toolkit
from toolnexus.testing import RecordedRequest, Reply, call, text, tool_calls

HERE = Path(__file__).resolve().parent
SKILLS = HERE / "skills"
SYSTEM_PROMPT = "You keep the user's notes in the notes server. Follow a skill when one fits."
TASK = (
    "Write up today's standup (2025-06-12) as a note: Ana, Raj and Mei attended; we decided to "
    "ship v2.1 on Friday; Raj updates the changelog and Mei books the demo room. "
    "Then clean up my finished notes."
)

READ_SKILLS_ONLY: dict[str, Any] = {
    "workspace": str(SKILLS),
    "bash": False,
    "private_network": False,
    "tools": {name: name == "read" for name in BUILTIN_NAMES},
}
"""The built-ins: ``read`` alone, and only inside ``skills/``."""


def terminal(auto_yes: bool) -> WaitFor:
    """A ``wait_for`` that asks on the terminal (or approves everything with ``--yes``)."""

    async def wait_for(request: Request) -> Answer:
        print(f"\n?? {request.prompt}")
        if auto_yes:
            print("   approved (--yes)")
            approved = True
        else:
            try:
                line = await asyncio.to_thread(input, "   approve? [y/N] ")
            except EOFError:
                line = ""
            if not sys.stdin.isatty():
                print(line.strip())  # echo a piped answer so the transcript reads well
            approved = line.strip().lower() in ("y", "yes")
        if not approved:
            return Answer(id=request.id, ok=False, reason="declined")
        return Answer(id=request.id, ok=True, data=checked_boxes(request))

    return wait_for


def checked_boxes(request: Request) -> dict[str, Any]:
    """The form's answer on approval: every boolean field checked.

    The notes server's form is one ``confirm`` checkbox. A form with other fields would need
    them typed in; left out, a required one makes toolnexus decline the elicitation.
    """
    schema: dict[str, Any] = (request.data or {}).get("schema") or {}
    fields: dict[str, dict[str, Any]] = schema.get("properties") or {}
    return {name: True for name, spec in fields.items() if spec.get("type") == "boolean"}


def show_call(info: dict[str, Any]) -> None:
    print(f"\n-> {info['name']}({json.dumps(info['args'], ensure_ascii=False)})")


def show_result(info: dict[str, Any]) -> None:
    result = info["result"]
    print(textwrap.indent(("error: " if result.is_error else "") + result.output, "   "))


# --- the scripted local model: it follows the skills by reading the transcript ---


def helper_file(skill_output: str, name: str) -> str:
    """The path of the helper file ``name`` from a loaded skill's ``<skill_files>`` list."""
    found = re.search(rf"<file>([^<]*/{re.escape(name)})</file>", skill_output)
    return found.group(1) if found else name


def fill_template(template: str) -> str:
    return (
        template.replace("{date}", "2025-06-12")
        .replace("{meeting}", "standup")
        .replace("{attendees}", "Ana, Raj, Mei")
        .replace("{decisions}", "- Ship v2.1 on Friday.")
        .replace("{actions}", "- Raj: update the changelog.\n- Mei: book the demo room.")
    )


def brain(request: RecordedRequest) -> Reply:
    seen = tool_outputs(request)
    step = len(seen)
    if step == 0:
        return tool_calls(call("skill", {"name": "meeting-notes"}))
    if step == 1:
        return tool_calls(call("read", {"path": helper_file(seen[0], "template.md")}))
    if step == 2:
        note = {"title": "2025-06-12 standup", "body": fill_template(seen[1])}
        return tool_calls(call("notes_add_note", note))
    if step == 3:
        return tool_calls(call("skill", {"name": "note-cleanup"}))
    if step == 4:
        return tool_calls(call("notes_list_notes"))
    finished = re.findall(r"^#(\d+) \[done\]", seen[4], re.MULTILINE)
    if step == 5 and finished:
        return tool_calls(call("notes_delete_note", {"note_id": int(finished[0])}))
    cleanup = seen[5] if step > 5 else "nothing was finished"
    return text(f"Done. Standup: {seen[2]}. Cleanup: {cleanup}.")


async def main() -> None:
    parser = argparse.ArgumentParser(description="Run the tool-sources example agent.")
    parser.add_argument("--yes", action="store_true", help="approve every question")
    args = parser.parse_args()

    toolkit = await create_toolkit(
        mcp_config=str(HERE / "mcp.json"),  # its relative paths are read from its folder
        skills_dir=str(SKILLS),
        builtins=READ_SKILLS_ONLY,
        wait_for=terminal(args.yes),
    )
    async with toolkit:  # closing it stops the MCP server process
        print(f"mcp servers: {toolkit.mcp_status()}")
        print(f"tools: {', '.join(toolkit.names())}")
        print(f"skills prompt:\n{textwrap.indent(toolkit.skills_prompt(), '   ')}")
        hooks = {"before_tool": show_call, "after_tool": show_result}
        async with (
            llm(brain) as endpoint,
            create_client(**endpoint, system_prompt=SYSTEM_PROMPT, hooks=hooks) as client,
        ):
            result = await client.run(TASK, toolkit)
    print(f"\nstatus={result.status} turns={result.turns}: {result.text}")


if __name__ == "__main__":
    asyncio.run(main())
