"""A request that arrives between the list's rendering and its live stream's first look, in
Debian's chromium: the page's counts and its "new requests" note still show it (the page reads
the counts again on the stream's hello). The store's first look is held back by a thin subclass
of the real store, so the arrival lands in that gap every time.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from browser_support import served
from inbox_support import TOKENS, halted, make_app
from playwright.async_api import expect

from toolnexus import PendingEntry
from toolnexus.stores.sqlite import SqliteStore

pytestmark = pytest.mark.asyncio(loop_scope="module")


class SlowFirstLook(SqliteStore):
    """The real store, whose first look for arrivals waits until the test lets it go."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, poll_interval=0.02)
        self.looking = asyncio.Event()
        self.go = asyncio.Event()

    async def search_pending(self, **options: Any) -> list[PendingEntry]:
        if options.get("newer_than") is not None and not self.looking.is_set():
            self.looking.set()  # the live stream's first look (the list page's own reads pass)
            await self.go.wait()
        return await super().search_pending(**options)


async def test_an_arrival_before_the_streams_first_look_still_reaches_the_counts(
    browser: Any, tmp_path: Path
) -> None:
    path = tmp_path / "gap.db"
    mine, theirs = SlowFirstLook(path), SqliteStore(path, poll_interval=0.02)
    await theirs.save_halt(halted("first"))
    app = make_app(mine, poll_interval=0.05)
    ctx = await browser.new_context()
    try:
        async with served(app) as url:
            page = await ctx.new_page()
            await page.goto(f"{url}/login")
            await page.fill("#token", TOKENS["ana"])
            await page.get_by_role("button", name="Sign in").click()
            await expect(page.locator("#total")).to_have_text("1")  # rendered with one
            await mine.looking.wait()  # the page's stream has subscribed; its first look waits
            await theirs.save_halt(halted("second"))  # arrives in the gap
            mine.go.set()
            await expect(page.locator("#total")).to_have_text("2")
            await expect(page.locator("#live")).to_be_visible()
    finally:
        await ctx.close()
        await app.aclose()
        await mine.aclose()
        await theirs.aclose()
