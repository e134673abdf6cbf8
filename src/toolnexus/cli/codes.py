"""The command line's exit codes."""

from __future__ import annotations

from typing import Final

OK: Final = 0
"""Done."""
FAILED: Final = 1
"""The store or the run failed (the message says why)."""
USAGE: Final = 2
"""Bad or conflicting flags, a store URL that is not one, a missing extra."""
UNKNOWN: Final = 3
"""No halted run waits on that request id."""
CONFLICT: Final = 4
"""The request was answered, cancelled or is being resumed by someone else first."""
EXPIRED: Final = 5
"""The request expired before the answer came (the expired decline was recorded)."""
INVALID: Final = 6
"""The store refused the answer's content: edited arguments that fail the tool's input
schema, or an edit of a request that is not an approval. Nothing was recorded."""
TIMEOUT: Final = 7
"""``--wait`` gave up: the run was still queued or resuming when ``--timeout`` passed."""
INTERRUPTED: Final = 130
"""Ctrl-C."""
