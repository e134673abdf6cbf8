"""A served tool that suspends asks the MCP client: ``elicitation/create`` on a handshake-era
session, an input-required round trip on 2026-07-28 (driven here by the SDK client's own retry
loop), the host's ``wait_for`` when given, and an ``isError`` result when nobody can answer."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio
from mcp.shared.exceptions import MCPError
from serve_support import client, replying, serving

from toolnexus import (
    Answer,
    Request,
    ToolContext,
    ToolResult,
    auth_required,
    create_toolkit,
    define_tool,
    pending,
)
from toolnexus.serve import MCPServeConfig, mcp_app

pytestmark = pytest.mark.asyncio(loop_scope="module")

FORM = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name"],
}
runs: list[tuple[str, Any]] = []


@define_tool
def refund(order: str, ctx: ToolContext) -> str | ToolResult:
    """Refund an order (a human approves first)."""
    if ctx.answer is None:
        return pending(kind="approval", prompt=f"Refund order {order}?")
    runs.append(("refund", ctx.answer.to_dict()))
    return f"refunded {order}"


@define_tool
def greet(ctx: ToolContext) -> str | ToolResult:
    """Greet the user by name (asks for it)."""
    if ctx.answer is None:
        return pending(kind="input", prompt="Who are you?", data={"schema": FORM})
    return f"hello {(ctx.answer.data or {})['name']}"


@define_tool
def login(ctx: ToolContext) -> str | ToolResult:
    """Needs a login first."""
    if ctx.answer is None:
        return auth_required("https://idp.example/login?s=1", "Log in to the bank")
    return "logged in"


@define_tool
def two_steps(ctx: ToolContext) -> str | ToolResult:
    """Asks a first question, then a second one."""
    if ctx.answer is None:
        return pending(kind="approval", prompt="Step one?")
    if ctx.request is not None and ctx.request.prompt == "Step one?":
        return pending(kind="approval", prompt="Step two?")
    return "both steps approved"


@define_tool
def ping() -> str:
    """Answers pong."""
    return "pong"


@define_tool
def stubborn(ctx: ToolContext) -> str | ToolResult:
    """Asks the same question again even after an answer."""
    return pending(kind="approval", prompt="Again?")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def toolkit():
    tk = await create_toolkit(
        extra_tools=[refund, greet, login, two_steps, stubborn, ping],
        builtins={"tools": {"question": True, "bash": False, "read": False}},
    )
    yield tk
    await tk.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def url(toolkit):
    async with serving(mcp_app(toolkit)) as base:
        yield base


def _text(result: Any) -> str:
    return "".join(part.text for part in result.content)


@pytest.mark.parametrize(
    ("action", "expected", "is_error"),
    [
        ("accept", "refunded A-1", False),
        ("decline", "declined/expired: Refund order A-1?", True),
        ("cancel", "declined/expired: Refund order A-1?", True),
    ],
)
async def test_an_approval_is_asked_and_the_reply_decides(url, era, action, expected, is_error):
    runs.clear()
    seen: list[Any] = []
    async with client(url, era, replying(action, seen=seen)) as c:
        result = await c.call_tool("refund", {"order": "A-1"})
    assert (_text(result), result.is_error) == (expected, is_error)
    assert [p.message for p in seen] == ["Refund order A-1?"]
    assert seen[0].requested_schema == {"type": "object", "properties": {}}
    assert len(runs) == (1 if action == "accept" else 0)  # a decline never re-runs the tool


async def test_a_form_reply_becomes_the_answer_data(url, era):
    seen: list[Any] = []
    async with client(url, era, replying("accept", {"name": "Ann", "age": 31}, seen)) as c:
        result = await c.call_tool("greet", {})
    assert _text(result) == "hello Ann"
    assert seen[0].requested_schema == FORM


async def test_a_form_reply_that_fails_the_schema_changes_nothing(url, era):
    async with client(url, era, replying("accept", {"age": 3})) as c:
        if era == "legacy":  # inline: treated as a decline, the tool is not re-run
            result = await c.call_tool("greet", {})
            assert (_text(result), result.is_error) == ("declined/expired: Who are you?", True)
        else:  # durable: the retry is refused, the call stays halted
            with pytest.raises(MCPError) as caught:
                await c.call_tool("greet", {})
            assert caught.value.error.code == -32602
            assert "fails 'required'" in caught.value.error.message


async def test_the_question_builtin_becomes_a_form_and_its_answers_come_back_in_order(url, era):
    seen: list[Any] = []
    questions = [
        {"question": "Which region?", "options": ["eu", "us"]},
        {"question": "Why?", "header": "Reason"},
    ]
    reply = replying("accept", {"q1": "eu", "q2": "latency"}, seen)
    async with client(url, era, reply) as c:
        result = await c.call_tool("question", {"questions": questions})
    assert _text(result) == '{"answers": ["eu", "latency"]}'
    schema = seen[0].requested_schema
    assert schema["properties"]["q1"]["enum"] == ["eu", "us"]
    assert schema["properties"]["q2"]["title"] == "Reason"
    assert schema["required"] == ["q1", "q2"]


async def test_a_login_is_a_url_elicitation(url, era):
    seen: list[Any] = []
    async with client(url, era, replying("accept", seen=seen)) as c:
        result = await c.call_tool("login", {})
    assert _text(result) == "logged in"
    assert (seen[0].mode, seen[0].url) == ("url", "https://idp.example/login?s=1")
    assert seen[0].message == "Log in to the bank"


async def test_a_new_question_after_the_answer_is_asked_too(url, era):
    seen: list[Any] = []
    async with client(url, era, replying("accept", seen=seen)) as c:
        result = await c.call_tool("two_steps", {})
    assert _text(result) == "both steps approved"
    assert [p.message for p in seen] == ["Step one?", "Step two?"]


async def test_the_same_question_again_is_unresolved_never_an_endless_loop(url, era):
    seen: list[Any] = []
    async with client(url, era, replying("accept", seen=seen)) as c:
        result = await c.call_tool("stubborn", {})
    assert (_text(result), result.is_error) == ("unresolved: Again?", True)
    assert len(seen) == 1


async def test_without_the_elicitation_capability_the_prompt_is_an_error_result(url, era):
    async with client(url, era) as c:
        result = await c.call_tool("refund", {"order": "B-2"})
        login_result = await c.call_tool("login", {})
    assert (_text(result), result.is_error) == ("input required: Refund order B-2?", True)
    assert _text(login_result) == (
        "input required: Log in to the bank\nhttps://idp.example/login?s=1"
    )


async def test_a_stateless_server_cannot_ask_a_handshake_era_client(toolkit):
    seen: list[Any] = []
    app = mcp_app(toolkit, MCPServeConfig(stateless=True))
    async with serving(app) as base, client(base, "legacy", replying("accept", seen=seen)) as c:
        result = await c.call_tool("refund", {"order": "C-3"})
    assert (_text(result), result.is_error) == ("input required: Refund order C-3?", True)
    assert seen == []


async def test_the_hosts_wait_for_answers_on_the_server_side(toolkit, era):
    asked: list[Request] = []
    seen: list[Any] = []

    async def wait_for(request: Request) -> Answer:
        asked.append(request)
        return Answer(id=request.id, ok=True)

    app = mcp_app(toolkit, wait_for=wait_for)
    async with serving(app) as base, client(base, era, replying("decline", seen=seen)) as c:
        result = await c.call_tool("refund", {"order": "D-4"})
    assert _text(result) == "refunded D-4"
    assert [r.prompt for r in asked] == ["Refund order D-4?"]
    assert seen == []  # the MCP client was never asked


async def test_a_wait_for_that_raises_cancels_the_call_and_the_server_lives_on(toolkit, era):
    def wait_for(request: Request) -> Answer:
        raise RuntimeError("approvals service down")

    app = mcp_app(toolkit, wait_for=wait_for)
    async with serving(app) as base, client(base, era) as c:
        failed = await c.call_tool("refund", {"order": "E-5"})
        fine = await c.call_tool("ping", {})
    assert (_text(failed), failed.is_error) == ("declined/expired: Refund order E-5?", True)
    assert _text(fine) == "pong"
