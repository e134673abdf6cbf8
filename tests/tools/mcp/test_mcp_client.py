"""MCP elicitation through the whole loop: a durable halt, its resume, and a server restart."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from mcp_servers import demo

from toolnexus import Answer, Request, create_client
from toolnexus.testing import ScriptedModel, call, text, tool_calls
from toolnexus.tools.mcp import load_mcp

ANN = '{"name": "Ann"}'


def last_tool_output(model: ScriptedModel) -> Any:
    return model.requests[-1].body["messages"][-1]["content"]


async def test_a_server_question_halts_the_run_and_the_answer_resumes_it() -> None:
    script = [tool_calls(call("demo_ask_form", {}, id="c1")), text("thanks, Ann")]
    async with (
        await load_mcp({"demo": demo()}) as mcp,
        ScriptedModel(script) as model,
        create_client(base_url=model.openai_base_url, model="m", api_key="k") as client,
    ):
        halted = await client.run("who am I?", mcp.tools)
        assert halted.status == "pending"
        assert halted.pending is not None
        assert (halted.pending.kind, halted.pending.prompt) == ("input", "Who are you?")
        answer = Answer(id=halted.pending.id, ok=True, data={"name": "Ann"})
        done = await client.run_with_answer(mcp.tools, halted.messages, halted.pending, answer)
    assert (done.status, done.text) == ("done", "thanks, Ann")
    assert last_tool_output(model) == f"accept:{ANN}"


async def test_the_clients_wait_for_answers_a_server_question_in_one_run() -> None:
    asked: list[Request] = []

    async def wait_for(request: Request) -> Answer:
        asked.append(request)
        return Answer(id=request.id, ok=True, data={"name": "Ann"})

    script = [tool_calls(call("demo_ask_form", {}, id="c1")), text("done")]
    async with (
        await load_mcp({"demo": demo()}) as mcp,
        ScriptedModel(script) as model,
        create_client(
            base_url=model.openai_base_url, model="m", api_key="k", wait_for=wait_for
        ) as client,
    ):
        result = await client.run("who am I?", mcp.tools)
    assert result.status == "done"
    assert [(r.kind, (r.data or {}).get("schema", {}).get("required")) for r in asked] == [
        ("input", ["name"])
    ]
    assert last_tool_output(model) == f"accept:{ANN}"


async def test_a_halted_run_resumes_after_the_server_restarted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    script = [tool_calls(call("demo_ask_form", {}, id="c1")), text("welcome back")]
    async with (
        ScriptedModel(script) as model,
        create_client(base_url=model.openai_base_url, model="m", api_key="k") as client,
    ):
        async with await load_mcp({"demo": demo()}) as before:
            halted = await client.run("who am I?", before.tools)
        assert halted.pending is not None
        answer = Answer(id=halted.pending.id, ok=True, data={"name": "Ann"})
        # A new server process: its request-state key is new, so the held token is refused.
        async with await load_mcp({"demo": demo()}) as after:
            with caplog.at_level(logging.INFO, logger="toolnexus"):
                done = await client.run_with_answer(
                    after.tools, halted.messages, halted.pending, answer
                )
    assert "refused the held state" in caplog.text
    assert (done.status, done.text) == ("done", "welcome back")
    assert last_tool_output(model) == f"accept:{ANN}"
