"""SendStreamingMessage / message/stream: status updates and text artifact chunks as the run
produces them, with the a2a-sdk streaming client and on the raw 0.3 wire."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from a2a.types import a2a_pb2 as pb
from a2a_support import Serve, ledger_lines, sdk_client, user_message

from toolnexus.testing import ScriptedModel, text


async def events_of(client: object, request: object) -> list[pb.StreamResponse]:
    return [event async for event in client.send_message(request)]  # type: ignore[attr-defined]


def states(events: list[pb.StreamResponse]) -> list[int]:
    out = []
    for e in events:
        if e.HasField("task"):
            out.append(e.task.status.state)
        elif e.HasField("status_update"):
            out.append(e.status_update.status.state)
    return out


async def test_the_stream_goes_working_input_required_then_working_completed(
    serve_refunds: Serve, ledger: Path
) -> None:
    served = await serve_refunds()
    async with sdk_client(served.url, streaming=True) as client:
        first = await events_of(client, user_message("refund"))
        assert states(first) == [
            pb.TASK_STATE_SUBMITTED,
            pb.TASK_STATE_WORKING,
            pb.TASK_STATE_INPUT_REQUIRED,
        ]
        task_id = first[0].task.id
        waiting = first[-1].status_update.status
        assert waiting.message.parts[0].text == "Refund order #42?"
        second = await events_of(client, user_message("yes", task_id=task_id))
        assert states(second) == [
            pb.TASK_STATE_WORKING,
            pb.TASK_STATE_WORKING,
            pb.TASK_STATE_COMPLETED,
        ]
        chunks = [e.artifact_update for e in second if e.HasField("artifact_update")]
        assert "".join(p.text for c in chunks for p in c.artifact.parts) == "Result: refunded #42"
        assert chunks[-1].last_chunk
    assert len(ledger_lines(ledger)) == 1


async def test_text_arrives_as_artifact_chunks_before_completion(
    serve_refunds: Serve, model: ScriptedModel
) -> None:
    served = await serve_refunds()
    model.when(lambda r: "hello" in str(r.body["messages"]), text("Hello there, caller"))
    async with sdk_client(served.url, streaming=True) as client:
        events = await events_of(client, user_message("hello"))
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task"
    assert kinds[-1] == "status_update"
    chunks = [e.artifact_update for e in events if e.HasField("artifact_update")]
    assert chunks, kinds
    assert "".join(p.text for c in chunks for p in c.artifact.parts) == "Hello there, caller"
    assert kinds.index("artifact_update") < len(kinds) - 1  # before the completed update
    assert events[-1].status_update.status.state == pb.TASK_STATE_COMPLETED


async def test_message_stream_on_the_0_3_wire(serve_refunds: Serve, model: ScriptedModel) -> None:
    served = await serve_refunds()
    model.when(lambda r: "hi" in str(r.body["messages"]), text("hi back"))
    body = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "message/stream",
        "params": {
            "message": {
                "role": "user",
                "messageId": "s1",
                "kind": "message",
                "parts": [{"kind": "text", "text": "hi"}],
            }
        },
    }
    async with httpx.AsyncClient() as http:
        async with http.stream("POST", served.url + "/", json=body) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            lines = [line async for line in r.aiter_lines() if line.startswith("data: ")]
    results = [json.loads(line[6:])["result"] for line in lines]
    assert results[0]["kind"] == "task"
    assert [x["status"]["state"] for x in results if x["kind"] == "status-update"] == [
        "working",
        "completed",
    ]
    assert results[-1]["final"] is True


async def test_a_stream_for_an_unknown_task_is_a_plain_json_rpc_error(serve_refunds: Serve) -> None:
    served = await serve_refunds()
    body = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "message/stream",
        "params": {"message": {"role": "user", "messageId": "x", "taskId": "nope", "parts": []}},
    }
    async with httpx.AsyncClient() as http:
        r = await http.post(served.url + "/", json=body)
        assert r.json()["error"] == {"code": -32001, "message": "Task not found: nope"}
