"""The approvals inbox in a real browser: Debian's chromium (Playwright) against `inbox_app` on
real uvicorn, over a real SQLite file and the real Postgres; the requests come from real runs
halted through a client, and ``toolnexus worker`` in its own process finishes what the browser
answered (the refund ledger counts executions outside every process).

Every wait is Playwright's auto-waiting (``expect``), never a sleep; screenshots land in
``test-artifacts/browser/``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from browser_support import screenshot
from inbox_site import TOKENS, Site, login, open_site, serve_process, write_users
from playwright.async_api import expect

pytestmark = pytest.mark.asyncio(loop_scope="module")

PAST = "2020-01-01T00:00:00Z"
ENABLE_BUTTONS = "document.querySelectorAll('button').forEach(b => b.disabled = false)"
"""Turn every button on: posts a form the page refuses to (a crafted or a late request)."""
CLICK_APPROVE = f"{ENABLE_BUTTONS}; document.querySelector('#answer-form button.approve').click()"
SOON = (datetime.now(UTC) + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest_asyncio.fixture(loop_scope="module")
async def site(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Site]:
    pg = str(request.getfixturevalue("pg_url")) if backend == "postgres" else None
    async with open_site(backend, tmp_path, pg) as opened:
        yield opened


@pytest_asyncio.fixture(loop_scope="module")
async def ana(page: Any, site: Site) -> Any:
    """``page``, signed in as ana (who may answer every kind)."""
    await login(page, site, "ana")
    return page


async def open_request(page: Any, site: Site, rid: str) -> None:
    """From the list, follow the request's link to its detail page."""
    await page.goto(site.url)
    await page.locator(f'tr[data-request-id="{rid}"] a.request-link').click()
    await expect(page.locator("main#request")).to_have_attribute("data-request-id", rid)


def field_error(page: Any, prop: str) -> Any:
    """The error shown beside the form field of the schema's property ``prop``."""
    field = page.locator(".field", has=page.locator(f'[name="field.{prop}"]'))
    return field.locator(".field-error")


async def record_of(site: Site, rid: str) -> Any:
    record = await site.store.answer_record(rid)
    assert record is not None
    return record


# -- signing in ------------------------------------------------------------------------------


async def test_signing_in_takes_a_known_token_and_sets_an_httponly_strict_cookie(
    page: Any, site: Site
) -> None:
    await page.goto(site.url)
    await expect(page).to_have_url(f"{site.url}/login")
    await page.fill("#token", "not-a-token-anyone-has")
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#error")).to_contain_text("not known")
    await expect(page.locator("#user")).to_have_count(0)

    await page.fill("#token", TOKENS["ana"])
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#user")).to_have_text("ana")
    await expect(page).to_have_url(f"{site.url}/")
    [session] = [c for c in await page.context.cookies() if c["value"] and c["httpOnly"]]
    assert session["sameSite"] == "Strict"
    assert TOKENS["ana"] not in session["value"]
    assert TOKENS["ana"] not in await page.content()

    await page.get_by_role("button", name="Sign out").click()
    await expect(page).to_have_url(f"{site.url}/login")
    await page.goto(site.url)
    await expect(page).to_have_url(f"{site.url}/login")


# -- the list --------------------------------------------------------------------------------


async def populate(site: Site) -> dict[str, str]:
    """Five requests of three kinds over three conversations."""
    return {
        "A-1": await site.halt("refund", {"order": "A-1", "amount": 30}, conversation="support-17"),
        "A-2": await site.halt(
            "refund", {"order": "A-2", "amount": 120}, conversation="support-18"
        ),
        "B-7": await site.halt(
            "refund", {"order": "B-7", "amount": 15, "expires": SOON}, conversation="billing-3"
        ),
        "setup": await site.halt("setup", {}, conversation="ops-9"),
        "region": await site.halt("region", {}, conversation="ops-10"),
    }


async def test_the_list_shows_every_pending_request_with_counts_per_kind(
    ana: Any, site: Site, backend: str
) -> None:
    ids = await populate(site)
    await ana.goto(site.url)
    await expect(ana.locator("#total")).to_have_text("5")
    await expect(ana.locator("#requests tbody tr")).to_have_count(5)
    await expect(ana.locator('#kinds a[data-kind="approval"] .count')).to_have_text("3")
    await expect(ana.locator('#kinds a[data-kind="question"] .count')).to_have_text("1")
    await expect(ana.locator('#kinds a[data-kind="input"] .count')).to_have_text("1")
    row = ana.locator(f'tr[data-request-id="{ids["A-2"]}"]')
    await expect(row.locator(".tool")).to_have_text("refund")
    await expect(row.locator(".conversation")).to_have_text("support-18")
    await expect(row.locator(".prompt")).to_have_text("Refund 120 on A-2?")
    countdown = ana.locator(f'tr[data-request-id="{ids["B-7"]}"] time.expires')
    await expect(countdown).to_have_text(re.compile(r"^in 1h 5\d+m$"))  # the script counts down
    await expect(countdown).not_to_have_class(re.compile("expired"))
    await screenshot(ana, f"inbox-list-{backend}")


async def test_filters_by_kind_tool_text_and_age_narrow_the_list(ana: Any, site: Site) -> None:
    ids = await populate(site)
    await ana.goto(site.url)
    await ana.locator('#kinds a[data-kind="question"]').click()
    await expect(ana.locator("#requests tbody tr")).to_have_count(1)
    await expect(ana.locator("#requests tbody tr")).to_have_attribute("data-kind", "question")

    await ana.select_option("#filter-kind", "")
    await ana.fill("#filter-tool", "refund")
    await ana.fill("#filter-q", "A-2")
    await ana.get_by_role("button", name="Filter").click()
    await expect(ana.locator("#requests tbody tr")).to_have_count(1)
    await expect(ana.locator("#requests tbody tr")).to_have_attribute("data-request-id", ids["A-2"])
    assert "tool=refund" in ana.url

    await ana.fill("#filter-q", "")
    await ana.get_by_role("button", name="Filter").click()
    await expect(ana.locator("#requests tbody tr")).to_have_count(3)

    await ana.fill("#filter-age", "1h")  # nothing here is an hour old
    await ana.get_by_role("button", name="Filter").click()
    await expect(ana.locator("#requests tbody tr")).to_have_count(0)
    await expect(ana.locator("#total")).to_have_text("0")


# -- answering -------------------------------------------------------------------------------


async def test_an_approval_in_the_browser_is_finished_by_a_worker_process_exactly_once(
    ana: Any, site: Site, backend: str
) -> None:
    rid = await site.halt("refund", {"order": "A-1", "amount": 30})
    await open_request(ana, site, rid)
    await expect(ana.locator("#prompt")).to_contain_text("Refund 30 on A-1?")
    await expect(ana.locator("#arguments")).to_contain_text('"amount": 30')
    await screenshot(ana, f"inbox-detail-{backend}")
    await ana.get_by_role("button", name="Approve", exact=True).click()
    await expect(ana.locator("#resolved")).to_contain_text("answered by ana")
    record = await record_of(site, rid)
    assert (record.answer.ok, record.answered_by, record.status) == (True, "ana", "answered")
    await expect(ana.locator("#digest")).to_have_text(record.digest)
    assert site.ledger_lines() == []  # recorded, not resumed: the inbox holds no toolkit

    async with site.worker():
        await expect(ana.locator("#run-status")).to_have_attribute("data-status", "done")
        await expect(ana.locator("#final-text")).to_have_text("Done: refunded 30 on A-1")
    assert site.ledger_lines() == [{"order": "A-1", "amount": 30, "request": rid}]
    assert (await record_of(site, rid)).status == "done"
    await ana.reload()
    await expect(ana.locator("#answer-form")).to_have_count(0)


async def test_a_decline_with_a_reason_is_recorded_and_nothing_is_refunded(
    ana: Any, site: Site
) -> None:
    rid = await site.halt("refund", {"order": "A-2", "amount": 120})
    await open_request(ana, site, rid)
    await ana.fill("#decline-reason", "wrong customer")
    await ana.get_by_role("button", name="Decline").click()
    await expect(ana.locator("#resolved")).to_contain_text("ana")
    record = await record_of(site, rid)
    assert record.answer.ok is False
    assert record.answer.data == {"note": "wrong customer"}
    assert record.answered_by == "ana"

    async with site.worker():
        await expect(ana.locator("#run-status")).to_have_attribute("data-status", "done")
        await expect(ana.locator("#final-text")).to_contain_text("declined")
    assert site.ledger_lines() == []
    await ana.goto(f"{site.url}/history")
    row = ana.locator(f'#history tr[data-request-id="{rid}"]')
    await expect(row).to_contain_text("declined")
    await expect(row).to_contain_text("wrong customer")


async def test_approving_with_edited_arguments_checks_the_schema_then_runs_the_edit(
    ana: Any, site: Site
) -> None:
    rid = await site.halt("refund", {"order": "A-3", "amount": 300})
    await open_request(ana, site, rid)
    edit = ana.locator("#edit-arguments")
    await edit.fill('{"order": "A-3", "amount": 900}')  # over the schema's maximum
    await ana.get_by_role("button", name="Approve with edits").click()
    await expect(ana.locator("#error-arguments")).to_be_visible()
    await expect(ana.locator("main#request")).to_have_attribute("data-status", "pending")
    assert await site.store.answer_record(rid) is None

    await edit.fill('{"order": "A-3", "amount": "lots"')  # not even JSON
    await ana.get_by_role("button", name="Approve with edits").click()
    await expect(ana.locator("#error-arguments")).to_be_visible()
    assert await site.store.answer_record(rid) is None

    await edit.fill('{"order": "A-3", "amount": 45}')
    await ana.get_by_role("button", name="Approve with edits").click()
    await expect(ana.locator("#resolved")).to_contain_text("answered by ana")
    record = await record_of(site, rid)
    assert record.answer.ok is True
    assert record.answer.data == {"arguments": {"order": "A-3", "amount": 45}}

    async with site.worker():
        await expect(ana.locator("#run-status")).to_have_attribute("data-status", "done")
    assert site.ledger_lines() == [{"order": "A-3", "amount": 45, "request": rid}]


async def test_a_schema_form_shows_its_errors_beside_the_fields_then_accepts_typed_values(
    ana: Any, site: Site
) -> None:
    rid = await site.halt("setup", {})
    await open_request(ana, site, rid)
    await expect(ana.locator('[name="field.replicas"]')).to_have_value("2")  # the default
    await ana.fill('[name="field.replicas"]', "0")
    submit = ana.get_by_role("button", name="Submit", exact=True)
    await submit.click()  # the browser's own checks (required, min) keep the form here
    name_check = await ana.locator('[name="field.name"]').evaluate("e => e.validationMessage")
    assert name_check != ""
    assert await site.store.answer_record(rid) is None
    # The server checks the same rules for a client that does not (the form posted as is).
    await ana.evaluate("document.getElementById('answer-form').noValidate = true")
    await submit.click()
    await expect(field_error(ana, "name")).to_contain_text("required")
    await expect(field_error(ana, "replicas")).to_contain_text("minimum")
    await expect(field_error(ana, "tier")).to_have_count(0)
    await expect(ana.locator("main#request")).to_have_attribute("data-status", "pending")
    assert await site.store.answer_record(rid) is None
    await screenshot(ana, "inbox-form-errors")

    await ana.fill('[name="field.name"]', "billing")
    await ana.fill('[name="field.replicas"]', "3")
    await ana.select_option('[name="field.tier"]', "large")
    await ana.check('[name="field.public"]')
    await ana.get_by_role("button", name="Submit", exact=True).click()
    await expect(ana.locator("#resolved")).to_contain_text("answered by ana")
    record = await record_of(site, rid)
    assert record.answer.data == {"name": "billing", "replicas": 3, "tier": "large", "public": True}


async def test_a_question_with_options_is_answered_by_a_person_allowed_only_questions(
    page: Any, site: Site
) -> None:
    rid = await site.halt("region", {})
    approval = await site.halt("refund", {"order": "Q-1", "amount": 5})
    await login(page, site, "bob")
    await open_request(page, site, approval)  # bob may see it, not answer it
    await expect(page.locator("#not-allowed")).to_be_visible()
    approve = page.get_by_role("button", name="Approve", exact=True)
    await expect(approve).to_be_disabled()
    await page.evaluate(ENABLE_BUTTONS)
    await approve.click()  # forced on: refused, nothing recorded
    await expect(page.locator("main#request")).to_have_attribute("data-status", "pending")
    assert await site.store.answer_record(approval) is None

    await open_request(page, site, rid)
    await page.get_by_label("us-east").check()
    await page.get_by_label("mon").check()
    await page.get_by_label("wed").check()
    await page.fill("#q2", "deploy after 18:00")
    await page.get_by_role("button", name="Submit answers").click()
    await expect(page.locator("#resolved")).to_contain_text("answered by bob")
    record = await record_of(site, rid)
    assert record.answer.data == {"answers": ["us-east", ["mon", "wed"], "deploy after 18:00"]}
    assert await site.store.answer_record(approval) is None


async def test_an_expired_request_shows_as_expired_and_cannot_be_answered(
    ana: Any, site: Site
) -> None:
    rid = await site.halt("refund", {"order": "E-1", "amount": 10, "expires": PAST})
    await ana.goto(site.url)
    await expect(ana.locator(f'tr[data-request-id="{rid}"] time.expires')).to_have_class(
        "expires expired"
    )
    await open_request(ana, site, rid)
    approve = ana.get_by_role("button", name="Approve", exact=True)
    await expect(approve).to_be_disabled()
    # Posting anyway (the button forced on) changes nothing but the expired decline.
    await ana.evaluate(ENABLE_BUTTONS)
    await approve.click()
    await expect(ana.locator("main#request")).to_contain_text("expired")
    record = await record_of(site, rid)
    assert record.answer.ok is False
    assert record.answered_by != "ana"
    async with site.worker():
        await expect(ana.locator("#run-status")).to_have_attribute("data-status", "expired")
    assert site.ledger_lines() == []


async def test_a_page_left_on_a_refused_answer_follows_the_run_without_posting_again(
    browser: Any, site: Site
) -> None:
    rid = await site.halt("refund", {"order": "F-1", "amount": 3})
    contexts = [await browser.new_context(), await browser.new_context()]
    try:
        first, second = await contexts[0].new_page(), await contexts[1].new_page()
        await login(first, site, "ana")
        await login(second, site, "cy")
        await open_request(first, site, rid)
        await open_request(second, site, rid)
        posts: list[str] = []
        second.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
        await first.get_by_role("button", name="Approve", exact=True).click()
        await expect(first.locator("#resolved")).to_contain_text("answered by ana")
        # Too late (the live banner may have disabled the button already): a 409.
        await second.evaluate(CLICK_APPROVE)
        await expect(second.locator("#resolved")).to_contain_text("answered by ana")
        async with site.worker():
            await expect(second.locator("#run-status")).to_have_attribute("data-status", "done")
        assert posts == [f"{site.link(rid)}/answer"]  # the refused post, once: no re-post
        assert second.url == site.link(rid)  # following the run went to the request's page
    finally:
        for ctx in contexts:
            await ctx.close()


# -- two people, one request -------------------------------------------------------------------


async def test_two_people_racing_on_one_request_exactly_one_wins(browser: Any, site: Site) -> None:
    rid = await site.halt("refund", {"order": "R-1", "amount": 77})
    contexts = [await browser.new_context(), await browser.new_context()]
    try:
        pages = {}
        for name, ctx in zip(("ana", "cy"), contexts, strict=True):
            pages[name] = await ctx.new_page()
            await login(pages[name], site, name)
            await open_request(pages[name], site, rid)
        # Both click at once: the second click must not wait for the first one's live banner
        # (which disables the button), so each page clicks from inside in one step.
        await asyncio.gather(*(p.evaluate(CLICK_APPROVE) for p in pages.values()))
        for p in pages.values():
            await expect(p.locator("#resolved")).to_contain_text("answered by")
        record = await record_of(site, rid)
        winner = record.answered_by
        assert winner in pages
        for p in pages.values():
            await expect(p.locator("#resolved")).to_contain_text(f"answered by {winner}")
        loser = pages["cy" if winner == "ana" else "ana"]
        await expect(loser.locator("#error")).to_contain_text(winner)
        async with site.worker():
            await expect(pages[winner].locator("#run-status")).to_have_attribute(
                "data-status", "done"
            )
        assert site.ledger_lines() == [{"order": "R-1", "amount": 77, "request": rid}]
    finally:
        for ctx in contexts:
            await ctx.close()


async def test_an_open_page_learns_live_that_someone_else_answered(
    browser: Any, site: Site
) -> None:
    rid = await site.halt("refund", {"order": "L-1", "amount": 8})
    contexts = [await browser.new_context(), await browser.new_context()]
    try:
        watching, answering = await contexts[0].new_page(), await contexts[1].new_page()
        await login(watching, site, "ana")
        await login(answering, site, "cy")
        await open_request(watching, site, rid)
        await open_request(answering, site, rid)
        await answering.get_by_role("button", name="Approve", exact=True).click()
        await expect(answering.locator("#resolved")).to_contain_text("answered by cy")
        banner = watching.locator("#banner")  # pushed over server-sent events, no reload
        await expect(banner).to_contain_text("cy")
        await expect(watching.get_by_role("button", name="Approve", exact=True)).to_be_disabled()
    finally:
        for ctx in contexts:
            await ctx.close()


# -- hostile content ---------------------------------------------------------------------------

HOSTILE = (
    '<script>window.__pwned = "script"</script>'
    '<img src="x" onerror="window.__pwned = \'img\'"> Refund?'
)


async def test_html_and_script_in_a_prompt_and_arguments_are_shown_as_text_and_never_run(
    ana: Any, site: Site
) -> None:
    dialogs: list[str] = []
    ana.on("dialog", lambda d: dialogs.append(d.message))
    order = '<b id="boom">X-1</b><script>alert(1)</script>'
    rid = await site.halt("refund", {"order": order, "amount": 1, "prompt": HOSTILE})
    await ana.goto(site.url)
    row = ana.locator(f'tr[data-request-id="{rid}"]')
    await expect(row.locator(".prompt")).to_contain_text('<img src="x" onerror=')
    await expect(row.locator(".arguments")).to_contain_text('<b id=\\"boom\\">')
    await open_request(ana, site, rid)
    await expect(ana.locator("#prompt")).to_contain_text("<script>window.__pwned")
    await expect(ana.locator("#arguments")).to_contain_text("<script>alert(1)</script>")
    await ana.locator("#context summary").click()
    await expect(ana.locator("#context")).to_contain_text("<script>alert(1)</script>")
    assert await ana.evaluate("window.__pwned === undefined")
    assert await ana.locator("#boom, #prompt img, #prompt script").count() == 0
    assert dialogs == []


# -- co-mounted on `toolnexus serve` -----------------------------------------------------------


async def test_the_inbox_co_mounted_by_toolnexus_serve_works_below_slash_inbox(
    page: Any, site: Site, tmp_path: Path
) -> None:
    users = write_users(tmp_path / "users.json")
    rid = await site.halt("refund", {"order": "S-1", "amount": 12})
    async with serve_process(site, "--a2a", "--inbox", "--users", str(users)) as url:
        await page.goto(f"{url}/inbox")
        await expect(page).to_have_url(f"{url}/inbox/login")
        await page.fill("#token", TOKENS["cy"])
        await page.get_by_role("button", name="Sign in").click()
        await expect(page.locator("#user")).to_have_text("cy")
        await expect(page).to_have_url(f"{url}/inbox/")
        await page.locator(f'tr[data-request-id="{rid}"] a.request-link').click()
        await expect(page).to_have_url(f"{url}/inbox/requests/{rid}")
        css = await page.evaluate(
            "getComputedStyle(document.querySelector('button.approve')).backgroundColor"
        )
        assert css not in ("", "rgba(0, 0, 0, 0)", "rgb(239, 239, 239)")  # the stylesheet loaded
        await page.get_by_role("button", name="Approve", exact=True).click()
        await expect(page.locator("#resolved")).to_contain_text("answered by cy")
        async with site.worker():
            await expect(page.locator("#run-status")).to_have_attribute("data-status", "done")
    assert site.ledger_lines() == [{"order": "S-1", "amount": 12, "request": rid}]
