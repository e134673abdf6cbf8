"""A web page on another site, in real Chromium, against a toolkit served without a token on
loopback: whatever it sends, no run starts and no tool runs (`toolnexus.security`).

The page is served from another loopback port (another origin, as a site the approver happens
to open). Its script sends the drive-by of issue 22 — a ``message/send`` that starts a refund on
a context it names, then a follow-up on that context that says "yes" — as a "simple" request
(``mode: "no-cors"``, no preflight) and as a JSON request (preflighted). The refund tool writes
a ledger file each time it runs with an answer, outside the serving process's memory.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a_support import Serve, ledger_lines, rpc
from browser_support import TIMEOUT_MS, chromium, screenshot, served
from playwright.async_api import expect
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from toolnexus.security import secure
from toolnexus.testing import ScriptedModel

JSON = {"content-type": "application/json"}


def _message(rpc_id: int, text: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rpc_id,
        "method": "message/send",
        "params": {
            "message": {
                "role": "user",
                "messageId": f"m-{rpc_id}",
                "contextId": "drive-by",
                "parts": [{"kind": "text", "text": text}],
            },
            "configuration": {"blocking": True},
        },
    }


ATTACK = """<!doctype html><title>cute cats</title><p id="done"></p><script>
const target = %(target)s, type = %(type)s, start = %(start)s, approve = %(approve)s;
const simple = (body) => fetch(target, {method: "POST", mode: "no-cors",
    headers: {"Content-Type": type}, body: JSON.stringify(body)})
  .then((r) => "sent " + r.type, (e) => "failed " + e.name);
const preflighted = (body) => fetch(target, {method: "POST",
    headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)})
  .then((r) => "read " + r.status, (e) => "blocked " + e.name);
(async () => {
  const seen = [await simple(start), await simple(approve),
                await preflighted(start), await preflighted(approve)];
  document.getElementById("done").textContent = seen.join(", ");
})();
</script>"""


def attacker(target: str, content_type: str) -> Starlette:
    """The other site: one page whose script attacks ``target``."""

    async def home(request: Request) -> Response:
        values = {
            "target": json.dumps(target),
            "type": json.dumps(content_type),
            "start": json.dumps(_message(1, "Refund order 42")),
            "approve": json.dumps(_message(2, "yes")),
        }
        return HTMLResponse(ATTACK % values)

    return Starlette(routes=[Route("/", home)])


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
)
async def test_a_page_on_another_site_cannot_start_or_approve_a_refund(
    serve_refunds: Serve, model: ScriptedModel, ledger: Path, content_type: str, request: Any
) -> None:
    served_app = await serve_refunds()
    async with served(attacker(served_app.url + "/", content_type)) as site, chromium() as b:
        assert site.rsplit(":", 1)[1] != served_app.url.rsplit(":", 1)[1]  # another origin
        page = await b.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        try:
            await page.goto(site)
            # Every fetch has settled: the simple ones were sent (their answers are opaque to
            # the page), the preflighted ones never left the browser.
            await expect(page.locator("#done")).to_have_text(
                "sent opaque, sent opaque, blocked TypeError, blocked TypeError", timeout=TIMEOUT_MS
            )
        except BaseException:
            await screenshot(page, f"FAILED-{request.node.name}")
            raise
    assert ledger_lines(ledger) == []  # the refund never ran
    assert model.requests == []  # no run started at all
    async with httpx.AsyncClient() as http:
        listed = await rpc(http, served_app.url, "tasks/list", {})
    assert listed["result"]["tasks"] == []


async def test_the_preflight_of_a_page_on_another_site_is_refused_without_cors_headers(
    serve_refunds: Serve,
) -> None:
    served_app = await serve_refunds(mcp={"name": "refunds"})
    preflight = {
        "origin": "http://127.0.0.1:9",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
    }
    async with httpx.AsyncClient() as http:
        for path in ("/", "/mcp", "/.well-known/agent-card.json"):
            r = await http.options(served_app.url + path, headers=preflight)
            assert r.status_code == 403, path
            assert not [h for h in r.headers if h.startswith("access-control-")], path


def _form_app(seen: list[str]) -> Starlette:
    """A page with a form that posts back to its own origin, under ``no-referrer``."""

    async def home(request: Request) -> Response:
        return HTMLResponse(
            '<!doctype html><form method="post" action="/echo"><input name="note" value="hi">'
            '<button type="submit">Send</button></form>',
            headers={"referrer-policy": "no-referrer"},
        )

    async def echo(request: Request) -> Response:
        seen.append(str((await request.form()).get("note")))
        return JSONResponse({"seen": len(seen)})

    return Starlette(routes=[Route("/", home), Route("/echo", echo, methods=["POST"])])


async def test_a_pages_own_form_posts_but_the_same_form_from_another_site_is_refused(
    request: Any,
) -> None:
    seen: list[str] = []
    guarded = secure(_form_app(seen))
    async with served(guarded) as own, chromium() as b:

        async def foreign(request: Request) -> Response:
            return HTMLResponse(
                f'<!doctype html><form method="post" action="{own}/echo">'
                '<input name="note" value="forged"><button type="submit">Send</button></form>'
            )

        async with served(Starlette(routes=[Route("/", foreign)])) as other:
            page = await b.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            try:
                # Same origin: "Origin: null" under no-referrer, vouched for by Sec-Fetch-Site.
                await page.goto(own)
                await page.get_by_role("button", name="Send").click()
                await expect(page.locator("body")).to_contain_text('{"seen":1}', timeout=TIMEOUT_MS)
                await page.goto(other)
                await page.get_by_role("button", name="Send").click()
                await expect(page.locator("body")).to_contain_text(
                    "Forbidden: a page from", timeout=TIMEOUT_MS
                )
            except BaseException:
                await screenshot(page, f"FAILED-{request.node.name}")
                raise
    assert seen == ["hi"]
