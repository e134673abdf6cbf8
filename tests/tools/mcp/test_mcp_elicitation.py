"""The elicitation bridge against real servers, in both protocol shapes.

Legacy (2025 handshake era): the server sends ``elicitation/create`` mid-call; it is answered
inline through ``wait_for``. Modern (2026-07-28): the server answers *input required*; with a
``wait_for`` it is asked inline and the call retried, without one the tool suspends durably and
is resumed with ``ctx.answer`` / ``ctx.request``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import pytest
import pytest_asyncio
from mcp_servers import demo, load_connected

from toolnexus import Answer, Request, ToolContext, ToolResult, pending_of
from toolnexus.tools.mcp import McpSource, load_mcp

MODULE = pytest.mark.asyncio(loop_scope="module")
FORM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name"],
}
ANN = '{"name": "Ann"}'


class Human:
    """A scripted person behind ``wait_for``: records what was asked, replies with ``reply``."""

    def __init__(self) -> None:
        self.asked: list[Request] = []
        self.reply: Callable[[Request], Answer] = accept({"name": "Ann"})
        self.delay = 0.0

    async def __call__(self, request: Request) -> Answer:
        self.asked.append(request)
        if self.delay:
            await asyncio.sleep(self.delay)  # a person taking their time, not a wait on state
        return self.reply(request)


def accept(data: dict[str, Any] | None = None) -> Callable[[Request], Answer]:
    return lambda r: Answer(id=r.id, ok=True, data=data)


def refuse(reason: str) -> Callable[[Request], Answer]:
    return lambda r: Answer(id=r.id, ok=False, reason=reason)


async def run(
    source: McpSource, name: str, ctx: ToolContext | None = None, args: dict[str, Any] | None = None
) -> ToolResult:
    tool = next(t for t in source.tools if t.name == name)
    return await tool.execute(args or {}, ctx)


# -- inline: with a wait_for -------------------------------------------------------------

PERSON = Human()
SLOW_MS = 5000  # the idle timeout of "slow": longer than a start-up on a loaded machine


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def inline() -> AsyncIterator[McpSource]:
    slow = demo("--legacy", timeout=SLOW_MS)
    config = {"modern": demo(), "legacy": demo("--legacy"), "slow": slow}
    async with await load_connected(config, wait_for=PERSON) as source:
        assert set(source.status().values()) == {"connected"}, source.errors()
        yield source


@pytest.fixture
def human() -> Human:
    PERSON.__init__()
    return PERSON


@MODULE
@pytest.mark.parametrize("server", ["modern", "legacy"])
async def test_the_capability_is_advertised_with_a_wait_for(
    inline: McpSource, human: Human, server: str
) -> None:
    assert (await run(inline, f"{server}_caps")).output == "elicitation"


@MODULE
@pytest.mark.parametrize("server", ["modern", "legacy"])
async def test_a_form_is_asked_as_an_input_request_with_its_schema(
    inline: McpSource, human: Human, server: str
) -> None:
    await run(inline, f"{server}_ask_form")
    (request,) = human.asked
    assert (request.kind, request.prompt, request.url) == ("input", "Who are you?", None)
    assert request.data == {"schema": FORM_SCHEMA}
    assert request.id.startswith("elc-")


@MODULE
@pytest.mark.parametrize("server", ["modern", "legacy"])
async def test_an_accepted_form_reaches_the_server(
    inline: McpSource, human: Human, server: str
) -> None:
    result = await run(inline, f"{server}_ask_form")
    assert (result.output, result.is_error) == (f"accept:{ANN}", False)


@MODULE
@pytest.mark.parametrize("server", ["modern", "legacy"])
async def test_an_answer_failing_the_schema_is_declined(
    inline: McpSource, human: Human, server: str
) -> None:
    human.reply = accept({"age": "not a number"})
    assert (await run(inline, f"{server}_ask_form")).output == "decline:null"


@MODULE
@pytest.mark.parametrize(("reason", "action"), [("declined", "decline"), ("cancelled", "cancel")])
@pytest.mark.parametrize("server", ["modern", "legacy"])
async def test_a_refusal_maps_to_decline_or_cancel(
    inline: McpSource, human: Human, server: str, reason: str, action: str
) -> None:
    human.reply = refuse(reason)
    assert (await run(inline, f"{server}_ask_form")).output == f"{action}:null"


@MODULE
@pytest.mark.parametrize("server", ["modern", "legacy"])
async def test_a_url_elicitation_is_an_authorization_request(
    inline: McpSource, human: Human, server: str
) -> None:
    result = await run(inline, f"{server}_ask_url")
    (request,) = human.asked
    assert (request.kind, request.url) == ("authorization", "https://login.example/auth?x=1")
    assert request.prompt == "Log in to continue"
    assert result.output == "accept:null"


@MODULE
async def test_a_raising_wait_for_cancels_the_elicitation(inline: McpSource, human: Human) -> None:
    def broken(request: Request) -> Answer:
        raise RuntimeError("the approvals UI is down")

    human.reply = broken
    assert (await run(inline, "legacy_ask_form")).output == "cancel:null"


@MODULE
async def test_two_rounds_of_questions_are_both_asked_inline(
    inline: McpSource, human: Human
) -> None:
    result = await run(inline, "modern_ask_twice")
    assert [r.prompt for r in human.asked] == ["First?", "Second?"]
    assert result.output == f"accept:{ANN} then accept:{ANN}"


@MODULE
async def test_the_idle_timeout_is_paused_while_a_human_answers(
    inline: McpSource, human: Human
) -> None:
    human.delay = SLOW_MS / 1000 + 0.5  # longer than the server's idle timeout
    result = await run(inline, "slow_ask_form")
    assert (result.output, result.is_error) == (f"accept:{ANN}", False)


# -- durable: without a wait_for ---------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def durable() -> AsyncIterator[McpSource]:
    async with await load_mcp({"modern": demo(), "legacy": demo("--legacy")}) as source:
        assert set(source.status().values()) == {"connected"}, source.errors()
        yield source


async def halt(source: McpSource, name: str) -> tuple[ToolResult, Request]:
    result = await run(source, name)
    request = pending_of(result)
    assert request is not None, result.output
    return result, request


def resume_ctx(request: Request, reply: Callable[[Request], Answer]) -> ToolContext:
    return ToolContext(answer=reply(request), request=request)


@MODULE
@pytest.mark.parametrize("server", ["modern", "legacy"])
async def test_no_capability_is_advertised_without_a_wait_for(
    durable: McpSource, server: str
) -> None:
    assert (await run(durable, f"{server}_caps")).output == "none"


@MODULE
async def test_a_legacy_elicitation_without_a_wait_for_is_an_error_not_a_hang(
    durable: McpSource,
) -> None:
    result = await run(durable, "legacy_ask_form")
    assert result.is_error
    assert pending_of(result) is None


@MODULE
async def test_a_modern_form_suspends_with_the_question_and_the_state_token(
    durable: McpSource,
) -> None:
    result, request = await halt(durable, "modern_ask_form")
    assert (result.output, result.is_error) == ("Who are you?", True)
    assert (request.kind, request.prompt) == ("input", "Who are you?")
    assert request.id.startswith("elc-")
    data = request.data or {}
    assert data["schema"] == FORM_SCHEMA
    assert data["mcp"]["server"] == "modern"
    assert data["mcp"]["tool"] == "ask_form"
    assert data["mcp"]["state"].startswith("v1.")  # the server's sealed token, kept verbatim


@MODULE
async def test_the_suspended_request_survives_a_json_round_trip(durable: McpSource) -> None:
    import json

    _, request = await halt(durable, "modern_ask_form")
    assert Request.from_dict(json.loads(json.dumps(request.to_dict()))) == request


@MODULE
async def test_resuming_with_the_answer_completes_the_call(durable: McpSource) -> None:
    _, request = await halt(durable, "modern_ask_form")
    result = await run(durable, "modern_ask_form", resume_ctx(request, accept({"name": "Ann"})))
    assert (result.output, result.is_error) == (f"accept:{ANN}", False)


@MODULE
async def test_resuming_with_a_decline_tells_the_server(durable: McpSource) -> None:
    _, request = await halt(durable, "modern_ask_form")
    result = await run(durable, "modern_ask_form", resume_ctx(request, refuse("declined")))
    assert result.output == "decline:null"


@MODULE
async def test_resuming_with_an_answer_failing_the_schema_declines(durable: McpSource) -> None:
    _, request = await halt(durable, "modern_ask_form")
    result = await run(durable, "modern_ask_form", resume_ctx(request, accept({"age": 3})))
    assert result.output == "decline:null"


@MODULE
async def test_a_url_elicitation_suspends_as_authorization_and_resumes(
    durable: McpSource,
) -> None:
    result, request = await halt(durable, "modern_ask_url")
    assert (request.kind, request.url) == ("authorization", "https://login.example/auth?x=1")
    assert result.output == "Log in to continue\nhttps://login.example/auth?x=1"
    resumed = await run(durable, "modern_ask_url", resume_ctx(request, accept()))
    assert resumed.output == "accept:null"


@MODULE
async def test_expires_at_comes_from_the_servers_token_lifetime(durable: McpSource) -> None:
    _, request = await halt(durable, "modern_ask_expiring")
    assert request.expiresAt == "2099-01-01T00:00:00.000Z"


@MODULE
async def test_without_a_lifetime_from_the_server_there_is_no_expiry(durable: McpSource) -> None:
    _, request = await halt(durable, "modern_ask_form")
    assert request.expiresAt is None


@MODULE
async def test_a_rejected_state_token_is_re_asked_and_the_held_answer_given(
    durable: McpSource, caplog: pytest.LogCaptureFixture
) -> None:
    _, request = await halt(durable, "modern_ask_form")
    data = dict(request.data or {})
    data["mcp"] = {**data["mcp"], "state": "v1.forged-or-expired"}
    stale = replace(request, data=data)
    with caplog.at_level(logging.INFO, logger="toolnexus"):
        result = await run(durable, "modern_ask_form", resume_ctx(stale, accept({"name": "Ann"})))
    assert (result.output, result.is_error) == (f"accept:{ANN}", False)
    assert "refused the held state" in caplog.text


@MODULE
async def test_a_second_round_suspends_again_with_a_new_request(durable: McpSource) -> None:
    _, first = await halt(durable, "modern_ask_twice")
    result = await run(durable, "modern_ask_twice", resume_ctx(first, accept({"name": "Ann"})))
    second = pending_of(result)
    assert second is not None
    assert second.prompt == "Second?"
    assert second.id != first.id
    done = await run(durable, "modern_ask_twice", resume_ctx(second, accept({"name": "Bo"})))
    assert done.output == 'accept:{"name": "Ann"} then accept:{"name": "Bo"}'


@MODULE
async def test_an_answer_to_another_tools_request_is_not_taken_as_ours(
    durable: McpSource,
) -> None:
    _, request = await halt(durable, "modern_ask_form")
    data = dict(request.data or {})
    data["mcp"] = {**data["mcp"], "tool": "ask_url"}
    foreign = replace(request, data=data)
    result = await run(durable, "modern_ask_form", resume_ctx(foreign, accept({"name": "Ann"})))
    assert pending_of(result) is not None  # a fresh call: the server asks again


@MODULE
async def test_a_roots_request_is_answered_with_no_roots(durable: McpSource) -> None:
    assert (await run(durable, "modern_ask_roots")).output == "roots:0"


@MODULE
async def test_a_sampling_request_is_a_clear_error(durable: McpSource) -> None:
    result = await run(durable, "modern_ask_sampling")
    assert result.is_error
    assert "toolnexus does not serve MCP sampling" in result.output


@MODULE
async def test_a_server_that_never_stops_asking_is_given_up_on(
    inline: McpSource, human: Human
) -> None:
    result = await run(inline, "modern_ask_forever")
    assert result.is_error
    assert result.output == "MCP tool ask_forever asked for input more than 10 times; gave up"
    assert len(human.asked) == 10
