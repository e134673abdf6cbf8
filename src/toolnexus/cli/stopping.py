"""What ``toolnexus worker`` says when it stops: which runs it was resuming, which of them
finished in the grace period, which it abandoned, and what becomes of each — read back from
the store, not guessed.

A run abandoned at a stop was cancelled mid-resume and given back as a failure is: the store
holds it under this worker's claim for the worker's retry period, then queues it again; the
next worker to take it resumes from the last recorded step, so a tool call that was cut off
runs again (a tool that must never repeat keys its effect on ``ctx.request_id``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from ..stores.requests import AnswerRecord, RunStore
from .render import lease_text

__all__ = ["Stopping"]


@dataclass(slots=True)
class Stopping:
    """One stop of a worker.

    Attributes:
        in_flight: the request ids being resumed when the stop came.
        finished: those that settled after it, with the run's status.
    """

    in_flight: tuple[str, ...]
    finished: dict[str, str] = field(default_factory=lambda: {})

    def announce(self, grace: float) -> str:
        """The line said when the stop comes."""
        if not self.in_flight:
            return "worker: stopping; no run in flight"
        n = len(self.in_flight)
        runs = "1 run" if n == 1 else f"{n} runs"
        return (
            f"worker: stopping; {runs} in flight: {', '.join(self.in_flight)}; waiting up to "
            f"{grace:g}s for them to finish (Ctrl-C again: abandon them now)"
        )

    async def report(self, work: Any, runs: RunStore, now: float) -> list[str]:
        """One line per run that was in flight: finished, failed, or abandoned — with where
        the store has it now."""
        lines: list[str] = []
        for rid in self.in_flight:
            if rid in self.finished:
                lines.append(f"worker: finished in the grace period: {rid} ({self.finished[rid]})")
                continue
            record = await _record(runs, rid)
            if rid in work.abandoned:
                what = f"abandoned {rid}: cancelled mid-resume"
            else:
                what = f"failed in the grace period: {rid} ({work.errors.get(rid, 'no result')})"
            lines.append(f"worker: {what}; {_next(record, now)}")
        return lines


async def _record(runs: RunStore, rid: str) -> AnswerRecord | None:
    try:
        return await runs.answer_record(rid)
    except Exception:  # the store is going away too: say what is known
        return None


def _next(record: AnswerRecord | None, now: float) -> str:
    """What becomes of an abandoned run, from its record."""
    if record is None:
        return "its state could not be read (toolnexus show tells)"
    if record.status == "claimed" and record.lease_until is not None:
        if math.isinf(record.lease_until):
            return "held for an operator (toolnexus show tells why)"
        until = time.strftime("%H:%M:%SZ", time.gmtime(record.lease_until))
        left = lease_text(record.lease_until, now)
        return (
            f"held until {until} ({left}), then another worker resumes it from its last "
            "recorded step (a tool call that was cut off runs again)"
        )
    if record.status == "answered":
        return (
            "queued again: the next worker resumes it from its last recorded step (a tool "
            "call that was cut off runs again)"
        )
    return f"now {record.status}"
