"""Tables that fit the terminal without cutting what must be read whole.

A request id is copied from the table into the next command, so a column of ids (and of other
whole values: a state, a holder) is never shortened with ``…``: each keeps its full width, and
when the terminal is too narrow for every column, the less important ones go first (each
`Column` says in which order), then the long text (a prompt) wraps into what is left. Below
the width of the columns that always stay, the rows are printed one block each instead.

rich left to itself shrinks a table to the terminal by cutting cells (``pnd-1a2517af…``) and
squeezing a wrapping column to nothing; here the widths are decided first, so what rich is
given always fits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = ["Column", "print_table"]

_EDGE = 3
"""What each column costs beside its text: a space either side and a border."""


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a table.

    Attributes:
        header: its heading.
        drop: ``0``: always shown; otherwise, when the terminal is narrow, the columns go in
            descending ``drop`` order until the rest fit.
        wrap: ``0``: each cell is shown whole on one line (an id, a holder, an age); else the
            text wraps, down to this many characters a line (a prompt, a state in words).
    """

    header: str
    drop: int = 0
    wrap: int = 0


def _widths(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> list[int]:
    return [
        max([cell_len(c.header), *(cell_len(row[i]) for row in rows)])
        for i, c in enumerate(columns)
    ]


def _narrowest(column: Column, width: int) -> int:
    return min(width, column.wrap) if column.wrap else width


def _least(columns: Sequence[Column], widths: Sequence[int], shown: Sequence[int]) -> int:
    """The narrowest the table can be with the ``shown`` columns."""
    return 1 + sum(_narrowest(columns[i], widths[i]) + _EDGE for i in shown)


def print_table(
    console: Console, columns: Sequence[Column], rows: Sequence[Sequence[str]]
) -> list[str]:
    """Print ``rows`` (visible text, one cell per column) as a table that fits ``console``;
    the headers of the columns left out for want of width."""
    widths = _widths(columns, rows)
    shown = list(range(len(columns)))
    for i in sorted((i for i, c in enumerate(columns) if c.drop), key=lambda i: -columns[i].drop):
        if _least(columns, widths, shown) <= console.width:
            break
        shown.remove(i)
    if _least(columns, widths, shown) > console.width:
        _print_blocks(console, columns, rows, shown)
    else:
        table = Table()
        for i in shown:
            column = columns[i]
            table.add_column(
                column.header,
                min_width=_narrowest(column, widths[i]),
                no_wrap=not column.wrap,  # rich then shrinks only the columns that wrap
                overflow="fold",
            )
        for row in rows:
            table.add_row(*(Text(row[i]) for i in shown))
        console.print(table)
    return [columns[i].header for i in range(len(columns)) if i not in shown]


def _print_blocks(
    console: Console, columns: Sequence[Column], rows: Sequence[Sequence[str]], shown: list[int]
) -> None:
    """Each row as a block: its first cell alone on a line (whole, folded if it must be),
    then the others, labelled."""
    for row in rows:
        console.print(Text(row[shown[0]], overflow="fold"))
        for i in shown[1:]:
            if row[i]:
                console.print(Text(f"  {columns[i].header}: {row[i]}", overflow="fold"))
