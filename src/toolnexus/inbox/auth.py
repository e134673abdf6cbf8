"""Who is answering: users identified by a token.

A user is a name, a token (kept as its sha256 only) and optionally the kinds they may
answer. API clients send ``Authorization: Bearer <token>``; people sign in with the token once
and get a session (`toolnexus.inbox.sessions`), kept in the store so that signing out ends it
everywhere. Every token comparison is constant-time (`hmac.compare_digest`), and a token must
be at least 16 characters (`toolnexus.security.check_token`; a ``token_sha256`` in a users
file cannot be measured: the host answers for its length).

Wrong tokens are counted per client address (`toolnexus.security.SignInLimit`): past a
few in a minute, that address is refused with 429 until the oldest ages out — the sign-in form
and bearer tokens alike. Tokens are long random secrets; this only keeps a guesser from trying
at line rate.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ..errors import UsageError
from ..security import check_token

__all__ = [
    "SESSION_COOKIE",
    "InboxUser",
    "Session",
    "Users",
    "load_users",
]

SESSION_COOKIE = "toolnexus_inbox"
"""The session cookie's name."""

LOGIN_COOKIE = "toolnexus_inbox_login"
"""The login form's double-submit CSRF cookie."""

SESSION_S = 12 * 3600.0
"""How long a session lasts (from signing in; it is not extended by use)."""


@dataclass(frozen=True, slots=True)
class InboxUser:
    """One person (or program) who may answer requests.

    Attributes:
        name: shown in the pages and recorded as ``answered_by``.
        token_sha256: the hex sha256 of their token (the token itself is never kept).
        kinds: the request kinds they may answer; ``None`` for any.
    """

    name: str
    token_sha256: str
    kinds: frozenset[str] | None = None

    @classmethod
    def with_token(cls, name: str, token: str, kinds: Iterable[str] | None = None) -> InboxUser:
        """A user from their plain token."""
        digest = hashlib.sha256(check_token(token).encode()).hexdigest()
        return cls(_name(name), digest, None if kinds is None else frozenset(kinds))

    def may_answer(self, kind: str) -> bool:
        """Whether this user may answer (or cancel) a request of ``kind``."""
        return self.kinds is None or kind in self.kinds


@dataclass(frozen=True, slots=True)
class Session:
    """A signed-in user and how they proved it."""

    user: InboxUser
    cookie: str | None
    """The session cookie's value; ``None`` for a bearer-token request (no CSRF needed)."""

    @property
    def bearer(self) -> bool:
        return self.cookie is None


def _name(value: object) -> str:
    if not isinstance(value, str) or not value.strip() or "." in value or len(value) > 200:
        raise UsageError(f"a user name must be a non-empty string without '.', got {value!r}")
    if any(not c.isprintable() for c in value):
        raise UsageError(f"a user name must be printable, got {value!r}")
    return value


def _user(entry: object) -> InboxUser:
    if not isinstance(entry, Mapping):
        raise UsageError(f"each user must be an object, got {type(entry).__name__}")
    item = cast(Mapping[str, Any], entry)
    unknown = set(item) - {"name", "token", "token_sha256", "kinds"}
    if unknown:
        raise UsageError(f"unknown keys in a user entry: {sorted(unknown)}")
    name = _name(item.get("name"))
    kinds_raw = item.get("kinds")
    kinds: frozenset[str] | None = None
    if kinds_raw is not None:
        if not isinstance(kinds_raw, list) or not all(
            isinstance(k, str) and k for k in cast(list[Any], kinds_raw)
        ):
            raise UsageError(f"user {name!r}: kinds must be a list of kind names")
        kinds = frozenset(cast(list[str], kinds_raw))
    token, digest = item.get("token"), item.get("token_sha256")
    if (token is None) == (digest is None):
        raise UsageError(f"user {name!r}: give exactly one of token or token_sha256")
    if token is not None:
        try:
            return InboxUser.with_token(name, cast(str, token), kinds)
        except UsageError as exc:
            raise UsageError(f"user {name!r}: {exc}") from None
    if not isinstance(digest, str) or len(digest) != 64 or not _is_hex(digest):
        raise UsageError(f"user {name!r}: token_sha256 must be 64 hex digits")
    return InboxUser(name, digest.lower(), kinds)


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in text)


def load_users(users: object) -> Users:
    """`Users` from a path to a JSON users file, a ``{name: token}`` mapping, or a list of
    `InboxUser` / user dicts (see docs/inbox.md).

    Raises:
        UsageError: no users, a malformed entry, or two users with one name or one token.
    """
    if isinstance(users, Users):
        return users
    entries: list[InboxUser] = []
    if isinstance(users, str | Path):
        try:
            raw = json.loads(Path(users).read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(f"cannot read the users file {str(users)!r}: {exc}") from exc
        except ValueError as exc:
            raise UsageError(f"the users file {str(users)!r} is not JSON: {exc}") from exc
        listed = cast(Mapping[str, Any], raw).get("users") if isinstance(raw, Mapping) else None
        if not isinstance(listed, list):
            raise UsageError(f'the users file {str(users)!r} must hold {{"users": [...]}}')
        entries = [_user(e) for e in cast(list[Any], listed)]
    elif isinstance(users, Mapping):
        pairs = cast(Mapping[Any, Any], users).items()
        entries = [_user({"name": k, "token": v}) for k, v in pairs]
    elif isinstance(users, list | tuple):
        for e in cast(list[Any], users):
            entries.append(e if isinstance(e, InboxUser) else _user(e))
    else:
        raise UsageError(
            f"users must be a users file path, a {{name: token}} mapping or a list, got "
            f"{type(users).__name__}"
        )
    return Users(entries)


class Users:
    """The users an inbox knows, looked up by token in constant time per user."""

    __slots__ = ("_by_name", "_users")

    def __init__(self, users: Iterable[InboxUser]) -> None:
        listed = list(users)
        if not listed:
            raise UsageError("the inbox needs at least one user")
        names = [u.name for u in listed]
        digests = [u.token_sha256 for u in listed]
        if len(set(names)) != len(names) or len(set(digests)) != len(digests):
            raise UsageError("two users share a name or a token")
        self._users = tuple(listed)
        self._by_name = {u.name: u for u in listed}

    def __len__(self) -> int:
        return len(self._users)

    def by_token(self, token: str) -> InboxUser | None:
        """The user whose token this is (every user is compared: constant time per user)."""
        digest = hashlib.sha256(token.encode("utf-8", "replace")).hexdigest().encode()
        found: InboxUser | None = None
        for user in self._users:
            if hmac.compare_digest(digest, user.token_sha256.encode()):
                found = user
        return found

    def by_name(self, name: str) -> InboxUser | None:
        """The user of that name."""
        return self._by_name.get(name)

    @staticmethod
    def tag(user: InboxUser) -> str:
        """Which token ``user`` has, as a stored session records it: a new token, a new tag
        (so the sessions signed in with the old one end). Derived from the token's sha256,
        never the sha256 itself."""
        seed = b"toolnexus inbox session tag\n" + bytes.fromhex(user.token_sha256)
        return hashlib.sha256(seed).hexdigest()[:32]

    def tags(self) -> dict[str, str]:
        """``{name: tag}`` of every user (what `SessionStore.prune` keeps)."""
        return {u.name: self.tag(u) for u in self._users}


def login_nonce() -> str:
    """A fresh random value for the login form's double-submit cookie."""
    return secrets.token_urlsafe(24)
