"""Who is answering: users identified by a token, session cookies, CSRF tokens.

A user is a name, a token (kept as its sha256 only) and optionally the kinds they may
answer.
API clients send ``Authorization: Bearer <token>``; people log in with the token once and get a
session cookie ``name.expiry.mac`` where the MAC is keyed by the inbox's ``secret`` and the
sha256 of the user's token. Processes given the same secret accept each other's cookies (a
random secret per process otherwise), and changing a token ends that user's sessions. The
CSRF token of a session is another MAC over the same cookie, so a form is tied to the
session that rendered it. Every comparison is constant-time (`hmac.compare_digest`).

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
import time
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
"""How long a session lasts."""


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

    __slots__ = ("_by_name", "_secret", "_users")

    def __init__(self, users: Iterable[InboxUser], *, secret: bytes | None = None) -> None:
        listed = list(users)
        if not listed:
            raise UsageError("the inbox needs at least one user")
        names = [u.name for u in listed]
        digests = [u.token_sha256 for u in listed]
        if len(set(names)) != len(names) or len(set(digests)) != len(digests):
            raise UsageError("two users share a name or a token")
        self._users = tuple(listed)
        self._by_name = {u.name: u for u in listed}
        self._secret = secret if secret else secrets.token_bytes(32)

    def with_secret(self, secret: bytes | str | None) -> Users:
        """The same users, signing sessions with ``secret`` (random when ``None``)."""
        key = secret.encode() if isinstance(secret, str) else secret
        return Users(self._users, secret=key)

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

    def session_cookie(self, user: InboxUser, *, now: float | None = None) -> str:
        """A new session cookie value for ``user``."""
        until = int((time.time() if now is None else now) + SESSION_S)
        body = f"{user.name}.{until}"
        return f"{body}.{self._mac(user, 'session', body)}"

    def from_cookie(self, value: str, *, now: float | None = None) -> InboxUser | None:
        """The user a session cookie names, if its MAC holds and it has not run out."""
        name, _, rest = value.partition(".")
        until_text, _, mac = rest.partition(".")
        user = self._by_name.get(name)
        if user is None or not until_text.isdigit() or not mac:
            return None
        body = f"{name}.{until_text}"
        if not hmac.compare_digest(mac.encode(), self._mac(user, "session", body).encode()):
            return None
        if int(until_text) < (time.time() if now is None else now):
            return None
        return user

    def _mac(self, user: InboxUser, purpose: str, body: str) -> str:
        """A MAC keyed by the inbox's secret and the user's token digest (so a new token
        ends the user's sessions)."""
        key = hmac.new(self._secret, bytes.fromhex(user.token_sha256), hashlib.sha256).digest()
        return hmac.new(key, f"{purpose}\n{body}".encode(), hashlib.sha256).hexdigest()

    def csrf_token(self, session: Session) -> str:
        """The CSRF token of a cookie session (empty for a bearer request)."""
        if session.cookie is None:
            return ""
        return self._mac(session.user, "csrf", session.cookie)

    def check_csrf(self, session: Session, given: str | None) -> bool:
        """Whether a posted form's CSRF token belongs to its session (bearer: always)."""
        if session.cookie is None:
            return True
        if not given:
            return False
        return hmac.compare_digest(given.encode(), self.csrf_token(session).encode())


def login_nonce() -> str:
    """A fresh random value for the login form's double-submit cookie."""
    return secrets.token_urlsafe(24)
