"""Fixtures of the inbox tests: ``store`` over memory, SQLite and Postgres in turn."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from inbox_support import make_store


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    made = await make_store(request.param, tmp_path, url)
    try:
        yield made
    finally:
        await made.aclose()
