"""The inbox's queries (`InboxIndex`) on every backend: search, paging, counts per kind,
history by person and status, and announcing each new request exactly once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from halt_support import T0, checkpoint
from run_backends import Backend, Clock, yes

from toolnexus.errors import UsageError
from toolnexus.stores.inbox_index import InboxIndex
from toolnexus.suspension import Answer


def ids(entries: Any) -> list[str]:
    return [e.request_id for e in entries]


async def waiting(store: Any, clock: Clock, n: int = 5) -> None:
    kinds = ["approval", "question", "approval", "input", "approval"]
    for i in range(n):
        await store.save_halt(
            checkpoint(
                f"r{i}",
                kind=kinds[i % len(kinds)],
                tool="deploy" if i % 2 == 0 else "ask",
                prompt=f"Prompt {i}: Deploy 100%_done to PROD-{i}?",
                conversation_id=f"c{i % 2}",
                created_at=T0 - 100 + i,
            )
        )


def test_every_backend_implements_the_inbox_index(store: Any) -> None:
    assert isinstance(store, InboxIndex)


async def test_search_pending_pages_through_the_waiting_requests_oldest_first(
    store: Any, clock: Clock
) -> None:
    await waiting(store, clock)
    first = await store.search_pending(limit=2)
    second = await store.search_pending(limit=2, offset=2)
    rest = await store.search_pending(limit=10, offset=4)
    assert (ids(first), ids(second), ids(rest)) == (["r0", "r1"], ["r2", "r3"], ["r4"])
    assert await store.search_pending(offset=99) == []


async def test_the_text_search_folds_ascii_case_and_matches_like_characters_literally(
    store: Any, clock: Clock
) -> None:
    await waiting(store, clock)
    await store.save_halt(checkpoint("odd", prompt="Deploy 100x done", created_at=T0))
    assert ids(await store.search_pending(text="prod-3")) == ["r3"]
    assert ids(await store.search_pending(text="100%_")) == ["r0", "r1", "r2", "r3", "r4"]
    assert ids(await store.search_pending(text="ASK")) == ["r1", "r3"]  # the tool
    assert ids(await store.search_pending(text="R4")) == ["r4"]  # the request id
    assert ids(await store.search_pending(text="c1", kind="question")) == ["r1"]
    assert await store.search_pending(text="nowhere") == []


async def test_count_pending_counts_per_kind_under_the_filters(store: Any, clock: Clock) -> None:
    await waiting(store, clock)
    assert await store.count_pending() == {"approval": 3, "question": 1, "input": 1}
    assert await store.count_pending(tool="ask") == {"question": 1, "input": 1}
    assert await store.count_pending(text="prod-4") == {"approval": 1}
    await store.post_answer("r0", yes("r0"), answered_by="ana")
    assert await store.count_pending() == {"approval": 2, "question": 1, "input": 1}
    assert await store.count_pending(text="nothing") == {}


async def test_the_history_lists_answers_cancels_and_expiries_newest_first(
    store: Any, clock: Clock
) -> None:
    await waiting(store, clock)
    await store.post_answer("r0", yes("r0"), answered_by="ana")
    clock.now += 1
    await store.cancel("r1", reason="stale", answered_by="bob")
    clock.now += 1
    await store.expire("r2")
    clock.now += 1
    await store.post_answer("r3", Answer("r3", False, reason="declined"), answered_by="ana")
    history = await store.list_history()
    assert ids(history) == ["r3", "r2", "r1", "r0"]
    cancelled = history[2]
    assert (cancelled.status, cancelled.answered_by, cancelled.kind) == (
        "cancelled",
        "bob",
        "question",
    )
    assert cancelled.answer.data == {"note": "stale"}
    assert cancelled.prompt.startswith("Prompt 1")
    assert history[3].digest
    assert history[3].answered_at == T0
    assert ids(await store.list_history(answered_by="ana")) == ["r3", "r0"]
    assert ids(await store.list_history(status="cancelled")) == ["r1"]
    assert ids(await store.list_history(status="answered")) == ["r3", "r2", "r0"]
    assert ids(await store.list_history(kind="approval")) == ["r2", "r0"]
    assert ids(await store.list_history(text="prod-3")) == ["r3"]
    assert ids(await store.list_history(answered_after=T0 + 1)) == ["r3", "r2"]
    assert ids(await store.list_history(limit=1, offset=1)) == ["r2"]
    assert ids(await store.list_history(request_id="r1")) == ["r1"]
    assert await store.list_history(request_id="r4") == []  # still waiting
    assert await store.list_history(request_id="nope") == []


async def test_the_history_follows_the_request_to_done_and_keeps_it_after_the_checkpoint_goes(
    store: Any, clock: Clock
) -> None:
    await waiting(store, clock, 1)
    await store.post_answer("r0", yes("r0"), answered_by="ana")
    claim = await store.take("r0")
    assert claim is not None
    (held,) = await store.list_history()
    assert held.status == "claimed"
    await store.complete("r0", claim, outcome={"status": "done", "text": "shipped"})
    (done,) = await store.list_history(status="done")
    assert (done.request_id, done.tool, done.answered_by) == ("r0", "deploy", "ana")
    assert done.settled_at is not None


async def test_a_host_claim_shows_in_the_history_only_once_settled(
    store: Any, clock: Clock
) -> None:
    await waiting(store, clock, 1)
    claim = await store.claim("r0", yes("r0"), answered_by="host")
    assert await store.list_history() == []
    await store.complete("r0", claim, outcome={"status": "done"})
    assert ids(await store.list_history()) == ["r0"]


async def test_take_unannounced_hands_each_new_request_out_once(store: Any, clock: Clock) -> None:
    await waiting(store, clock, 3)
    first = await store.take_unannounced(limit=2)
    second = await store.take_unannounced()
    assert (ids(first), ids(second)) == (["r0", "r1"], ["r2"])
    assert await store.take_unannounced() == []
    await store.save_halt(checkpoint("r1", prompt="saved again", created_at=T0))  # same request
    await store.save_halt(checkpoint("late", created_at=T0))
    assert ids(await store.take_unannounced()) == ["late"]


async def test_an_answered_request_is_never_announced(store: Any, clock: Clock) -> None:
    await waiting(store, clock, 2)
    await store.post_answer("r0", yes("r0"))
    assert ids(await store.take_unannounced()) == ["r1"]


async def test_two_announcers_racing_never_hand_out_one_request_twice(
    backend: Backend, clock: Clock
) -> None:
    one = await backend.make(clock)
    two = one if backend.name == "memory" else await backend.make(clock)  # one process: one
    try:
        for i in range(30):
            await one.save_halt(checkpoint(f"n{i}", created_at=T0 + i))
        got = await asyncio.gather(
            *(s.take_unannounced(limit=4) for s in (one, two) for _ in range(6))
        )
        handed = [rid for batch in got for rid in ids(batch)]
        handed += ids(await one.take_unannounced(limit=100))
        assert sorted(handed) == sorted(f"n{i}" for i in range(30))
    finally:
        await one.aclose()
        if two is not one:
            await two.aclose()


async def test_load_halts_reads_many_checkpoints_and_leaves_out_the_missing_and_the_corrupt(
    backend: Backend, store: Any, clock: Clock
) -> None:
    await waiting(store, clock, 3)
    await store.cancel("r2")
    backend.corrupt(store, "r1", "{not a checkpoint")
    found = await store.load_halts(["r0", "r1", "r2", "nope", "r0"])
    assert list(found) == ["r0"]
    assert found["r0"].pending.prompt.startswith("Prompt 0")
    assert await store.load_halts([]) == {}


@pytest.mark.parametrize(
    ("call", "options"),
    [
        ("search_pending", {"offset": -1}),
        ("search_pending", {"offset": True}),
        ("search_pending", {"text": 5}),
        ("search_pending", {"limit": -1}),
        ("count_pending", {"older_than": -1}),
        ("list_history", {"status": "maybe"}),
        ("list_history", {"answered_by": 3}),
        ("list_history", {"answered_after": float("nan")}),
        ("list_history", {"request_id": ""}),
        ("take_unannounced", {"limit": "10"}),
        ("load_halts", {"request_ids": "r0"}),
        ("load_halts", {"request_ids": [""]}),
        ("load_halts", {"request_ids": ["r0"] * 501}),
    ],
)
async def test_bad_arguments_are_a_usage_error_and_change_nothing(
    store: Any, clock: Clock, call: str, options: dict[str, Any]
) -> None:
    await waiting(store, clock, 2)
    with pytest.raises(UsageError):
        await getattr(store, call)(**options)
    assert ids(await store.take_unannounced()) == ["r0", "r1"]
