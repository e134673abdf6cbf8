"""The run store in one import: the protocol, its records, the shared checks, the memory backend.

The pieces live in modules named for what they hold:

- `toolnexus.stores.requests`: the `RunStore` / `AnswerChannel` protocols, the request state
  machine (T1–T12), `AnswerRecord`, `Claim`, `PendingEntry`;
- `toolnexus.stores.checks`: argument checks, encoders and the `AnswerConflict` wording every
  backend shares;
- `toolnexus.stores.memory_runs`: `InMemoryRunStore`, the reference backend.
"""

from __future__ import annotations

from ..suspension import expired_decline
from .checks import call_digest, conflict, halted_call, halted_request, pending_entry
from .memory_runs import InMemoryRunStore, InMemoryStore
from .requests import (
    DEFAULT_LEASE_S,
    EXPIRED_BY,
    SETTLED,
    AnswerChannel,
    AnswerRecord,
    Claim,
    HaltStatus,
    PendingEntry,
    RequestStatus,
    RunStore,
)

__all__ = [
    "DEFAULT_LEASE_S",
    "EXPIRED_BY",
    "SETTLED",
    "AnswerChannel",
    "AnswerRecord",
    "Claim",
    "HaltStatus",
    "InMemoryRunStore",
    "InMemoryStore",
    "PendingEntry",
    "RequestStatus",
    "RunStore",
    "call_digest",
    "conflict",
    "expired_decline",
    "halted_call",
    "halted_request",
    "pending_entry",
]
