"""A2A inbound against the official a2a-sdk client: the card, the pause across the wire,
racing follow-ups, cancel — on a real SQLite file and on Postgres."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import InvalidParamsError
from a2a_support import Serve, ledger_lines, rpc, sdk_client, send, user_message

from toolnexus import create_client
from toolnexus.testing import ScriptedModel


async def test_the_card_names_the_endpoint_for_a2a_1_0_and_0_3(serve_refunds: Serve) -> None:
    served = await serve_refunds()
    async with httpx.AsyncClient() as http:
        card = (await http.get(served.url + "/.well-known/agent-card.json")).json()
        assert card["name"] == "refunds"
        assert card["protocolVersion"] == "0.3.0"
        assert card["url"] == served.url + "/"
        assert card["skills"] == [  # the toolkit's tool, by name and description only
            {
                "id": "refund",
                "name": "refund",
                "description": "Refund an order (needs approval).",
                "tags": ["tool"],
            }
        ]
        versions = [i["protocolVersion"] for i in card["supportedInterfaces"]]
        assert versions == ["1.0", "0.3"]
        other = await http.get(served.url + "/other")
        assert (other.status_code, other.text) == (404, "not found")


async def test_a_halt_is_input_required_and_the_follow_up_resumes_the_run_once(
    serve_refunds: Serve, durable_store: str, ledger: Path, model: ScriptedModel
) -> None:
    served = await serve_refunds(durable_store)
    async with sdk_client(served.url) as client:
        task = await send(client, user_message("refund order 42"))
        assert task.status.state == pb.TASK_STATE_INPUT_REQUIRED
        parts = task.status.message.parts
        assert parts[0].text == "Refund order #42?"
        request = dict(parts[1].data.struct_value)
        assert request["kind"] == "approval"
        assert ledger_lines(ledger) == []

        done = await send(client, user_message("yes", task_id=task.id, context_id=task.context_id))
        assert done.status.state == pb.TASK_STATE_COMPLETED
        assert done.artifacts[0].parts[0].text == "Result: refunded #42"
        fetched = await client.get_task(pb.GetTaskRequest(id=task.id))
        assert fetched.status.state == pb.TASK_STATE_COMPLETED
    # the tool re-executed with the answer, once; no replay: two model calls, one user turn
    assert ledger_lines(ledger) == [
        {"ok": True, "data": None}
    ]  # "yes" is a yes word: a plain approval
    assert len(model.requests) == 2
    users = [m for m in model.requests[1].body["messages"] if m["role"] == "user"]
    assert len(users) == 1
    async with create_client(
        base_url=model.openai_base_url, model="m", api_key="k", store=durable_store
    ) as reader:
        record = await reader.run_store.answer_record(request["id"])
        assert record is not None
        assert record.status == "done"
        assert record.answered_by == f"a2a:{task.id}"


async def test_a_data_part_is_the_answer_and_a_decline_reaches_the_tool(
    serve_refunds: Serve, ledger: Path
) -> None:
    served = await serve_refunds()
    async with sdk_client(served.url) as client:
        task = await send(client, user_message("refund"))
        answer = {"ok": False, "reason": "declined"}
        done = await send(client, user_message(task_id=task.id, data=answer))
        assert done.status.state == pb.TASK_STATE_COMPLETED
        assert done.artifacts[0].parts[0].text == "Result: declined/expired: Refund order #42?"
    assert ledger_lines(ledger) == []  # a decline never runs the approved action


async def test_two_racing_follow_ups_resume_once_and_the_loser_gets_an_error(
    serve_refunds: Serve, durable_store: str, ledger: Path
) -> None:
    served = await serve_refunds(durable_store)
    async with sdk_client(served.url) as client:
        task = await send(client, user_message("refund"))

        async def follow(word: str) -> object:
            try:
                return await send(client, user_message(word, task_id=task.id))
            except InvalidParamsError as exc:
                return exc

        results = await asyncio.gather(follow("yes"), follow("approve"))  # two yes words race
    errors = [r for r in results if isinstance(r, InvalidParamsError)]
    tasks = [r for r in results if not isinstance(r, InvalidParamsError)]
    assert len(errors) == 1
    assert len(tasks) == 1
    assert "already answered" in str(errors[0]) or "answered right now" in str(errors[0])
    assert len(ledger_lines(ledger)) == 1
    async with sdk_client(served.url) as client:
        final = await client.get_task(pb.GetTaskRequest(id=task.id))
        assert final.status.state == pb.TASK_STATE_COMPLETED


async def test_cancel_on_an_input_required_task_cancels_the_halted_run(
    serve_refunds: Serve, durable_store: str, ledger: Path, model: ScriptedModel
) -> None:
    served = await serve_refunds(durable_store)
    async with sdk_client(served.url) as client:
        task = await send(client, user_message("refund"))
        rid = dict(task.status.message.parts[1].data.struct_value)["id"]
        canceled = await client.cancel_task(pb.CancelTaskRequest(id=task.id))
        assert canceled.status.state == pb.TASK_STATE_CANCELED
        with pytest.raises(InvalidParamsError, match="canceled"):
            await send(client, user_message("yes", task_id=task.id))
    async with create_client(
        base_url=model.openai_base_url, model="m", api_key="k", store=durable_store
    ) as reader:
        record = await reader.run_store.answer_record(rid)
        assert record is not None
        assert record.status == "cancelled"
    assert ledger_lines(ledger) == []
    assert len(model.requests) == 1


async def test_auth_required_for_an_authorization_request(serve_refunds: Serve) -> None:
    served = await serve_refunds(kind="authorization")
    async with sdk_client(served.url) as client:
        task = await send(client, user_message("refund"))
        assert task.status.state == pb.TASK_STATE_AUTH_REQUIRED
        assert task.status.message.parts[0].text == (
            "Refund order #42?\nhttps://login.example/authorize"
        )


async def test_the_reference_and_0_3_wires_share_the_endpoint(
    serve_refunds: Serve, ledger: Path
) -> None:
    served = await serve_refunds()
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
        task = started["result"]
        assert task["status"]["state"] == "input-required"
        assert task["kind"] == "task"
        assert task["status"]["message"]["parts"][1]["kind"] == "data"
        follow = {
            "message": {
                "role": "user",
                "messageId": "b",
                "taskId": task["id"],
                "parts": [{"kind": "text", "text": "ok"}],
            },
            "configuration": {"blocking": True},
        }
        done = await rpc(http, served.url, "SendMessage", follow)
        assert done["result"]["status"]["state"] == "completed"
        assert done["result"]["artifacts"][0]["parts"] == [
            {"kind": "text", "text": "Result: refunded #42"}
        ]
        got = await rpc(http, served.url, "GetTask", {"id": task["id"]})
        assert got["result"]["status"]["state"] == "completed"
        got03 = await rpc(http, served.url, "tasks/get", {"id": task["id"]})
        assert got03["result"] == got["result"]
        listed = await rpc(http, served.url, "ListTasks", {"status": "completed"})
        assert [t["id"] for t in listed["result"]["tasks"]] == [task["id"]]
    assert len(ledger_lines(ledger)) == 1


async def test_the_reference_wire_returns_submitted_at_once_without_blocking(
    serve_refunds: Serve,
) -> None:
    served = await serve_refunds()
    async with httpx.AsyncClient() as http:
        params = {
            "message": {
                "role": "user",
                "messageId": "a",
                "parts": [{"kind": "text", "text": "go"}],
            },
            "configuration": {"blocking": False},
        }
        started = await rpc(http, served.url, "SendMessage", params)
        assert started["result"]["status"]["state"] == "submitted"
        assert set(started["result"]) >= {"id", "status", "contextId"}
        for _ in range(500):  # bounded poll, as the reference client does
            got = await rpc(http, served.url, "GetTask", {"id": started["result"]["id"]})
            if got["result"]["status"]["state"] == "input-required":
                break
            await asyncio.sleep(0.01)
        assert got["result"]["status"]["state"] == "input-required"


async def test_a_context_id_alone_names_the_waiting_task(
    serve_refunds: Serve, ledger: Path
) -> None:
    served = await serve_refunds()
    async with sdk_client(served.url) as client:
        task = await send(client, user_message("refund"))
        done = await send(client, user_message("yes", context_id=task.context_id))
        assert done.id == task.id
        assert done.status.state == pb.TASK_STATE_COMPLETED
    assert len(ledger_lines(ledger)) == 1


async def test_on_task_sees_the_waiting_and_the_terminal_save(serve_refunds: Serve) -> None:
    seen: list[tuple[str, str]] = []

    async def on_task(info: dict) -> None:
        seen.append((info["state"], info["result"].status if info["result"] else ""))
        raise RuntimeError("a failing on_task is logged, not fatal")

    served = await serve_refunds(on_task=on_task)
    async with sdk_client(served.url) as client:
        task = await send(client, user_message("refund"))
        await send(client, user_message("yes", task_id=task.id))
    assert seen == [("input-required", "pending"), ("completed", "done")]


async def test_without_the_a2a_profile_every_route_is_a_404(
    serve_refunds: Serve,
) -> None:
    served = await serve_refunds(a2a=False)
    async with httpx.AsyncClient() as http:
        card = await http.get(served.url + "/.well-known/agent-card.json")
        post = await http.post(
            served.url + "/", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask"}
        )
    assert (card.status_code, post.status_code) == (404, 404)


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_one_served_app_answers_a2a_and_mcp_behind_one_token(
    serve_refunds: Serve, era: str
) -> None:
    # serve(mcp=...) mounts MCP inbound beside A2A: the mcp SDK's client lists and calls the
    # toolkit's tools at /mcp, with the same bearer token as the A2A routes.
    import httpx2
    from mcp.client.client import Client
    from mcp.client.streamable_http import streamable_http_client

    served = await serve_refunds(mcp={"name": "tools"}, token="s3cret-0123456789")
    http = httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret-0123456789"})
    async with http:
        card = await http.get(f"{served.url}/.well-known/agent-card.json")
        assert card.status_code == 200
        async with httpx2.AsyncClient() as anonymous:
            refused = await anonymous.post(f"{served.url}/mcp", json={})
        assert refused.status_code == 401
        transport = streamable_http_client(f"{served.url}/mcp", http_client=http)
        async with Client(transport, mode=era) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            called = await c.call_tool("refund", {"order": "A-1"})
    assert "refund" in names
    # No wait_for and no elicitation declared: the suspending tool says what it needs.
    assert called.is_error


async def test_a_runtime_is_served_with_its_entry_agent(tmp_path: Path) -> None:
    from a2a_support import brain, refund_tool

    from toolnexus.agents import AgentRuntime, agent
    from toolnexus.serve import serve_agent

    clerk = agent("clerk", does="refunds orders", uses={"tools": [refund_tool(tmp_path / "l")]})
    async with ScriptedModel(default=brain) as m:
        llm = {"base_url": m.openai_base_url, "model": "m", "api_key": "k"}
        async with AgentRuntime(registry=clerk.registry(), llm=llm) as rt:
            async with await serve_agent(rt, "127.0.0.1:0", entry="clerk") as served:
                async with sdk_client(served.url) as client:
                    task = await send(client, user_message("refund"))
                    assert task.status.state == pb.TASK_STATE_INPUT_REQUIRED
                    done = await send(client, user_message("yes", task_id=task.id))
                    assert done.artifacts[0].parts[0].text == "Result: refunded #42"
            assert [v.id for v in rt.list()][-1] == "root/clerk.1"
