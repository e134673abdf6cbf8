"""``toolnexus show``: one request, for a person (labelled lines that wrap to the terminal) and
for a script (one JSON object).

The facts are `toolnexus.stores.lookup.read_request`'s, the read the inbox's detail page makes
too. Every value from a model, a tool or a person is made visible; arguments are shown as JSON
that can be typed back (`answer --args`), with the characters a terminal would obey written as
``\\uXXXX`` escapes.
"""

from __future__ import annotations

import json
import math
import time
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._visible import escape_json, visible
from ..stores.checks import is_past
from ..stores.lookup import RequestFacts, decision_of, note_of, run_text
from .render import age, lease_text
from .stores import record_json

__all__ = ["facts_json", "print_facts", "when"]

_STATE = {
    "pending": "pending: waiting for a human to answer",
    "answered": "answered: queued, waiting for a worker to resume the run",
    "claimed": "claimed: a worker is resuming the run",
}


def when(at: float, now: float) -> str:
    """``5m ago (2026-05-01T12:00:03Z)``."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))
    return f"{age(now - at)} ago ({stamp})"


def arguments_text(raw: str) -> str:
    """A call's arguments as one line of JSON that parses back to them, nothing raw in it."""
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):
        return visible(raw)
    return escape_json(json.dumps(parsed, ensure_ascii=False))


def _expired(facts: RequestFacts, now: float) -> bool:
    return facts.record is None and is_past(facts.request.expiresAt, now)


def _state(facts: RequestFacts, now: float) -> str:
    record = facts.record
    if record is None:
        if _expired(facts, now):
            return "pending, past its deadline: it settles as expired when answered or resumed"
        return _STATE["pending"]
    if record.problem and record.status in ("answered", "claimed"):
        return f"{record.status}: held for an operator (cancel it, or fix what it reports)"
    return _STATE.get(record.status) or run_text(record)


def _lines(facts: RequestFacts, now: float) -> list[tuple[str, str]]:
    record = facts.record
    out: list[tuple[str, str]] = [("state", _state(facts, now))]
    if record is not None and record.status == "claimed":
        out.append(("held by", record.holder or "(not recorded: claimed by an older toolnexus)"))
        out.append(("lease", lease_text(record.lease_until, now)))
    if record is not None and record.problem:
        out.append(("problem", record.problem))
    request = facts.request
    out += [("kind", request.kind), ("prompt", request.prompt)]
    if facts.tool:
        out.append(("tool", facts.tool))
    original = record.original if record is not None else None
    if original is not None:
        out.append(
            ("arguments", f"{arguments_text(str(original.get('arguments', '')))} (the model's)")
        )
        out.append(("digest", str(original.get("digest", ""))))
    elif facts.arguments is not None:
        out += [("arguments", arguments_text(facts.arguments)), ("digest", facts.digest)]
    elif record is not None:
        out.append(("arguments", "not kept once the run settled"))
    if record is not None:
        edited = (record.answer.data or {}).get("arguments") if original is not None else None
        if edited is not None:
            out.append(("edited to", escape_json(json.dumps(edited, ensure_ascii=False))))
            out.append(("digest", record.digest))
        who = f" by {record.answered_by}" if record.answered_by else ""
        label = "cancelled" if record.status == "cancelled" else "answered"
        out.append((label, f"{decision_of(record)}{who}, {when(record.answered_at, now)}"))
        if note_of(record):
            out.append(("reason", note_of(record)))
        if record.status in ("done", "expired"):
            out.append(("outcome", run_text(record)))
        text = (record.outcome or {}).get("text")
        if isinstance(text, str) and text:
            out.append(("reply", text))
    if facts.conversation_id:
        out.append(("conversation", facts.conversation_id))
    if facts.created_at:
        out.append(("asked", when(facts.created_at, now)))
    if request.expiresAt:
        out.append(("expires", request.expiresAt))
    return out


def print_facts(facts: RequestFacts, now: float) -> None:
    """The request for a person: its id on a line of its own, then one labelled line per fact,
    wrapped to the terminal (a reply keeps its lines)."""
    console = Console()
    console.print(Text(visible(facts.request.id), overflow="fold"), soft_wrap=True)
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for label, value in _lines(facts, now):
        keep = "\n\t" if label == "reply" else ""
        grid.add_row(Text(label), Text(visible(value, keep=keep)))
    # Laid out by rich (the values wrap under themselves), printed without the spaces a grid
    # pads its lines with: what is copied from the terminal ends where the text does.
    for line in console.render_lines(grid, pad=False):
        console.print(Text("".join(segment.text for segment in line).rstrip()), soft_wrap=True)


def facts_json(facts: RequestFacts, now: float) -> dict[str, Any]:
    """The request as JSON data: the request, its call, and the record with the run's state."""
    out: dict[str, Any] = {
        "request_id": facts.request.id,
        "state": facts.status,
        "expired": _expired(facts, now),
        "request": facts.request.to_dict(),
        "tool": facts.tool,
        "arguments": facts.arguments,
        "digest": facts.digest,
        "conversation_id": facts.conversation_id,
        "created_at": facts.created_at,
        "record": None,
    }
    record = facts.record
    if record is not None:
        lease = record.lease_until
        out["record"] = {
            **record_json(record),
            "decision": decision_of(record),
            "reason": note_of(record) or None,
            "run": run_text(record),
            "outcome": record.outcome,
            "lease_left": None if lease is None or math.isinf(lease) else max(0.0, lease - now),
        }
    return out
