"""SendStreamingMessage / message/stream: status updates and text artifact chunks as the run
produces them, with the a2a-sdk streaming client and on the raw 0.3 wire."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from a2a.types import a2a_pb2 as pb
from a2a_support import Serve, ledger_lines, sdk_client, user_message

from toolnexus.testing import ScriptedModel, text
from toolnexus.tools.a2a import agent, agent_tools


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


async def test_a_streamed_follow_up_streams_the_resumed_runs_text_as_it_is_produced(
    serve_refunds: Serve, ledger: Path
) -> None:
    served = await serve_refunds()
    async with sdk_client(served.url, streaming=True) as client:
        first = await events_of(client, user_message("refund"))
        second = await events_of(client, user_message("yes", task_id=first[0].task.id))
    kinds = [e.WhichOneof("payload") for e in second]
    chunks = [e.artifact_update for e in second if e.HasField("artifact_update")]
    # the scripted model streams "Result: refunded #42" in three deltas: three chunks of one
    # artifact (appended after the first), then the empty last chunk — not one whole chunk
    # at the end
    assert [p.text for c in chunks for p in c.artifact.parts] == [
        "Result:",
        " refund",
        "ed #42",
        "",
    ]
    assert len({c.artifact.artifact_id for c in chunks}) == 1
    assert [c.append for c in chunks] == [False] + [True] * (len(chunks) - 1)
    assert [c.last_chunk for c in chunks] == [False] * (len(chunks) - 1) + [True]
    assert "".join(p.text for c in chunks for p in c.artifact.parts) == "Result: refunded #42"
    completed = kinds.index("status_update", kinds.index("artifact_update"))
    assert second[completed].status_update.status.state == pb.TASK_STATE_COMPLETED
    assert kinds[-1] == "status_update"
    assert len(ledger_lines(ledger)) == 1


async def _stream(http: httpx.AsyncClient, url: str, params: dict[str, object]) -> list[dict]:
    """One raw ``message/stream`` call: its SSE results, or the plain JSON-RPC error body."""
    body = {"jsonrpc": "2.0", "id": 5, "method": "message/stream", "params": params}
    async with http.stream("POST", url + "/", json=body) as r:
        if not r.headers["content-type"].startswith("text/event-stream"):
            return [json.loads(await r.aread())]
        lines = [line async for line in r.aiter_lines() if line.startswith("data: ")]
    return [json.loads(line[6:]) for line in lines]


def _waiting_task(results: list[dict]) -> str:
    assert results[-1]["result"]["status"]["state"] == "input-required", results
    return results[0]["result"]["id"]


async def test_malformed_streamed_follow_ups_are_refused_and_leave_the_task_waiting(
    serve_refunds: Serve, ledger: Path
) -> None:
    served = await serve_refunds(schema=True)
    msg = {"role": "user", "messageId": "m1", "kind": "message"}
    async with httpx.AsyncClient(timeout=30) as http:
        tid = _waiting_task(
            await _stream(http, served.url, {"message": {**msg, "parts": [_t("refund")]}})
        )
        bad_parts = (
            [],  # no answer at all
            [{"kind": "data", "data": {"ok": "yes"}}],  # ok is not a bool
            [{"kind": "data", "data": {"approved": "sure"}}],  # fails the request's schema
        )
        for parts in bad_parts:
            [refused] = await _stream(
                http, served.url, {"message": {**msg, "taskId": tid, "parts": parts}}
            )
            assert refused["error"]["code"] == -32602, refused
        task = (await http.post(served.url + "/", json=_get(tid))).json()["result"]
        assert task["status"]["state"] == "input-required"
        ok = {"kind": "data", "data": {"approved": True}}
        done = await _stream(http, served.url, {"message": {**msg, "taskId": tid, "parts": [ok]}})
        assert done[-1]["result"]["status"]["state"] == "completed"
        # the same message again (messageId m1): answered with the task as it is, not applied
        [resent] = await _stream(
            http, served.url, {"message": {**msg, "taskId": tid, "parts": [ok]}}
        )
        assert resent["result"]["status"]["state"] == "completed"
        # a new message after the task's request was answered: refused, naming who answered
        late_msg = {**msg, "messageId": "m2", "taskId": tid, "parts": [ok]}
        [late] = await _stream(http, served.url, {"message": late_msg})
        assert late["error"]["data"] == {"reason": "conflict", "answeredBy": f"a2a:{tid}"}
    assert ledger_lines(ledger) == [{"ok": True, "data": {"approved": True}}]


async def test_two_racing_streamed_follow_ups_resume_the_run_once(
    serve_refunds: Serve, ledger: Path
) -> None:
    import asyncio

    served = await serve_refunds()
    msg = {"role": "user", "messageId": "m1", "kind": "message"}
    async with httpx.AsyncClient(timeout=30) as http:
        tid = _waiting_task(
            await _stream(http, served.url, {"message": {**msg, "parts": [_t("refund")]}})
        )
        yes = {"message": {**msg, "messageId": "m2", "taskId": tid, "parts": [_t("yes")]}}
        approve = {"message": {**msg, "messageId": "m3", "taskId": tid, "parts": [_t("approve")]}}
        a, b = await asyncio.gather(
            _stream(http, served.url, yes), _stream(http, served.url, approve)
        )
        task = (await http.post(served.url + "/", json=_get(tid))).json()["result"]
    streamed = [r for r in (a, b) if "result" in r[0]]
    refused = [r for r in (a, b) if "error" in r[0]]
    assert len(streamed) == 1, (a, b)
    assert len(refused) == 1, (a, b)
    assert refused[0][0]["error"]["code"] == -32602
    assert streamed[0][-1]["result"]["status"]["state"] == "completed"
    assert task["status"]["state"] == "completed"
    assert len(ledger_lines(ledger)) == 1


async def test_one_message_sent_twice_at_once_is_one_follow_up(
    serve_refunds: Serve, ledger: Path
) -> None:
    """Two sends of the same message (one messageId) racing: the run resumes once, and both
    are answered (the second with the first one's result), neither is refused."""
    import asyncio

    served = await serve_refunds()
    msg = {"role": "user", "messageId": "m1", "kind": "message"}
    async with httpx.AsyncClient(timeout=30) as http:
        tid = _waiting_task(
            await _stream(http, served.url, {"message": {**msg, "parts": [_t("refund")]}})
        )
        follow = {"message": {**msg, "messageId": "m2", "taskId": tid, "parts": [_t("yes")]}}
        a, b = await asyncio.gather(
            _stream(http, served.url, follow), _stream(http, served.url, follow)
        )
        task = (await http.post(served.url + "/", json=_get(tid))).json()["result"]
    assert all("result" in r[0] for r in (a, b)), (a, b)
    assert task["status"]["state"] == "completed"
    assert len(ledger_lines(ledger)) == 1


def _t(value: str) -> dict[str, str]:
    return {"kind": "text", "text": value}


def _get(tid: str) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": tid}}


@pytest.mark.parametrize("streaming", [True, False])
async def test_the_profile_says_whether_the_card_streams_and_callers_follow_it(
    serve_refunds: Serve, model: ScriptedModel, streaming: bool
) -> None:
    served = await serve_refunds(a2a={"name": "refunds", "streaming": streaming})
    async with httpx.AsyncClient() as http:
        card = (await http.get(served.url + "/.well-known/agent-card.json")).json()
    assert card["capabilities"]["streaming"] is streaming
    model.when(lambda r: "hello" in str(r.body["messages"]), text("Hello there, caller"))
    (tool,) = await agent_tools(agent(served.url, poll_every=10))
    result = await tool.execute({"task": "hello"}, None)
    assert (result.output, result.is_error) == ("Hello there, caller", False)
    # without streaming (the 0.21 card) the caller polls and the model is asked for whole replies
    assert bool(model.requests[-1].body.get("stream")) is streaming
