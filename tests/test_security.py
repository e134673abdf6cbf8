"""The shared bearer check and body cap, on real uvicorn over loopback."""

from __future__ import annotations

import aiohttp
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from toolnexus.errors import UsageError
from toolnexus.security import BearerAuth, BodyLimit, SignInLimit, secure
from toolnexus.serve.server import parse_addr, start

seen: list[bytes] = []


async def echo(request: Request) -> JSONResponse:
    body = await request.body()
    seen.append(body)
    return JSONResponse({"size": len(body)})


def inner() -> Starlette:
    return Starlette(routes=[Route("/", echo, methods=["GET", "POST"])])


async def test_a_request_without_the_token_gets_401_with_a_bearer_challenge() -> None:
    seen.clear()
    async with await start(secure(inner(), token="s3cret-0123456789"), "127.0.0.1:0") as served:
        async with aiohttp.ClientSession() as http:
            async with http.post(served.url + "/", data=b"{}") as r:
                assert r.status == 401
                assert r.headers["WWW-Authenticate"] == 'Bearer realm="toolnexus"'
                body = await r.json()
                assert body["error"]["message"].startswith("Unauthorized")
                assert "s3cret-0123456789" not in await r.text()
            headers = {"Authorization": "Bearer wrong"}
            async with http.post(served.url + "/", data=b"{}", headers=headers) as r:
                assert r.status == 401
                assert 'error="invalid_token"' in r.headers["WWW-Authenticate"]
            headers = {"Authorization": "Basic s3cret-0123456789"}
            async with http.get(served.url + "/", headers=headers) as r:
                assert r.status == 401
            headers = {"Authorization": "Bearer s3cret-0123456789"}
            async with http.post(served.url + "/", data=b"{}", headers=headers) as r:
                assert r.status == 200
                assert await r.json() == {"size": 2}
    assert seen == [b"{}"]  # the refused requests never reached the app


async def test_a_body_over_the_cap_gets_413_whether_declared_or_streamed() -> None:
    seen.clear()
    async with await start(secure(inner(), max_body=100), "127.0.0.1:0") as served:
        async with aiohttp.ClientSession() as http:
            async with http.post(served.url + "/", data=b"x" * 101) as r:
                assert r.status == 413
                assert "limit 100 bytes" in (await r.json())["error"]["message"]

            async def chunks():  # no Content-Length: chunked transfer
                for _ in range(5):
                    yield b"y" * 40

            async with http.post(served.url + "/", data=chunks()) as r:
                assert r.status == 413
            async with http.post(served.url + "/", data=b"z" * 100) as r:
                assert r.status == 200
                assert await r.json() == {"size": 100}
    assert seen == [b"z" * 100]


def test_bad_options_are_usage_errors() -> None:
    with pytest.raises(UsageError):
        BearerAuth(inner(), "")
    with pytest.raises(UsageError):
        BearerAuth(inner(), "has space")
    with pytest.raises(UsageError):
        BodyLimit(inner(), 0)
    with pytest.raises(UsageError):
        parse_addr("nohost")
    with pytest.raises(UsageError):
        parse_addr("h:notaport")
    assert parse_addr(":0") == ("127.0.0.1", 0)
    assert parse_addr("[::1]:80") == ("::1", 80)


async def test_wrong_tokens_from_one_address_get_429_until_the_oldest_is_a_minute_old() -> None:
    seen.clear()
    now = [1000.0]
    guard = BearerAuth(
        inner(), "s3cret-0123456789", failures=SignInLimit(3, 60.0, clock=lambda: now[0])
    )
    async with await start(guard, "127.0.0.1:0") as served:
        async with aiohttp.ClientSession() as http:
            async with http.post(served.url + "/", data=b"{}") as r:
                assert r.status == 401  # no token at all is not a guess: not counted
            wrong = {"Authorization": "Bearer guess"}
            for _ in range(3):
                async with http.post(served.url + "/", data=b"{}", headers=wrong) as r:
                    assert r.status == 401
            right = {"Authorization": "Bearer s3cret-0123456789"}
            async with http.post(served.url + "/", data=b"{}", headers=right) as r:
                assert r.status == 429
                assert r.headers["Retry-After"] == "60"
                body = await r.json()
                assert body["error"]["message"].startswith("Too many wrong tokens")
            now[0] += 60
            async with http.post(served.url + "/", data=b"{}", headers=right) as r:
                assert r.status == 200
    assert seen == [b"{}"]  # only the right token, after the lock, reached the app
