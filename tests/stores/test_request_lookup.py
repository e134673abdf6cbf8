"""`toolnexus.stores.lookup`: the one read of a request that the inbox's detail page and
``toolnexus show`` share, on every backend, and the words for where its run stands."""

from __future__ import annotations

from typing import Any, cast

import pytest
from halt_support import ARGS, T0, checkpoint
from run_backends import Backend, Clock, yes

from toolnexus.errors import CheckpointError
from toolnexus.stores.checks import call_digest
from toolnexus.stores.lookup import read_request, run_text
from toolnexus.stores.requests import AnswerRecord
from toolnexus.suspension import Answer


async def test_a_halted_request_is_read_from_its_checkpoint(store: Any, clock: Clock) -> None:
    await store.save_halt(checkpoint("r1", prompt="Deploy r1?"))
    facts = await read_request(store, store, "r1")
    assert facts is not None
    assert (facts.status, facts.request.prompt, facts.tool, facts.arguments) == (
        "pending",
        "Deploy r1?",
        "deploy",
        ARGS,
    )
    assert facts.digest == call_digest("deploy", ARGS)
    assert (facts.conversation_id, facts.created_at, facts.record) == ("conv-1", T0, None)


async def test_a_settled_request_is_read_from_its_audit_row(store: Any, clock: Clock) -> None:
    await store.save_halt(checkpoint("r1", prompt="Deploy r1?", tool="refund"))
    await store.post_answer("r1", yes("r1"), answered_by="ana")
    claim = await store.take("r1")
    await store.complete("r1", claim, outcome={"status": "done", "text": "ok"})
    facts = await read_request(store, store, "r1")
    assert facts is not None
    assert (facts.status, facts.request.kind, facts.request.prompt, facts.tool) == (
        "done",
        "approval",
        "Deploy r1?",
        "refund",
    )
    assert facts.checkpoint is None
    assert facts.arguments == ARGS  # kept by the store when the halt was saved (stores/asked.py)
    assert facts.record is not None
    assert facts.record.answered_by == "ana"


async def test_an_unreadable_checkpoint_is_read_past_once_answered_never_while_waiting(
    store: Any, backend: Backend, clock: Clock
) -> None:
    for rid in ("waiting", "answered"):
        await store.save_halt(checkpoint(rid, prompt=f"Deploy {rid}?"))
    await store.post_answer("answered", yes("answered"), answered_by="ana")
    for rid in ("waiting", "answered"):
        backend.corrupt(store, rid, "{not json")
    with pytest.raises(CheckpointError):
        await read_request(store, store, "waiting")
    facts = await read_request(store, store, "answered")
    assert facts is not None
    assert (facts.status, facts.checkpoint, facts.request.prompt) == (
        "answered",
        None,
        "Deploy answered?",  # from the audit row
    )


async def test_an_unknown_request_is_none(store: Any) -> None:
    assert await read_request(store, store, "nope") is None


def record(status: str, outcome: dict[str, Any] | None) -> AnswerRecord:
    return AnswerRecord("r", Answer("r", True), T0, "ana", "", cast(Any, status), T0, outcome)


@pytest.mark.parametrize(
    ("status", "outcome", "words"),
    [
        ("answered", None, "queued: waiting for a worker to resume the run"),
        ("claimed", None, "resuming on a worker"),
        ("done", {"status": "done"}, "done"),
        ("done", None, "done"),
        ("expired", {"status": "done"}, "expired: the run went on with the expired decline"),
        (
            "done",
            {"status": "pending", "pending": "pnd-2"},
            "done; the run halted again on a new request (pnd-2)",
        ),
        (
            "done",
            {"status": "incomplete", "limit": "turns"},
            "done; the run stopped at its turns limit",
        ),
        ("done", {"status": "error"}, "failed: the resumed run ended with an error"),
        ("cancelled", None, "cancelled: the run was ended"),
    ],
)
def test_where_a_run_stands_never_reads_done_done(
    status: str, outcome: dict[str, Any] | None, words: str
) -> None:
    said = run_text(record(status, outcome))
    assert said == words
    assert "(done)" not in said
