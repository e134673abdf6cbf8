"""Signing in and out: the sign-in page, the token it takes, the session cookie it sets.

The page is the product's own (its header and styles), and says plainly what went wrong —
each error has its words and its code (``data-error``): ``unknown-token`` (401: no user has
that token), ``expired-form`` (403: the form's nonce is missing or stale — reload), and
``too-many`` (429: too many wrong tokens from this address, with when to try again). The
form's CSRF protection is a double-submit nonce in its own cookie; a right token makes a
session in the store (`toolnexus.inbox.sessions`) and its ``HttpOnly``, ``SameSite=Strict``
cookie.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Literal

from ..security import SignInLimit
from .auth import LOGIN_COOKIE, SESSION_COOKIE, SESSION_S, Session, Users, login_nonce
from .html import Markup, attrs, el, href, page
from .sessions import Sessions
from .web import HEADERS, address, base, form

if TYPE_CHECKING:
    from starlette.requests import Request as HttpRequest
    from starlette.responses import Response

__all__ = ["SignIn", "SignInError", "login_body"]

SignInError = Literal["unknown-token", "expired-form", "too-many"]

_WORDS: dict[SignInError, str] = {
    "unknown-token": "That token is not known. Check it and try again.",
    "expired-form": "The sign-in form expired: please sign in again.",
    "too-many": "Too many wrong tokens from this address: try again in {wait} s.",
}


def login_body(
    *, base: str, csrf: str, error: SignInError | None = None, wait: int | None = None
) -> Markup:
    """The sign-in page's ``<main>``: what the inbox is, the token field, and what went
    wrong (``error``) beside it."""
    problem = Markup("")
    described = "token-hint"
    if error is not None:
        words = _WORDS[error].format(wait=wait if wait is not None else 60)
        problem = el("p", words, class_="error", id="error", role="alert", data_error=error)
        described = "error token-hint"
    field = Markup(
        '<input type="password" name="token" id="token" autocomplete="current-password"'
        f" required autofocus{attrs(aria_describedby=described)}"
        f"{attrs(aria_invalid='true' if error == 'unknown-token' else None)}>"
    )
    return Markup(
        '<main id="login" class="card">'
        '<p class="lead">Answer the requests your agents are waiting on: approvals, '
        "questions, forms and sign-ins.</p>"
        f"{problem}"
        f'<form method="post" id="login-form"{attrs(action=href(base, "login"))}>'
        f'<input type="hidden" name="csrf"{attrs(value=csrf)}>'
        '<label for="token">Access token</label>'
        f"{field}"
        '<small class="hint" id="token-hint">The token you were given for this inbox (its '
        "users file holds it). It is never shown on a page.</small>"
        '<button type="submit" class="primary">Sign in</button></form></main>'
    )


class SignIn:
    """The sign-in routes of one inbox.

    Args:
        users: who may sign in.
        sessions: where sessions are kept.
        limit: the wrong tokens counted per client address.
        secure_cookies: mark the cookies ``Secure`` (``None``: when the request came over
            https).
    """

    __slots__ = ("_secure", "_sessions", "_users", "limit")

    def __init__(
        self, users: Users, sessions: Sessions, limit: SignInLimit, secure_cookies: bool | None
    ) -> None:
        self._users = users
        self._sessions = sessions
        self.limit = limit
        """Wrong tokens per client address (the form and bearer tokens alike)."""
        self._secure = secure_cookies

    def _secure_cookie(self, request: HttpRequest) -> bool:
        """Whether cookies get ``Secure``: as configured, else when the request came over
        https (behind a TLS-terminating proxy, configure it)."""
        return self._secure if self._secure is not None else request.url.scheme == "https"

    async def page(
        self,
        request: HttpRequest,
        error: SignInError | None = None,
        status: int = 200,
        wait: int | None = None,
    ) -> Response:
        """``GET /login``: the form, with a fresh nonce in its cookie."""
        from starlette.responses import HTMLResponse

        nonce = login_nonce()
        root = base(request)
        body = login_body(base=root, csrf=nonce, error=error, wait=wait)
        text = page("Sign in", body, base=root, name="login")
        response = HTMLResponse(text, status_code=status)
        response.headers.update(HEADERS)
        response.set_cookie(
            LOGIN_COOKIE,
            nonce,
            max_age=3600,
            path=root or "/",
            httponly=True,
            samesite="strict",
            secure=self._secure_cookie(request),
        )
        return response

    async def login(self, request: HttpRequest) -> Response:
        """``POST /login``: a right token signs in (303 to the list); else the form again."""
        from starlette.responses import RedirectResponse

        posted = await form(request)
        given = (posted.get("csrf") or [""])[0]
        expected = request.cookies.get(LOGIN_COOKIE) or ""
        if not given or not expected or not hmac.compare_digest(given.encode(), expected.encode()):
            return await self.page(request, "expired-form", 403)
        client = address(request)
        wait = self.limit.retry_after(client)
        if wait is not None:
            response = await self.page(request, "too-many", 429, wait)
            response.headers["retry-after"] = str(wait)
            return response
        token = (posted.get("token") or [""])[0].strip()
        user = self._users.by_token(token) if token else None
        if user is None:
            self.limit.failed(client)
            return await self.page(request, "unknown-token", 401)
        self.limit.succeeded(client)
        root = base(request)
        response = RedirectResponse(href(root), status_code=303)
        response.set_cookie(
            SESSION_COOKIE,
            await self._sessions.sign_in(user),
            max_age=int(SESSION_S),
            path=root or "/",
            httponly=True,
            samesite="strict",
            secure=self._secure_cookie(request),
        )
        response.delete_cookie(LOGIN_COOKIE, path=root or "/")
        return response

    async def logout(self, request: HttpRequest, session: Session) -> Response:
        """``POST /logout``: the session ends (in every process on the store)."""
        from starlette.responses import RedirectResponse

        if session.cookie is not None:
            await self._sessions.sign_out(session.cookie)
        root = base(request)
        response = RedirectResponse(href(root, "login"), status_code=303)
        response.delete_cookie(SESSION_COOKIE, path=root or "/")
        return response
