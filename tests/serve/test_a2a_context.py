"""A contextId continues the conversation: a new message (no taskId) naming the context of an
earlier task is the next turn of that context's transcript — for a served client and for a
served agent tree, after a follow-up, and across a server restart (the transcript lives in
the store). Bad input: a context of another task, an unknown context, a busy context."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types import a2a_pb2 as pb
from a2a_support import Serve, ledger_lines, ref_message, refund_tool, rpc, sdk_client, send
from a2a_support import user_message as msg

from toolnexus.agents import agent
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def memory_brain(request: RecordedRequest) -> Reply:
    """``refund`` calls the refund tool; anything else reports what the transcript holds."""
    messages = request.body["messages"]
    last = messages[-1]
    if last.get("role") == "tool":
        return text(f"Result: {last['content']}")
    if _text_of(last) == "refund":
        return tool_calls(call("refund", {"order_id": "42"}))
    users = [_text_of(m) for m in messages if m.get("role") == "user"]
    tools = [_text_of(m) for m in messages if m.get("role") == "tool"]
    return text(f"users={users} tools={tools}")


@pytest.fixture
async def model() -> AsyncIterator[ScriptedModel]:
    async with ScriptedModel(default=memory_brain) as m:
        yield m


def _artifact(task: Any) -> str:
    return "".join(p.text for a in task.artifacts for p in a.parts)


async def test_a_context_id_of_a_completed_task_continues_its_transcript(
    serve_refunds: Serve,
) -> None:
    served = await serve_refunds()
    async with sdk_client(served.url) as client:
        first = await send(client, msg("my name is Bob"))
        assert first.status.state == pb.TASK_STATE_COMPLETED
        # the caller sent no contextId: the server made one, and it names the conversation
        second = await send(client, msg("what is my name?", context_id=first.context_id))
        other = await send(client, msg("what is my name?"))
    assert second.context_id == first.context_id
    assert second.id != first.id
    assert _artifact(second) == "users=['my name is Bob', 'what is my name?'] tools=[]"
    assert _artifact(other) == "users=['what is my name?'] tools=[]"  # a new context: fresh


async def test_the_next_message_after_a_follow_up_sees_the_resumed_run(
    serve_refunds: Serve, ledger: Path
) -> None:
    served = await serve_refunds()
    async with sdk_client(served.url) as client:
        asked = await send(client, msg("refund"))
        assert asked.status.state == pb.TASK_STATE_INPUT_REQUIRED
        done = await send(client, msg("yes", task_id=asked.id))
        assert _artifact(done) == "Result: refunded #42"
        after = await send(client, msg("and now?", context_id=asked.context_id))
    assert after.status.state == pb.TASK_STATE_COMPLETED
    # one user turn for the refund (the follow-up was an answer, not a new turn), then this one
    assert _artifact(after) == "users=['refund', 'and now?'] tools=['refunded #42']"
    assert len(ledger_lines(ledger)) == 1


async def test_a_context_continues_across_a_server_restart(
    serve_refunds: Serve, durable_store: str
) -> None:
    first_server = await serve_refunds(durable_store)
    async with sdk_client(first_server.url) as client:
        first = await send(client, msg("my name is Bob"))
    await first_server.stop()
    second_server = await serve_refunds(durable_store)
    async with sdk_client(second_server.url) as client:
        second = await send(client, msg("what is my name?", context_id=first.context_id))
        listed = await client.list_tasks(pb.ListTasksRequest(context_id=first.context_id))
    assert _artifact(second) == "users=['my name is Bob', 'what is my name?'] tools=[]"
    assert {t.id for t in listed.tasks} == {first.id, second.id}


async def test_an_unknown_context_id_starts_a_conversation_under_that_id(
    serve_refunds: Serve,
) -> None:
    served = await serve_refunds()
    async with sdk_client(served.url) as client:
        first = await send(client, msg("hello", context_id="ctx-new"))
        again = await send(client, msg("again", context_id="ctx-new"))
    assert first.context_id == "ctx-new"
    assert _artifact(first) == "users=['hello'] tools=[]"
    assert _artifact(again) == "users=['hello', 'again'] tools=[]"


async def test_a_task_id_with_the_context_of_another_task_is_refused(
    serve_refunds: Serve, ledger: Path
) -> None:
    served = await serve_refunds()
    async with httpx.AsyncClient(timeout=30) as http:
        other = (await rpc(http, served.url, "SendMessage", ref_message("hello")))["result"]
        asked = (await rpc(http, served.url, "SendMessage", ref_message("refund")))["result"]
        assert asked["status"]["state"] == "input-required"
        mixed = ref_message("yes", task_id=asked["id"], context_id=other["contextId"])
        refused = await rpc(http, served.url, "SendMessage", mixed)
        assert refused["error"]["code"] == -32602
        assert refused["error"]["data"] == {"reason": "context"}
        still = (await rpc(http, served.url, "GetTask", {"id": asked["id"]}))["result"]
        assert still["status"]["state"] == "input-required"
        # the right pair is still served
        right = ref_message("yes", task_id=asked["id"], context_id=asked["contextId"])
        done = (await rpc(http, served.url, "SendMessage", right))["result"]
    assert done["status"]["state"] == "completed"
    assert len(ledger_lines(ledger)) == 1


async def test_a_message_on_a_context_whose_task_is_running_is_refused(
    serve_refunds: Serve, model: ScriptedModel
) -> None:
    release = asyncio.Event()
    reached = asyncio.Event()

    async def slow(request: RecordedRequest) -> Reply:
        reached.set()
        await release.wait()
        return text("slow done")

    model.when(lambda r: "slowly" in str(r.body["messages"][-1]), slow, times=1)
    served = await serve_refunds()
    async with httpx.AsyncClient(timeout=30) as http:
        started = await rpc(http, served.url, "SendMessage", ref_message("slowly", blocking=False))
        ctx = started["result"]["contextId"]
        await reached.wait()
        busy = await rpc(http, served.url, "SendMessage", ref_message("next", context_id=ctx))
        assert busy["error"]["code"] == -32602
        assert busy["error"]["data"] == {"reason": "busy", "taskId": started["result"]["id"]}
        release.set()
        stream = {"id": started["result"]["id"]}
        body = {"jsonrpc": "2.0", "id": 4, "method": "tasks/resubscribe", "params": stream}
        async with http.stream("POST", served.url + "/", json=body) as r:
            _ = [line async for line in r.aiter_lines()]  # ends when the task settles
        listed = (await rpc(http, served.url, "ListTasks", {"contextId": ctx}))["result"]
        later = await rpc(http, served.url, "SendMessage", ref_message("next", context_id=ctx))
    assert len(listed["tasks"]) == 1  # the refused message made no task
    assert later["result"]["status"]["state"] == "completed"
    shown = later["result"]["artifacts"][0]["parts"][0]["text"]
    assert shown == "users=['slowly', 'next'] tools=[]"


# -- an agent tree served with serve_agent ---------------------------------------------------


async def test_an_agent_trees_context_continues_its_conversation_across_a_restart(
    model: ScriptedModel, tmp_path: Path, durable_store: str
) -> None:
    clerk = agent("clerk", does="refunds orders", uses={"tools": [refund_tool(tmp_path / "l")]})
    llm = {"base_url": model.openai_base_url, "model": "m", "api_key": "k"}
    async with await clerk.serve("127.0.0.1:0", llm=llm, store=durable_store) as served:
        async with sdk_client(served.url) as client:
            first = await send(client, msg("my name is Bob"))
            second = await send(client, msg("what is my name?", context_id=first.context_id))
    assert _artifact(second) == "users=['my name is Bob', 'what is my name?'] tools=[]"
    async with await clerk.serve("127.0.0.1:0", llm=llm, store=durable_store) as served:
        async with sdk_client(served.url) as client:
            asked = await send(client, msg("refund", context_id=first.context_id))
            assert asked.status.state == pb.TASK_STATE_INPUT_REQUIRED
            await send(client, msg("yes", context_id=first.context_id))  # answers the question
            third = await send(client, msg("and now?", context_id=first.context_id))
            fresh = await send(client, msg("who am I?"))
    assert _artifact(third) == (
        "users=['my name is Bob', 'what is my name?', 'refund', 'and now?'] tools=['refunded #42']"
    )
    assert _artifact(fresh) == "users=['who am I?'] tools=[]"
    assert ledger_lines(tmp_path / "l") == [
        {"ok": True, "data": None}
    ]  # "yes" is a yes word: a plain approval


@pytest.mark.parametrize("context", ["x" * 5000, "ctx\x00nul", "ünï/..\\cöde ✓", " "])
async def test_odd_context_ids_are_kept_verbatim_and_name_their_conversation(
    serve_refunds: Serve, durable_store: str, context: str
) -> None:
    served = await serve_refunds(durable_store)
    async with httpx.AsyncClient(timeout=30) as http:
        first = await rpc(http, served.url, "SendMessage", ref_message("one", context_id=context))
        again = await rpc(http, served.url, "SendMessage", ref_message("two", context_id=context))
        listed = (await rpc(http, served.url, "ListTasks", {"contextId": context}))["result"]
    assert first["result"]["contextId"] == context
    assert again["result"]["artifacts"][0]["parts"][0]["text"] == "users=['one', 'two'] tools=[]"
    assert len(listed["tasks"]) == 2
