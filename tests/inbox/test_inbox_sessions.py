"""Sessions end: signing out, a changed token, a removed user and the end of a session's life
each make the cookie worthless, on the memory store, a SQLite file and Postgres; and an
``Authorization`` header of another scheme beside a session is ignored, never a wrong token.

The inbox is driven over httpx's ASGI transport (real stores, no server).
"""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
from inbox_support import TOKENS, USERS, halted, make_app, make_store, visitor

from toolnexus.inbox import inbox_app
from toolnexus.inbox.auth import SESSION_S
from toolnexus.security import SignInLimit

COOKIE = "toolnexus_inbox"


def replay(app: Any, cookie: str) -> httpx.AsyncClient:
    """A plain client that sends an old session cookie, as someone who copied it would."""
    transport = httpx.ASGITransport(app=app)
    return httpx.AsyncClient(
        transport=transport, base_url="http://inbox.test", cookies={COOKIE: cookie}
    )


async def still_waiting(store: Any, rid: str) -> None:
    assert await store.answer_record(rid) is None
    assert rid in [e.request_id for e in await store.list_pending()]


async def test_a_cookie_replayed_after_signing_out_is_refused_and_cannot_answer(
    store: Any,
) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with visitor(app) as ana:
        cookie, csrf = ana.client.cookies[COOKIE], ana.csrf
        out = await ana.post("/logout", {})
        assert out.status_code == 303
        assert out.headers["location"] == "/login"
    async with replay(app, cookie) as copied:
        home = await copied.get("/")
        assert (home.status_code, home.headers["location"]) == (303, "/login")
        post = await copied.post("/requests/a-1/answer", data={"csrf": csrf, "action": "approve"})
        assert post.status_code == 401
        cancel = await copied.post("/requests/a-1/cancel", data={"csrf": csrf})
        assert cancel.status_code == 401
    await still_waiting(store, "a-1")
    await app.aclose()


async def test_a_form_of_an_ended_session_does_not_pass_in_the_next_one(store: Any) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    async with visitor(app) as ana:
        old_csrf = ana.csrf
        await ana.post("/logout", {})
        await ana.login("ana")
        assert ana.csrf != old_csrf
        refused = await ana.answer("a-1", action="approve", csrf=old_csrf)
        assert refused.status_code == 403
        await still_waiting(store, "a-1")
        done = await ana.answer("a-1", action="approve")
        assert done.status_code == 303
    await app.aclose()


async def test_a_changed_token_or_a_removed_user_ends_their_sessions_for_good(
    store: Any,
) -> None:
    # One secret for the three apps, as the processes of one inbox had to share to accept each
    # other's cookies before sessions were kept in the store (it is no longer used).
    shared = {"secret": "one-secret-for-every-process"}
    app = make_app(store, **shared)
    async with visitor(app) as ana, visitor(app, "bob") as bob:
        cookies = [ana.client.cookies[COOKIE], bob.client.cookies[COOKIE]]
    await app.aclose()
    rotated_users = [{"name": "ana", "token": "tok-ana-rotated-0123456789"}]
    rotated = make_app(store, users=rotated_users, **shared)
    for cookie in cookies:
        async with replay(rotated, cookie) as copied:
            assert (await copied.get("/")).status_code == 303
    await rotated.aclose()
    back = make_app(store, **shared)  # the old tokens again: the old sessions stay ended
    for cookie in cookies:
        async with replay(back, cookie) as copied:
            assert (await copied.get("/")).status_code == 303
    await back.aclose()


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_session_ends_twelve_hours_after_signing_in(kind: str, tmp_path: Path) -> None:
    clock = Clock()
    if kind == "memory":
        from toolnexus.stores.runs import InMemoryStore

        store: Any = InMemoryStore(clock)
    else:
        from toolnexus.stores.sqlite import SqliteStore

        store = SqliteStore(tmp_path / "inbox.db", clock=clock)
    app = make_app(store)
    async with visitor(app) as ana:
        clock.now += SESSION_S - 1
        assert (await ana.get("/")).status_code == 200
        clock.now += 1
        assert (await ana.get("/")).status_code == 303
    await app.aclose()
    await store.aclose()


async def test_the_store_keeps_only_a_hash_of_the_cookie(tmp_path: Path) -> None:
    store = await make_store("sqlite", tmp_path)
    app = make_app(store)
    async with visitor(app) as ana:
        cookie = ana.client.cookies[COOKIE]
    with closing(sqlite3.connect(tmp_path / "inbox.db")) as conn:
        rows = conn.execute("SELECT key, user_name, tag FROM inbox_sessions").fetchall()
    assert rows == [(hashlib.sha256(cookie.encode()).hexdigest(), "ana", rows[0][2])]
    assert TOKENS["ana"] not in repr(rows)
    assert hashlib.sha256(TOKENS["ana"].encode()).hexdigest() not in repr(rows)
    await app.aclose()
    await store.aclose()


# -- another Authorization scheme beside a session ------------------------------------------

FOREIGN = ("Basic YW5hOnNlY3JldC1wYXNzd29yZA==", "Digest username=ana", "Negotiate YIIB", "Basic")


async def test_a_foreign_scheme_beside_a_session_is_served_and_never_counted(
    store: Any,
) -> None:
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    app.sign_ins = SignInLimit(3, 60.0)
    async with visitor(app) as ana:
        for i in range(3 * len(FOREIGN)):  # past the limit many times over
            header = {"authorization": FOREIGN[i % len(FOREIGN)]}
            page = await ana.get("/requests/a-1", headers=header)
            assert page.status_code == 200, page.text
        assert app.sign_ins.retry_after("127.0.0.1") is None
        done = await ana.client.post(
            "/requests/a-1/answer",
            data={"csrf": ana.csrf, "action": "approve"},
            headers={"authorization": FOREIGN[0]},
        )
        assert done.status_code == 303
    record = await store.answer_record("a-1")
    assert record is not None
    assert record.answered_by == "ana"
    await app.aclose()


async def test_a_foreign_scheme_without_a_session_is_not_a_user_and_not_counted(
    store: Any,
) -> None:
    app = make_app(store)
    app.sign_ins = SignInLimit(3, 60.0)
    async with visitor(app, None) as nobody:
        for _ in range(5):
            page = await nobody.get("/", headers={"authorization": FOREIGN[0]})
            assert (page.status_code, page.headers["location"]) == (303, "/login")
            api = await nobody.get("/api/pending", headers={"authorization": FOREIGN[0]})
            assert api.status_code == 401
        assert app.sign_ins.retry_after("127.0.0.1") is None
    await app.aclose()


async def test_a_wrong_bearer_token_beside_a_session_still_counts(store: Any) -> None:
    app = make_app(store)
    app.sign_ins = SignInLimit(3, 60.0)
    async with visitor(app) as ana:
        wrong = {"authorization": "Bearer not-the-token-of-anyone"}
        for _ in range(3):
            assert (await ana.get("/", headers=wrong)).status_code == 401
        locked = await ana.get("/", headers=wrong)
        assert locked.status_code == 429
        assert (await ana.get("/")).status_code == 200  # the session itself keeps working
    await app.aclose()


async def test_a_store_without_sessions_is_refused_by_name() -> None:
    from toolnexus.errors import UsageError
    from toolnexus.stores.runs import InMemoryStore

    store: Any = InMemoryStore()
    store.sessions = None
    with pytest.raises(UsageError, match=r"keeps its sessions in the store .* has no sessions"):
        inbox_app(store, users=USERS)
