"""The inbox answers through the one answer intake: a plain "approve" answers only what a bare
approval answers. On a question, a form or a relayed call it is refused with the forms the
request accepts — on the page and in the JSON API — and the request still waits, to be answered
as it asks or cancelled. A plain question gets a text field. Memory, SQLite and Postgres.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import pytest
from inbox_support import TOKENS, halted, make_app, make_store, visitor


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    pg = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    made = await make_store(request.param, tmp_path, pg)
    yield made
    closer = getattr(made, "aclose", None)
    if closer is not None:
        await closer()


SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "size": {"type": "integer"}},
    "required": ["name"],
}
QUESTIONS = {"questions": [{"question": "Which region?", "options": ["eu", "us"]}]}
RELAY = {"calls": [{"id": "call_1", "name": "lookup", "input": {}, "arguments": "{}"}]}

CASES = [
    ("question", "question", QUESTIONS, "answers to its questions"),
    ("input", "signup", {"schema": SCHEMA}, "data valid against the request's schema"),
    ("tool_call", "lookup", RELAY, "the output of every relayed call"),
    ("question", "ask", None, "free text"),
]


@pytest.mark.parametrize(("kind", "tool", "data", "accepted"), CASES)
async def test_a_plain_approve_is_refused_with_the_accepted_forms_and_the_request_waits(
    store: Any, kind: str, tool: str, data: Any, accepted: str
) -> None:
    await store.save_halt(halted("r-1", kind=kind, tool=tool, data=data, prompt="Which one?"))
    app = make_app(store)
    async with visitor(app) as v:
        page = await v.answer("r-1", action="approve")
        assert page.status_code == 400
        shown = html.unescape(page.text)
        assert "a plain approval carries no answer" in shown
        assert accepted in shown
        bearer = {"authorization": f"Bearer {TOKENS['ana']}"}
        api = await v.client.post("/api/requests/r-1/answer", json={"ok": True}, headers=bearer)
        assert api.status_code == 400
        assert accepted in api.json()["error"]
    assert await store.answer_record("r-1") is None  # nothing recorded
    assert [e.request_id for e in await store.list_pending()] == ["r-1"]
    await app.aclose()


async def test_after_a_refusal_the_request_can_still_be_answered_as_it_asks(store: Any) -> None:
    await store.save_halt(halted("q-1", kind="question", tool="question", data=QUESTIONS))
    await store.save_halt(halted("r-2", kind="tool_call", tool="lookup", data=RELAY))
    app = make_app(store)
    async with visitor(app) as v:
        assert (await v.answer("q-1", action="approve")).status_code == 400
        done = await v.answer("q-1", action="submit", q0="eu")
        assert done.status_code == 303
        assert (await v.answer("r-2", action="approve")).status_code == 400
        cancelled = await v.post("/requests/r-2/cancel", {"reason": "not needed"})
        assert cancelled.status_code == 303
    answered = await store.answer_record("q-1")
    assert answered is not None
    assert answered.answer.data == {"answers": ["eu"]}
    gone = await store.answer_record("r-2")
    assert gone is not None
    assert gone.status == "cancelled"
    await app.aclose()


async def test_a_plain_question_gets_a_text_field_and_its_answer_is_the_text(store: Any) -> None:
    await store.save_halt(halted("p-1", kind="question", tool="ask", prompt="Which env?"))
    app = make_app(store)
    async with visitor(app) as v:
        page = await v.get("/requests/p-1")
        assert 'name="text"' in page.text
        empty = await v.answer("p-1", action="submit", text="  ")
        assert empty.status_code == 400
        done = await v.answer("p-1", action="submit", text="staging")
        assert done.status_code == 303
    record = await store.answer_record("p-1")
    assert record is not None
    assert record.answer.data == {"text": "staging"}
    await app.aclose()


async def test_a_question_with_options_offers_free_text_only_when_it_takes_it(store: Any) -> None:
    closed = {"questions": [{"question": "Region?", "options": ["eu", "us"]}]}
    open_ = {"questions": [{"question": "Region?", "options": ["eu", "us"], "custom": True}]}
    await store.save_halt(halted("c-1", kind="question", tool="question", data=closed))
    await store.save_halt(halted("c-2", kind="question", tool="question", data=open_))
    app = make_app(store)
    async with visitor(app) as v:
        assert 'name="q0_other"' not in (await v.get("/requests/c-1")).text
        assert 'name="q0_other"' in (await v.get("/requests/c-2")).text
        refused = await v.answer("c-1", action="submit", q0_other="mars")
        assert refused.status_code == 400
        assert "not one of the options" in refused.text
        assert (await v.answer("c-2", action="submit", q0_other="mars")).status_code == 303
    record = await store.answer_record("c-2")
    assert record is not None
    assert record.answer.data == {"answers": ["mars"]}
    await app.aclose()


# -- what an operator sees: a held request, an edited approval's audit -----------------------


async def test_a_request_held_for_an_operator_is_listed_shown_and_can_be_cancelled(
    store: Any,
) -> None:
    import math

    from toolnexus import Answer

    await store.save_halt(halted("h-1"))
    await store.post_answer("h-1", Answer("h-1", True), answered_by="bob")
    claim = await store.take("h-1")
    assert claim is not None
    await store.flag("h-1", claim, "the approved call changed", hold_s=math.inf)
    app = make_app(store)
    async with visitor(app) as v:
        listed = await v.get("/")
        assert "Needs an operator: the approved call changed" in listed.text
        assert 'data-status="claimed"' in listed.text
        page = await v.get("/requests/h-1")
        assert 'id="problem"' in page.text
        assert 'id="cancel-form"' in page.text
        done = await v.post("/requests/h-1/cancel", {"reason": "checked: tampered"})
        assert done.status_code == 303
    record = await store.answer_record("h-1")
    assert record is not None
    assert record.status == "cancelled"
    assert record.problem == "the approved call changed"
    await app.aclose()


async def test_an_edited_approval_shows_the_models_arguments_beside_what_was_approved(
    store: Any,
) -> None:
    schema = {"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]}
    await store.save_halt(halted("e-1", input_schema=schema))
    app = make_app(store)
    async with visitor(app) as v:
        done = await v.answer("e-1", action="approve_edited", arguments='{"env": "staging"}')
        assert done.status_code == 303
        page = await v.get("/requests/e-1")
        assert 'id="edit-audit"' in page.text
        assert "prod" in page.text.split('id="edit-audit"')[1]  # the model's own call
        exported = await v.get("/history.jsonl", params={"status": "answered"})
    record = await store.answer_record("e-1")
    assert record is not None
    assert record.original is not None
    assert record.answered_by == "ana"
    assert record.original["digest"] != record.digest
    assert record.original["digest"] in page.text
    assert record.original["digest"] in exported.text  # the export keeps both digests
    await app.aclose()
