"""An ACP agent's permission request halts a client's run durably (a halt at the model call),
against a real agent process built on the ACP SDK and a real SQLite store."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from toolnexus import Answer, Client, Request, create_in_process_client
from toolnexus.acp import ACPClient, ACPError, ACPOptions, load_acp
from toolnexus.errors import (
    AnswerConflict,
    AnswerMismatch,
    InvalidAnswer,
    ResumeError,
    UnknownRequest,
)

AGENT = str(Path(__file__).parents[1] / "helpers" / "acp_agent.py")


def options(**extra: Any) -> ACPOptions:
    return ACPOptions(sys.executable, [AGENT], **extra)


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


@pytest.fixture
async def acp() -> AsyncIterator[ACPClient]:
    client = await asyncio.to_thread(load_acp, options(permission_timeout=0.3))
    yield client
    await asyncio.to_thread(client.close)


def client_over(acp: ACPClient, store: str, **extra: Any) -> Client:
    return create_in_process_client(model="acp", generate=acp.agenerate, store=store, **extra)


async def test_a_permission_halts_the_run_pending_with_the_options_and_no_tool_call(
    acp: ACPClient, db: str
) -> None:
    async with client_over(acp, db) as client:
        halted = await client.run("write plan.md")
    assert halted.status == "pending"
    req = halted.pending
    assert req is not None
    assert req.kind == "approval"
    assert req.prompt == "Write plan.md"
    assert req.data is not None
    assert req.data["acp"]["sessionId"] == acp.session_id
    assert req.data["acp"]["toolCall"]["title"] == "Write plan.md"
    assert [(o["optionId"], o["kind"]) for o in req.data["acp"]["options"]] == [
        ("yes-always", "allow_always"),
        ("yes-once", "allow_once"),
        ("no-once", "reject_once"),
    ]
    assert halted.tool_calls == []
    assert [m["role"] for m in halted.messages] == ["user"]  # no placeholder, no tool message
    assert acp.pending() == [req]
    # Durable: another client over the same file lists it; the checkpoint is in the store.
    async with client_over(acp, db) as other:
        (entry,) = await other.list_pending()
    assert (entry.request_id, entry.kind, entry.prompt) == (req.id, "approval", "Write plan.md")


async def test_the_resume_sends_the_answer_to_the_agent_and_finishes_the_same_turn(
    acp: ACPClient, db: str
) -> None:
    async with client_over(acp, db) as client:
        halted = await client.run("write plan.md")
        assert halted.pending is not None
        await asyncio.sleep(0.5)  # a human slower than permission_timeout (0.3 s)
        done = await client.resume(None, Answer(halted.pending.id, False, None, "declined"))
        assert done.status == "done"
        assert done.text == "outcome: no-once"
        assert [m["role"] for m in done.messages] == ["user", "assistant"]
        assert acp.pending() == []
        assert await client.list_pending() == []
        with pytest.raises(AnswerConflict):
            await client.resume(None, Answer(id=halted.pending.id, ok=True))
        again = await client.run("echo free")  # the session is free for the next turn
    assert again.text == "you said: free"


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        ({"ok": True}, "yes-once"),
        ({"ok": True, "data": {"optionId": "yes-always"}}, "yes-always"),
        ({"ok": False, "reason": "cancelled"}, "cancelled"),
    ],
)
async def test_the_answer_chooses_the_agents_option_after_a_durable_halt(
    acp: ACPClient, db: str, answer: dict[str, Any], outcome: str
) -> None:
    async with client_over(acp, db) as client:
        halted = await client.run("write a.txt")
        assert halted.pending is not None
        done = await client.resume(None, {"id": halted.pending.id, **answer})
    assert done.text == f"outcome: {outcome}"


async def test_an_option_not_offered_is_refused_before_anything_is_recorded(
    acp: ACPClient, db: str
) -> None:
    async with client_over(acp, db) as client:
        halted = await client.run("write a.txt")
        assert halted.pending is not None
        rid = halted.pending.id
        wrong = {"id": rid, "ok": True, "data": {"optionId": "not-offered"}}
        with pytest.raises(InvalidAnswer, match='"not-offered" is not one of its options'):
            await client.resume(None, wrong)
        assert await client.run_store.answer_record(rid) is None
        done = await client.resume(
            None, {"id": rid, "ok": True, "data": {"optionId": "yes-always"}}
        )
    assert done.text == "outcome: yes-always"


async def test_two_permissions_in_one_turn_halt_twice_and_the_turn_goes_on(
    acp: ACPClient, db: str
) -> None:
    async with client_over(acp, db) as client:
        first = await client.run("write-twice")
        assert first.pending is not None
        assert first.pending.prompt == "Write a.txt"
        second = await client.resume(None, Answer(id=first.pending.id, ok=True))
        assert second.status == "pending"
        assert second.pending is not None
        assert second.pending.prompt == "Write b.txt"
        assert second.pending.id != first.pending.id
        done = await client.resume(None, Answer(second.pending.id, False, None, "declined"))
    assert done.text == "outcomes: yes-once, no-once"
    assert done.turns == 1  # one model turn, asked twice


async def test_with_the_clients_wait_for_the_permission_is_answered_inline(
    acp: ACPClient, db: str
) -> None:
    asked: list[Request] = []

    def wait_for(request: Request) -> Answer:
        asked.append(request)
        return Answer(id=request.id, ok=True)

    async with client_over(acp, db, wait_for=wait_for) as client:
        done = await client.run("write-twice")
        assert await client.list_pending() == []
    assert done.text == "outcomes: yes-once, yes-once"
    assert [r.prompt for r in asked] == ["Write a.txt", "Write b.txt"]


async def test_a_recorded_answer_is_resumed_by_id_as_a_worker_would(
    acp: ACPClient, db: str
) -> None:
    async with client_over(acp, db) as client:
        halted = await client.run("write notes.txt")
        assert halted.pending is not None
        await client.answer(
            halted.pending.id, Answer(id=halted.pending.id, ok=True), answered_by="ops"
        )
        done = await client.resume(None, halted.pending.id)
    assert done.text == "outcome: yes-once"


async def test_an_answer_that_does_not_echo_the_request_changes_nothing(
    acp: ACPClient, db: str
) -> None:
    async with client_over(acp, db) as client:
        halted = await client.run("write a.txt")
        assert halted.pending is not None
        with pytest.raises(UnknownRequest):
            await client.resume(None, Answer(id="pnd-unknown", ok=True))
        with pytest.raises(AnswerMismatch):
            await client.run_with_answer(
                None, halted.messages, halted.pending, Answer(id="pnd-other", ok=True)
            )
        assert [e.request_id for e in await client.list_pending()] == [halted.pending.id]
        assert acp.pending() == [halted.pending]
        done = await client.run_with_answer(
            None, halted.messages, halted.pending, Answer(id=halted.pending.id, ok=True)
        )
    assert done.text == "outcome: yes-once"


async def test_a_cancelled_request_leaves_the_session_clean_for_the_next_run(
    acp: ACPClient, db: str
) -> None:
    async with client_over(acp, db) as client:
        halted = await client.run("write a.txt")
        assert halted.pending is not None
        await client.cancel(halted.pending.id, reason="not today")
        with pytest.raises(AnswerConflict, match="cancelled"):
            await client.resume(None, Answer(id=halted.pending.id, ok=True))
        # The parked turn is cancelled at the agent when the next prompt comes.
        nxt = await client.run("echo after")
    assert nxt.text == "you said: after"
    assert acp.pending() == []


async def test_a_resume_on_a_client_whose_agent_is_gone_fails_and_the_run_stays_resumable(
    db: str,
) -> None:
    first = await asyncio.to_thread(load_acp, options())
    async with client_over(first, db) as client:
        halted = await client.run("write a.txt")
        assert halted.pending is not None
        await asyncio.to_thread(first.close)
        with pytest.raises(ACPError, match="is gone") as gone:
            await client.resume(None, Answer(id=halted.pending.id, ok=True))
        assert isinstance(gone.value, ResumeError)  # COMPAT §9: the resume fails
    # Nothing was lost: the recorded answer waits for a resumer with a live agent, which
    # (another process, for all the agent knows) sends the prompt again.
    second = await asyncio.to_thread(load_acp, options())
    try:
        async with client_over(second, db) as client:
            asked_again = await client.resume(None, halted.pending.id)
            assert asked_again.status == "pending"
            assert asked_again.pending is not None
            assert asked_again.pending.prompt == "Write a.txt"
            assert asked_again.pending.id != halted.pending.id
            done = await client.resume(None, Answer(id=asked_again.pending.id, ok=True))
    finally:
        await asyncio.to_thread(second.close)
    assert done.text == "outcome: yes-once"


async def test_after_a_restart_the_resume_sends_the_prompt_again_and_the_agent_asks_anew(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    first = await asyncio.to_thread(load_acp, options())
    async with client_over(first, db) as client:
        halted = await client.run("write a.txt")
    assert halted.pending is not None
    await asyncio.to_thread(first.close)  # the process that halted is gone, and its agent
    second = await asyncio.to_thread(load_acp, options())
    try:
        async with client_over(second, db) as client:
            asked_again = await client.resume(None, Answer(id=halted.pending.id, ok=True))
            assert asked_again.status == "pending"  # the old answer is not applied to it
            assert asked_again.pending is not None
            assert [e.request_id for e in await client.list_pending()] == [asked_again.pending.id]
            done = await client.resume(None, Answer(id=asked_again.pending.id, ok=True))
    finally:
        await asyncio.to_thread(second.close)
    assert done.text == "outcome: yes-once"
    assert f"no session here holds request {halted.pending.id}" in capsys.readouterr().err
