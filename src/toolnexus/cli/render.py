"""Tables for people (rich): the pending list and the tool list.

Every cell is a `rich.text.Text` of the value made visible (`toolnexus._visible`): a prompt,
a tool's description or an MCP server's error cannot move the cursor, write the clipboard or
hide a link target, and no rich markup (``[link=…]``) or emoji code (``:warning:``) in it is
read as anything but text.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._visible import visible

__all__ = ["age", "cell", "pending_table", "tools_table"]

_PROMPT_CHARS = 60


def age(seconds: float) -> str:
    """``42s``, ``5m``, ``3h``, ``2d``."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{max(0, int(seconds))}s"


def cell(value: object) -> Text:
    """One line of outside text as rich shows it: made visible, never markup."""
    return Text(visible("" if value is None else str(value)))


def pending_table(entries: Sequence[Any]) -> None:
    console = Console()
    if not entries:
        console.print("no pending requests")
        return
    table = Table("request", "kind", "tool", "conversation", "age", "state", "prompt")
    now = time.time()
    held: list[Any] = []
    for e in entries:
        prompt = visible(e.prompt)  # marked first: the cut counts what is shown
        if len(prompt) > _PROMPT_CHARS:
            prompt = prompt[: _PROMPT_CHARS - 1] + "…"
        if e.problem:
            held.append(e)
        table.add_row(
            cell(e.request_id),
            cell(e.kind),
            cell(e.tool),
            cell(e.conversation_id),
            cell(age(now - e.created_at)),
            cell("needs an operator" if e.problem else e.status),
            Text(prompt),
        )
    console.print(table)
    for e in held:  # whole, unwrapped: what an operator must read before acting
        line = f"{e.request_id} ({e.status}) needs an operator: {e.problem}"
        console.print(Text(visible(line, keep="\n\t")), soft_wrap=True)


def tools_table(
    tools: Sequence[Mapping[str, Any]], status: Mapping[str, str], errors: Mapping[str, str]
) -> None:
    console = Console()
    table = Table("tool", "source", "description")
    for t in tools:
        first = (t["description"] or "").strip().splitlines()
        table.add_row(cell(t["name"]), cell(t["source"]), cell(first[0] if first else ""))
    console.print(table)
    for server, state in sorted(status.items()):
        why = errors.get(server)
        console.print(cell(f"mcp server {server}: {state}" + (f" ({why})" if why else "")))
