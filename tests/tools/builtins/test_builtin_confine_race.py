"""No check-then-use gap: a directory swapped for a symlink by another process mid-call never
lets a built-in read or write outside the workspace (issue 10, item 2).

On the old code (realpath check, then open of the path string) this race let 2–10 % of the
writes and reads land outside. The 10,000-try figure is ``bench/bench_confine_race.py``.
"""

from __future__ import annotations

from pathlib import Path

from race_support import race


async def test_reads_and_writes_raced_by_a_symlink_swap_never_escape(tmp_path: Path) -> None:
    kinds = ("read", "write", "apply_patch", "edit", "grep")
    tally = await race(tmp_path, 1000, kinds=kinds)

    assert tally.escapes == 0, tally
    # The race really ran: some calls got through, some were caught mid-swap.
    assert tally.succeeded > 0, tally
    assert tally.refused > 0, tally
