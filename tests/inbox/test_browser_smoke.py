"""The browser harness itself, on a small starlette page served by real uvicorn: chromium
loads it, posts a form without JavaScript, runs the page's script, and a screenshot is kept."""

from __future__ import annotations

import asyncio
import html
import os
import sys
from typing import Any

import pytest
from browser_support import screenshot, served
from playwright.async_api import expect
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from png_support import read_png_size

pytestmark = pytest.mark.asyncio(loop_scope="module")


def counter_app() -> Starlette:
    clicks: list[str] = []

    async def home(request: Request) -> Response:
        shown = "".join(f"<li>{html.escape(c)}</li>" for c in clicks)
        return HTMLResponse(
            "<!doctype html><title>smoke</title>"
            f'<p id="count">{len(clicks)}</p><ul id="notes">{shown}</ul>'
            '<form method="post" action="/click"><input name="note">'
            '<button type="submit">Count</button></form>'
            '<p id="scripted"></p>'
            "<script>document.getElementById('scripted').textContent = 'script ran';</script>"
        )

    async def click(request: Request) -> Response:
        form = await request.form()
        clicks.append(str(form.get("note", "")))
        return RedirectResponse("/", status_code=303)

    return Starlette(routes=[Route("/", home), Route("/click", click, methods=["POST"])])


async def test_chromium_posts_a_form_to_a_page_on_real_uvicorn(page: Any) -> None:
    async with served(counter_app()) as url:
        await page.goto(url)
        await expect(page.locator("#count")).to_have_text("0")
        await expect(page.locator("#scripted")).to_have_text("script ran")
        await page.fill("input[name=note]", "<b>bold</b>")
        await page.get_by_role("button", name="Count").click()
        await expect(page.locator("#count")).to_have_text("1")
        await expect(page.locator("#notes li")).to_have_text("<b>bold</b>")
        assert await page.locator("#notes b").count() == 0


async def test_a_screenshot_is_kept_as_a_test_artifact(page: Any) -> None:
    async with served(counter_app()) as url:
        await page.goto(url)
        await expect(page.locator("#count")).to_have_text("0")
        path = await screenshot(page, "smoke-counter")
    width, height = read_png_size(path.read_bytes())
    assert width == 1200
    assert height >= 800


async def test_two_contexts_keep_their_own_cookies(browser: Any) -> None:
    async def remember(request: Request) -> Response:
        response = HTMLResponse(f'<p id="who">{html.escape(request.cookies.get("who", "-"))}</p>')
        if "as" in request.query_params:
            response.set_cookie("who", request.query_params["as"], httponly=True)
        return response

    app = Starlette(routes=[Route("/", remember)])
    async with served(app) as url:
        first, second = await browser.new_context(), await browser.new_context()
        try:
            a, b = await first.new_page(), await second.new_page()
            await a.goto(f"{url}/?as=ana")
            await b.goto(f"{url}/?as=bob")
            await a.goto(url)
            await b.goto(url)
            await expect(a.locator("#who")).to_have_text("ana")
            await expect(b.locator("#who")).to_have_text("bob")
        finally:
            await first.close()
            await second.close()


@pytest.mark.parametrize(("ci", "outcome"), [("true", "1 error"), ("", "1 skipped")])
async def test_a_missing_chromium_fails_the_browser_tests_under_ci_and_skips_them_otherwise(
    ci: str, outcome: str
) -> None:
    env = {**os.environ, "TOOLNEXUS_CHROMIUM": "/nonexistent/chromium", "CI": ci}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pytest",
        f"{__file__}::test_two_contexts_keep_their_own_cookies",
        "-q",
        "-p",
        "no:cacheprovider",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 50)
    assert outcome in out.decode(), out.decode()
    assert "/nonexistent/chromium is missing" in out.decode()
    assert proc.returncode == (1 if ci else 0)
