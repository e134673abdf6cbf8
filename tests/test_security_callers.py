"""The bearer check names the caller whose token it took, in the ASGI scope — several callers,
each with a token of its own (given as its sha256), or one token as the one caller ``a2a`` —
on real uvicorn over loopback."""

from __future__ import annotations

import hashlib

import aiohttp
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from toolnexus.errors import UsageError
from toolnexus.security import CALLER, DEFAULT_CALLER, ASGIApp, BearerAuth, secure
from toolnexus.serve.server import start

ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789ab"


async def who(request: Request) -> JSONResponse:
    return JSONResponse({"caller": request.scope.get(CALLER)})


def inner() -> Starlette:
    return Starlette(routes=[Route("/", who)])


def sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def callers_seen(app: ASGIApp, tokens: list[str]) -> list[object]:
    seen: list[object] = []
    async with await start(app, "127.0.0.1:0") as served, aiohttp.ClientSession() as http:
        for token in tokens:
            headers = {"Authorization": f"Bearer {token}"}
            async with http.get(served.url + "/", headers=headers) as r:
                seen.append((await r.json())["caller"] if r.status == 200 else r.status)
    return seen


async def test_each_callers_token_names_that_caller_and_a_wrong_one_is_refused() -> None:
    app = secure(inner(), callers={sha(ALICE): "alice", sha(BOB).upper(): "bob"})
    seen = await callers_seen(app, [ALICE, BOB, "carol-token-0123456789", sha(ALICE)])
    assert seen == ["alice", "bob", 401, 401]  # the digest itself is no token


async def test_one_token_is_the_one_default_caller() -> None:
    seen = await callers_seen(secure(inner(), token=ALICE), [ALICE, BOB])
    assert seen == [DEFAULT_CALLER, 401]
    assert await callers_seen(secure(inner()), [ALICE]) == [None]  # no token: nobody named


def test_the_bearer_check_takes_a_token_or_callers() -> None:
    with pytest.raises(UsageError, match="a token or callers"):
        BearerAuth(inner())
    with pytest.raises(UsageError, match="a token or callers"):
        BearerAuth(inner(), ALICE, callers={sha(BOB): "bob"})
    with pytest.raises(UsageError, match="at least one caller"):
        BearerAuth(inner(), callers={})
