"""The ConversationStore contract, run against every backend (memory, SQLite, Postgres)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from toolnexus.errors import UsageError
from toolnexus.stores.base import ConversationStore
from toolnexus.stores.memory import InMemoryConversationStore
from toolnexus.stores.sqlite import SqliteStore


def _postgres(request: pytest.FixtureRequest, _tmp: Path) -> Any:
    from toolnexus.stores.postgres import PostgresStore

    return PostgresStore(request.getfixturevalue("pg_url"), max_size=4)


BACKENDS: dict[str, Callable[[pytest.FixtureRequest, Path], Any]] = {
    "memory": lambda _request, _tmp: InMemoryConversationStore(),
    "sqlite": lambda _request, tmp: SqliteStore(tmp / "state.db"),
    "postgres": _postgres,
}

TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is 2+3?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "5"},
    {"role": "assistant", "content": "5", "meta": {"n": 1.5, "ok": True, "none": None}},
]


@pytest.fixture(params=sorted(BACKENDS))
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    backend = BACKENDS[request.param](request, tmp_path)
    yield backend
    await backend.aclose()


def test_the_backend_satisfies_the_protocol(store: Any) -> None:
    assert isinstance(store, ConversationStore)


async def test_an_unknown_conversation_reads_as_none(store: ConversationStore) -> None:
    assert await store.get("nobody") is None


async def test_a_saved_transcript_reads_back_equal(store: ConversationStore) -> None:
    await store.save("c1", TRANSCRIPT)
    assert await store.get("c1") == TRANSCRIPT


async def test_save_replaces_the_previous_transcript(store: ConversationStore) -> None:
    await store.save("c1", TRANSCRIPT)
    await store.save("c1", [{"role": "user", "content": "again"}])
    assert await store.get("c1") == [{"role": "user", "content": "again"}]


async def test_an_empty_transcript_reads_back_empty_not_none(store: ConversationStore) -> None:
    await store.save("c1", [])
    assert await store.get("c1") == []


async def test_delete_forgets_the_conversation(store: ConversationStore) -> None:
    await store.save("c1", TRANSCRIPT)
    assert await store.delete("c1") is True
    assert await store.get("c1") is None


async def test_delete_of_an_unknown_id_reports_false(store: ConversationStore) -> None:
    assert await store.delete("nobody") is False


async def test_conversations_are_kept_apart_by_exact_id(store: ConversationStore) -> None:
    ids = ["a", "A", "a ", "", "ü", "a\x00b", "x" * 1000]
    for index, key in enumerate(ids):
        await store.save(key, [{"role": "user", "content": str(index)}])
    assert [await store.get(key) for key in ids] == [
        [{"role": "user", "content": str(index)}] for index in range(len(ids))
    ]


async def test_a_long_random_id_round_trips(store: ConversationStore) -> None:
    key = secrets.token_hex(4000)  # incompressible, far beyond a btree entry
    await store.save(key, TRANSCRIPT)
    assert await store.get(key) == TRANSCRIPT


async def test_mutating_the_saved_list_does_not_change_the_store(
    store: ConversationStore,
) -> None:
    tags = ["a"]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hi", "meta": {"tags": tags}}]
    await store.save("c1", messages)
    messages.append({"role": "user", "content": "extra"})
    tags.append("b")
    assert await store.get("c1") == [{"role": "user", "content": "hi", "meta": {"tags": ["a"]}}]


async def test_mutating_a_returned_transcript_does_not_change_the_store(
    store: ConversationStore,
) -> None:
    await store.save("c1", [{"role": "user", "content": "hi", "meta": {"tags": ["a"]}}])
    first = await store.get("c1")
    assert first is not None
    first[0]["meta"]["tags"].append("b")
    first.clear()
    assert await store.get("c1") == [{"role": "user", "content": "hi", "meta": {"tags": ["a"]}}]


async def test_unicode_survives_the_round_trip(store: ConversationStore) -> None:
    text = 'héllo 世界 🤖🏳️‍🌈 مرحبا e\u0301 "quoted" back\\slash new\nline tab\t nul\x00 \u2028'
    await store.save("c1", [{"role": "user", "content": text, text: text}])
    assert await store.get("c1") == [{"role": "user", "content": text, text: text}]


async def test_a_large_transcript_survives_the_round_trip(store: ConversationStore) -> None:
    messages = [
        {"role": "tool", "tool_call_id": f"c{i}", "content": "x" * 5000} for i in range(400)
    ]
    await store.save("big", messages)
    assert await store.get("big") == messages


async def test_stored_data_comes_back_as_plain_json(store: ConversationStore) -> None:
    await store.save("c1", [{"role": "user", "content": ("a", "b"), "n": {1: 2}}])  # pyright: ignore[reportArgumentType]
    assert await store.get("c1") == [{"role": "user", "content": ["a", "b"], "n": {"1": 2}}]


async def test_concurrent_saves_to_distinct_ids_all_land(store: ConversationStore) -> None:
    await asyncio.gather(
        *(store.save(f"c{i}", [{"role": "user", "content": i}]) for i in range(40))
    )
    results = await asyncio.gather(*(store.get(f"c{i}") for i in range(40)))
    assert results == [[{"role": "user", "content": i}] for i in range(40)]


BAD_IDS: list[object] = [None, 7, b"c1", ["c1"], "\ud800"]


@pytest.mark.parametrize("bad_id", BAD_IDS)
async def test_get_with_a_bad_id_is_a_usage_error(store: ConversationStore, bad_id: Any) -> None:
    with pytest.raises(UsageError):
        await store.get(bad_id)


@pytest.mark.parametrize("bad_id", BAD_IDS)
async def test_save_with_a_bad_id_is_a_usage_error(store: ConversationStore, bad_id: Any) -> None:
    with pytest.raises(UsageError):
        await store.save(bad_id, TRANSCRIPT)


@pytest.mark.parametrize("bad_id", BAD_IDS)
async def test_delete_with_a_bad_id_is_a_usage_error(store: ConversationStore, bad_id: Any) -> None:
    with pytest.raises(UsageError):
        await store.delete(bad_id)


def _cycle() -> list[Any]:
    message: dict[str, Any] = {"role": "user"}
    message["self"] = message
    return [message]


BAD_TRANSCRIPTS: list[object] = [
    None,
    "[]",
    {"role": "user"},
    [["role", "user"]],
    ["just a string"],
    [{"role": "user", "content": float("nan")}],
    [{"role": "user", "content": float("inf")}],
    [{"role": "user", "content": {1, 2}}],
    [{"role": "user", "content": object()}],
    [{"role": "user", "content": b"bytes"}],
    [{("tuple", "key"): 1}],
    [{"role": "user", "content": "lone \ud800 surrogate"}],
    _cycle(),
]


@pytest.mark.parametrize("bad", BAD_TRANSCRIPTS)
async def test_an_unstorable_transcript_is_a_usage_error_and_changes_nothing(
    store: ConversationStore, bad: Any
) -> None:
    await store.save("c1", TRANSCRIPT)
    with pytest.raises(UsageError):
        await store.save("c1", bad)
    assert await store.get("c1") == TRANSCRIPT
