"""Store fixtures: a private PostgreSQL schema per test, when a server is configured.

The Postgres tests read ``TOOLNEXUS_PG_URL`` (``bash scripts/pg.sh start`` prints one). Without
it they skip, except under CI (``CI`` set), where a missing URL or a missing psycopg fails the
test: CI must never pass by silently skipping Postgres.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from pg_support import pg_connect, with_schema


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run the Postgres tests (see scripts/pg.sh)")
    pytest.skip(reason)


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A URL whose tables live in a fresh schema, dropped after the test."""
    base = os.environ.get("TOOLNEXUS_PG_URL")
    if not base:
        _unavailable("TOOLNEXUS_PG_URL is not set")
        raise AssertionError("unreachable")
    try:
        import psycopg  # noqa: F401  # pyright: ignore[reportUnusedImport]
    except ImportError:
        _unavailable("psycopg is not installed (pip install -e '.[postgres]')")
    schema = f"t_{uuid.uuid4().hex}"
    with pg_connect(base) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield with_schema(base, schema)
    finally:
        with pg_connect(base) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


# The run-store contract fixtures (``backend``, ``clock``, ``store``): every module that does not
# define its own gets the three backends.
from run_backends import backend, clock, store  # noqa: E402, F401
