"""Tables for people (rich): the pending list, the runs in flight, the history, the tools.

Every cell is the value made visible (`toolnexus._visible`) and drawn as a `rich.text.Text`: a
prompt, a tool's description or an MCP server's error cannot move the cursor, write the
clipboard or hide a link target, and no rich markup (``[link=…]``) or emoji code
(``:warning:``) in it is read as anything but text. The tables fit the terminal's width with
every request id whole (`toolnexus.cli.tables`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._visible import visible
from ..stores.inbox_index import HistoryEntry
from ..stores.lookup import decision_of
from ..stores.requests import AnswerRecord
from .tables import Column, print_table

__all__ = [
    "age",
    "cell",
    "history_table",
    "lease_text",
    "pending_table",
    "runs_table",
    "tools_table",
]

_PROMPT_CHARS = 60

PENDING_COLUMNS = (
    Column("request"),
    Column("kind", drop=4),
    Column("tool", drop=3),
    Column("conversation", drop=5),
    Column("age", drop=2),
    Column("state", wrap=9),
    Column("prompt", wrap=12),
)
"""The pending list; on a narrow terminal the conversation, the kind, the tool and the age go,
in that order, and the prompt and the state wrap."""

RUNS_COLUMNS = (
    Column("request"),
    Column("state", wrap=9),
    Column("held by", drop=1),
    Column("lease", drop=2, wrap=8),
    Column("answered by", drop=4),
    Column("answered", drop=3),
    Column("tool", drop=5),
    Column("prompt", wrap=12, drop=6),
)
"""The runs in flight; the holder (``host:pid``) goes last, and is never cut."""

HISTORY_COLUMNS = (
    Column("request"),
    Column("state", drop=2),
    Column("decision", wrap=9),
    Column("by", drop=1),
    Column("answered", drop=3),
    Column("tool", drop=4),
    Column("kind", drop=6),
    Column("prompt", wrap=12, drop=5),
)


def age(seconds: float) -> str:
    """``42s``, ``5m``, ``3h``, ``2d``."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{max(0, int(seconds))}s"


def lease_text(lease_until: float | None, now: float) -> str:
    """What is left of a claim's lease: ``4m 12s left``, ``until an operator acts``,
    ``lapsed``; ``""`` without a lease."""
    if lease_until is None:
        return ""
    if math.isinf(lease_until):
        return "no end: an operator acts"
    left = lease_until - now
    if left <= 0:
        return "lapsed"
    minutes, seconds = divmod(int(left), 60)
    return f"{minutes}m {seconds:02d}s left" if minutes else f"{seconds}s left"


def cell(value: object) -> Text:
    """One line of outside text as rich shows it: made visible, never markup."""
    return Text(_shown(value))


def _shown(value: object) -> str:
    return visible("" if value is None else str(value))


def _prompt(text: str) -> str:
    shown = visible(text)  # marked first: the cut counts what is shown
    return shown if len(shown) <= _PROMPT_CHARS else shown[: _PROMPT_CHARS - 1] + "…"


def _problems(console: Console, entries: Sequence[Any]) -> None:
    """The problems of the flagged rows, each whole and unwrapped: what an operator must read
    before acting."""
    for e in entries:
        if e.problem:
            line = f"{e.request_id} ({e.status}) needs an operator: {e.problem}"
            console.print(Text(visible(line, keep="\n\t")), soft_wrap=True)


def pending_table(entries: Sequence[Any]) -> None:
    console = Console()
    if not entries:
        console.print("no pending requests")
        return
    now = time.time()
    rows = [
        [
            _shown(e.request_id),
            _shown(e.kind),
            _shown(e.tool),
            _shown(e.conversation_id),
            age(now - e.created_at),
            "needs an operator" if e.problem else _shown(e.status),
            _prompt(e.prompt),
        ]
        for e in entries
    ]
    print_table(console, PENDING_COLUMNS, rows)
    _problems(console, entries)


def run_state(entry: Any) -> str:
    """A run in flight in a word or three."""
    if entry.problem:
        return "held for an operator"
    return "resuming" if entry.status == "claimed" else "queued for a worker"


def runs_table(entries: Sequence[Any]) -> None:
    console = Console()
    if not entries:
        console.print("no runs in flight (nothing answered waits for a worker or is resumed)")
        return
    now = time.time()
    rows = [
        [
            _shown(e.request_id),
            run_state(e),
            _shown(e.holder or ("" if e.status != "claimed" else "unknown")),
            lease_text(e.lease_until, now),
            _shown(e.answered_by or ""),
            "" if e.answered_at is None else f"{age(now - e.answered_at)} ago",
            _shown(e.tool),
            _prompt(e.prompt),
        ]
        for e in entries
    ]
    print_table(console, RUNS_COLUMNS, rows)
    _problems(console, entries)


def history_table(entries: Sequence[HistoryEntry]) -> None:
    console = Console()
    if not entries:
        console.print("no answered requests match")
        return
    now = time.time()
    rows: list[list[str]] = []
    for h in entries:
        record = _as_record(h)
        rows.append(
            [
                _shown(h.request_id),
                _shown(h.status),
                decision_of(record),
                _shown(h.answered_by or ""),
                f"{age(now - h.answered_at)} ago",
                _shown(h.tool),
                _shown(h.kind),
                _prompt(h.prompt),
            ]
        )
    print_table(console, HISTORY_COLUMNS, rows)


def _as_record(h: HistoryEntry) -> AnswerRecord:
    return AnswerRecord(h.request_id, h.answer, h.answered_at, h.answered_by, h.digest, h.status)


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
