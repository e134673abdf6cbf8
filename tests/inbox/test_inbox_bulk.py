"""Many requests answered at once, and one answered from the list: each through the intake,
recorded once with who; a partial failure says which failed and why and leaves the rest
recorded; a double submit records nothing twice. Over the page (forms with CSRF) and the JSON
API, on every store."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from inbox_support import TOKENS, halted, make_app, visitor

from toolnexus.suspension import Answer, format_timestamp

PAST = format_timestamp(datetime.now(UTC) - timedelta(minutes=1))


def section(page: str) -> str:
    """The bulk result at the top of the list."""
    return page.split('<section id="bulk-result"', 1)[1].split("</section>", 1)[0]


def failed_items(page: str) -> dict[str, str]:
    """``{request id: why}`` of the failures the page lists."""
    return dict(re.findall(r'<li data-request-id="([^"]+)" data-why="([^"]+)">', section(page)))


def api(app: Any, name: str = "ana") -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://inbox.test",
        headers={"authorization": f"Bearer {TOKENS[name]}"},
    )


async def test_a_bulk_approve_records_each_request_once_with_who(store: Any) -> None:
    for rid in ("a-1", "a-2", "a-3"):
        await store.save_halt(halted(rid))
    app = make_app(store)
    async with visitor(app) as v:
        done = await v.post("/bulk", {"action": "approve", "id": ["a-1", "a-2", "a-3"]})
        assert done.status_code == 200
        assert 'data-recorded="3" data-failed="0"' in done.text
        assert "3 approved." in section(done.text)
        assert 'id="empty"' in done.text  # the list again: nothing waits now
        firsts = [await store.answer_record(rid) for rid in ("a-1", "a-2", "a-3")]
        # The same form again (a reload of the result, a double click): nothing new.
        again = await v.post("/bulk", {"action": "approve", "id": ["a-1", "a-2", "a-3"]})
    assert 'data-recorded="0" data-failed="0"' in again.text
    assert "3 already answered by you" in section(again.text)
    for rid, first in zip(("a-1", "a-2", "a-3"), firsts, strict=True):
        record = await store.answer_record(rid)
        assert record is not None
        assert (record.answer, record.answered_by) == (Answer(rid, True), "ana")
        assert record == first  # recorded once: the same answer, the same moment
    await app.aclose()


async def test_a_partial_failure_says_which_failed_and_why_and_the_rest_stay_recorded(
    store: Any,
) -> None:
    await store.save_halt(halted("ok-1"))
    await store.save_halt(halted("taken-1"))
    await store.save_halt(halted("q-1", kind="question", data={"options": ["a", "b"]}))
    await store.save_halt(halted("late-1", expires=PAST))
    await store.save_halt(halted("ok-2"))
    app = make_app(store)
    async with visitor(app) as v:
        page = await v.get("/")  # ana's page is open; bob answers one meanwhile
        assert 'data-request-id="taken-1"' in page.text
        await store.post_answer("taken-1", Answer("taken-1", False), answered_by="bob")
        chosen = ["ok-1", "taken-1", "q-1", "late-1", "gone-1", "ok-2"]
        done = await v.post("/bulk", {"action": "approve", "id": chosen})
    assert done.status_code == 200
    assert failed_items(done.text) == {
        "taken-1": "conflict",
        "q-1": "refused",
        "late-1": "expired",
        "gone-1": "not_found",
    }
    result = section(done.text)
    assert "2 approved, 4 failed." in result
    assert "answered by bob" in result  # who won
    assert "It accepts one of the options" in result  # the intake's own words
    for rid in ("ok-1", "ok-2"):
        record = await store.answer_record(rid)
        assert record is not None
        assert (record.answer.ok, record.answered_by) == (True, "ana")
    taken = await store.answer_record("taken-1")
    assert taken is not None
    assert (taken.answer.ok, taken.answered_by) == (False, "bob")
    assert await store.answer_record("q-1") is None
    await app.aclose()


async def test_a_bulk_decline_suits_every_kind_and_keeps_the_reason(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    await store.save_halt(halted("q-1", kind="question", data={"options": ["a", "b"]}))
    await store.save_halt(halted("i-1", kind="input", data={"schema": {"type": "object"}}))
    app = make_app(store)
    async with visitor(app) as v:
        chosen = ["a-1", "q-1", "i-1"]
        done = await v.post("/bulk", {"action": "decline", "id": chosen, "reason": "batch off"})
    assert 'data-recorded="3" data-failed="0"' in done.text
    for rid in chosen:
        record = await store.answer_record(rid)
        assert record is not None
        assert record.answer == Answer(rid, False, data={"note": "batch off"}, reason="declined")
        assert record.answered_by == "ana"
    await app.aclose()


async def test_a_person_who_may_not_answer_a_kind_is_refused_for_those_only(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    await store.save_halt(halted("q-1", kind="question", data={"options": ["a", "b"]}))
    app = make_app(store)
    async with visitor(app, "bob") as v:  # bob answers questions only
        done = await v.post("/bulk", {"action": "decline", "id": ["a-1", "q-1"]})
    assert failed_items(done.text) == {"a-1": "forbidden"}
    assert await store.answer_record("a-1") is None
    record = await store.answer_record("q-1")
    assert record is not None
    assert record.answered_by == "bob"
    await app.aclose()


async def test_two_identical_submits_at_once_record_each_request_once(store: Any) -> None:
    ids = [f"d-{i}" for i in range(4)]
    for rid in ids:
        await store.save_halt(halted(rid))
    app = make_app(store)
    async with visitor(app) as v:
        first, second = await asyncio.gather(
            v.post("/bulk", {"action": "approve", "id": ids}),
            v.post("/bulk", {"action": "approve", "id": ids}),
        )
    recorded = [
        int(re.search(r'data-recorded="(\d+)"', r.text).group(1))  # type: ignore[union-attr]
        for r in (first, second)
    ]
    assert sum(recorded) == 4  # each once, between the two
    for page in (first, second):
        assert 'data-failed="0"' in page.text  # the other's answers are "already", not errors
    for rid in ids:
        record = await store.answer_record(rid)
        assert record is not None
        assert record.answered_by == "ana"
    await app.aclose()


async def test_a_bulk_post_without_its_csrf_token_changes_nothing(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with visitor(app) as v:
        refused = await v.post("/bulk", {"action": "approve", "id": ["a-1"]}, csrf="forged")
        nothing = await v.post("/bulk", {"action": "approve"})
        wrong = await v.post("/bulk", {"action": "maybe", "id": ["a-1"]})
        back = await v.get("/bulk")
    assert refused.status_code == 403
    assert (nothing.status_code, wrong.status_code) == (400, 400)
    assert "select at least one request" in nothing.text
    assert (back.status_code, back.headers["location"]) == (303, "/")
    assert await store.answer_record("a-1") is None
    await app.aclose()


# -- from the list ----------------------------------------------------------------------------


def row(page: str, rid: str) -> str:
    return page.split(f'data-request-id="{rid}"', 1)[1].split("</tr>", 1)[0]


async def test_the_list_offers_one_click_answers_only_where_no_form_is_needed(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    await store.save_halt(halted("z-1", kind="authorization", tool="crm", url="https://x.test"))
    await store.save_halt(halted("q-1", kind="question", data={"options": ["a", "b"]}))
    await store.save_halt(halted("late-1", expires=PAST))
    app = make_app(store)
    async with visitor(app) as v:
        page = (await v.get("/")).text
    async with visitor(app, "bob") as bob:
        bobs = (await bob.get("/")).text
    for rid in ("a-1", "z-1"):
        assert 'class="row-answer"' in row(page, rid)
        assert f'name="id" value="{rid}" form="bulk"' in row(page, rid)  # and selectable
    for rid in ("q-1", "late-1"):
        assert 'class="row-answer"' not in row(page, rid)  # a form, or too late
        assert f'name="id" value="{rid}" form="bulk"' in row(page, rid)  # a decline suits all
    assert 'class="row-answer"' not in row(bobs, "a-1")  # bob may not answer approvals
    assert ">Done</button>" in row(page, "z-1")  # the words of a sign-in's own page
    assert ">Cancel sign-in</button>" in row(page, "z-1")
    await app.aclose()


async def test_one_click_on_a_row_records_it_and_comes_back_to_the_same_filters(
    store: Any,
) -> None:
    await store.save_halt(halted("a-1"))
    await store.save_halt(halted("a-2", tool="other"))
    await store.save_halt(halted("z-1", kind="authorization", tool="crm", url="https://x.test"))
    app = make_app(store)
    async with visitor(app) as v:
        listed = (await v.get("/", params={"tool": "deploy"})).text
        back = re.search(r'name="back" value="([^"]*)"', row(listed, "a-1"))
        assert back is not None
        assert back.group(1) == "tool=deploy"
        done = await v.post("/bulk", {"action": "approve", "id": "a-1", "back": back.group(1)})
        authorized = await v.post("/bulk", {"action": "approve", "id": "z-1"})
    assert "1 approved." in section(done.text)
    assert 'data-request-id="a-1"' not in done.text.split('id="requests"', 1)[1]
    assert 'data-request-id="a-2"' not in done.text  # still filtered on the tool
    assert 'value="deploy"' in done.text
    record = await store.answer_record("a-1")
    assert record is not None
    assert (record.answer, record.answered_by) == (Answer("a-1", True), "ana")
    assert "1 approved." in section(authorized.text)
    done_z = await store.answer_record("z-1")
    assert done_z is not None
    assert done_z.answer == Answer("z-1", True)
    await app.aclose()


# -- the JSON API -----------------------------------------------------------------------------


async def test_the_json_api_answers_a_selection_and_names_each_failure(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    await store.save_halt(halted("a-2"))
    await store.save_halt(halted("q-1", kind="question", data={"options": ["a", "b"]}))
    await store.post_answer("a-2", Answer("a-2", True), answered_by="bob")
    app = make_app(store)
    async with api(app) as client:
        body = {"action": "approve", "ids": ["a-1", "a-2", "q-1", "a-1"]}
        done = await client.post("/api/bulk", json=body)
        again = await client.post("/api/bulk", json={"action": "approve", "ids": ["a-1"]})
    assert done.status_code == 200
    found = done.json()
    assert (found["recorded"], found["already"], found["failed"]) == (1, 0, 2)
    results = {r["id"]: r for r in found["results"]}
    assert list(results) == ["a-1", "a-2", "q-1"]  # a repeated id counts once
    assert results["a-1"] == {"id": "a-1", "result": "recorded"}
    assert (results["a-2"]["why"], results["a-2"]["answered_by"]) == ("conflict", "bob")
    assert "bob" in results["a-2"]["error"]
    assert results["q-1"]["why"] == "refused"
    assert again.json()["results"] == [
        {
            "id": "a-1",
            "result": "already",
            "message": again.json()["results"][0]["message"],
            "answered_by": "ana",
        }
    ]
    await app.aclose()


async def test_the_json_api_refuses_a_body_that_is_not_a_selection(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with api(app) as client:
        bad = [
            await client.post(
                "/api/bulk", content=b"[]", headers={"content-type": "application/json"}
            ),
            await client.post("/api/bulk", json={"action": "maybe", "ids": ["a-1"]}),
            await client.post("/api/bulk", json={"action": "approve", "ids": "a-1"}),
            await client.post("/api/bulk", json={"action": "approve", "ids": []}),
            await client.post("/api/bulk", json={"action": "approve", "ids": [1]}),
            await client.post(
                "/api/bulk", json={"action": "approve", "ids": [f"x-{i}" for i in range(201)]}
            ),
            await client.post("/api/bulk", json={"action": "decline", "ids": ["a-1"], "reason": 5}),
        ]
    assert [r.status_code for r in bad] == [400] * 7
    assert "at most 200" in bad[5].json()["error"]
    assert await store.answer_record("a-1") is None
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://inbox.test"
    ) as anonymous:
        refused = await anonymous.post("/api/bulk", json={"action": "approve", "ids": ["a-1"]})
    assert refused.status_code == 401
    await app.aclose()


async def test_the_counts_the_live_script_reads_follow_the_lists_filters(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    await store.save_halt(halted("a-2", tool="other"))
    await store.save_halt(halted("q-1", kind="question", data={"options": ["a", "b"]}))
    app = make_app(store)
    async with visitor(app) as v:
        every = (await v.get("/counts")).json()
        deploys = (await v.get("/counts", params={"tool": "deploy", "page": "3"})).json()
        questions = (await v.get("/counts", params={"kind": "question"})).json()
        bad = await v.get("/counts", params={"age": "soon"})
    assert every == {"counts": {"approval": 2, "question": 1}, "total": 3}
    assert deploys == {"counts": {"approval": 1, "question": 1}, "total": 2}
    assert questions["total"] == 1
    assert bad.status_code == 400
    await app.aclose()
