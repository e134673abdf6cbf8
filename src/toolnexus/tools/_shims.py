"""Call-shape helpers the tool sources need (COMPAT §0), until they join the shared module.

# merge: move to _compat — `SelfAwaitable` and `warn_stderr` mirror the helpers of the same
# name in ``toolnexus/_compat.py`` (written on another branch); the lead swaps the imports.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Generator
from typing import Any, Self

__all__ = ["SelfAwaitable", "warn_stderr"]

log = logging.getLogger("toolnexus")


class SelfAwaitable:
    """Mixin: ``await obj`` completes at once with ``obj`` itself (the G1 bridge), so code that
    still awaits a function that became synchronous keeps working."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, Self]:
        return self
        yield  # pragma: no cover - makes this a generator function


def warn_stderr(text: str) -> None:
    """Write ``[toolnexus] <text>`` to stderr (hosts watch it) and log it as a warning (G4).

    The record is only logged when some handler would receive it: with logging unconfigured,
    Python's last-resort handler would print the same warning to stderr a second time.
    """
    print(f"[toolnexus] {text}", file=sys.stderr, flush=True)
    if log.hasHandlers():
        log.warning("toolnexus: %s", text)
