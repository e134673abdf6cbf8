"""Callers of one served app, each with a token of its own, are isolated from each other: the
official a2a-sdk client as each caller, a real SQLite file or Postgres under the served client.

Another caller's task is *not found* — ListTasks, GetTask, SubscribeToTask, CancelTask and a
follow-up (by taskId or by its contextId) — and nothing changes: the task still asks, its
request is unanswered, the refund never ran. Its owner does all of it, and the answer is
recorded as given by the owner's name.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from a2a_support import Serve, ledger_lines, sdk_client, send, user_message

from toolnexus.stores.url import resolve_store

TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789ab"}


@pytest.fixture
async def runs(durable_store: str) -> AsyncIterator[Any]:
    """The served client's run store, opened on its own (to read what was recorded)."""
    async with resolve_store(durable_store) as store:
        yield store


def request_id(task: Any) -> str:
    """The id of the Request a waiting task shows (its status message's data part)."""
    return str(task.status.message.parts[1].data.struct_value["id"])


async def listed_ids(client: Any) -> set[str]:
    return {t.id for t in (await client.list_tasks(pb.ListTasksRequest())).tasks}


@pytest.mark.parametrize(("owner", "other"), [("alice", "bob"), ("bob", "alice")])
async def test_another_callers_task_is_not_found_and_nothing_changes(
    serve_refunds: Serve, durable_store: str, runs: Any, ledger: Path, owner: str, other: str
) -> None:
    served = await serve_refunds(durable_store, callers=TOKENS)
    async with (
        sdk_client(served.url, token=TOKENS[owner]) as mine,
        sdk_client(served.url, token=TOKENS[other]) as theirs,
        sdk_client(served.url, token=TOKENS[other], streaming=True) as their_stream,
    ):
        asked = await send(mine, user_message("refund order 42"))
        assert asked.status.state == pb.TASK_STATE_INPUT_REQUIRED
        own = await send(theirs, user_message("refund order 7"))  # the other's own task

        assert await listed_ids(theirs) == {own.id}
        context_list = pb.ListTasksRequest(context_id=asked.context_id)
        assert list((await theirs.list_tasks(context_list)).tasks) == []
        with pytest.raises(TaskNotFoundError, match=asked.id):
            await theirs.get_task(pb.GetTaskRequest(id=asked.id))
        with pytest.raises(TaskNotFoundError, match=asked.id):
            async for _ in their_stream.subscribe(pb.SubscribeToTaskRequest(id=asked.id)):
                pass
        with pytest.raises(TaskNotFoundError, match=asked.id):
            await theirs.cancel_task(pb.CancelTaskRequest(id=asked.id))
        with pytest.raises(TaskNotFoundError, match=asked.id):
            await send(theirs, user_message("yes", task_id=asked.id))
        with pytest.raises(InvalidParamsError, match="not available"):
            await send(theirs, user_message("yes", context_id=asked.context_id))

        still = await mine.get_task(pb.GetTaskRequest(id=asked.id))
        assert still.status.state == pb.TASK_STATE_INPUT_REQUIRED
        assert await listed_ids(mine) == {asked.id}
    assert await runs.answer_record(request_id(asked)) is None  # unanswered, not cancelled
    [waiting] = [p for p in await runs.list_pending() if p.request_id == request_id(asked)]
    assert waiting.status == "pending"
    assert ledger_lines(ledger) == []


async def test_the_owner_lists_gets_subscribes_answers_and_cancels_its_tasks(
    serve_refunds: Serve, durable_store: str, runs: Any, ledger: Path
) -> None:
    served = await serve_refunds(durable_store, callers=TOKENS)
    async with (
        sdk_client(served.url, token=TOKENS["alice"]) as alice,
        sdk_client(served.url, token=TOKENS["alice"], streaming=True) as alice_stream,
    ):
        asked = await send(alice, user_message("refund order 42"))
        other = await send(alice, user_message("refund order 7"))
        assert await listed_ids(alice) == {asked.id, other.id}
        got = await alice.get_task(pb.GetTaskRequest(id=asked.id))
        assert got.status.state == pb.TASK_STATE_INPUT_REQUIRED
        watch = pb.SubscribeToTaskRequest(id=asked.id)
        seen = [e.task for e in [e async for e in alice_stream.subscribe(watch)]]
        assert [(t.id, t.status.state) for t in seen] == [
            (asked.id, pb.TASK_STATE_INPUT_REQUIRED)
        ]  # a waiting task: shown once, and the stream ends
        done = await send(alice, user_message("yes", task_id=asked.id))
        assert done.status.state == pb.TASK_STATE_COMPLETED
        canceled = await alice.cancel_task(pb.CancelTaskRequest(id=other.id))
        assert canceled.status.state == pb.TASK_STATE_CANCELED
    answered = await runs.answer_record(request_id(asked))
    assert answered is not None
    assert (answered.answer.ok, answered.answered_by) == (True, "alice")
    cancelled = await runs.answer_record(request_id(other))
    assert cancelled is not None
    assert (cancelled.status, cancelled.answered_by) == ("cancelled", "alice")
    assert ledger_lines(ledger) == [{"ok": True, "data": None}]


async def test_a_callers_file_with_a_hashed_token_serves_its_caller(
    serve_refunds: Serve, tmp_path: Path
) -> None:
    import hashlib
    import json

    digest = hashlib.sha256(TOKENS["bob"].encode()).hexdigest()
    path = tmp_path / "callers.json"
    entries = [{"name": "alice", "token": TOKENS["alice"]}, {"name": "bob", "token_sha256": digest}]
    path.write_text(json.dumps({"callers": entries}))
    served = await serve_refunds(callers=str(path))
    async with sdk_client(served.url, token=TOKENS["bob"]) as bob:
        asked = await send(bob, user_message("refund order 42"))
        assert await listed_ids(bob) == {asked.id}
    async with sdk_client(served.url, token=TOKENS["alice"]) as alice:
        assert await listed_ids(alice) == set()
