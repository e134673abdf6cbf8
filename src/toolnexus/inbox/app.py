"""`inbox_app`: the approvals inbox as one ASGI app over a run store.

The routes are listed in docs/inbox.md. Every route but ``/login`` and ``/static`` needs a
user (`toolnexus.inbox.auth`); every form post needs its session's CSRF token (a bearer
request needs none); the body cap of `toolnexus.security.BodyLimit` guards every post, the
site checks of `toolnexus.security.SiteGuard` (``Host``, ``Origin``) every route, and the JSON
API takes JSON bodies only (`toolnexus.security.JsonOnly`).
Answers are only *recorded* here (`RunStore.post_answer` / `RunStore.cancel`, exactly once);
a worker holding the toolkit resumes the run, and the detail page follows it.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from ..errors import CheckpointError, StoreError, UsageError
from ..security import (
    DEFAULT_MAX_BODY,
    BodyLimit,
    JsonOnly,
    Receive,
    Scope,
    Send,
    SignInLimit,
    SiteGuard,
)
from ..stores.inbox_index import InboxIndex
from ..stores.requests import RunStore
from ..stores.sessions import SessionStore
from .auth import LOGIN_COOKIE, SESSION_COOKIE, SESSION_S, Session, Users, load_users, login_nonce
from .html import CSP, Markup, esc, href, page, quote_id
from .live import OnRequest, Watcher, log
from .pages import unreadable_body
from .paths import Action, request_target
from .sessions import Sessions, check_csrf, csrf_token
from .views import Views, unreadable_message

if TYPE_CHECKING:
    from starlette.requests import Request as HttpRequest
    from starlette.responses import Response

__all__ = ["InboxApp", "inbox_app"]

_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    # Not "no-referrer": under it a browser sends "Origin: null" with the page's own form
    # posts, and the site check could not tell them from a sandboxed page's.
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}

_STATIC = {"inbox.css": "text/css; charset=utf-8", "inbox.js": "text/javascript; charset=utf-8"}


class InboxApp:
    """The inbox: an ASGI app (call it, or mount it) and what it holds.

    Attributes:
        store: the run store answers are recorded in.
        users: who may sign in.
        sessions: the signed-in people (kept in the store).
        watcher: the poller behind live events and notifications.
    """

    def __init__(
        self,
        store: RunStore,
        users: Users,
        *,
        on_request: OnRequest | None,
        webhook: str | None,
        poll_interval: float,
        max_body: int,
        per_page: int,
        title: str,
        public_url: str | None,
        allowed_hosts: Iterable[str] | str | None = None,
        allowed_origins: Iterable[str] | str | None = None,
        owns_store: bool,
        secure_cookies: bool | None = None,
        sign_ins: SignInLimit | None = None,
    ) -> None:
        from starlette.applications import Starlette
        from starlette.routing import Route

        if not isinstance(store, InboxIndex):
            raise UsageError(
                "the inbox needs a store with the inbox queries (memory, sqlite or postgres): "
                f"{type(store).__name__} has no search_pending / count_pending / list_history "
                "/ take_unannounced"
            )
        kept = getattr(store, "sessions", None)
        if not isinstance(kept, SessionStore):
            raise UsageError(
                "the inbox keeps its sessions in the store (memory, sqlite or postgres): "
                f"{type(store).__name__} has no sessions"
            )
        self.store = store
        self.users = users
        self.sessions = Sessions(kept, users)
        self._owns_store = owns_store
        self._public = public_url.rstrip("/") if public_url else None
        self._secure = secure_cookies
        self.sign_ins = sign_ins if sign_ins is not None else SignInLimit()
        """Wrong tokens per client address (the form and bearer tokens alike)."""
        self.watcher = Watcher(
            store,
            poll_interval=poll_interval,
            on_request=on_request,
            webhook=webhook,
            link=self._link,
        )
        self.views = Views(store, store, per_page=per_page)
        self.title = title
        pages: _Targets = {
            ("GET", None): self._guard(self._detail),
            ("GET", "status"): self._guard(self._status),
            ("POST", "answer"): self._guard(self._answer),
            ("POST", "cancel"): self._guard(self._cancel),
            # A refused post leaves the browser on its action URL: a GET there (a reload, a
            # bookmark) goes to the request's page.
            ("GET", "answer"): self._to_detail,
            ("GET", "cancel"): self._to_detail,
        }
        api: _Targets = {
            ("GET", None): self._guard(self._api_detail, api=True),
            ("POST", "answer"): self._guard(self._api_answer, api=True),
            ("POST", "cancel"): self._guard(self._api_cancel, api=True),
        }
        either = ["GET", "POST"]
        routes = [
            Route("/", self._guard(self._list)),
            # The id is read from the raw path (`toolnexus.inbox.paths`): any id is routable.
            Route("/requests/{rest:path}", _by_target(pages), methods=either),
            Route("/api/requests/{rest:path}", _by_target(api), methods=either),
            Route("/history", self._guard(self._history)),
            Route("/history.jsonl", self._guard(self._export_jsonl)),
            Route("/history.csv", self._guard(self._export_csv)),
            Route("/events", self._guard(self._events)),
            Route("/login", self._login_form, methods=["GET"]),
            Route("/login", self._login, methods=["POST"]),
            Route("/logout", self._guard(self._logout), methods=["POST"]),
            Route("/static/{name}", self._static),
            Route("/api/pending", self._guard(self._api_pending, api=True)),
        ]
        self._app = SiteGuard(
            JsonOnly(BodyLimit(Starlette(routes=routes), max_body), prefix="/api/"),
            hosts=allowed_hosts,
            origins=allowed_origins,
            public_url=public_url,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "lifespan":
            await self._lifespan(receive, send)
            return
        if self.watcher.notifying:
            self.watcher.ensure_running()
        await self._app(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await self.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def start(self) -> None:
        """Start the notifications and end the sessions the users no longer match, now (they
        happen at the first request otherwise)."""
        try:
            await self.sessions.prune_once()
        except StoreError as exc:  # the first look-up tries again
            log.warning("inbox: the stale sessions could not be ended at start: %s", exc)
        if self.watcher.notifying:
            self.watcher.ensure_running()

    async def aclose(self) -> None:
        """Stop polling; close the store when the inbox opened it from a URL."""
        await self.watcher.aclose()
        if self._owns_store:
            close = getattr(self.store, "aclose", None)
            if close is not None:
                await close()

    def _secure_cookie(self, request: HttpRequest) -> bool:
        """Whether cookies get ``Secure``: as configured, else when the request came over
        https (behind a TLS-terminating proxy, configure it)."""
        return self._secure if self._secure is not None else request.url.scheme == "https"

    def _link(self, request_id: str) -> str | None:
        if self._public is None:
            return None
        return f"{self._public}/requests/{quote_id(request_id)}"

    # -- who is asking ---------------------------------------------------------------------

    async def _session(self, request: HttpRequest) -> Session | bool | None:
        """The signed-in user; ``None`` for nobody; ``False`` for a wrong bearer token.

        An ``Authorization`` header of another scheme (``Basic``, ``Digest``, ``Negotiate``:
        what a proxy or a tool may add) is not a token at all: it is ignored, never counted as
        a wrong one, and the session cookie decides.
        """
        token = _bearer(request)
        if token is not None:
            user = self.users.by_token(token)
            return False if user is None else Session(user, None)
        cookie = request.cookies.get(SESSION_COOKIE)
        if cookie:
            user = await self.sessions.user_of(cookie)
            if user is not None:
                return Session(user, cookie)
        return None

    def _guard(
        self,
        handler: Callable[[HttpRequest, Session], Awaitable[Response]],
        *,
        api: bool = False,
    ) -> Callable[[HttpRequest], Awaitable[Response]]:
        async def endpoint(request: HttpRequest) -> Response:
            from starlette.responses import JSONResponse, RedirectResponse

            address = _address(request)
            if _bearer(request) is not None:
                wait = self.sign_ins.retry_after(address)
                if wait is not None:  # refused before the token is even looked at
                    return _too_many(wait)
            session = await self._session(request)
            if session is False:
                self.sign_ins.failed(address)
            elif isinstance(session, Session) and session.bearer:
                self.sign_ins.succeeded(address)
            if isinstance(session, Session) and (not api or session.bearer):
                if (
                    request.method == "POST"
                    and not api
                    and not await self._csrf_ok(request, session)
                ):
                    return self._page(
                        request,
                        session,
                        "Refused",
                        '<p class="error" id="error">'
                        "The form's CSRF token is missing or wrong: reload the page and try again."
                        "</p>",
                        403,
                    )
                return await handler(request, session)
            if api or session is False or request.method != "GET" or _wants_json(request):
                return JSONResponse(
                    {"error": "a valid user token is required"},
                    status_code=401,
                    headers={"www-authenticate": 'Bearer realm="toolnexus-inbox"'},
                )
            return RedirectResponse(href(_base(request), "login"), status_code=303)

        return endpoint

    async def _csrf_ok(self, request: HttpRequest, session: Session) -> bool:
        if session.bearer:
            return True
        form = await _form(request)
        given = (form.get("csrf") or [""])[0]
        return check_csrf(session, given)

    def _page(
        self,
        request: HttpRequest,
        session: Session | None,
        title: str,
        body: str,
        status: int = 200,
        refresh: int | None = None,
    ) -> Response:
        from starlette.responses import HTMLResponse

        csrf = csrf_token(session) if session is not None else ""
        text = page(
            title,
            Markup(body),  # built here or by the page modules, outside text escaped
            base=_base(request),
            user=session.user.name if session is not None else None,
            csrf=csrf,
            refresh=refresh,
        )
        return HTMLResponse(text, status_code=status, headers=_HEADERS)

    # -- pages -----------------------------------------------------------------------------

    async def _list(self, request: HttpRequest, session: Session) -> Response:
        try:
            body = await self.views.list_page(request, _base(request))
        except UsageError as exc:
            return self._page(
                request, session, "Pending", f'<p class="error" id="error">{esc(exc)}</p>', 400
            )
        return self._page(request, session, self.title, body)

    async def _to_detail(self, request: HttpRequest) -> Response:
        return _see_other(request, request.path_params["rid"])

    async def _detail(self, request: HttpRequest, session: Session) -> Response:
        rid = request.path_params["rid"]
        return await self._show(request, session, rid)

    async def _show(
        self,
        request: HttpRequest,
        session: Session,
        rid: str,
        *,
        status: int = 200,
        values: Mapping[str, list[str]] | None = None,
        errors: Mapping[str, str] | None = None,
        message: str = "",
    ) -> Response:
        try:
            view = await self.views.request_view(rid)
        except CheckpointError as exc:  # a refused post says why; a page, that it is unreadable
            body = unreadable_body(
                rid,
                message or _unreadable(rid, exc),
                base=_base(request),
                csrf=csrf_token(session),
                allowed=session.user.kinds is None,
            )
            failed = status if status != 200 else 500
            return self._page(request, session, "Unreadable request", body, failed)
        if view is None:
            return self._page(
                request,
                session,
                "Not found",
                f'<p class="error" id="error">No request {esc(rid)}.</p>',
                404,
            )
        body = self.views.detail(
            view,
            base=_base(request),
            csrf=csrf_token(session),
            allowed=session.user.may_answer(view.request.kind),
            values=values,
            errors=errors,
            message=message,
        )
        following = view.record is not None and view.record.status in ("answered", "claimed")
        title = f"{view.request.kind} request"
        return self._page(request, session, title, body, status, 3 if following else None)

    async def _answer(self, request: HttpRequest, session: Session) -> Response:
        rid = request.path_params["rid"]
        form = await _form(request)
        outcome = await self.views.answer(rid, form, session.user)
        if outcome.status == 303:
            self.watcher.poke()
            return _see_other(request, rid)
        return await self._show(
            request,
            session,
            rid,
            status=outcome.status,
            values=form if outcome.status == 400 else None,
            errors=outcome.errors,
            message=outcome.message,
        )

    async def _cancel(self, request: HttpRequest, session: Session) -> Response:
        rid = request.path_params["rid"]
        form = await _form(request)
        reason = (form.get("reason") or [""])[0].strip() or None
        outcome = await self.views.cancel(rid, reason, session.user)
        if outcome.status == 303:
            self.watcher.poke()
            return _see_other(request, rid)
        return await self._show(
            request, session, rid, status=outcome.status, message=outcome.message
        )

    async def _status(self, request: HttpRequest, session: Session) -> Response:
        from starlette.responses import JSONResponse

        rid = request.path_params["rid"]
        try:
            found = await self.views.status(rid)
        except CheckpointError as exc:
            return _unreadable_json(rid, exc, _HEADERS)
        if found is None:
            return JSONResponse({"error": "no such request"}, status_code=404, headers=_HEADERS)
        return JSONResponse(found, headers=_HEADERS)

    async def _history(self, request: HttpRequest, session: Session) -> Response:
        try:
            body = await self.views.history_page(request, _base(request))
        except UsageError as exc:
            return self._page(
                request, session, "History", f'<p class="error" id="error">{esc(exc)}</p>', 400
            )
        return self._page(request, session, "History", body)

    async def _export_jsonl(self, request: HttpRequest, session: Session) -> Response:
        return await self._export(request, "jsonl")

    async def _export_csv(self, request: HttpRequest, session: Session) -> Response:
        return await self._export(request, "csv")

    async def _export(self, request: HttpRequest, fmt: str) -> Response:
        from starlette.responses import JSONResponse, Response

        try:
            text = await self.views.export(request, fmt)
        except UsageError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        media = "application/x-ndjson" if fmt == "jsonl" else "text/csv; charset=utf-8"
        headers = {
            **_HEADERS,
            "content-disposition": f'attachment; filename="inbox-history.{fmt}"',
        }
        return Response(text, media_type=media, headers=headers)

    async def _events(self, request: HttpRequest, session: Session) -> Response:
        from sse_starlette.sse import EventSourceResponse

        queue = self.watcher.subscribe()

        async def stream() -> AsyncIterator[dict[str, str]]:
            try:
                await self.watcher.primed()  # hello promises that nothing from now is missed
                yield {"event": "hello", "data": "{}"}
                while True:
                    event = await queue.get()
                    yield {"event": event.name, "data": event.encoded()}
            finally:
                self.watcher.unsubscribe(queue)

        return EventSourceResponse(stream(), ping=15, headers={"cache-control": "no-store"})

    # -- signing in ------------------------------------------------------------------------

    async def _login_form(
        self, request: HttpRequest, error: str = "", status: int = 200
    ) -> Response:
        from starlette.responses import HTMLResponse

        from .pages import login_body

        nonce = login_nonce()
        base = _base(request)
        text = page("Sign in", login_body(base=base, csrf=nonce, error=error), base=base)
        response = HTMLResponse(text, status_code=status, headers=_HEADERS)
        response.set_cookie(
            LOGIN_COOKIE,
            nonce,
            max_age=3600,
            path=base or "/",
            httponly=True,
            samesite="strict",
            secure=self._secure_cookie(request),
        )
        return response

    async def _login(self, request: HttpRequest) -> Response:
        import hmac

        from starlette.responses import RedirectResponse

        form = await _form(request)
        given = (form.get("csrf") or [""])[0]
        expected = request.cookies.get(LOGIN_COOKIE) or ""
        if not given or not expected or not hmac.compare_digest(given.encode(), expected.encode()):
            return await self._login_form(request, "The form expired: please sign in again.", 403)
        address = _address(request)
        wait = self.sign_ins.retry_after(address)
        if wait is not None:
            response = await self._login_form(
                request, f"Too many wrong tokens from this address: try again in {wait} s.", 429
            )
            response.headers["retry-after"] = str(wait)
            return response
        token = (form.get("token") or [""])[0].strip()
        user = self.users.by_token(token) if token else None
        if user is None:
            self.sign_ins.failed(address)
            return await self._login_form(request, "That token is not known.", 401)
        self.sign_ins.succeeded(address)
        base = _base(request)
        response = RedirectResponse(href(base), status_code=303)
        response.set_cookie(
            SESSION_COOKIE,
            await self.sessions.sign_in(user),
            max_age=int(SESSION_S),
            path=base or "/",
            httponly=True,
            samesite="strict",
            secure=self._secure_cookie(request),
        )
        response.delete_cookie(LOGIN_COOKIE, path=base or "/")
        return response

    async def _logout(self, request: HttpRequest, session: Session) -> Response:
        from starlette.responses import RedirectResponse

        if session.cookie is not None:
            await self.sessions.sign_out(session.cookie)
        base = _base(request)
        response = RedirectResponse(href(base, "login"), status_code=303)
        response.delete_cookie(SESSION_COOKIE, path=base or "/")
        return response

    async def _static(self, request: HttpRequest) -> Response:
        from starlette.responses import PlainTextResponse, Response

        name = request.path_params["name"]
        media = _STATIC.get(name)
        if media is None:
            return PlainTextResponse("not found", status_code=404)
        data = importlib.resources.files("toolnexus.inbox").joinpath("static", name).read_bytes()
        headers = {"cache-control": "public, max-age=3600", "x-content-type-options": "nosniff"}
        return Response(data, media_type=media, headers=headers)

    # -- the JSON API (bearer only) ---------------------------------------------------------

    async def _api_pending(self, request: HttpRequest, session: Session) -> Response:
        from starlette.responses import JSONResponse

        try:
            found = await self.views.api_pending(request)
        except UsageError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        return JSONResponse(found)

    async def _api_detail(self, request: HttpRequest, session: Session) -> Response:
        from starlette.responses import JSONResponse

        rid = request.path_params["rid"]
        try:
            found = await self.views.api_detail(rid)
        except CheckpointError as exc:
            return _unreadable_json(rid, exc)
        if found is None:
            return JSONResponse({"error": "no such request"}, status_code=404)
        return JSONResponse(found)

    async def _api_answer(self, request: HttpRequest, session: Session) -> Response:
        from starlette.responses import JSONResponse

        body = await _json_body(request)
        if body is None:
            return JSONResponse({"error": "the body must be a JSON object"}, status_code=400)
        outcome = await self.views.api_answer(request.path_params["rid"], body, session.user)
        if outcome.status == 303:
            self.watcher.poke()
            found = await self.views.status(request.path_params["rid"])
            return JSONResponse(found or {}, status_code=200)
        return JSONResponse(
            {"error": outcome.message, "errors": dict(outcome.errors)}, status_code=outcome.status
        )

    async def _api_cancel(self, request: HttpRequest, session: Session) -> Response:
        from starlette.responses import JSONResponse

        body = await _json_body(request)
        if body is None:
            return JSONResponse({"error": "the body must be a JSON object"}, status_code=400)
        reason = body.get("reason")
        if reason is not None and not isinstance(reason, str):
            return JSONResponse({"error": "reason must be a string"}, status_code=400)
        outcome = await self.views.cancel(request.path_params["rid"], reason, session.user)
        if outcome.status == 303:
            self.watcher.poke()
            found = await self.views.status(request.path_params["rid"])
            return JSONResponse(found or {}, status_code=200)
        return JSONResponse({"error": outcome.message}, status_code=outcome.status)


Endpoint = Callable[["HttpRequest"], Awaitable["Response"]]
_Targets = dict[tuple[str, Action | None], Endpoint]


def _by_target(handlers: _Targets) -> Endpoint:
    """One endpoint for the paths that name a request: the handler of the method and the
    action the raw path names, with the id as the ``rid`` path parameter."""

    async def endpoint(request: HttpRequest) -> Response:
        from starlette.responses import PlainTextResponse

        target = request_target(request.scope)
        if target is None:
            return PlainTextResponse("not found", status_code=404, headers=_HEADERS)
        rid, action = target
        method = "GET" if request.method == "HEAD" else request.method
        handler = handlers.get((method, action))
        if handler is None:
            allowed = sorted({m for m, a in handlers if a == action})
            if not allowed:
                return PlainTextResponse("not found", status_code=404, headers=_HEADERS)
            headers = {**_HEADERS, "allow": ", ".join(allowed)}
            return PlainTextResponse("method not allowed", status_code=405, headers=headers)
        request.scope["path_params"] = {"rid": rid}
        return await handler(request)

    return endpoint


def _address(request: HttpRequest) -> str:
    """The client's address, as the server saw it: the peer, or the address a trusted proxy
    forwarded (`toolnexus.serve.server.start` trusts only the ``trusted_proxies`` it is
    given, none by default; a host running the app in its own server configures that)."""
    return request.client.host if request.client is not None else ""


def _unreadable(rid: str, exc: CheckpointError) -> str:
    """What the pages say of an unreadable checkpoint; the log keeps the store's own words
    (which name the database)."""
    log.warning("inbox: %s", exc)
    return unreadable_message(rid, exc)


def _unreadable_json(
    rid: str, exc: CheckpointError, headers: Mapping[str, str] | None = None
) -> Response:
    from starlette.responses import JSONResponse

    body = {"error": _unreadable(rid, exc), "id": rid, "unreadable": True}
    return JSONResponse(body, status_code=500, headers=headers)


def _bearer(request: HttpRequest) -> str | None:
    """The token of an ``Authorization: Bearer`` header; ``None`` without one (no header, or
    another scheme)."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def _too_many(seconds: int) -> Response:
    from starlette.responses import JSONResponse

    return JSONResponse(
        {"error": f"too many wrong tokens from this address; retry after {seconds} s"},
        status_code=429,
        headers={"retry-after": str(seconds)},
    )


def _base(request: HttpRequest) -> str:
    return str(request.scope.get("root_path") or "").rstrip("/")


def _wants_json(request: HttpRequest) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept or "text/event-stream" in accept


def _see_other(request: HttpRequest, rid: str) -> Response:
    from starlette.responses import RedirectResponse

    return RedirectResponse(href(_base(request), f"requests/{quote_id(rid)}"), status_code=303)


async def _form(request: HttpRequest) -> dict[str, list[str]]:
    from .forms import parse_form

    cached = request.scope.get("toolnexus.inbox.form")
    if cached is None:
        cached = parse_form(await request.body())
        request.scope["toolnexus.inbox.form"] = cached
    return cast(dict[str, list[str]], cached)


async def _json_body(request: HttpRequest) -> dict[str, Any] | None:
    import json

    try:
        value = json.loads(await request.body())
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def inbox_app(
    store: RunStore | str,
    *,
    users: object,
    on_request: OnRequest | None = None,
    webhook: str | None = None,
    poll_interval: float = 1.0,
    max_body: int = DEFAULT_MAX_BODY,
    per_page: int = 50,
    title: str = "Approvals inbox",
    secret: bytes | str | None = None,
    public_url: str | None = None,
    allowed_hosts: Iterable[str] | str | None = None,
    allowed_origins: Iterable[str] | str | None = None,
    secure_cookies: bool | None = None,
    max_failed_sign_ins: int = 10,
) -> InboxApp:
    """The approvals inbox over ``store`` (a run store, or a store URL it opens and closes).

    Args:
        store: where the halted runs are (`toolnexus.stores.memory_runs.InMemoryStore`,
            `SqliteStore`, `PostgresStore`, or their URL).
        users: a users file path, ``{name: token}``, or a list of `InboxUser` / user dicts.
        on_request: called (awaited when async) once per new pending request.
        webhook: a URL that receives a JSON document once per new pending request.
        poll_interval: how often (seconds) the store is looked at for live events and
            notifications.
        max_body: the request body cap in bytes.
        per_page: rows per page of the list and the history.
        title: the list page's title.
        secret: no longer used (sessions are kept in the store, and every process on the
            store shares them); accepted so that existing hosts keep working.
        public_url: the inbox's address, for the link in a webhook's document; its host is
            one the inbox answers to, and its origin the one its forms post from.
        allowed_hosts: the ``Host`` names the inbox answers to besides loopback's and
            ``public_url``'s (421 otherwise): behind a proxy, the name users type.
        allowed_origins: browser origins whose pages may call it besides its own (403
            otherwise).
        secure_cookies: mark the cookies ``Secure`` (``None``: when the request came over
            https; say ``True`` behind a proxy that terminates TLS).
        max_failed_sign_ins: wrong tokens (sign-in form or bearer) one client address may
            send per minute before it is refused with 429 until the oldest is a minute old
            (0: no limit).

    Example:
        >>> app = inbox_app("sqlite:///s.db", users={"ana": "long-random-secret"})  # doctest: +SKIP
    """
    if isinstance(poll_interval, bool) or not poll_interval > 0:
        raise UsageError(
            f"poll_interval must be a positive number of seconds, got {poll_interval!r}"
        )
    if isinstance(per_page, bool) or not isinstance(per_page, int) or not 1 <= per_page <= 500:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UsageError(f"per_page must be an int from 1 to 500, got {per_page!r}")
    known = load_users(users)
    owns = isinstance(store, str)
    if isinstance(store, str):
        from ..stores.url import resolve_store

        store = cast(RunStore, resolve_store(store))
    return InboxApp(
        store,
        known,
        on_request=on_request,
        webhook=webhook,
        poll_interval=float(poll_interval),
        max_body=max_body,
        per_page=per_page,
        title=title,
        public_url=public_url,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        owns_store=owns,
        secure_cookies=secure_cookies,
        sign_ins=SignInLimit(max_failed_sign_ins),
    )
