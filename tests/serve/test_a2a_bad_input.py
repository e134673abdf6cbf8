"""Hostile and malformed input to the A2A endpoint: each gets the pinned JSON-RPC error (or
HTTP status), and the stored task and run are left as they were."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from a2a_support import Serve, ledger_lines, ref_message, rpc

from toolnexus import create_client
from toolnexus.testing import ScriptedModel, http_error

JSON = {"content-type": "application/json"}  # what every JSON-RPC client sends


async def test_malformed_json_is_a_parse_error_with_a_null_id(serve_refunds: Serve) -> None:
    served = await serve_refunds()
    async with httpx.AsyncClient() as http:
        r = await http.post(
            served.url + "/", content=b'{"jsonrpc": "2.0", "id": 7, "meth', headers=JSON
        )
        assert r.status_code == 200
        assert r.json() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error"},
        }
        r = await http.post(served.url + "/", content=b"\xff\xfe not utf-8", headers=JSON)
        assert r.json()["error"]["code"] == -32700


async def test_an_unknown_method_is_method_not_found(serve_refunds: Serve) -> None:
    served = await serve_refunds()
    async with httpx.AsyncClient() as http:
        body = await rpc(http, served.url, "tasks/explode", {}, id="a")
        assert body == {
            "jsonrpc": "2.0",
            "id": "a",
            "error": {"code": -32601, "message": "Method not found: tasks/explode"},
        }


@pytest.mark.parametrize(
    "raw",
    [
        b"[]",
        b'"just a string"',
        b'{"id": 1, "method": "GetTask"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": 5}',
    ],
)
async def test_what_is_not_a_json_rpc_request_is_invalid_request(
    serve_refunds: Serve, raw: bytes
) -> None:
    served = await serve_refunds()
    async with httpx.AsyncClient() as http:
        r = await http.post(served.url + "/", content=raw, headers=JSON)
        assert r.json()["error"]["code"] == -32600


@pytest.mark.parametrize(
    ("method", "params", "headers"),
    [
        ("SendMessage", "not an object", None),
        ("SendMessage", {"message": "hi"}, None),
        ("SendMessage", {"message": {"role": "user", "parts": "hi"}}, None),
        ("message/send", {"message": {"role": "robot", "messageId": "x", "parts": []}}, None),
        ("SendMessage", {"message": {"role": 7, "parts": [{"text": 1}]}}, {"A2A-Version": "1.0"}),
        ("SendMessage", {}, {"A2A-Version": "1.0"}),
        ("GetTask", {"id": 42}, None),
        ("GetTask", {}, None),
        ("CancelTask", {"id": ["x"]}, None),
        ("ListTasks", {"pageSize": "ten"}, None),
    ],
)
async def test_wrong_param_types_are_invalid_params(
    serve_refunds: Serve, method: str, params: object, headers: dict | None
) -> None:
    served = await serve_refunds()
    async with httpx.AsyncClient() as http:
        body = await rpc(http, served.url, method, params, headers=headers)
        assert body["error"]["code"] == -32602, body
        listed = await rpc(http, served.url, "ListTasks", {})
        assert listed["result"]["tasks"] == []  # nothing was created


async def test_an_oversized_body_is_refused_with_413(serve_refunds: Serve) -> None:
    served = await serve_refunds(max_body=2048)
    async with httpx.AsyncClient() as http:
        params = ref_message("x" * 5000)
        r = await http.post(
            served.url + "/",
            json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params},
        )
        assert r.status_code == 413
        listed = await rpc(http, served.url, "ListTasks", {})
        assert listed["result"]["tasks"] == []


async def test_unknown_tasks_are_task_not_found(serve_refunds: Serve) -> None:
    served = await serve_refunds()
    async with httpx.AsyncClient() as http:
        got = await rpc(http, served.url, "GetTask", {"id": "nope"})
        assert got["error"] == {"code": -32001, "message": "Task not found: nope"}
        follow = await rpc(http, served.url, "SendMessage", ref_message("yes", task_id="nope"))
        assert follow["error"]["code"] == -32001
        cancel = await rpc(http, served.url, "CancelTask", {"id": "nope"})
        assert cancel["error"]["code"] == -32001


async def test_a_follow_up_to_a_completed_task_is_refused_and_changes_nothing(
    serve_refunds: Serve, ledger: Path, model: ScriptedModel
) -> None:
    served = await serve_refunds()
    async with httpx.AsyncClient() as http:
        task = (await rpc(http, served.url, "SendMessage", ref_message("refund")))["result"]
        done = (await rpc(http, served.url, "SendMessage", ref_message("yes", task_id=task["id"])))[
            "result"
        ]
        assert done["status"]["state"] == "completed"
        again = await rpc(
            http, served.url, "SendMessage", ref_message("yes again", task_id=task["id"])
        )
        assert again["error"]["code"] == -32602
        # the request behind the task was answered (by this task's first follow-up): the
        # error names who, and says the task is completed
        assert again["error"]["data"] == {"reason": "conflict", "answeredBy": f"a2a:{task['id']}"}
        assert "is completed" in again["error"]["message"]
        cancel = await rpc(http, served.url, "CancelTask", {"id": task["id"]})
        assert cancel["error"]["code"] == -32002
        after = (await rpc(http, served.url, "GetTask", {"id": task["id"]}))["result"]
        assert after == done
    assert len(ledger_lines(ledger)) == 1
    assert len(model.requests) == 2


async def test_an_answer_that_fails_the_requests_schema_is_refused_and_the_task_still_waits(
    serve_refunds: Serve, ledger: Path, durable_store: str, model: ScriptedModel
) -> None:
    served = await serve_refunds(durable_store, schema=True)
    async with httpx.AsyncClient() as http:
        task = (await rpc(http, served.url, "SendMessage", ref_message("refund")))["result"]
        request = task["status"]["message"]["parts"][1]["data"]
        assert request["data"]["schema"]["required"] == ["approved"]
        bad = await rpc(http, served.url, "SendMessage", ref_message("yes", task_id=task["id"]))
        assert bad["error"]["code"] == -32602
        assert bad["error"]["data"]["reason"] == "refused"  # a form takes its data, not a word
        assert bad["error"]["data"]["accepts"]["schema"]["required"] == ["approved"]
        wrong_type = await rpc(
            http,
            served.url,
            "SendMessage",
            ref_message(task_id=task["id"], data={"approved": "yes"}),
        )
        assert wrong_type["error"]["data"]["reason"] == "refused"
        assert "the data does not fit its schema" in wrong_type["error"]["message"]
        ill_typed = await rpc(
            http,
            served.url,
            "SendMessage",
            ref_message(task_id=task["id"], data={"ok": True, "reason": 5}),
        )
        assert ill_typed["error"]["data"] == {"reason": "invalid"}
        empty = await rpc(http, served.url, "SendMessage", ref_message(task_id=task["id"]))
        assert empty["error"]["data"] == {"reason": "empty"}
        still = (await rpc(http, served.url, "GetTask", {"id": task["id"]}))["result"]
        assert still["status"]["state"] == "input-required"
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=durable_store
        ) as reader:
            assert (await reader.run_store.answer_record(request["id"])) is None
            assert [p.request_id for p in await reader.list_pending()] == [request["id"]]
        good = await rpc(
            http,
            served.url,
            "SendMessage",
            ref_message(task_id=task["id"], data={"approved": True}),
        )
        assert good["result"]["status"]["state"] == "completed"
    assert ledger_lines(ledger) == [{"ok": True, "data": {"approved": True}}]


async def test_a_missing_or_wrong_token_is_401_on_every_route(serve_refunds: Serve) -> None:
    served = await serve_refunds(token="t0ken-0123456789ab")
    async with httpx.AsyncClient() as http:
        card = await http.get(served.url + "/.well-known/agent-card.json")
        assert card.status_code == 401
        assert card.headers["www-authenticate"].startswith("Bearer")
        wrong = await http.post(served.url + "/", json={}, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        ok = await http.get(
            served.url + "/.well-known/agent-card.json",
            headers={"Authorization": "Bearer t0ken-0123456789ab"},
        )
        assert ok.status_code == 200
        assert "t0ken" not in ok.text
        body = await rpc(
            http,
            served.url,
            "SendMessage",
            ref_message("refund"),
            headers={"Authorization": "Bearer t0ken-0123456789ab"},
        )
        assert "t0ken" not in str(body)


async def test_a_fulfilment_error_fails_the_task_and_the_server_keeps_serving(
    serve_refunds: Serve, model: ScriptedModel
) -> None:
    served = await serve_refunds()
    model.when(
        lambda r: "boom" in str(r.body["messages"]), http_error(400, body="upstream says no")
    )
    async with httpx.AsyncClient() as http:
        failed = (await rpc(http, served.url, "SendMessage", ref_message("boom")))["result"]
        assert failed["status"]["state"] == "failed"
        assert failed["status"]["message"]["parts"][0]["kind"] == "text"
        assert "_toolnexus" not in failed
        fine = (await rpc(http, served.url, "SendMessage", ref_message("refund")))["result"]
        assert fine["status"]["state"] == "input-required"
