"""Serving an agent tree over A2A in process: a teammate's question reaches the A2A caller,
the follow-up resumes the tree through the runtime's cascade; cancel; SubscribeToTask."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types import a2a_pb2 as pb
from a2a_support import brain, ledger_lines, refund_tool, rpc, sdk_client, send, user_message
from google.protobuf.json_format import MessageToDict

from toolnexus.agents import agent
from toolnexus.serve import ServeHandle
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls


def tree_brain(request: RecordedRequest) -> Reply:
    """The lead delegates to the clerk (through the task tool); the clerk refunds."""
    system = str(request.body["messages"][0].get("content", ""))
    outputs = [m for m in request.body["messages"] if m.get("role") == "tool"]
    if "You lead." in system:
        if request.body["messages"][-1].get("content") == "hi":
            return text("Hello from the lead, who streams its own words.")
        if not outputs:
            return tool_calls(call("task", {"agent": "clerk", "prompt": "refund order 42"}))
        return text(f"Lead: {outputs[-1]['content']}")
    return brain(request)


@pytest.fixture
async def tree(tmp_path: Path) -> AsyncIterator[tuple[ServeHandle, ScriptedModel]]:
    clerk = agent(
        "clerk", does="refunds orders", uses={"tools": [refund_tool(tmp_path / "ledger.jsonl")]}
    )
    lead = agent("lead", does="handles customers", soul="You lead.", team=[clerk])
    async with ScriptedModel(default=tree_brain) as model:
        llm = {"base_url": model.openai_base_url, "model": "m", "api_key": "k"}
        store = f"sqlite:///{tmp_path / 'state.db'}"
        served = await lead.serve("127.0.0.1:0", llm=llm, store=store)
        async with served:
            yield served, model


async def test_a_teammates_question_reaches_the_caller_and_the_follow_up_resumes_the_tree(
    tree: tuple[ServeHandle, ScriptedModel], tmp_path: Path
) -> None:
    served, model = tree
    async with sdk_client(served.url) as client:
        async with httpx.AsyncClient() as http:
            card = (await http.get(served.url + "/.well-known/agent-card.json")).json()
        assert [(s["id"], s["description"], s["tags"]) for s in card["skills"]] == [
            ("lead", "handles customers", ["agent"]),
            ("clerk", "refunds orders", ["team"]),  # the card tells the caller the team
        ]
        task = await send(client, user_message("refund order 42"))
        assert task.status.state == pb.TASK_STATE_INPUT_REQUIRED
        request = MessageToDict(task.status.message.parts[1].data)
        assert (request["kind"], request["prompt"]) == ("approval", "Refund order #42?")
        assert request["data"]["path"][0] == "root"  # the question climbed the tree
        assert len(model.requests) == 2  # the lead delegated; the clerk asked
        done = await send(client, user_message("yes", task_id=task.id))
        assert done.status.state == pb.TASK_STATE_COMPLETED
        assert done.artifacts[0].parts[0].text == "Lead: Result: refunded #42"
    assert ledger_lines(tmp_path / "ledger.jsonl") == [
        {"ok": True, "data": None}
    ]  # "yes" is a yes word: a plain approval
    assert len(model.requests) == 4  # lead, clerk, clerk after the answer, lead: no replay


async def test_cancel_on_a_waiting_tree_task(
    tree: tuple[ServeHandle, ScriptedModel], tmp_path: Path
) -> None:
    served, _ = tree
    async with sdk_client(served.url) as client:
        task = await send(client, user_message("refund order 42"))
        canceled = await client.cancel_task(pb.CancelTaskRequest(id=task.id))
        assert canceled.status.state == pb.TASK_STATE_CANCELED
    assert ledger_lines(tmp_path / "ledger.jsonl") == []


async def test_subscribe_to_a_settled_task_gives_the_task_and_ends(
    tree: tuple[ServeHandle, ScriptedModel],
) -> None:
    served, _ = tree
    async with httpx.AsyncClient() as http:
        started = await rpc(
            http,
            served.url,
            "message/send",
            {
                "message": {
                    "role": "user",
                    "messageId": "a",
                    "kind": "message",
                    "parts": [{"kind": "text", "text": "refund"}],
                }
            },
        )
        tid = started["result"]["id"]
        body = {"jsonrpc": "2.0", "id": 2, "method": "tasks/resubscribe", "params": {"id": tid}}
        async with http.stream("POST", served.url + "/", json=body) as r:
            lines = [line async for line in r.aiter_lines() if line.startswith("data: ")]
    assert len(lines) == 1
    assert '"input-required"' in lines[0]


def streamed_text(events: list[Any]) -> tuple[list[str], str]:
    """The text artifact chunks of a stream, and the text of its final task."""
    chunks = [
        p.text
        for e in events
        if e.HasField("artifact_update")
        for p in e.artifact_update.artifact.parts
    ]
    states = [e.status_update.status.state for e in events if e.HasField("status_update")]
    assert states[-1] == pb.TASK_STATE_COMPLETED, events
    return chunks, "".join(chunks)


async def test_a_served_tree_streams_its_lead_agents_words_as_they_come(
    tree: tuple[ServeHandle, ScriptedModel],
) -> None:
    served, _ = tree
    async with sdk_client(served.url, streaming=True) as client:
        events = [e async for e in client.send_message(user_message("hi"))]
    chunks, whole = streamed_text(events)
    assert len([c for c in chunks if c]) > 1  # deltas as the model streamed them, not one
    assert whole == "Hello from the lead, who streams its own words."


async def test_a_streamed_follow_up_to_a_tree_streams_only_the_lead_agents_words(
    tree: tuple[ServeHandle, ScriptedModel], tmp_path: Path
) -> None:
    """The clerk's own answer reaches the lead as its tool result, not the caller's stream."""
    served, model = tree
    async with sdk_client(served.url, streaming=True) as client:
        first = [e async for e in client.send_message(user_message("refund order 42"))]
        task_id = first[0].task.id
        second = [e async for e in client.send_message(user_message("yes", task_id=task_id))]
    assert not any(e.HasField("artifact_update") for e in first)  # it asked, said nothing
    chunks, whole = streamed_text(second)
    assert len([c for c in chunks if c]) > 1
    assert whole == "Lead: Result: refunded #42"
    assert ledger_lines(tmp_path / "ledger.jsonl") == [
        {"ok": True, "data": None}
    ]  # "yes" is a yes word: a plain approval
    assert len(model.requests) == 4  # lead, clerk, clerk after the answer, lead: no replay
