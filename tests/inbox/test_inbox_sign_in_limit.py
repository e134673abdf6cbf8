"""Wrong tokens are counted per client address: past the limit, that address is refused with 429
(the sign-in form and bearer tokens alike) until its oldest failure is a minute old.

The inbox is driven over httpx's ASGI transport, which lets each client claim an address.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from inbox_support import TOKENS, halted, make_app, visitor

from toolnexus.errors import UsageError
from toolnexus.inbox import InboxApp
from toolnexus.security import SignInLimit
from toolnexus.stores.runs import InMemoryStore

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def client_at(app: InboxApp, address: str) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=(address, 40000))
    async with httpx.AsyncClient(transport=transport, base_url="http://inbox.test") as client:
        yield client


async def sign_in(client: httpx.AsyncClient, token: str) -> httpx.Response:
    form = await client.get("/login")
    nonce = _CSRF.search(form.text)
    assert nonce is not None
    return await client.post("/login", data={"csrf": nonce.group(1), "token": token})


async def limited_app(limit: int = 3) -> tuple[InboxApp, InMemoryStore, Clock]:
    store = InMemoryStore()
    await store.save_halt(halted("a-1"))
    app = make_app(store)
    clock = Clock()
    app.sign_ins = SignInLimit(limit, 60.0, clock=clock)
    return app, store, clock


async def test_wrong_tokens_at_the_form_lock_the_address_out_even_for_the_right_token() -> None:
    app, store, clock = await limited_app()
    async with client_at(app, "10.0.0.1") as client:
        for _ in range(3):
            assert (await sign_in(client, "guess")).status_code == 401
        refused = await sign_in(client, TOKENS["ana"])
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "60"
        assert "Too many wrong tokens from this address" in refused.text
        assert "toolnexus_inbox=" not in refused.headers.get("set-cookie", "")
        clock.now += 30
        assert (await sign_in(client, TOKENS["ana"])).headers["retry-after"] == "30"
        clock.now += 30  # the oldest failure is a minute old: the address may try again
        assert (await sign_in(client, TOKENS["ana"])).status_code == 303
    assert await store.answer_record("a-1") is None
    await app.aclose()


async def test_wrong_bearer_tokens_count_and_a_locked_address_is_refused_before_lookup() -> None:
    app, store, clock = await limited_app()
    answer = {"ok": True}
    async with client_at(app, "10.0.0.1") as client:
        for _ in range(3):
            wrong = await client.post(
                "/api/requests/a-1/answer", json=answer, headers={"authorization": "Bearer x"}
            )
            assert wrong.status_code == 401
        right = {"authorization": f"Bearer {TOKENS['ana']}"}
        refused = await client.post("/api/requests/a-1/answer", json=answer, headers=right)
        assert refused.status_code == 429
        assert refused.json()["error"].startswith("too many wrong tokens from this address")
        assert int(refused.headers["retry-after"]) == 60
        assert (await sign_in(client, TOKENS["ana"])).status_code == 429  # the form too
        assert await store.answer_record("a-1") is None  # nothing was recorded
        clock.now += 60
        done = await client.post("/api/requests/a-1/answer", json=answer, headers=right)
        assert done.status_code == 200, done.text
    record = await store.answer_record("a-1")
    assert record is not None
    assert record.answered_by == "ana"
    await app.aclose()


async def test_another_address_and_a_signed_in_session_are_not_locked_out() -> None:
    app, _, _ = await limited_app()
    async with visitor(app) as ana:  # signed in from the ASGI transport's own address
        async with client_at(app, "127.0.0.1") as guesser:  # the same address as ana
            for _ in range(4):
                await sign_in(guesser, "guess")
            assert (await sign_in(guesser, TOKENS["ana"])).status_code == 429
        home = await ana.get("/")
        assert home.status_code == 200
        assert 'data-request-id="a-1"' in home.text
    async with client_at(app, "10.0.0.9") as elsewhere:
        assert (await sign_in(elsewhere, TOKENS["bob"])).status_code == 303
    await app.aclose()


async def test_a_right_token_clears_the_count() -> None:
    app, _, _ = await limited_app()
    async with client_at(app, "10.0.0.1") as client:
        for _ in range(2):
            assert (await sign_in(client, "guess")).status_code == 401
        assert (await sign_in(client, TOKENS["ana"])).status_code == 303
        for _ in range(2):
            assert (await sign_in(client, "guess")).status_code == 401
        assert (await sign_in(client, TOKENS["bob"])).status_code == 303
    await app.aclose()


async def test_no_limit_when_it_is_zero() -> None:
    store = InMemoryStore()
    app = make_app(store, max_failed_sign_ins=0)
    async with client_at(app, "10.0.0.1") as client:
        for _ in range(25):
            assert (await sign_in(client, "guess")).status_code == 401
        assert (await sign_in(client, TOKENS["ana"])).status_code == 303
    await app.aclose()


@pytest.mark.parametrize("limit", [-1, 1.5, True, "10"])
def test_a_bad_limit_is_a_usage_error(limit: object) -> None:
    with pytest.raises(UsageError, match="sign-in limit"):
        make_app(InMemoryStore(), max_failed_sign_ins=limit)


def test_the_table_of_addresses_is_bounded_and_forgets_the_longest_quiet_first() -> None:
    clock = Clock()
    limit = SignInLimit(2, 60.0, max_addresses=3, clock=clock)
    for address in ("a", "b", "c"):
        limit.failed(address)
        limit.failed(address)
    limit.failed("a")  # "a" failed last: "b" is now the longest quiet
    limit.failed("d")
    assert limit.retry_after("b") is None  # forgotten
    assert limit.retry_after("a") is not None
    assert limit.retry_after("c") is not None
    clock.now += 61
    assert limit.retry_after("a") is None
    assert limit.retry_after("c") is None
