"""Tables for people (rich): the pending list and the tool list."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["age", "pending_table", "tools_table"]

_PROMPT_CHARS = 60


def age(seconds: float) -> str:
    """``42s``, ``5m``, ``3h``, ``2d``."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{max(0, int(seconds))}s"


def pending_table(entries: Sequence[Any]) -> None:
    console = Console()
    if not entries:
        console.print("no pending requests")
        return
    table = Table("request", "kind", "tool", "conversation", "age", "state", "prompt")
    now = time.time()
    held: list[Any] = []
    for e in entries:
        prompt = e.prompt if len(e.prompt) <= _PROMPT_CHARS else e.prompt[: _PROMPT_CHARS - 1] + "…"
        if e.problem:
            held.append(e)
        table.add_row(
            e.request_id,
            e.kind,
            e.tool,
            e.conversation_id or "",
            age(now - e.created_at),
            "needs an operator" if e.problem else e.status,
            prompt,
            # markup off: a prompt is never read as rich markup
        )
    console.print(table, markup=False)
    for e in held:  # whole, unwrapped: what an operator must read before acting
        console.print(
            f"{e.request_id} ({e.status}) needs an operator: {e.problem}",
            markup=False,
            soft_wrap=True,
        )


def tools_table(
    tools: Sequence[Mapping[str, Any]], status: Mapping[str, str], errors: Mapping[str, str]
) -> None:
    console = Console()
    table = Table("tool", "source", "description")
    for t in tools:
        first = (t["description"] or "").strip().splitlines()
        table.add_row(t["name"], t["source"], first[0] if first else "")
    console.print(table, markup=False)
    for server, state in sorted(status.items()):
        why = errors.get(server)
        console.print(f"mcp server {server}: {state}" + (f" ({why})" if why else ""), markup=False)
