"""A request whose stored checkpoint was corrupted (garbage written into its row with sqlite3 or
psycopg, under the store) gets clear answers: its page and its JSON routes say it cannot be
read — never where the database is — the list still renders with the row marked, an answer
records nothing, and its run can still be cancelled from the page and the API, after which the
store holds it cancelled. On a SQLite file and on the real Postgres."""

from __future__ import annotations

import json
import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from inbox_support import TOKENS, halted, make_app, make_store, visitor

from pg_support import pg_connect

GARBAGE = ["{not json", json.dumps({"version": 999, "messages": []}), "[]"]
BEARER = {"authorization": f"Bearer {TOKENS['ana']}"}


class Site:
    """A store of ``kind`` with ``a-1``, ``c-1`` (both corrupted) and ``b-1`` (readable)."""

    def __init__(self, kind: str, tmp_path: Path, pg_url: str | None) -> None:
        self.kind, self.tmp_path, self.pg_url = kind, tmp_path, pg_url
        self.store: Any = None

    async def open(self, garbage: str) -> Any:
        self.store = await make_store(self.kind, self.tmp_path, self.pg_url)
        for rid in ("a-1", "b-1", "c-1"):
            await self.store.save_halt(halted(rid, prompt=f"Deploy {rid}?"))
        for rid in ("a-1", "c-1"):
            self.corrupt(rid, garbage)
        return self.store

    def corrupt(self, rid: str, text: str) -> None:
        if self.kind == "sqlite":
            with closing(sqlite3.connect(self.tmp_path / "inbox.db", isolation_level=None)) as c:
                c.execute("UPDATE halts SET checkpoint = ? WHERE request_id = ?", (text, rid))
        else:
            assert self.pg_url is not None
            with pg_connect(self.pg_url) as conn:
                conn.execute(
                    "UPDATE toolnexus_halts SET checkpoint = %s WHERE request_id = %s",
                    (text, rid.encode()),
                )

    def secrets_of_the_server(self) -> list[str]:
        """What a reply must not name: where the database is."""
        if self.kind == "sqlite":
            return [str(self.tmp_path), "inbox.db"]
        where = re.fullmatch(r"PostgresStore\('PostgreSQL (.*)'\)", repr(self.store))
        assert where is not None
        return [where.group(1), "PostgreSQL"]


@pytest.fixture(params=["sqlite", "postgres"])
def site(request: pytest.FixtureRequest, tmp_path: Path) -> Site:
    pg = str(request.getfixturevalue("pg_url")) if request.param == "postgres" else None
    return Site(request.param, tmp_path, pg)


def says_nothing_of(text: str, site: Site) -> None:
    for secret in site.secrets_of_the_server():
        assert secret not in text


@pytest.mark.parametrize("garbage", GARBAGE, ids=["not-json", "future-version", "a-list"])
async def test_its_page_and_json_routes_say_it_cannot_be_read_and_not_where(
    site: Site, garbage: str
) -> None:
    store = await site.open(garbage)
    app = make_app(store)
    async with visitor(app) as ana:
        page = await ana.get("/requests/a-1")
        assert page.status_code == 500
        assert 'data-request-id="a-1" data-status="unreadable"' in page.text
        error = re.search(r'<p class="error" id="error">([^<]*)</p>', page.text)
        assert error is not None
        assert error.group(1).startswith("The stored state of request a-1 cannot be read (")
        assert error.group(1).endswith("it cannot be answered. Its run can still be cancelled.")
        assert 'id="cancel-form" action="/requests/a-1/cancel"' in page.text
        says_nothing_of(page.text, site)

        status = await ana.get("/requests/a-1/status")
        api = await ana.get("/api/requests/a-1", headers=BEARER)
        for reply in (status, api):
            assert reply.status_code == 500
            assert reply.headers["content-type"] == "application/json"
            body = reply.json()
            assert (body["id"], body["unreadable"]) == ("a-1", True)
            assert "cannot be read" in body["error"]
            says_nothing_of(reply.text, site)
    await app.aclose()
    await store.aclose()


async def test_the_list_still_renders_with_the_row_marked(site: Site) -> None:
    store = await site.open(GARBAGE[0])
    app = make_app(store)
    async with visitor(app) as ana:
        listed = await ana.get("/")
        assert listed.status_code == 200
        assert '<span id="total">3</span>' in listed.text
        row = re.search(r'<tr data-request-id="a-1"[^>]*>', listed.text)
        assert row is not None
        assert 'data-unreadable="true"' in row.group(0)
        assert "Its stored state cannot be read: open it to cancel its run." in listed.text
        readable = re.search(r'<tr data-request-id="b-1"[^>]*>', listed.text)
        assert readable is not None
        assert "data-unreadable" not in readable.group(0)
        api = await ana.get("/api/pending", headers=BEARER)
        assert sorted(r["id"] for r in api.json()["requests"]) == ["a-1", "b-1", "c-1"]
    await app.aclose()
    await store.aclose()


async def test_an_answer_records_nothing_and_says_why_without_the_path(site: Site) -> None:
    store = await site.open(GARBAGE[0])
    app = make_app(store)
    async with visitor(app) as ana:
        posted = await ana.answer("a-1", action="approve")
        assert posted.status_code == 500
        assert "The stored state of request a-1 cannot be read" in posted.text
        says_nothing_of(posted.text, site)
        api = await ana.client.post("/api/requests/a-1/answer", json={"ok": True}, headers=BEARER)
        assert api.status_code == 500
        assert "cannot be read" in api.json()["error"]
        says_nothing_of(api.text, site)
    assert await store.answer_record("a-1") is None
    await app.aclose()
    await store.aclose()


async def test_its_run_is_cancelled_from_the_page_and_from_the_api(site: Site) -> None:
    store = await site.open(GARBAGE[1])
    app = make_app(store)
    async with visitor(app) as ana:
        done = await ana.post("/requests/a-1/cancel", {"reason": "corrupt"})
        assert (done.status_code, done.headers["location"]) == (303, "/requests/a-1")
        page = await ana.get("/requests/a-1")
        assert page.status_code == 200
        assert 'data-status="cancelled"' in page.text
        assert "cancelled by ana" in page.text
        api = await ana.client.post(
            "/api/requests/c-1/cancel", json={"reason": "corrupt"}, headers=BEARER
        )
        assert api.status_code == 200, api.text
        assert api.json()["status"] == "cancelled"
        status = (await ana.get("/requests/a-1/status")).json()
        assert (status["status"], status["answered_by"]) == ("cancelled", "ana")
        listed = await ana.get("/")
        assert 'data-request-id="a-1"' not in listed.text
    for rid in ("a-1", "c-1"):
        record = await store.answer_record(rid)
        assert record is not None
        assert (record.status, record.answered_by) == ("cancelled", "ana")
    assert await store.answer_record("b-1") is None
    await app.aclose()
    await store.aclose()


async def test_a_user_limited_to_some_kinds_may_not_cancel_a_request_of_unknown_kind(
    site: Site,
) -> None:
    store = await site.open(GARBAGE[0])
    app = make_app(store)
    async with visitor(app, "bob") as bob:  # bob may answer questions only
        page = await bob.get("/requests/a-1")
        assert 'id="not-allowed"' in page.text
        assert 'id="cancel-form"' not in page.text
        refused = await bob.post("/requests/a-1/cancel", {})
        assert refused.status_code == 403
        assert "bob may not cancel a request whose kind cannot be read" in refused.text
    assert await store.answer_record("a-1") is None
    await app.aclose()
    await store.aclose()
