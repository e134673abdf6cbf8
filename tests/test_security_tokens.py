"""Tokens shorter than 16 characters are refused when an app is built, with a message that
says why and never repeats the token: the served app's ``token=``, the MCP app's ``auth=``
and the inbox's users alike. (A users file's ``token_sha256`` cannot be measured.)"""

from __future__ import annotations

import hashlib

import pytest

from toolnexus import create_toolkit, define_tool
from toolnexus.errors import UsageError
from toolnexus.inbox import inbox_app
from toolnexus.security import check_token
from toolnexus.serve import serve_app
from toolnexus.serve.mcp import mcp_app
from toolnexus.stores.runs import InMemoryStore

FIFTEEN = "fifteen-chars-x"
SIXTEEN = "sixteen-chars-xy"


@define_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_the_minimum_is_sixteen_characters() -> None:
    from toolnexus.security import MIN_TOKEN_LENGTH

    assert (len(FIFTEEN), len(SIXTEEN), MIN_TOKEN_LENGTH) == (15, 16, 16)
    assert check_token(SIXTEEN) == SIXTEEN
    with pytest.raises(UsageError, match="too short \\(15 characters; at least 16") as caught:
        check_token(FIFTEEN)
    assert FIFTEEN not in str(caught.value)


async def test_a_served_app_refuses_a_15_character_token_and_takes_16() -> None:
    toolkit = await create_toolkit(extra_tools=[add], builtins=False)
    with pytest.raises(UsageError, match="at least 16"):
        serve_app(toolkit, mcp={"name": "tools"}, token=FIFTEEN)
    served = serve_app(toolkit, mcp={"name": "tools"}, token=SIXTEEN)
    await served.aclose()
    with pytest.raises(UsageError, match="at least 16"):
        mcp_app([add], auth=FIFTEEN)
    mcp_app([add], auth=SIXTEEN)


async def test_the_inbox_refuses_a_user_with_a_15_character_token_and_takes_16() -> None:
    store = InMemoryStore()
    with pytest.raises(UsageError, match="user 'ana': token is too short") as caught:
        inbox_app(store, users={"ana": FIFTEEN})
    assert FIFTEEN not in str(caught.value)
    with pytest.raises(UsageError, match="user 'bob': token is too short"):
        inbox_app(store, users=[{"name": "bob", "token": FIFTEEN}])
    app = inbox_app(store, users={"ana": SIXTEEN})
    await app.aclose()


async def test_a_hashed_token_is_taken_whatever_its_length() -> None:
    digest = hashlib.sha256(b"short").hexdigest()  # what was hashed cannot be measured
    app = inbox_app(InMemoryStore(), users=[{"name": "ana", "token_sha256": digest}])
    assert app.users.by_token("short") is not None
    await app.aclose()
