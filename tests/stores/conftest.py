"""Store fixtures: the run-store contract's backends (``pg_url`` is in tests/conftest.py).

Every module here that does not define its own ``backend`` / ``clock`` / ``store`` gets the
three backends of `run_backends`.
"""

from __future__ import annotations

from run_backends import backend, clock, store  # noqa: F401
