"""A2A follow-ups through the one answer intake, and a task that is a view of its request: the
official a2a-sdk client as the caller, a real SQLite file or Postgres under the served client.

- a text reply to an approval counts only as an explicit yes or no word;
- a follow-up is bound to the request the task shows, and a resend (its messageId) is
  answered, never applied to a later request;
- an answer given anywhere else (the co-mounted inbox, the CLI, ``client.answer``) moves the
  task: the caller sees it complete, and a late follow-up is refused naming who answered.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import InvalidParamsError
from a2a_support import Serve, ledger_lines, sdk_client, send, until_state, user_message

from toolnexus import create_client, create_toolkit
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls

USERS = [{"name": "ana", "token": "tok-ana-0123456789"}]


async def request_of(task: Any) -> dict[str, Any]:
    """The Request a waiting task shows (its status message's data part)."""
    return dict(task.status.message.parts[1].data.struct_value)


# -- yes / no ------------------------------------------------------------------------------------


async def test_a_no_to_an_approval_declines_it_and_the_refund_never_runs(
    serve_refunds: Serve, durable_store: str, ledger: Path
) -> None:
    served = await serve_refunds(durable_store)
    async with sdk_client(served.url) as client:
        task = await send(client, user_message("refund order 42"))
        assert task.status.state == pb.TASK_STATE_INPUT_REQUIRED
        done = await send(client, user_message("No.", task_id=task.id))
        assert done.status.state == pb.TASK_STATE_COMPLETED
        assert done.artifacts[0].parts[0].text == "Result: declined/expired: Refund order #42?"
    assert ledger_lines(ledger) == []


async def test_a_yes_runs_the_approved_refund_once(
    serve_refunds: Serve, durable_store: str, ledger: Path
) -> None:
    served = await serve_refunds(durable_store)
    async with sdk_client(served.url) as client:
        task = await send(client, user_message("refund order 42"))
        done = await send(client, user_message("YES", task_id=task.id))
        assert done.status.state == pb.TASK_STATE_COMPLETED
        assert done.artifacts[0].parts[0].text == "Result: refunded #42"
    assert ledger_lines(ledger) == [{"ok": True, "data": None}]


@pytest.mark.parametrize("reply", ["maybe", "yes, but only 50", "sure"])
async def test_any_other_text_is_refused_and_the_task_still_asks(
    serve_refunds: Serve, ledger: Path, reply: str
) -> None:
    served = await serve_refunds()
    async with sdk_client(served.url) as client:
        task = await send(client, user_message("refund order 42"))
        with pytest.raises(InvalidParamsError, match="neither a yes nor a no word"):
            await send(client, user_message(reply, task_id=task.id))
        still = await client.get_task(pb.GetTaskRequest(id=task.id))
        assert still.status.state == pb.TASK_STATE_INPUT_REQUIRED
        shown = still.status.message.metadata["toolnexus"]
        assert "no" in list(shown["accepts"]["text"]["no"])  # the accepted words are shown
        done = await send(client, user_message("yes", task_id=task.id))
        assert done.status.state == pb.TASK_STATE_COMPLETED
    assert len(ledger_lines(ledger)) == 1


# -- bound and idempotent follow-ups -------------------------------------------------------------


def two_refunds(request: RecordedRequest) -> Reply:
    """Refund 42, then 43 (two approvals in one task), then report."""
    outputs = [m["content"] for m in request.body["messages"] if m.get("role") == "tool"]
    if not outputs:
        return tool_calls(call("refund", {"order_id": "42"}, id="c1"))
    if len(outputs) == 1:
        return tool_calls(call("refund", {"order_id": "43"}, id="c2"))
    return text("Result: " + "; ".join(outputs))


async def test_a_resent_follow_up_never_answers_the_next_question(
    serve_refunds: Serve, durable_store: str, ledger: Path, model: ScriptedModel
) -> None:
    model.when(lambda _: True, two_refunds)
    served = await serve_refunds(durable_store)
    async with sdk_client(served.url) as client:
        task = await send(client, user_message("refund 42 and 43"))
        first = await request_of(task)
        approve = user_message(task_id=task.id, data={"id": first["id"], "ok": True})
        second = await send(client, approve)
        assert second.status.state == pb.TASK_STATE_INPUT_REQUIRED
        asked = await request_of(second)
        assert asked["prompt"] == "Refund order #43?"
        again = await send(client, approve)  # the very same message, resent
        assert again.status.state == pb.TASK_STATE_INPUT_REQUIRED
        assert (await request_of(again))["id"] == asked["id"]  # the second still waits
        assert len(ledger_lines(ledger)) == 1
        stale = user_message(task_id=task.id, data={"id": first["id"], "ok": True})
        with pytest.raises(InvalidParamsError, match=f"now asks request {asked['id']}"):
            await send(client, stale)  # a new message naming the first request
        done = await send(client, user_message("no", task_id=task.id))
        assert done.status.state == pb.TASK_STATE_COMPLETED
    assert ledger_lines(ledger) == [{"ok": True, "data": None}]  # 43 was declined


# -- answered elsewhere --------------------------------------------------------------------------


@asynccontextmanager
async def signed_in(url: str) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    """An inbox session on the served app's co-mounted inbox, and its CSRF nonce."""
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        page = await http.get("/inbox/login")
        nonce = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert nonce is not None
        await http.post("/inbox/login", data={"csrf": nonce.group(1), "token": USERS[0]["token"]})
        home = await http.get("/inbox/")
        csrf = re.search(r'name="csrf" value="([^"]+)"', home.text)
        assert csrf is not None
        yield http, csrf.group(1)


async def answer_in_the_inbox(url: str, rid: str, _store: str) -> str:
    async with signed_in(url) as (http, csrf):
        done = await http.post(
            f"/inbox/requests/{rid}/answer", data={"csrf": csrf, "action": "approve"}
        )
        assert done.status_code == 303, done.text
    return "ana"


async def answer_on_the_command_line(url: str, rid: str, store: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus",
        "answer",
        rid,
        "--store",
        store,
        "--approve",
        "--as",
        "carla",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(os.environ),
    )
    out, err = await asyncio.wait_for(proc.communicate(), 50)
    assert proc.returncode == 0, err.decode()
    assert "approved as carla" in out.decode()
    return "carla"


async def answer_through_the_client(url: str, rid: str, store: str) -> str:
    async with create_client(
        base_url="http://unused.test", model="m", api_key="k", store=store
    ) as c:
        await c.answer(rid, {"id": rid, "ok": True}, answered_by="webhook")
    return "webhook"


@pytest.mark.parametrize(
    "answer_elsewhere",
    [answer_in_the_inbox, answer_on_the_command_line, answer_through_the_client],
    ids=["inbox", "cli", "client"],
)
async def test_a_task_answered_elsewhere_completes_and_a_late_follow_up_names_who(
    serve_refunds: Serve, durable_store: str, ledger: Path, answer_elsewhere: Any
) -> None:
    served = await serve_refunds(durable_store, inbox={"users": USERS})
    async with sdk_client(served.url) as client:
        task = await send(client, user_message("refund order 42"))
        rid = (await request_of(task))["id"]
        who = await answer_elsewhere(served.url, rid, durable_store)
        done = await until_state(client, task.id, pb.TASK_STATE_COMPLETED)
        assert done.artifacts[0].parts[0].text == "Result: refunded #42"
        with pytest.raises(InvalidParamsError, match=f"already answered by {who}"):
            await send(client, user_message("no", task_id=task.id))
        after = await client.get_task(pb.GetTaskRequest(id=task.id))
        assert after.status.state == pb.TASK_STATE_COMPLETED
    assert ledger_lines(ledger) == [{"ok": True, "data": None}]


async def test_a_subscriber_sees_a_task_answered_elsewhere_go_on_to_completed(
    serve_refunds: Serve, durable_store: str, ledger: Path
) -> None:
    served = await serve_refunds(durable_store, recover_every=None)
    async with sdk_client(served.url) as caller:
        task = await send(caller, user_message("refund order 42"))
    rid = (await request_of(task))["id"]
    await answer_through_the_client(served.url, rid, durable_store)
    async with sdk_client(served.url, streaming=True) as client:
        states: list[int] = []
        async for event in client.subscribe(pb.SubscribeToTaskRequest(id=task.id)):
            if event.HasField("task"):
                states.append(event.task.status.state)
            elif event.HasField("status_update"):
                states.append(event.status_update.status.state)
        assert states[0] == pb.TASK_STATE_WORKING
        assert states[-1] == pb.TASK_STATE_COMPLETED
    assert len(ledger_lines(ledger)) == 1


async def test_a_task_answered_elsewhere_goes_on_without_anyone_reading_it(
    model: ScriptedModel, durable_store: str, tmp_path: Path
) -> None:
    """The serving process picks up an answer queued in the store by itself (no GetTask)."""
    from a2a_support import refund_tool

    ledger = tmp_path / "ledger.jsonl"
    tk = await create_toolkit(extra_tools=[refund_tool(ledger)], builtins=False)
    states: asyncio.Queue[str] = asyncio.Queue()
    async with create_client(
        base_url=model.openai_base_url, model="m", api_key="k", store=durable_store
    ) as client:
        served = await tk.serve(
            "127.0.0.1:0",
            client=client,
            a2a={"name": "refunds"},
            recover_every=5.0,
            on_task=lambda event: states.put_nowait(event["state"]),
        )
        try:
            async with sdk_client(served.url) as caller:
                task = await send(caller, user_message("refund order 42"))
                assert await asyncio.wait_for(states.get(), 10) == "input-required"
                rid = (await request_of(task))["id"]
                await answer_through_the_client(served.url, rid, durable_store)
                assert await asyncio.wait_for(states.get(), 10) == "completed"
        finally:
            await served.stop()
    assert len(ledger_lines(ledger)) == 1
