"""The inbox marks what the model or a tool slipped into a request: a prompt, an argument and
the model's text carrying a right-to-left override, a screen clear, a clipboard write (OSC 52),
a hidden link (OSC 8), a zero width space and an 8-bit CSI — from a real run halted through a
client against a scripted model, into a real SQLite file, served on real uvicorn. Each shows
as a visible mark (``⟨U+202E⟩`` in a ``<span class="invisible">``), nothing arrives raw, the
digest is that of exactly what runs, the edit box posts back exactly the arguments, and the
JSON API returns the data unmarked. Chromium renders the marks as text.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
from browser_support import served
from inbox_support import TOKENS, Visitor, make_app
from playwright.async_api import expect

from toolnexus import Tool, ToolContext, ToolResult, create_client, pending
from toolnexus.stores.checks import call_digest
from toolnexus.stores.sqlite import SqliteStore
from toolnexus.testing import ScriptedModel, call, tool_calls

pytestmark = pytest.mark.asyncio(loop_scope="module")

CLEAR = "\x1b[2J"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4K\x07"
LINK = "\x1b]8;;http://evil.example\x1b\\refund 5\x1b]8;;\x1b\\"
RLO = "\u202e"
ORDER = f"A-1 {RLO}0005 {CLEAR}"
ARGS = {"order": ORDER, "note": f"{CLIPBOARD}{LINK}\u200b \x9b2J"}
REPLY = f"Refunding {RLO}0005 now. {LINK}"
USER = f"please refund {RLO}0005"

RLO_MARK = '<span class="invisible" title="U+202E RIGHT-TO-LEFT OVERRIDE">⟨U+202E⟩</span>'
ESC_MARK = '<span class="invisible" title="U+001B ESCAPE">␛</span>'
ZWSP_MARK = '<span class="invisible" title="U+200B ZERO WIDTH SPACE">⟨U+200B⟩</span>'
CSI_MARK = '<span class="invisible" title="U+009B CONTROL SEQUENCE INTRODUCER">\\x9b</span>'
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"order": {"type": "string"}, "note": {"type": "string"}},
}


def refund_tool() -> Tool:
    async def refund(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        if ctx is None or ctx.answer is None:
            return pending(kind="approval", prompt=f"Refund order {args['order']}?")
        return ToolResult("refunded")

    return Tool("refund", "Refund an order (needs approval).", SCHEMA, "native", refund)


def raw_marks(text: str) -> list[str]:
    """Characters a reader could not see or that reorder text, but for HTML's white space."""
    return [
        c
        for c in text
        if c not in "\t\n\r" and unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")
    ]


def section(page: str, element_id: str) -> str:
    """The markup inside the element with ``element_id`` (the first closing tag of its kind)."""
    found = re.search(rf'<(\w+)[^>]*\bid="{element_id}"[^>]*>(.*?)</\1>', page, re.S)
    assert found is not None, element_id
    return found.group(2)


@dataclass
class Halted:
    url: str
    store: SqliteStore
    rid: str


@pytest_asyncio.fixture(loop_scope="module")
async def halted(tmp_path: Path) -> AsyncIterator[Halted]:
    """A refund halted on its approval by a real run, and the inbox served over its store."""
    store = SqliteStore(tmp_path / "runs.db", poll_interval=0.02)
    script = [tool_calls(call("refund", ARGS), text=REPLY)]
    async with ScriptedModel(script) as model:
        async with create_client(
            base_url=model.openai_base_url, model="m-1", api_key="sk-test-0123456789", store=store
        ) as client:
            result = await client.run(USER, [refund_tool()])
    assert result.pending is not None
    app = make_app(store)
    try:
        async with served(app) as url:
            yield Halted(url, store, result.pending.id)
    finally:
        await app.aclose()
        await store.aclose()


@asynccontextmanager
async def signed_in(url: str) -> AsyncIterator[Visitor]:
    """ana, signed in through the login form over real HTTP."""
    async with httpx.AsyncClient(base_url=url) as client:
        visitor = Visitor(client)
        await visitor.login("ana")
        yield visitor


async def test_the_detail_page_marks_each_character_in_the_prompt_arguments_and_reply(
    halted: Halted,
) -> None:
    async with signed_in(halted.url) as visitor:
        response = await visitor.get(f"/requests/{halted.rid}")
    assert response.status_code == 200
    page = response.text
    assert raw_marks(page) == []
    assert "\u202e" not in page
    assert "\x1b" not in page

    prompt = section(page, "prompt")
    assert f"Refund order A-1 {RLO_MARK}0005 {ESC_MARK}[2J?" in prompt
    arguments = section(page, "arguments")
    assert f"A-1 {RLO_MARK}0005" in arguments  # the JSON's string, its override marked
    assert "\\u001b[2J" in arguments  # (JSON had escaped ESC already: visible too)
    assert "\\u0007\\u001b]8;;http://evil.example\\u001b\\\\refund 5" in arguments
    assert f"{ZWSP_MARK} {CSI_MARK}2J" in arguments
    assert f"Refunding {RLO_MARK}0005 now. {ESC_MARK}]8;;http://evil.example{ESC_MARK}" in page
    assert f"please refund {RLO_MARK}0005" in page  # the user's turn, in the context

    # the approver sees the digest of exactly what runs, as before
    assert section(page, "digest") == call_digest("refund", json.dumps(ARGS, separators=(",", ":")))


async def test_the_edit_box_shows_escapes_and_posts_back_exactly_the_arguments(
    halted: Halted,
) -> None:
    async with signed_in(halted.url) as visitor:
        page = (await visitor.get(f"/requests/{halted.rid}")).text
        box = html.unescape(section(page, "edit-arguments"))
        assert "\\u202e0005" in box
        assert raw_marks(box.replace("\n", "")) == []
        assert json.loads(box) == ARGS
        done = await visitor.answer(halted.rid, action="approve_edited", arguments=box)
        assert done.status_code == 303, done.text
        history = (await visitor.get("/history")).text
    assert raw_marks(history) == []
    assert f"Refund order A-1 {RLO_MARK}0005 {ESC_MARK}[2J?" in section(history, "history")
    record = await halted.store.answer_record(halted.rid)
    assert record is not None
    assert record.answer.data == {"arguments": ARGS}
    assert record.original is not None
    assert record.digest == record.original["digest"]  # the same call: not a byte changed


async def test_the_list_marks_the_prompt_and_the_arguments(halted: Halted) -> None:
    async with signed_in(halted.url) as visitor:
        page = (await visitor.get("/")).text
    assert raw_marks(page) == []
    row = section(page, "requests")
    assert f"Refund order A-1 {RLO_MARK}0005 {ESC_MARK}[2J?" in row
    assert f"A-1 {RLO_MARK}0005" in row


async def test_the_json_api_returns_the_data_unmarked(halted: Halted) -> None:
    headers = {"authorization": f"Bearer {TOKENS['ana']}"}
    async with httpx.AsyncClient(base_url=halted.url, headers=headers) as client:
        listed = (await client.get("/api/pending")).json()
        detail = (await client.get(f"/api/requests/{halted.rid}")).json()
    [entry] = listed["requests"]
    assert entry["prompt"] == f"Refund order {ORDER}?"
    assert detail["request"]["prompt"] == f"Refund order {ORDER}?"
    assert json.loads(detail["arguments"]) == ARGS


async def test_chromium_renders_the_marks_as_text(page: Any, halted: Halted) -> None:
    await page.goto(f"{halted.url}/login")
    await page.fill("#token", TOKENS["ana"])
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#user")).to_have_text("ana")
    await page.goto(f"{halted.url}/requests/{halted.rid}")
    prompt = page.locator("#prompt .prompt")
    await expect(prompt).to_have_text("Refund order A-1 ⟨U+202E⟩0005 ␛[2J?")
    shown = await prompt.inner_text()
    assert RLO not in shown
    assert "\x1b" not in shown
    arguments = await page.locator("#arguments").inner_text()
    assert "A-1 ⟨U+202E⟩0005" in arguments
    assert "⟨U+200B⟩ \\x9b2J" in arguments
    assert raw_marks(arguments) == []
    mark = page.locator("#prompt .invisible").first
    await expect(mark).to_have_attribute("title", "U+202E RIGHT-TO-LEFT OVERRIDE")
    box = await page.locator("#edit-arguments").input_value()
    assert json.loads(box) == ARGS  # the edit box holds exactly the arguments
