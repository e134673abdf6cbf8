"""Answering through the inbox: each kind's form records the Answer docs/inbox.md names,
once; the stored state is checked after every post."""

from __future__ import annotations

from typing import Any

from inbox_support import halted, make_app, visitor

from toolnexus.suspension import Answer


async def test_the_list_shows_every_pending_request_with_its_kind_and_tool(store: Any) -> None:
    await store.save_halt(halted("a-1", prompt="Deploy to prod?"))
    await store.save_halt(halted("q-1", kind="question", tool="question", prompt="Which env?"))
    app = make_app(store)
    async with visitor(app) as v:
        page = await v.get("/")
    assert page.status_code == 200
    assert 'data-request-id="a-1"' in page.text
    assert 'data-request-id="q-1"' in page.text
    assert '<span id="total">2</span>' in page.text
    assert 'data-kind="question">question <span class="count">1</span>' in page.text
    await app.aclose()


async def test_approving_records_an_ok_answer_by_the_signed_in_user(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with visitor(app) as v:
        done = await v.answer("a-1", action="approve")
        assert done.status_code == 303
        assert done.headers["location"] == "/requests/a-1"
        page = await v.get("/requests/a-1")
    record = await store.answer_record("a-1")
    assert record is not None
    assert record.answer == Answer("a-1", True)
    assert record.answered_by == "ana"
    assert record.status == "answered"
    assert 'id="resolved">answered by ana at' in page.text
    assert 'data-status="answered"' in page.text
    await app.aclose()


async def test_declining_with_a_reason_keeps_the_reason_in_the_answer(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with visitor(app) as v:
        done = await v.answer("a-1", action="decline", reason="not on a Friday")
    assert done.status_code == 303
    record = await store.answer_record("a-1")
    assert record is not None
    assert record.answer == Answer(
        "a-1", False, data={"note": "not on a Friday"}, reason="declined"
    )
    await app.aclose()


async def test_approving_with_edited_arguments_posts_them_in_the_answer(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with visitor(app) as v:
        done = await v.answer(
            "a-1", action="approve_edited", arguments='{"env": "staging", "replicas": 1}'
        )
    assert done.status_code == 303
    record = await store.answer_record("a-1")
    assert record is not None
    assert record.answer.ok is True
    assert record.answer.data == {"arguments": {"env": "staging", "replicas": 1}}
    await app.aclose()


async def test_edited_arguments_that_are_not_a_json_object_are_refused_beside_the_field(
    store: Any,
) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with visitor(app) as v:
        for text in ("{not json", "[1, 2]"):
            page = await v.answer("a-1", action="approve_edited", arguments=text)
            assert page.status_code == 400
            assert 'id="error-arguments"' in page.text
    assert await store.answer_record("a-1") is None
    await app.aclose()


async def test_a_question_is_answered_with_its_options(store: Any) -> None:
    questions = [
        {"question": "Which region?", "options": ["eu", "us"]},
        {"question": "Which checks?", "options": ["lint", "tests", "docs"], "multiple": True},
        {"question": "Anything else?"},
    ]
    await store.save_halt(
        halted("q-1", kind="question", tool="question", data={"questions": questions})
    )
    app = make_app(store)
    async with visitor(app) as v:
        page = await v.get("/requests/q-1")
        assert 'type="radio" name="q0"' in page.text
        assert 'type="checkbox" name="q1"' in page.text
        done = await v.client.post(
            "/requests/q-1/answer",
            data={
                "csrf": v.csrf,
                "action": "submit",
                "q0": "eu",
                "q1": ["lint", "tests"],
                "q2": "no",
            },
        )
    assert done.status_code == 303
    record = await store.answer_record("q-1")
    assert record is not None
    assert record.answer.data == {"answers": ["eu", ["lint", "tests"], "no"]}
    await app.aclose()


async def test_a_question_answer_outside_the_options_or_missing_is_refused(store: Any) -> None:
    questions = [{"question": "Which region?", "options": ["eu", "us"]}, {"question": "Why?"}]
    await store.save_halt(
        halted("q-1", kind="question", tool="question", data={"questions": questions})
    )
    app = make_app(store)
    async with visitor(app) as v:
        page = await v.answer("q-1", action="submit", q0="mars", q1="")
    assert page.status_code == 400
    assert 'id="error-q0"' in page.text
    assert 'id="error-q1"' in page.text
    assert await store.answer_record("q-1") is None
    await app.aclose()


SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name"},
        "age": {"type": "integer", "minimum": 0},
        "ratio": {"type": "number"},
        "subscribe": {"type": "boolean"},
        "plan": {"type": "string", "enum": ["free", "pro"]},
        "team": {"type": "string", "default": "core"},
    },
    "required": ["name", "age", "plan"],
}


async def test_an_input_form_is_generated_from_the_schema_and_typed_on_submit(
    store: Any,
) -> None:
    await store.save_halt(halted("i-1", kind="input", tool="signup", data={"schema": SCHEMA}))
    app = make_app(store)
    async with visitor(app) as v:
        page = await v.get("/requests/i-1")
        assert 'name="field.name"' in page.text
        assert 'type="checkbox" name="field.subscribe"' in page.text
        assert '<select name="field.plan"' in page.text
        done = await v.answer(
            "i-1",
            action="submit",
            **{
                "field.name": "Ana",
                "field.age": "41",
                "field.ratio": "0.5",
                "field.subscribe": "on",
                "field.plan": '"pro"',
            },
        )
    assert done.status_code == 303
    record = await store.answer_record("i-1")
    assert record is not None
    assert record.answer.data == {
        "name": "Ana",
        "age": 41,
        "ratio": 0.5,
        "subscribe": True,
        "plan": "pro",
        "team": "core",
    }
    await app.aclose()


async def test_input_values_failing_the_schema_are_shown_beside_their_fields(store: Any) -> None:
    await store.save_halt(halted("i-1", kind="input", tool="signup", data={"schema": SCHEMA}))
    app = make_app(store)
    async with visitor(app) as v:
        page = await v.answer(
            "i-1",
            action="submit",
            **{"field.name": "", "field.age": "-3", "field.ratio": "lots", "field.plan": '"gold"'},
        )
    assert page.status_code == 400
    for name in ("name", "age", "ratio", "plan"):
        assert f'id="error-{name}"' in page.text, name
    assert 'value="lots"' in page.text  # what was typed is shown again
    assert await store.answer_record("i-1") is None
    await app.aclose()


async def test_an_authorization_shows_its_link_and_is_done_or_cancelled(store: Any) -> None:
    await store.save_halt(
        halted("z-1", kind="authorization", tool="crm", url="https://idp.example/authorize?x=1")
    )
    await store.save_halt(
        halted("z-2", kind="authorization", tool="crm", url="javascript:alert(1)")
    )
    app = make_app(store)
    async with visitor(app) as v:
        page = await v.get("/requests/z-1")
        assert 'href="https://idp.example/authorize?x=1"' in page.text
        hostile = await v.get("/requests/z-2")
        assert 'href="javascript:' not in hostile.text
        assert (await v.answer("z-1", action="done")).status_code == 303
        assert (await v.answer("z-2", action="decline")).status_code == 303
    one, two = await store.answer_record("z-1"), await store.answer_record("z-2")
    assert one is not None
    assert one.answer == Answer("z-1", True)
    assert two is not None
    assert two.answer == Answer("z-2", False, reason="declined")
    await app.aclose()


async def test_a_relay_tool_call_gets_an_output_per_call(store: Any) -> None:
    calls = [{"id": "call_1", "name": "lookup", "input": {"q": "x"}, "arguments": '{"q":"x"}'}]
    await store.save_halt(
        halted("t-1", kind="tool_call", tool="lookup", arguments='{"q":"x"}', data={"calls": calls})
    )
    app = make_app(store)
    async with visitor(app) as v:
        page = await v.get("/requests/t-1")
        assert 'name="output.call_1"' in page.text
        done = await v.answer(
            "t-1", action="submit", **{"output.call_1": "42", "is_error.call_1": "on"}
        )
    assert done.status_code == 303
    record = await store.answer_record("t-1")
    assert record is not None
    assert record.answer.data == {"results": [{"id": "call_1", "output": "42", "isError": True}]}
    await app.aclose()


async def test_cancelling_the_run_records_who_and_why(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with visitor(app) as v:
        done = await v.post("/requests/a-1/cancel", {"reason": "wrong ticket"})
        assert done.status_code == 303
        page = await v.get("/requests/a-1")
    record = await store.answer_record("a-1")
    assert record is not None
    assert record.status == "cancelled"
    assert record.answered_by == "ana"
    assert 'id="resolved">cancelled by ana at' in page.text
    assert "wrong ticket" in page.text
    await app.aclose()


async def test_the_detail_page_shows_arguments_digest_path_and_context(store: Any) -> None:
    from toolnexus.stores.checks import call_digest

    cp = halted("a-1", data={"path": ["rt", "lead", "coder"]}, user_text="please deploy")
    await store.save_halt(cp)
    app = make_app(store)
    async with visitor(app) as v:
        page = await v.get("/requests/a-1")
    text = page.text
    assert f'<code id="digest">{call_digest("deploy", cp.outstanding[0].arguments)}</code>' in text
    assert '<span id="agent-path">rt / lead / coder</span>' in text
    assert '<details id="context">' in text
    assert "please deploy" in text
    assert "&quot;replicas&quot;: 2" in text  # pretty-printed
    await app.aclose()


async def test_two_sessions_racing_on_one_request_get_one_answer_and_one_conflict(
    store: Any,
) -> None:
    import asyncio

    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with visitor(app, "ana") as ana, visitor(app, "bob") as bob:
        bob_may = await bob.get("/requests/a-1")  # bob may not answer approvals
        assert 'id="not-allowed"' in bob_may.text
        async with visitor(app, "ana") as ana_again:
            first, second = await asyncio.gather(
                ana.answer("a-1", action="approve"),
                ana_again.answer("a-1", action="decline", reason="no"),
            )
    codes = sorted([first.status_code, second.status_code])
    assert codes == [303, 409]
    loser = first if first.status_code == 409 else second
    assert "answered by ana at" in loser.text
    record = await store.answer_record("a-1")
    assert record is not None
    assert record.answer.ok is (first.status_code == 303)
    await app.aclose()


async def test_the_detail_page_follows_a_queued_run_without_javascript(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with visitor(app) as v:
        await v.answer("a-1", action="approve")
        queued = await v.get("/requests/a-1")
        claim = await store.take("a-1")
        assert claim is not None
        resuming = await v.get("/requests/a-1")
        await store.complete("a-1", claim, outcome={"status": "done", "text": "shipped <b>"})
        done = await v.get("/requests/a-1")
    assert '<meta http-equiv="refresh" content="3">' in queued.text
    assert "queued: waiting for a worker" in queued.text
    assert 'data-status="claimed"' in resuming.text
    assert "resuming on a worker" in resuming.text
    assert '<pre id="final-text">shipped &lt;b&gt;</pre>' in done.text
    assert 'http-equiv="refresh"' not in done.text
    await app.aclose()


async def test_a_get_on_a_forms_action_url_goes_to_the_request_page(store: Any) -> None:
    # A browser left on a refused post's page reloads or bookmarks the action URL: that must
    # neither read "a-1/answer" as a request id nor record anything.
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with visitor(app) as v:
        for action in ("answer", "cancel"):
            moved = await v.get(f"/requests/a-1/{action}")
            assert moved.status_code == 303
            assert moved.headers["location"] == "/requests/a-1"
    assert await store.answer_record("a-1") is None
    assert [e.request_id for e in await store.list_pending()] == ["a-1"]
    await app.aclose()
