"""Odd request ids in a real browser: chromium (Playwright) follows the list's link of a request
whose id ends in ``/status``, is ``..`` (a URL's "parent directory") or holds ``?`` and ``#``,
lands on that request's own page, approves it there, and the page's script follows the run
to that same page — never to the request whose id is its prefix. Real uvicorn over a SQLite
file and the real Postgres."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from inbox_site import Site, login, open_site
from inbox_support import halted
from playwright.async_api import expect

from toolnexus.inbox.html import quote_id

pytestmark = pytest.mark.asyncio(loop_scope="module")

ODD = ["abc/status", "..", "why?really=yes#top", "x/answer"]
DECOYS = ["abc", "x"]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest_asyncio.fixture(loop_scope="module")
async def site(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Site]:
    pg = str(request.getfixturevalue("pg_url")) if backend == "postgres" else None
    async with open_site(backend, tmp_path, pg) as opened:
        for rid in [*ODD, *DECOYS]:
            await opened.store.save_halt(halted(rid))
        yield opened


async def test_odd_ids_are_opened_answered_and_followed_at_their_own_page(
    page: Any, site: Site
) -> None:
    await login(page, site, "ana")
    for rid in ODD:
        await page.goto(site.url)
        await page.locator(f'tr[data-request-id="{rid}"] a.request-link').click()
        main = page.locator("main#request")
        await expect(main).to_have_attribute("data-request-id", rid)
        own = f"{site.url}/requests/{quote_id(rid)}"
        assert page.url == own
        await page.get_by_role("button", name="Approve", exact=True).click()
        await expect(page.locator("#resolved")).to_contain_text("answered by ana")
        await expect(page.locator("#run-status")).to_have_attribute("data-status", "answered")
        assert page.url == own
        # A resumer takes it: the page's script, polling this request's status, sees the new
        # status and reloads this page.
        async with page.expect_response(f"{own}/status"):
            claim = await site.store.take(rid)
        assert claim is not None
        await expect(page.locator("#run-status")).to_have_attribute("data-status", "claimed")
        await expect(main).to_have_attribute("data-request-id", rid)
        assert page.url == own
        record = await site.store.answer_record(rid)
        assert (record.request_id, record.answered_by) == (rid, "ana")
    for rid in DECOYS:
        assert await site.store.answer_record(rid) is None
