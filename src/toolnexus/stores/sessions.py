"""The approvals inbox's sessions, kept in the run store's database.

A session is a row, not a signed cookie: signing out deletes the row, so the cookie stops
working in every process that shares the store (two inbox processes behind one address, a
served app and a stand-alone inbox), and a cookie copied before the sign-out is refused too.

Each store has a `SessionStore` as its ``sessions`` attribute (memory, SQLite, Postgres): the
rows hold ``key`` — the sha256 of the cookie's random value, which itself is never stored, so
reading the table does not give a usable cookie — the user's name, a ``tag`` of the token the
user signed in with (a user whose token changed has sessions under another tag: the inbox
refuses and deletes them), and the times the session began and ends. Rows past their end are
deleted lazily: each new session deletes the expired ones, and so does `SessionStore.prune`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, cast, runtime_checkable

from ..errors import UsageError

__all__ = [
    "MemorySessions",
    "SessionRecord",
    "SessionStore",
    "check_current",
    "check_key",
    "new_record",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRecord:
    """One signed-in session.

    Attributes:
        key: the hex sha256 of the session cookie's value.
        user: the user's name.
        tag: which token the user signed in with (see `toolnexus.inbox.auth.Users.tag`).
        created_at: when the session began (seconds since the epoch, the store's clock).
        expires_at: when it ends.
    """

    key: str
    user: str
    tag: str
    created_at: float
    expires_at: float


@runtime_checkable
class SessionStore(Protocol):
    """Where an inbox keeps its sessions (a store's ``sessions`` attribute)."""

    async def open(self, key: str, *, user: str, tag: str, lifetime: float) -> SessionRecord:
        """Record a new session of ``user`` that ends ``lifetime`` seconds from now (and
        delete the sessions already past their end)."""
        ...

    async def find(self, key: str) -> SessionRecord | None:
        """The session under ``key``; ``None`` when there is none or it has ended."""
        ...

    async def end(self, key: str) -> bool:
        """End the session under ``key`` (sign-out); whether there was one."""
        ...

    async def prune(self, current: Mapping[str, str]) -> int:
        """End every session whose user is not in ``current`` (``{user: tag}``) or signed in
        with another token than its tag there, and every one past its end; how many."""
        ...


def check_key(value: object) -> str:
    """A session key: 64 lower-case hex digits (a sha256)."""
    if (
        not isinstance(value, str)
        or len(value) != 64
        or any(c not in "0123456789abcdef" for c in value)
    ):
        raise UsageError("a session key must be 64 lower-case hex digits (a sha256)")
    return value


def new_record(
    key: object, user: object, tag: object, now: float, lifetime: object
) -> SessionRecord:
    """A new session's record, its arguments checked (see `SessionStore.open`).

    Raises:
        UsageError: a key that is not a sha256, an empty user or tag, or a lifetime that is
            not positive, finite seconds.
    """
    if isinstance(lifetime, bool) or not isinstance(lifetime, int | float) or not lifetime > 0:
        raise UsageError(f"a session lifetime must be positive seconds, got {lifetime!r}")
    if not math.isfinite(lifetime):
        raise UsageError("a session lifetime must be finite")
    for what, value in (("user", user), ("tag", tag)):
        if not isinstance(value, str) or not value:
            raise UsageError(f"a session's {what} must be a non-empty string")
    return SessionRecord(
        key=check_key(key),
        user=str(user),
        tag=str(tag),
        created_at=now,
        expires_at=now + float(lifetime),
    )


def check_current(current: object) -> dict[str, str]:
    """``{user: tag}`` of the users an inbox knows."""
    pairs: dict[object, object] = (
        dict(cast(Mapping[object, object], current)) if isinstance(current, Mapping) else {}
    )
    if not isinstance(current, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in pairs.items()
    ):
        raise UsageError("prune takes a mapping of user names to token tags")
    return cast(dict[str, str], pairs)


class MemorySessions:
    """The memory store's sessions: a dict, for as long as the process lives."""

    __slots__ = ("_now", "_rows")

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        self._now = clock or time.time
        self._rows: dict[str, SessionRecord] = {}

    async def open(self, key: str, *, user: str, tag: str, lifetime: float) -> SessionRecord:
        """Record a new session (see `SessionStore.open`)."""
        record = new_record(key, user, tag, self._now(), lifetime)
        self._drop(lambda r: r.expires_at <= record.created_at)
        self._rows[record.key] = record
        return record

    async def find(self, key: str) -> SessionRecord | None:
        """The live session under ``key`` (see `SessionStore.find`)."""
        record = self._rows.get(check_key(key))
        if record is None or record.expires_at <= self._now():
            return None
        return record

    async def end(self, key: str) -> bool:
        """End one session (see `SessionStore.end`)."""
        return self._rows.pop(check_key(key), None) is not None

    async def prune(self, current: Mapping[str, str]) -> int:
        """End the sessions of unknown users, other tokens, or past their end."""
        tags, now = check_current(current), self._now()
        return self._drop(lambda r: r.expires_at <= now or tags.get(r.user) != r.tag)

    def _drop(self, stale: Callable[[SessionRecord], bool]) -> int:
        gone = [k for k, r in self._rows.items() if stale(r)]
        for k in gone:
            del self._rows[k]
        return len(gone)
