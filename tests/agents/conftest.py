"""Fixtures for the agent runtime tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from agent_support import approval_brain

from toolnexus.testing import ScriptedModel


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModel]:
    async with ScriptedModel(default=approval_brain()) as m:
        yield m
