"""Signed-in people: sessions kept in the store, and the CSRF token of each.

Signing in makes a random cookie value (256 bits) and records a session under its sha256 in
the store's `toolnexus.stores.sessions.SessionStore`, with the user's name, the tag of their
token and when it ends (`toolnexus.inbox.auth.SESSION_S` after signing in). Every request with
the cookie looks the session up, so:

- signing out deletes it: the cookie stops working at once, in every process on the store;
- a user whose token changed in the users file (or who was removed from it) has no session
  any more: a session of another tag is refused, and each inbox process, when it starts (or
  first looks a session up), deletes every session its users file no longer matches — so the
  processes that share a store must share one users file;
- a session past its end is refused, and deleted when the next person signs in.

The CSRF token of a form is an HMAC keyed by the session's cookie value, so only the session
that rendered the form can post it (another user's, or an ended one, is refused), and nothing
stored gives one away: the store keeps the cookie's hash only.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from ..stores.sessions import SessionStore
from .auth import SESSION_S, InboxUser, Session, Users

__all__ = ["Sessions", "check_csrf", "csrf_token"]

_COOKIE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def _key(cookie: str) -> str:
    return hashlib.sha256(cookie.encode()).hexdigest()


def _plausible(cookie: str) -> bool:
    """Whether ``cookie`` could be one of ours (43 URL-safe base64 characters): anything else
    is refused without a look at the store."""
    return len(cookie) == 43 and all(c in _COOKIE_CHARS for c in cookie)


class Sessions:
    """The sessions of one inbox: over the store's `SessionStore`, for its users.

    Args:
        store: where sessions are kept (the run store's ``sessions``).
        users: who may sign in (their tags).
        lifetime: how long a session lasts, in seconds.
    """

    __slots__ = ("_lifetime", "_pruned", "_store", "_users")

    def __init__(self, store: SessionStore, users: Users, *, lifetime: float = SESSION_S) -> None:
        self._store = store
        self._users = users
        self._lifetime = lifetime
        self._pruned = False

    async def sign_in(self, user: InboxUser) -> str:
        """A new session for ``user``: the cookie value to hand the browser."""
        cookie = secrets.token_urlsafe(32)
        tag = self._users.tag(user)
        await self._store.open(_key(cookie), user=user.name, tag=tag, lifetime=self._lifetime)
        return cookie

    async def user_of(self, cookie: str) -> InboxUser | None:
        """The user whose live session ``cookie`` is; ``None`` for none (ended, expired, of
        an old token, of a user no longer known, or not a cookie of ours)."""
        if not _plausible(cookie):
            return None
        await self.prune_once()
        record = await self._store.find(_key(cookie))
        if record is None:
            return None
        user = self._users.by_name(record.user)
        if user is None or not hmac.compare_digest(record.tag, self._users.tag(user)):
            return None  # (not deleted here: a process with a newer users file did, or will)
        return user

    async def sign_out(self, cookie: str) -> None:
        """End the session ``cookie`` is (nothing when it is none)."""
        if _plausible(cookie):
            await self._store.end(_key(cookie))

    async def prune_once(self) -> None:
        """Delete the sessions the users file no longer matches, once per process: at start,
        or at the first look-up (two at once may both prune: it is idempotent)."""
        if not self._pruned:
            await self._store.prune(self._users.tags())
            self._pruned = True


def csrf_token(session: Session) -> str:
    """The CSRF token of a cookie session (empty for a bearer request, which needs none)."""
    if session.cookie is None:
        return ""
    key = hashlib.sha256(b"toolnexus inbox csrf\n" + session.cookie.encode()).digest()
    return hmac.new(key, session.user.name.encode(), hashlib.sha256).hexdigest()


def check_csrf(session: Session, given: str | None) -> bool:
    """Whether a posted form's CSRF token belongs to its session (bearer: always)."""
    if session.cookie is None:
        return True
    if not given:
        return False
    return hmac.compare_digest(given.encode(), csrf_token(session).encode())
