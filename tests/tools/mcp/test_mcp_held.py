"""``"elicitation": "halt"``: a legacy server's mid-call ``elicitation/create`` without a
``wait_for`` halts the run; the call waits in the live session, and the resume sends the answer
back. A resume the session cannot take (another process, a dropped connection) is a clear
error. Real stdio servers (the demo server in its 2025 era), the real client loop."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp_servers import demo, load_connected

from toolnexus import Answer, Request, ToolContext, ToolResult, create_client, pending_of
from toolnexus.errors import UsageError
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls
from toolnexus.tools.mcp import McpSource, parse_mcp_config

ANN = '{"name": "Ann"}'


@pytest.fixture
async def source() -> AsyncIterator[McpSource]:
    config = {
        "legacy": demo("--legacy", elicitation="halt"),
        "plain": demo("--legacy"),
    }
    async with await load_connected(config) as src:
        assert set(src.status().values()) == {"connected"}, src.errors()
        yield src


async def run(
    source: McpSource, name: str, ctx: ToolContext | None = None, args: dict[str, Any] | None = None
) -> ToolResult:
    tool = next(t for t in source.tools if t.name == name)
    return await tool.execute(args or {}, ctx)


async def halt(source: McpSource, name: str) -> Request:
    result = await run(source, name)
    request = pending_of(result)
    assert request is not None, result.output
    return request


def answered(request: Request, **answer: Any) -> ToolContext:
    return ToolContext(answer=Answer(id=request.id, **answer), request=request)


async def test_the_capability_is_advertised_without_a_wait_for_only_when_asked_for(
    source: McpSource,
) -> None:
    assert (await run(source, "legacy_caps")).output == "elicitation"
    assert (await run(source, "plain_caps")).output == "none"  # the contract's default
    plain = await run(source, "plain_ask_form")
    assert plain.is_error
    assert pending_of(plain) is None


async def test_a_mid_call_question_halts_and_the_answer_goes_back_to_the_live_call(
    source: McpSource,
) -> None:
    request = await halt(source, "legacy_ask_form")
    assert (request.kind, request.prompt) == ("input", "Who are you?")
    data = request.data or {}
    assert data["schema"]["required"] == ["name"]
    assert data["mcp"] == {"server": "legacy", "tool": "ask_form", "held": request.id}
    assert Request.from_dict(json.loads(json.dumps(request.to_dict()))) == request
    done = await run(source, "legacy_ask_form", answered(request, ok=True, data={"name": "Ann"}))
    assert (done.output, done.is_error) == (f"accept:{ANN}", False)
    # the held call is gone once answered: a second resume of the same question is an error
    again = await run(source, "legacy_ask_form", answered(request, ok=True, data={"name": "B"}))
    assert again.is_error
    assert "session that is gone" in again.output


async def test_declines_schema_mismatches_and_url_questions(source: McpSource) -> None:
    declined = await halt(source, "legacy_ask_form")
    out = await run(source, "legacy_ask_form", answered(declined, ok=False, reason="declined"))
    assert out.output == "decline:null"
    mismatch = await halt(source, "legacy_ask_form")
    out = await run(source, "legacy_ask_form", answered(mismatch, ok=True, data={"age": 3}))
    assert out.output == "decline:null"  # fails the requested schema: declined, never sent
    login = await halt(source, "legacy_ask_url")
    assert (login.kind, login.url) == ("authorization", "https://login.example/auth?x=1")
    out = await run(source, "legacy_ask_url", answered(login, ok=True))
    assert out.output == "accept:null"


async def test_a_resume_in_another_process_is_a_clear_error(source: McpSource) -> None:
    request = await halt(source, "legacy_ask_form")
    # a fresh source stands for the process that restarted: its session never held the call
    config = {"legacy": demo("--legacy", elicitation="halt")}
    async with await load_connected(config) as other:
        result = await run(other, "legacy_ask_form", answered(request, ok=True, data={"n": 1}))
    assert result.is_error
    assert pending_of(result) is None
    assert result.output == (
        'MCP server "legacy" asked "Who are you?" in a session that is gone (this process '
        "restarted, or the connection was lost since): the answer was not delivered and tool "
        "ask_form did not finish; call it again to be asked afresh"
    )
    done = await run(source, "legacy_ask_form", answered(request, ok=True, data={"name": "Ann"}))
    assert done.output == f"accept:{ANN}"  # the live session still holds it


async def test_a_connection_lost_while_halted_is_an_error_on_resume(source: McpSource) -> None:
    request = await halt(source, "legacy_ask_form")
    await run(source, "legacy_die")  # the server process exits: the held call fails
    result = await run(source, "legacy_ask_form", answered(request, ok=True, data={"name": "A"}))
    assert result.is_error
    assert 'MCP server "legacy"' in result.output
    assert pending_of(result) is None


async def test_closing_the_source_drops_held_calls(source: McpSource) -> None:
    request = await halt(source, "legacy_ask_form")
    tool = next(t for t in source.tools if t.name == "legacy_ask_form")
    await source.close()
    result = await tool.execute({}, answered(request, ok=True, data={"name": "Ann"}))
    assert result.is_error
    assert "session that is gone" in result.output


def brain(request: RecordedRequest) -> Reply:
    messages = request.body["messages"]
    if messages[-1].get("role") == "tool":
        return text(f"server said {messages[-1]['content']}")
    return tool_calls(call("legacy_ask_form", {}, id="c1"))


async def test_a_client_run_halts_and_resumes_through_the_live_session(
    source: McpSource,
) -> None:
    async with ScriptedModel(default=brain) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            halted = await c.run("who is it?", source.tools)
            assert halted.status == "pending"
            assert halted.pending is not None
            assert halted.pending.prompt == "Who are you?"
            reply = Answer(id=halted.pending.id, ok=True, data={"name": "Ann"})
            done = await c.resume(source.tools, reply)
    assert done.status == "done"
    assert done.text == f"server said accept:{ANN}"
    assert len(model.requests) == 2  # no model call repeated


async def test_a_declined_answer_reaches_the_held_call_through_the_loop(
    source: McpSource,
) -> None:
    async with ScriptedModel(default=brain) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as c:
            halted = await c.run("who is it?", source.tools)
            assert halted.pending is not None
            reply = Answer(id=halted.pending.id, ok=False, reason="declined")
            done = await c.resume(source.tools, reply)
    assert done.text == "server said decline:null"  # the server heard it and finished
    assert (await run(source, "legacy_echo", args={"text": "still here"})).output == "still here"


def test_the_config_key() -> None:
    cfg = parse_mcp_config({"s": {"command": ["x"], "elicitation": "halt"}})
    assert cfg.servers[0].elicitation == "halt"
    assert parse_mcp_config({"s": {"command": ["x"]}}).servers[0].elicitation == "inline"
    with pytest.raises(UsageError, match='"elicitation" must be "inline" or "halt"'):
        parse_mcp_config({"s": {"command": ["x"], "elicitation": "later"}})
