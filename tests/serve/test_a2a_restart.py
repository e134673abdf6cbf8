"""The serving process dies while its task waits for the caller; a new process resumes it —
real subprocesses (SIGKILL), a real SQLite file or Postgres, the a2a-sdk client."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from a2a.types import a2a_pb2 as pb
from a2a_support import (
    ledger_lines,
    ref_message,
    rpc,
    sdk_client,
    send,
    until_state,
    user_message,
)

from toolnexus.testing import ScriptedModel

PROC = Path(__file__).resolve().parents[1] / "helpers" / "a2a_serve_proc.py"


@asynccontextmanager
async def serving(
    mode: str, model: ScriptedModel, store: str, ledger: Path, env: dict[str, str] | None = None
) -> AsyncIterator[str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(PROC),
        mode,
        model.openai_base_url,
        store,
        str(ledger),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        if not line.startswith(b"URL "):
            assert proc.stderr is not None
            err = await proc.stderr.read()
            raise AssertionError(f"server did not start: {line!r} {err.decode()[-2000:]}")
        yield line.decode().split()[1]
    finally:
        if proc.returncode is None:
            proc.kill()  # SIGKILL: no shutdown code runs
        await proc.wait()


@pytest.mark.parametrize("mode", ["client", "agent"])
async def test_a_new_process_resumes_the_task_a_killed_one_left_waiting(
    mode: str, model: ScriptedModel, durable_store: str, ledger: Path
) -> None:
    async with serving(mode, model, durable_store, ledger) as url:
        async with sdk_client(url) as client:
            task = await send(client, user_message("refund order 42"))
        assert task.status.state == pb.TASK_STATE_INPUT_REQUIRED
    # the first process is gone (killed); a brand-new one serves the same store
    async with serving(mode, model, durable_store, ledger) as url:
        async with sdk_client(url) as client:
            fetched = await client.get_task(pb.GetTaskRequest(id=task.id))
            assert fetched.status.state == pb.TASK_STATE_INPUT_REQUIRED
            done = await send(client, user_message("yes", task_id=task.id))
            assert done.status.state == pb.TASK_STATE_COMPLETED
            assert done.artifacts[0].parts[0].text == "Result: refunded #42"
    assert ledger_lines(ledger) == [
        {"ok": True, "data": None}
    ]  # "yes" is a yes word: a plain approval
    assert len(model.requests) == 2  # resumed, not replayed


async def test_a_follow_up_recorded_by_a_process_that_died_is_finished_by_the_next(
    model: ScriptedModel, durable_store: str, ledger: Path, tmp_path: Path
) -> None:
    env = {"A2A_TEST_DIE_ONCE": str(tmp_path / "died"), "A2A_TEST_LEASE_S": "1"}
    async with serving("client", model, durable_store, ledger, env) as url:
        async with sdk_client(url) as client:
            task = await send(client, user_message("refund order 42"))
            assert task.status.state == pb.TASK_STATE_INPUT_REQUIRED
            with pytest.raises(Exception):  # noqa: B017, PT011 - the server dies mid-request
                await send(client, user_message("yes", task_id=task.id))
    assert (tmp_path / "died").exists()
    assert ledger_lines(ledger) == []
    # the answer was recorded before the process died, mid-resume: once its lease (1 s) runs
    # out, the new process takes the request over and finishes the task
    async with serving("client", model, durable_store, ledger, env) as url:
        async with sdk_client(url) as client:
            for _ in range(1000):  # bounded poll of the task, as any A2A caller would
                fetched = await client.get_task(pb.GetTaskRequest(id=task.id))
                if fetched.status.state == pb.TASK_STATE_COMPLETED:
                    break
                await asyncio.sleep(0.01)
            assert fetched.status.state == pb.TASK_STATE_COMPLETED
            assert fetched.artifacts[0].parts[0].text == "Result: refunded #42"
    assert ledger_lines(ledger) == [
        {"ok": True, "data": None}
    ]  # "yes" is a yes word: a plain approval


async def test_a_task_whose_process_died_before_it_showed_the_question_asks_it_in_the_next(
    model: ScriptedModel, durable_store: str, ledger: Path, tmp_path: Path
) -> None:
    env = {"A2A_TEST_DIE_BEFORE_QUESTION": str(tmp_path / "died"), "A2A_TEST_LEASE_S": "1"}
    async with serving("client", model, durable_store, ledger, env) as url:
        async with httpx.AsyncClient(timeout=30) as http:
            with pytest.raises(httpx.TransportError):  # the server dies before the reply
                await rpc(http, url, "SendMessage", ref_message("refund order 42"))
    assert (tmp_path / "died").exists()
    # the run halted (its request is saved) but the task was left working, showing nothing:
    # the next process finds the question in the task's conversation and asks it
    async with serving("client", model, durable_store, ledger, env) as url:
        async with sdk_client(url) as client:
            (listed,) = (await client.list_tasks(pb.ListTasksRequest())).tasks
            asked = await until_state(client, listed.id, pb.TASK_STATE_INPUT_REQUIRED)
            assert asked.status.message.parts[0].text == "Refund order #42?"
            done = await send(client, user_message("yes", task_id=listed.id))
            assert done.status.state == pb.TASK_STATE_COMPLETED
            assert done.artifacts[0].parts[0].text == "Result: refunded #42"
    assert ledger_lines(ledger) == [{"ok": True, "data": None}]
