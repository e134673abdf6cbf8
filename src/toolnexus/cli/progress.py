"""Progress on long operations: a spinner with the elapsed time, and following a run.

The spinner is drawn on stderr and only when stderr is a terminal, so ``--json`` output,
pipes and log files never see it; it is transient (erased when the work ends). `follow` waits
for the worker that resumes an answered run, reporting each state the request passes through
(``answered`` → ``claimed`` → ``done``) to the spinner.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Generator
from contextlib import contextmanager

from ..stores.requests import SETTLED, AnswerRecord, RunStore

__all__ = ["STATE_WORDS", "follow", "working"]

STATE_WORDS: dict[str, str] = {
    "answered": "queued, waiting for a worker",
    "claimed": "a worker is resuming the run",
    "done": "done",
    "expired": "expired",
    "cancelled": "cancelled",
}
"""What each request state means to the person waiting on it."""

_POLL_S = 0.1
_POLL_MAX_S = 1.0


@contextmanager
def working(message: str, *, enabled: bool = True) -> Generator[Callable[[str], None]]:
    """Show ``message`` with a spinner and the elapsed time while the block runs.

    Yields a function that replaces the message. Draws nothing unless ``enabled`` and stderr
    is a terminal.
    """
    if not (enabled and sys.stderr.isatty()):
        yield lambda _text: None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    with progress:
        task = progress.add_task(message, total=None)
        yield lambda text: progress.update(task, description=text)


async def follow(
    runs: RunStore,
    request_id: str,
    *,
    timeout: float | None,
    on_state: Callable[[str], None] = lambda _state: None,
) -> AnswerRecord | None:
    """Wait until ``request_id`` is settled (done, expired or cancelled); its final record.

    Polls the store (backing off from 0.1 s to 1 s), calling ``on_state`` each time the state
    changes. ``None`` when ``timeout`` seconds pass first (the run is still queued or resuming).
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    pause = _POLL_S
    seen = ""
    while True:
        record = await runs.answer_record(request_id)
        state = record.status if record is not None else "pending"
        if state != seen:
            seen = state
            pause = _POLL_S
            on_state(state)
        if record is not None and record.status in SETTLED:
            return record
        if deadline is not None and time.monotonic() >= deadline:
            return None
        await asyncio.sleep(
            pause if deadline is None else min(pause, max(0.0, deadline - time.monotonic()))
        )
        pause = min(pause * 2, _POLL_MAX_S)
