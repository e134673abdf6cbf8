"""The inbox for a busy team, in a real browser: Debian's chromium (Playwright) against
`inbox_app` on real uvicorn over a real SQLite file and the real Postgres, the requests from
real runs halted through a client against the scripted model, and ``toolnexus worker`` in its
own process finishing what was answered (the refund ledger counts executions).

Many approved at once (each recorded once, with who), one answered elsewhere meanwhile (the
rest recorded, the one named with who won), one approved from the list, an edit shown as a
diff on the page, in the history and in both exports, a finished request's page, counts that
follow a live arrival, no horizontal scrolling at 390 px, and the sign-in page. Every wait is
on an event or a selector, never a sleep.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from browser_support import screenshot
from inbox_site import TOKENS, Site, login, open_site
from playwright.async_api import expect

pytestmark = pytest.mark.asyncio(loop_scope="module")

PHONE = {"width": 390, "height": 844}
WIDE = {"width": 1280, "height": 900}
NO_SIDEWAYS_SCROLL = "document.documentElement.scrollWidth"


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest_asyncio.fixture(loop_scope="module")
async def site(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Site]:
    pg = str(request.getfixturevalue("pg_url")) if backend == "postgres" else None
    async with open_site(backend, tmp_path, pg) as opened:
        yield opened


@pytest_asyncio.fixture(loop_scope="module")
async def ana(browser: Any, site: Site) -> AsyncIterator[Any]:
    """A 1280 px page signed in as ana (who may answer every kind)."""
    ctx = await browser.new_context(viewport=WIDE)
    try:
        page = await ctx.new_page()
        await login(page, site, "ana")
        yield page
    finally:
        await ctx.close()


@pytest_asyncio.fixture(loop_scope="module")
async def phone(browser: Any) -> AsyncIterator[Any]:
    """A 390 px page (a phone), not signed in."""
    ctx = await browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    try:
        yield await ctx.new_page()
    finally:
        await ctx.close()


def row(page: Any, rid: str) -> Any:
    return page.locator(f'#requests tr[data-request-id="{rid}"]')


async def record_of(site: Site, rid: str) -> Any:
    record = await site.store.answer_record(rid)
    assert record is not None
    return record


async def refunds(site: Site, *amounts: int) -> list[str]:
    return [
        await site.halt("refund", {"order": f"T-{i}", "amount": amount})
        for i, amount in enumerate(amounts)
    ]


# -- many at once ------------------------------------------------------------------------------


async def test_a_bulk_approve_records_each_once_with_who_and_a_worker_runs_each_once(
    ana: Any, site: Site, backend: str
) -> None:
    ids = await refunds(site, 11, 12, 13)
    question = await site.halt("region", {})
    await ana.goto(site.url)
    approve = ana.get_by_role("button", name="Approve selected")
    await expect(approve).to_be_disabled()  # nothing selected yet
    for rid in ids:
        await row(ana, rid).locator("input.select").check()
    await expect(ana.locator("#selected")).to_have_text("3 selected")
    await expect(row(ana, question).locator("input.select")).not_to_be_checked()
    await screenshot(ana, f"inbox-team-list-{backend}")
    await approve.click()
    await expect(ana.locator("#bulk-summary")).to_have_text("3 approved.")
    await expect(ana.locator("#requests tbody tr")).to_have_count(1)  # the question waits
    for rid in ids:
        record = await record_of(site, rid)
        assert (record.answer.ok, record.answered_by, record.status) == (True, "ana", "answered")
    async with site.worker():
        for rid in ids:
            await ana.goto(site.link(rid))
            await expect(ana.locator("#run-status")).to_have_attribute("data-status", "done")
    lines = site.ledger_lines()
    assert sorted((x["request"], x["amount"]) for x in lines) == sorted(
        zip(ids, (11, 12, 13), strict=True)
    )


async def test_one_answered_elsewhere_meanwhile_is_named_and_the_rest_are_recorded(
    browser: Any, ana: Any, site: Site
) -> None:
    ids = await refunds(site, 21, 22, 23)
    await ana.goto(site.url)
    await ana.locator("#select-all").check()
    await expect(ana.locator("#selected")).to_have_text("3 selected")
    ctx = await browser.new_context(viewport=WIDE)
    try:  # cy, on her own page, approves the middle one first
        cy = await ctx.new_page()
        await login(cy, site, "cy")
        await cy.goto(site.link(ids[1]))
        await cy.get_by_role("button", name="Approve", exact=True).click()
        await expect(cy.locator("#resolved")).to_contain_text("answered by cy")
    finally:
        await ctx.close()
    await ana.get_by_role("button", name="Approve selected").click()
    await expect(ana.locator("#bulk-summary")).to_have_text("2 approved, 1 failed.")
    failed = ana.locator(f'#bulk-failed li[data-request-id="{ids[1]}"]')
    await expect(failed).to_have_attribute("data-why", "conflict")
    await expect(failed).to_contain_text("answered by cy")
    await expect(ana.locator("#bulk-failed li")).to_have_count(1)
    who = [(await record_of(site, rid)).answered_by for rid in ids]
    assert who == ["ana", "cy", "ana"]


async def test_an_approval_is_approved_from_the_list_in_one_click(ana: Any, site: Site) -> None:
    first, second = await refunds(site, 31, 32)
    await ana.goto(site.url)
    await row(ana, first).get_by_role("button", name="Approve").click()
    await expect(ana.locator("#bulk-summary")).to_have_text("1 approved.")
    await expect(row(ana, first)).to_have_count(0)
    assert "/requests/" not in ana.url  # no detail page on the way
    await row(ana, second).get_by_role("button", name="Decline").click()
    await expect(ana.locator("#bulk-summary")).to_have_text("1 declined.")
    approved, declined = await record_of(site, first), await record_of(site, second)
    assert (approved.answer.ok, approved.answered_by) == (True, "ana")
    assert (declined.answer.ok, declined.answered_by) == (False, "ana")


# -- edits and finished requests ---------------------------------------------------------------


async def test_an_edit_is_a_diff_on_the_page_in_the_history_and_both_exports_after_the_run(
    ana: Any, site: Site, backend: str
) -> None:
    rid = await site.halt("refund", {"order": "E-9", "amount": 300})
    await ana.goto(site.link(rid))
    await ana.fill("#edit-arguments", '{"order": "E-9", "amount": 45}')
    await ana.get_by_role("button", name="Approve with edits").click()
    await expect(ana.locator("#resolved")).to_contain_text("answered by ana")
    async with site.worker():
        await expect(ana.locator("#run-status")).to_have_attribute("data-status", "done")
    assert site.ledger_lines()[-1] == {"order": "E-9", "amount": 45, "request": rid}
    await ana.reload()  # finished: the checkpoint is gone; the page keeps the call
    change = ana.locator('#edit-diff tr[data-path="amount"]')
    await expect(change).to_have_attribute("data-change", "changed")
    await expect(change.locator(".before del")).to_have_text("300")
    await expect(change.locator(".after ins")).to_have_text("45")
    await expect(ana.locator("#edit-diff tbody tr")).to_have_count(1)
    await expect(ana.locator("#arguments")).to_contain_text('"amount": 300')  # the model's
    await ana.locator("#context summary").click()
    await expect(ana.locator("#context .user-message")).to_contain_text("call refund")
    await expect(ana.locator("#final-text")).to_have_text("Done: refunded 45 on E-9")
    await screenshot(ana, f"inbox-team-diff-{backend}")

    await ana.goto(f"{site.url}/history")
    edits = ana.locator(f'#history tr[data-request-id="{rid}"] td.edits li')
    await expect(edits).to_have_text(["amount: 300 → 45"])
    jsonl = await ana.request.get(f"{site.url}/history.jsonl")
    exported = await ana.request.get(f"{site.url}/history.csv")
    [line] = [
        r for r in map(json.loads, (await jsonl.text()).splitlines()) if r["request_id"] == rid
    ]
    assert line["edits"] == [{"path": ["amount"], "change": "changed", "before": 300, "after": 45}]
    assert json.loads(line["arguments"]) == {"order": "E-9", "amount": 45}
    table = list(csv.DictReader(io.StringIO(await exported.text())))
    [cells] = [r for r in table if r["request_id"] == rid]
    assert cells["edits"] == "amount: 300 → 45"


async def test_a_finished_request_keeps_its_arguments_and_context_on_its_page(
    ana: Any, site: Site
) -> None:
    rid = await site.halt("refund", {"order": "F-3", "amount": 70})
    await ana.goto(site.url)
    await row(ana, rid).get_by_role("button", name="Approve").click()
    await expect(ana.locator("#bulk-summary")).to_have_text("1 approved.")
    async with site.worker():
        await ana.goto(site.link(rid))
        await expect(ana.locator("#run-status")).to_have_attribute("data-status", "done")
    assert await site.store.load_halt(rid) is None  # the run dropped its checkpoint
    await ana.reload()
    await expect(ana.locator("#arguments")).to_contain_text('"amount": 70')
    await expect(ana.locator("#arguments")).to_contain_text('"order": "F-3"')
    await ana.locator("#context summary").click()
    await expect(ana.locator("#context .user-message")).to_have_text(
        'call refund {"order": "F-3", "amount": 70}'
    )
    await expect(ana.locator("#context .assistant-message")).to_contain_text("→ refund(")


# -- live counts -------------------------------------------------------------------------------


async def test_the_counts_follow_a_request_that_arrives_while_the_list_is_open(
    ana: Any, site: Site
) -> None:
    await refunds(site, 41)
    await ana.goto(site.url)
    await expect(ana.locator("#total")).to_have_text("1")
    await expect(ana.locator('#kinds a[data-kind="question"]')).to_have_count(0)
    await site.halt("region", {})  # a new kind arrives
    await expect(ana.locator("#live")).to_be_visible()
    await expect(ana.locator('#kinds a[data-kind="question"] .count')).to_have_text("1")
    await expect(ana.locator('#kinds a[data-kind=""] .count')).to_have_text("2")
    await expect(ana.locator("#total")).to_have_text("2")
    await expect(ana.locator('#filter-kind option[value="question"]')).to_have_count(1)

    # Filtered on the tool, the list counts only what the filter shows.
    await ana.goto(f"{site.url}/?tool=refund")
    await expect(ana.locator("#total")).to_have_text("1")
    await site.halt("region", {})
    await refunds(site, 42)
    await expect(ana.locator("#total")).to_have_text("2")
    await expect(ana.locator('#kinds a[data-kind="approval"] .count')).to_have_text("2")
    await expect(ana.locator('#kinds a[data-kind="question"]')).to_have_count(0)


# -- a phone -----------------------------------------------------------------------------------


async def test_at_390_px_the_list_the_request_and_the_sign_in_never_scroll_sideways(
    phone: Any, site: Site, backend: str
) -> None:
    long_order = "ORDER-" + "7" * 90  # one unbroken word, wider than the screen
    rid = await site.halt("refund", {"order": long_order, "amount": 5})
    await refunds(site, 51)
    await site.halt("setup", {})
    await phone.goto(f"{site.url}/login")
    assert await phone.evaluate(NO_SIDEWAYS_SCROLL) <= 390
    await screenshot(phone, f"inbox-team-phone-signin-{backend}")
    await phone.fill("#token", TOKENS["ana"])
    await phone.get_by_role("button", name="Sign in").click()
    await expect(phone.locator("#user")).to_have_text("ana")
    await expect(row(phone, rid)).to_be_visible()
    assert await phone.evaluate(NO_SIDEWAYS_SCROLL) <= 390
    await screenshot(phone, f"inbox-team-phone-list-{backend}")
    # The row's answer is there, and usable, on the phone too.
    await expect(row(phone, rid).get_by_role("button", name="Approve")).to_be_visible()
    await phone.goto(site.link(rid))
    await expect(phone.locator("#arguments")).to_contain_text(long_order)
    assert await phone.evaluate(NO_SIDEWAYS_SCROLL) <= 390
    await expect(phone.locator("#edit-arguments")).to_be_visible()
    box = await phone.locator("#edit-arguments").bounding_box()
    assert box is not None
    assert box["x"] >= 0
    assert box["x"] + box["width"] <= 390
    await phone.get_by_role("button", name="Approve", exact=True).click()
    await expect(phone.locator("#resolved")).to_contain_text("answered by ana")
    assert await phone.evaluate(NO_SIDEWAYS_SCROLL) <= 390
    await screenshot(phone, f"inbox-team-phone-detail-{backend}")


# -- signing in --------------------------------------------------------------------------------


async def test_the_sign_in_page_wears_the_products_header_and_says_what_went_wrong(
    browser: Any, site: Site, backend: str
) -> None:
    ctx = await browser.new_context(viewport=WIDE)
    try:
        page = await ctx.new_page()
        await page.goto(site.url)
        await expect(page).to_have_url(f"{site.url}/login")
        await expect(page.locator("header.bar a.brand")).to_have_text("tntoolnexus inbox")
        await expect(page.get_by_label("Access token")).to_be_focused()
        colour = await page.evaluate(
            "getComputedStyle(document.querySelector('button.primary')).backgroundColor"
        )
        assert colour == "rgb(36, 86, 199)"  # the stylesheet's accent: not a bare form
        await screenshot(page, f"inbox-team-signin-{backend}")

        await page.fill("#token", "a-token-nobody-has-0000")
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.locator("#error")).to_have_attribute("data-error", "unknown-token")
        await expect(page.locator("#error")).to_have_text(
            "That token is not known. Check it and try again."
        )
        await expect(page.locator("#token")).to_have_attribute("aria-invalid", "true")
        await screenshot(page, f"inbox-team-signin-error-{backend}")

        await ctx.clear_cookies()  # the form's nonce is gone: a stale form
        await page.fill("#token", TOKENS["ana"])
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.locator("#error")).to_have_attribute("data-error", "expired-form")
        await expect(page.locator("#user")).to_have_count(0)

        await page.fill("#token", TOKENS["ana"])  # the page came with a fresh nonce
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.locator("#user")).to_have_text("ana")
    finally:
        await ctx.close()


async def test_too_many_wrong_tokens_say_when_to_try_again(
    browser: Any, backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    pg = str(request.getfixturevalue("pg_url")) if backend == "postgres" else None
    async with open_site(backend, tmp_path, pg, max_failed_sign_ins=1) as limited:
        ctx = await browser.new_context(viewport=WIDE)
        try:
            page = await ctx.new_page()
            await page.goto(f"{limited.url}/login")
            await page.fill("#token", "a-token-nobody-has-0000")
            await page.get_by_role("button", name="Sign in").click()
            await expect(page.locator("#error")).to_have_attribute("data-error", "unknown-token")
            await page.fill("#token", TOKENS["ana"])
            await page.get_by_role("button", name="Sign in").click()
            await expect(page.locator("#error")).to_have_attribute("data-error", "too-many")
            await expect(page.locator("#error")).to_contain_text("try again in")
        finally:
            await ctx.close()
