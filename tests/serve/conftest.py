"""Fixtures for the MCP serving tests: each protocol era in turn."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "tools" / "mcp"))

from serve_support import ERAS


@pytest.fixture(params=ERAS)
def era(request: pytest.FixtureRequest) -> str:
    """Each protocol era in turn (the mcp ``Client(mode=...)`` value)."""
    return request.param
