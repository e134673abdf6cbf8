"""Signing out in a real browser ends the session: Debian's chromium (Playwright) signs in to the
inbox on real uvicorn (SQLite file, the real Postgres), signs out, and the cookie it held —
replayed by a plain HTTP client, as someone who copied it would — is refused and cannot
approve: the request still waits."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from inbox_site import Site, login, open_site
from playwright.async_api import expect

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest_asyncio.fixture(loop_scope="module")
async def site(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Site]:
    pg = str(request.getfixturevalue("pg_url")) if backend == "postgres" else None
    async with open_site(backend, tmp_path, pg) as opened:
        yield opened


async def test_a_cookie_replayed_after_signing_out_in_the_browser_is_refused(
    page: Any, site: Site
) -> None:
    rid = await site.halt("refund", {"order": "A-1", "amount": 30})
    await login(page, site, "ana")
    await page.goto(site.link(rid))
    await expect(page.locator("main#request")).to_have_attribute("data-status", "pending")
    csrf = await page.locator("#answer-form input[name=csrf]").input_value()
    [cookie] = [c for c in await page.context.cookies() if c["name"] == "toolnexus_inbox"]

    async with httpx.AsyncClient(
        base_url=site.url, cookies={"toolnexus_inbox": cookie["value"]}
    ) as copied:
        before = await copied.get(f"/requests/{rid}")
        assert before.status_code == 200  # the copy works while the session lives

        await page.get_by_role("button", name="Sign out").click()
        await expect(page).to_have_url(f"{site.url}/login")

        home = await copied.get("/")
        assert (home.status_code, home.headers["location"]) == (303, "/login")
        approve = await copied.post(
            f"/requests/{rid}/answer", data={"csrf": csrf, "action": "approve"}
        )
        assert approve.status_code == 401
        api = await copied.get(f"/api/requests/{rid}")
        assert api.status_code == 401
    assert await site.store.answer_record(rid) is None
    assert rid in [e.request_id for e in await site.store.list_pending()]
    assert site.ledger_lines() == []
