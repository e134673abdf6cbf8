"""Hostile and mistaken input to the inbox: each is refused, and the store is as it was."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from inbox_support import TOKENS, halted, make_app, visitor

from toolnexus.suspension import Answer, format_timestamp


def _past() -> str:
    return format_timestamp(datetime.now(UTC) - timedelta(minutes=5))


async def _unanswered(store: Any, rid: str) -> None:
    assert await store.answer_record(rid) is None
    entries = await store.list_pending()
    assert rid in [e.request_id for e in entries]


async def test_a_forged_or_missing_csrf_token_is_refused(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with visitor(app) as v:
        forged = await v.answer("a-1", action="approve", csrf="0" * 64)
        missing = await v.client.post("/requests/a-1/answer", data={"action": "approve"})
        cancel = await v.post("/requests/a-1/cancel", {"reason": "x"}, csrf="nope")
    assert (forged.status_code, missing.status_code, cancel.status_code) == (403, 403, 403)
    await _unanswered(store, "a-1")
    await app.aclose()


async def test_another_users_csrf_token_does_not_pass(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with visitor(app, "bob") as bob, visitor(app, "ana") as ana:
        stolen = bob.csrf
        refused = await ana.answer("a-1", action="approve", csrf=stolen)
    assert refused.status_code == 403
    await _unanswered(store, "a-1")
    await app.aclose()


async def test_without_a_user_pages_redirect_to_login_and_posts_are_401(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with visitor(app, None) as v:
        page = await v.get("/")
        post = await v.client.post("/requests/a-1/answer", data={"action": "approve"})
        api = await v.get("/api/pending")
        events = await v.get("/events", headers={"accept": "text/event-stream"})
    assert page.status_code == 303
    assert page.headers["location"] == "/login"
    assert post.status_code == 401
    assert api.status_code == 401
    assert events.status_code == 401
    await _unanswered(store, "a-1")
    await app.aclose()


async def test_a_wrong_token_is_refused_at_login_and_as_a_bearer(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with visitor(app, None) as v:
        login = await v.get("/login")
        nonce = re.search(r'name="csrf" value="([^"]+)"', login.text)
        assert nonce is not None
        wrong = await v.client.post("/login", data={"csrf": nonce.group(1), "token": "guess"})
        bearer = await v.client.post(
            "/api/requests/a-1/answer",
            json={"ok": True},
            headers={"authorization": "Bearer guess"},
        )
        html_bearer = await v.client.get("/", headers={"authorization": "Bearer guess"})
        no_nonce = await v.client.post("/login", data={"token": TOKENS["ana"]})
    assert wrong.status_code == 401
    assert "not known" in wrong.text
    assert "toolnexus_inbox=" not in wrong.headers.get("set-cookie", "")
    assert bearer.status_code == 401
    assert html_bearer.status_code == 401
    assert no_nonce.status_code == 403
    await _unanswered(store, "a-1")
    await app.aclose()


async def test_a_tampered_session_cookie_is_not_a_session(store: Any) -> None:
    app = make_app(store)
    async with visitor(app) as v:
        cookie = v.client.cookies["toolnexus_inbox"]
        v.client.cookies.clear()
        v.client.cookies.set("toolnexus_inbox", cookie[:-1] + ("A" if cookie[-1] != "A" else "B"))
        changed = await v.get("/")
        v.client.cookies.set("toolnexus_inbox", cookie + "A")
        longer = await v.get("/")
        v.client.cookies.set("toolnexus_inbox", f"ana.{cookie}")
        named = await v.get("/")
    assert (changed.status_code, longer.status_code, named.status_code) == (303, 303, 303)
    await app.aclose()


async def test_a_user_cannot_answer_a_kind_they_may_not(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with visitor(app, "bob") as v:  # bob may answer questions only
        page = await v.get("/requests/a-1")
        refused = await v.answer("a-1", action="approve")
        cancel = await v.post("/requests/a-1/cancel", {})
        api = await v.client.post(
            "/api/requests/a-1/answer",
            json={"ok": True},
            headers={"authorization": f"Bearer {TOKENS['bob']}"},
        )
    assert 'id="not-allowed"' in page.text
    assert "disabled" in page.text
    assert (refused.status_code, cancel.status_code, api.status_code) == (403, 403, 403)
    await _unanswered(store, "a-1")
    await app.aclose()


async def test_a_second_answer_changes_nothing_and_names_the_first(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with visitor(app, "ana") as ana, visitor(app, "bob") as bob:
        assert (await ana.answer("a-1", action="decline", reason="no")).status_code == 303
        again = await ana.answer("a-1", action="approve")
        cancel = await ana.post("/requests/a-1/cancel", {})
        del bob
    record = await store.answer_record("a-1")
    assert record is not None
    assert record.answer.ok is False
    assert record.answered_by == "ana"
    assert again.status_code == 409
    assert cancel.status_code == 409
    assert "answered by ana at" in again.text
    await app.aclose()


async def test_an_expired_request_is_shown_expired_and_cannot_be_approved(store: Any) -> None:
    await store.save_halt(halted("a-1", expires=_past()))
    app = make_app(store)
    async with visitor(app) as v:
        listed = await v.get("/")
        page = await v.get("/requests/a-1")
        late = await v.answer("a-1", action="approve")
    assert 'class="expires expired"' in listed.text
    assert 'id="expired-notice"' in page.text
    assert 'data-status="expired"' in page.text
    assert late.status_code == 409
    record = await store.answer_record("a-1")
    assert record is not None
    assert record.answer.ok is False
    assert record.answer.reason == "expired"
    await app.aclose()


async def test_a_cancelled_request_cannot_be_answered(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    await store.cancel("a-1", reason="stale", answered_by="ops")
    app = make_app(store)
    async with visitor(app) as v:
        late = await v.answer("a-1", action="approve")
    assert late.status_code == 409
    assert "cancelled by ops" in late.text
    record = await store.answer_record("a-1")
    assert record is not None
    assert record.status == "cancelled"
    await app.aclose()


async def test_markup_in_prompts_and_arguments_is_escaped_everywhere(store: Any) -> None:
    evil = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    args = json.dumps({"cmd": evil})
    await store.save_halt(halted("a-1", prompt=evil, arguments=args, tool="shell", user_text=evil))
    await store.save_halt(halted("a-2", prompt="ok"))
    await store.post_answer("a-2", Answer("a-2", False), answered_by=evil)
    app = make_app(store)
    async with visitor(app) as v:
        pages = [await v.get("/"), await v.get("/requests/a-1"), await v.get("/history")]
        pages.append(await v.get("/?q=" + evil))
    for page in pages:
        assert "<script>alert" not in page.text
        assert "<img src=x" not in page.text
        assert page.headers["content-security-policy"].startswith("default-src 'none'")
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in pages[1].text
    await app.aclose()


async def test_a_huge_argument_payload_is_truncated_in_the_list_and_whole_in_the_detail(
    store: Any,
) -> None:
    blob = "x" * 200_000
    await store.save_halt(halted("a-1", arguments=json.dumps({"blob": blob})))
    app = make_app(store)
    async with visitor(app) as v:
        listed = await v.get("/")
        page = await v.get("/requests/a-1")
    assert blob not in listed.text
    assert 'class="arguments truncated"' in listed.text
    assert len(listed.text) < 20_000
    assert blob in page.text
    await app.aclose()


async def test_no_secret_appears_in_any_page(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with visitor(app) as v:
        texts = [
            (await v.get(path)).text
            for path in ("/", "/requests/a-1", "/history", "/history.csv", "/login")
        ]
        cookie = v.client.cookies["toolnexus_inbox"]
    for text in texts:
        for token in TOKENS.values():
            assert token not in text
        assert cookie not in text
    await app.aclose()


async def test_an_oversized_body_is_refused_before_it_is_read(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store, max_body=4096)
    async with visitor(app) as v:
        big = await v.answer("a-1", action="approve_edited", arguments="[" + "1," * 5000 + "1]")
    assert big.status_code == 413
    await _unanswered(store, "a-1")
    await app.aclose()


async def test_bad_filters_are_a_400_not_a_crash(store: Any) -> None:
    app = make_app(store)
    async with visitor(app) as v:
        age = await v.get("/?age=yesterday")
        page = await v.get("/?page=0")
        status = await v.get("/history?status=maybe")
        api = await v.get(
            "/api/pending?per_page=9999", headers={"authorization": f"Bearer {TOKENS['ana']}"}
        )
    assert (age.status_code, page.status_code, status.status_code, api.status_code) == (
        400,
        400,
        400,
        400,
    )
    await app.aclose()


async def test_an_unknown_request_is_404(store: Any) -> None:
    app = make_app(store)
    async with visitor(app) as v:
        page = await v.get("/requests/nope")
        post = await v.answer("nope", action="approve")
    assert page.status_code == 404
    assert post.status_code == 404
    await app.aclose()


async def test_the_json_api_answers_with_a_bearer_token_and_checks_input_schemas(
    store: Any,
) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    await store.save_halt(halted("i-1", kind="input", data={"schema": schema}))
    app = make_app(store)
    auth = {"authorization": f"Bearer {TOKENS['ana']}"}
    async with visitor(app, None) as v:
        bad = await v.client.post(
            "/api/requests/i-1/answer", json={"ok": True, "data": {"n": "x"}}, headers=auth
        )
        typed = await v.client.post("/api/requests/i-1/answer", json={"ok": "yes"}, headers=auth)
        as_json = {**auth, "content-type": "application/json"}
        junk = await v.client.post("/api/requests/i-1/answer", content=b"[", headers=as_json)
        assert await store.answer_record("i-1") is None
        good = await v.client.post(
            "/api/requests/i-1/answer", json={"ok": True, "data": {"n": 3}}, headers=auth
        )
        twice = await v.client.post("/api/requests/i-1/answer", json={"ok": False}, headers=auth)
    assert (bad.status_code, typed.status_code, junk.status_code) == (400, 400, 400)
    assert "n" in bad.json()["errors"]
    assert good.status_code == 200
    assert good.json()["answered_by"] == "ana"
    assert twice.status_code == 409
    record = await store.answer_record("i-1")
    assert record is not None
    assert record.answer.data == {"n": 3}
    await app.aclose()


DEPLOY_SCHEMA = {
    "type": "object",
    "properties": {"env": {"enum": ["staging", "prod"]}, "replicas": {"type": "integer"}},
    "required": ["env"],
    "additionalProperties": False,
}


async def test_edited_arguments_failing_the_tools_schema_are_refused_beside_the_field(
    store: Any,
) -> None:
    await store.save_halt(halted("a-1", input_schema=DEPLOY_SCHEMA))
    app = make_app(store)
    async with visitor(app) as v:
        page = await v.get("/requests/a-1")
        assert 'id="input-schema"' in page.text
        bad = await v.answer("a-1", action="approve_edited", arguments='{"env": "moon"}')
        extra = await v.answer(
            "a-1", action="approve_edited", arguments='{"env": "prod", "force": true}'
        )
        api = await v.client.post(
            "/api/requests/a-1/answer",
            json={"ok": True, "data": {"arguments": {"replicas": "two"}}},
            headers={"authorization": f"Bearer {TOKENS['ana']}"},
        )
    assert bad.status_code == 400
    assert 'id="error-arguments"' in bad.text
    assert extra.status_code == 400
    assert api.status_code == 400
    await _unanswered(store, "a-1")
    await app.aclose()


async def test_edited_arguments_fitting_the_schema_record_the_digest_of_what_was_approved(
    store: Any,
) -> None:
    from toolnexus.stores.checks import call_digest

    await store.save_halt(halted("a-1", input_schema=DEPLOY_SCHEMA))
    app = make_app(store)
    async with visitor(app) as v:
        done = await v.answer(
            "a-1", action="approve_edited", arguments='{"env": "staging", "replicas": 1}'
        )
    assert done.status_code == 303
    record = await store.answer_record("a-1")
    assert record is not None
    assert record.answer.data == {"arguments": {"env": "staging", "replicas": 1}}
    assert record.digest == call_digest("deploy", '{"env": "staging", "replicas": 1}')
    await app.aclose()


async def test_a_request_a_host_is_resuming_with_its_own_answer_is_a_409_not_a_404(
    store: Any,
) -> None:
    await store.save_halt(halted("a-1"))
    await store.claim("a-1", Answer("a-1", True), answered_by="host")
    app = make_app(store)
    async with visitor(app) as v:
        late = await v.answer("a-1", action="decline")
    assert late.status_code == 409
    assert "being answered right now by host" in late.text
    await app.aclose()
