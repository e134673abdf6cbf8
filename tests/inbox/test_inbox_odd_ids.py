"""Any request id is routable: an id ending in ``/status``, ``/answer`` or ``/cancel``, one with
``%``, ``?``, ``#``, spaces, unicode, or one that is ``.`` or ``..``, reaches its own request on
the detail, status, answer and cancel routes of the pages and the JSON API — never the request
whose id is its prefix — on the memory store, SQLite and Postgres, at the root and mounted
below a path, through the ASGI app and through real uvicorn."""

from __future__ import annotations

import html
import re
from typing import Any

import httpx
import pytest
from browser_support import served
from inbox_support import TOKENS, Visitor, halted, make_app, visitor
from starlette.applications import Starlette
from starlette.routing import Mount

from toolnexus.inbox.html import quote_id

ODD = [
    "abc/status",
    "x/answer",
    "y/cancel",
    "a/b/c/status",
    "status",
    "requests",
    "50%",
    "a%2Fb",
    "why?really=yes",
    "frag#ment",
    "two words ",
    "é/ü ✓",
    ".",
    "..",
    "~.",
    "~home",
    "/leading",
    "trailing/",
]
"""Each with, where it holds a ``/``, a decoy: the request named by its part before the last
``/`` (``abc`` beside ``abc/status``), which a wrong route would reach instead."""

BEARER = {"authorization": f"Bearer {TOKENS['ana']}"}


def decoys() -> list[str]:
    return sorted({rid.rsplit("/", 1)[0] for rid in ODD if "/" in rid} - set(ODD) - {""})


async def halt_all(store: Any) -> None:
    for rid in [*ODD, *decoys()]:
        await store.save_halt(halted(rid))


async def untouched(store: Any, rids: list[str]) -> None:
    for rid in rids:
        assert await store.answer_record(rid) is None, rid


def path(rid: str, action: str = "") -> str:
    return f"/requests/{quote_id(rid)}" + (f"/{action}" if action else "")


def shown_id(page: str) -> str:
    found = re.search(r'<main id="request" data-request-id="([^"]*)"', page)
    assert found is not None, page[:500]
    return html.unescape(found.group(1))


def test_an_id_written_by_quote_id_reads_back_from_the_raw_path() -> None:
    from toolnexus.inbox.paths import request_target, unquote_id

    for rid in [*ODD, "%7E.", "100%25"]:
        segment = quote_id(rid)
        assert "/" not in segment
        assert segment not in (".", "..")
        assert unquote_id(segment) == rid
        for action in (None, "status", "answer", "cancel"):
            raw = f"/inbox/api/requests/{segment}" + (f"/{action}" if action else "")
            scope = {
                "path": httpx.URL(raw).path,
                "raw_path": raw.encode(),
                "root_path": "/inbox",
            }
            assert request_target(scope) == (rid, action)
    assert request_target({"path": "/requests/a/b", "raw_path": b"/requests/a/b"}) is None
    assert request_target({"path": "/requests/\udcff", "raw_path": b"/requests/%ff"}) is None


async def test_every_odd_id_reaches_its_own_page_and_status(store: Any) -> None:
    await halt_all(store)
    app = make_app(store)
    async with visitor(app) as ana:
        for rid in ODD:
            page = await ana.get(path(rid))
            assert page.status_code == 200, (rid, page.text[:300])
            assert shown_id(page.text) == rid
            assert f'action="{path(rid, "answer")}"' in page.text
            assert f'action="{path(rid, "cancel")}"' in page.text
            status = await ana.get(path(rid, "status"))
            assert status.json()["id"] == rid, rid
            detail = await ana.get(f"/api{path(rid)}", headers=BEARER)
            assert detail.json()["request"]["id"] == rid, rid
    await app.aclose()


async def test_every_odd_id_is_answered_at_its_own_request(store: Any) -> None:
    await halt_all(store)
    app = make_app(store)
    async with visitor(app) as ana:
        for i, rid in enumerate(ODD):
            if i % 2:
                done = await ana.answer(quote_id(rid), action="approve")
                assert done.status_code == 303, (rid, done.text[:300])
                assert done.headers["location"] == path(rid)
            else:
                api = await ana.client.post(
                    f"/api{path(rid, 'answer')}", json={"ok": True}, headers=BEARER
                )
                assert api.status_code == 200, (rid, api.text)
                assert api.json()["id"] == rid
            record = await store.answer_record(rid)
            assert record is not None
            assert (record.request_id, record.answered_by) == (rid, "ana")
            again = await ana.get(path(rid, "answer"))  # a reload of the action URL
            assert (again.status_code, again.headers["location"]) == (303, path(rid))
    await untouched(store, decoys())
    await app.aclose()


async def test_every_odd_id_is_cancelled_at_its_own_request(store: Any) -> None:
    await halt_all(store)
    app = make_app(store)
    async with visitor(app) as ana:
        for i, rid in enumerate(ODD):
            if i % 2:
                done = await ana.post(path(rid, "cancel"), {"reason": "odd"})
                assert (done.status_code, done.headers["location"]) == (303, path(rid))
            else:
                api = await ana.client.post(
                    f"/api{path(rid, 'cancel')}", json={"reason": "odd"}, headers=BEARER
                )
                assert api.status_code == 200, (rid, api.text)
            status = (await ana.get(path(rid, "status"))).json()
            assert (status["id"], status["status"]) == (rid, "cancelled")
    await untouched(store, decoys())
    await app.aclose()


async def test_the_list_links_every_odd_id_to_its_own_page(store: Any) -> None:
    await halt_all(store)
    app = make_app(store)
    async with visitor(app) as ana:
        listed = await ana.get("/", params={"per_page": 200})
        links = re.findall(r'<a class="request-link" href="([^"]+)"', listed.text)
        assert len(links) == len(ODD) + len(decoys())
        reached = [shown_id((await ana.get(html.unescape(link))).text) for link in links]
        assert sorted(reached) == sorted([*ODD, *decoys()])
    await app.aclose()


async def test_a_path_that_names_no_request_is_404_and_a_wrong_method_405(store: Any) -> None:
    await store.save_halt(halted("a/b"))
    app = make_app(store)
    async with visitor(app) as ana:
        assert (await ana.get("/requests/a/b")).status_code == 404  # the id was not encoded
        assert (await ana.get("/requests/a%2Fb/edit")).status_code == 404
        assert (await ana.get("/requests/")).status_code == 404
        assert (await ana.get("/api/requests/a%2Fb/status", headers=BEARER)).status_code == 404
        wrong = await ana.post("/requests/a%2Fb", {})
        assert (wrong.status_code, wrong.headers["allow"]) == (405, "GET")
        assert (await ana.get("/requests/a%2Fb")).status_code == 200
    await untouched(store, ["a/b"])
    await app.aclose()


@pytest.mark.parametrize("mount", ["/approvals", "/requests"])
async def test_odd_ids_are_routed_below_a_mount_point_over_real_uvicorn(
    store: Any, mount: str
) -> None:
    await halt_all(store)
    inbox = make_app(store)
    host = Starlette(routes=[Mount(mount, app=inbox)])
    async with served(host) as url, httpx.AsyncClient(base_url=url + mount) as http:
        ana = Visitor(http)
        await ana.login()
        for rid in ODD:
            page = await ana.get(path(rid))
            assert shown_id(page.text) == rid
            assert f'action="{mount}{path(rid, "answer")}"' in page.text
            done = await ana.post(path(rid, "answer"), {"action": "approve"})
            assert done.headers["location"] == f"{mount}{path(rid)}", rid
            status = (await ana.get(path(rid, "status"))).json()
            assert (status["id"], status["status"]) == (rid, "answered")
    await untouched(store, decoys())
    await inbox.aclose()
