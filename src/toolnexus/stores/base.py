"""The store seams: small async Protocols that every backend implements.

A store is chosen by object or by URL (see `toolnexus.stores.url.resolve_store`). One backend
object implements every Protocol it supports:

- `ConversationStore` (here): each conversation's transcript, for ``client.ask(id=...)``;
- `toolnexus.stores.runs.RunStore`: halted checkpoints, exactly-once answer claims with a
  lease, the pending index; and `toolnexus.stores.runs.AnswerChannel`, the cross-process
  ``wait_for`` (park a live run on the store, answer it from any process);
- `toolnexus.agents.RuntimeStore`: the agent runtime's handle table, one row per handle.

`InMemoryConversationStore` and `InMemoryRunStore` live as long as the process; `SqliteStore`
and `PostgresStore` implement all four, with the same semantics (one shared contract suite runs
against every backend). A host's own object needs only the Protocols it wants to serve.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .._types import Message

__all__ = ["ConversationStore"]


@runtime_checkable
class ConversationStore(Protocol):
    """Where ``client.ask(id=...)`` keeps each conversation's transcript.

    Transcripts are lists of OpenAI-shaped message dicts holding JSON data. A store hands out
    copies: mutating what `get` returned, or the list passed to `save`, never changes what is
    stored.

    Example:
        >>> class MyStore:
        ...     async def get(self, id): ...
        ...     async def save(self, id, messages): ...
        ...     async def delete(self, id): ...
        >>> isinstance(MyStore(), ConversationStore)
        True
    """

    async def get(self, id: str) -> list[Message] | None:
        """The stored transcript for ``id``, or ``None`` when there is none."""
        ...

    async def save(self, id: str, messages: list[Message]) -> None:
        """Store ``messages`` as the whole transcript for ``id`` (insert or replace)."""
        ...

    async def delete(self, id: str) -> bool:
        """Forget ``id``; True when something was deleted."""
        ...
