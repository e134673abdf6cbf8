"""Fixtures of the inbox tests: ``store`` over memory, SQLite and Postgres in turn; and, for the
browser tests, one chromium per module and a fresh browser context per test.

The browser fixtures and the tests that use them run in the module's event loop (the browser
outlives a test): such a test module sets ``pytestmark = pytest.mark.asyncio(loop_scope="module")``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from browser_support import TIMEOUT_MS, chromium, screenshot
from inbox_support import make_store

_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    made = await make_store(request.param, tmp_path, url)
    try:
        yield made
    finally:
        await made.aclose()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    return report


def failed(node: pytest.Item) -> bool:
    """Whether ``node``'s test body failed (read at fixture teardown)."""
    call = node.stash.get(_REPORTS, {}).get("call")
    return call is not None and call.failed


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Any]:
    """Debian's chromium, launched once per test module."""
    from playwright.async_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    async with chromium() as launched:
        yield launched


@pytest_asyncio.fixture(loop_scope="module")
async def context(browser: Any, request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """A fresh browser context (own cookies: one person); on failure each page is saved."""
    ctx = await browser.new_context(viewport={"width": 1200, "height": 800})
    ctx.set_default_timeout(TIMEOUT_MS)
    try:
        yield ctx
    finally:
        if failed(request.node):
            for i, page in enumerate(ctx.pages):
                await screenshot(page, f"FAILED-{request.node.nodeid}-{i}")
        await ctx.close()


@pytest_asyncio.fixture(loop_scope="module")
async def page(context: Any) -> Any:
    """A page in `context`."""
    return await context.new_page()
