"""InMemoryConversationStore specifics (the shared contract lives in test_conversation_contract)."""

from __future__ import annotations

from toolnexus.stores.memory import InMemoryConversationStore

HELLO = [{"role": "user", "content": "hello"}]


async def test_two_stores_do_not_share_conversations() -> None:
    first, second = InMemoryConversationStore(), InMemoryConversationStore()
    await first.save("c1", HELLO)
    assert await second.get("c1") is None


async def test_len_counts_stored_conversations() -> None:
    store = InMemoryConversationStore()
    await store.save("c1", HELLO)
    await store.save("c2", HELLO)
    await store.save("c1", [])
    await store.delete("c2")
    assert len(store) == 1


async def test_each_get_returns_a_distinct_list() -> None:
    store = InMemoryConversationStore()
    await store.save("c1", HELLO)
    first, second = await store.get("c1"), await store.get("c1")
    assert first == second
    assert first is not second


async def test_aclose_keeps_the_store_usable() -> None:
    store = InMemoryConversationStore()
    await store.save("c1", HELLO)
    await store.aclose()
    assert await store.get("c1") == HELLO
