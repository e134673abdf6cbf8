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
from typing import TYPE_CHECKING, cast
from urllib.parse import parse_qsl

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
from .api import JsonApi
from .auth import SESSION_COOKIE, Session, Users, load_users
from .bulk import answer_many, bulk_section, parse_ids
from .html import Markup, esc, href, page, quote_id
from .live import OnRequest, Watcher, log
from .pages import unreadable_body
from .paths import Action, request_target
from .sessions import Sessions, check_csrf, csrf_token
from .signin import SignIn
from .views import QuickAction, Views
from .web import (
    HEADERS,
    address,
    base,
    bearer,
    form,
    see_other,
    too_many,
    unreadable,
    unreadable_json,
    wants_json,
)

if TYPE_CHECKING:
    from starlette.requests import Request as HttpRequest
    from starlette.responses import Response

__all__ = ["InboxApp", "inbox_app"]

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
        self.watcher = Watcher(
            store,
            poll_interval=poll_interval,
            on_request=on_request,
            webhook=webhook,
            link=self._link,
        )
        self.views = Views(store, store, per_page=per_page)
        self.title = title
        limit = sign_ins if sign_ins is not None else SignInLimit()
        self.signin = SignIn(users, self.sessions, limit, secure_cookies)
        api = JsonApi(self.views, self.watcher)
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
        by_id: _Targets = {
            ("GET", None): self._guard(api.detail, api=True),
            ("POST", "answer"): self._guard(api.answer, api=True),
            ("POST", "cancel"): self._guard(api.cancel, api=True),
        }
        either = ["GET", "POST"]
        routes = [
            Route("/", self._guard(self._list)),
            # The id is read from the raw path (`toolnexus.inbox.paths`): any id is routable.
            Route("/requests/{rest:path}", _by_target(pages), methods=either),
            Route("/api/requests/{rest:path}", _by_target(by_id), methods=either),
            Route("/bulk", self._guard(self._bulk), methods=["POST"]),
            Route("/bulk", self._to_list, methods=["GET"]),
            Route("/counts", self._guard(self._counts)),
            Route("/history", self._guard(self._history)),
            Route("/history.jsonl", self._guard(self._export_jsonl)),
            Route("/history.csv", self._guard(self._export_csv)),
            Route("/events", self._guard(self._events)),
            Route("/login", self._login_page, methods=["GET"]),
            Route("/login", self.signin.login, methods=["POST"]),
            Route("/logout", self._guard(self.signin.logout), methods=["POST"]),
            Route("/static/{name}", self._static),
            Route("/api/pending", self._guard(api.pending, api=True)),
            Route("/api/bulk", self._guard(api.bulk, api=True), methods=["POST"]),
        ]
        self._app = SiteGuard(
            JsonOnly(BodyLimit(Starlette(routes=routes), max_body), prefix="/api/"),
            hosts=allowed_hosts,
            origins=allowed_origins,
            public_url=public_url,
        )

    @property
    def sign_ins(self) -> SignInLimit:
        """Wrong tokens per client address (the form and bearer tokens alike)."""
        return self.signin.limit

    @sign_ins.setter
    def sign_ins(self, limit: SignInLimit) -> None:
        self.signin.limit = limit

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
        token = bearer(request)
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

            client = address(request)
            if bearer(request) is not None:
                wait = self.sign_ins.retry_after(client)
                if wait is not None:  # refused before the token is even looked at
                    return too_many(wait)
            session = await self._session(request)
            if session is False:
                self.sign_ins.failed(client)
            elif isinstance(session, Session) and session.bearer:
                self.sign_ins.succeeded(client)
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
            if api or session is False or request.method != "GET" or wants_json(request):
                return JSONResponse(
                    {"error": "a valid user token is required"},
                    status_code=401,
                    headers={"www-authenticate": 'Bearer realm="toolnexus-inbox"'},
                )
            return RedirectResponse(href(base(request), "login"), status_code=303)

        return endpoint

    async def _csrf_ok(self, request: HttpRequest, session: Session) -> bool:
        if session.bearer:
            return True
        posted = await form(request)
        given = (posted.get("csrf") or [""])[0]
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
            base=base(request),
            user=session.user.name if session is not None else None,
            csrf=csrf,
            refresh=refresh,
        )
        return HTMLResponse(text, status_code=status, headers=HEADERS)

    # -- pages -----------------------------------------------------------------------------

    async def _list(self, request: HttpRequest, session: Session) -> Response:
        return await self._list_page(request, session)

    async def _list_page(
        self,
        request: HttpRequest,
        session: Session,
        params: Mapping[str, str] | None = None,
        notice: Markup | None = None,
        status: int = 200,
    ) -> Response:
        try:
            body = await self.views.list_page(
                request,
                base(request),
                params=params,
                user=session.user,
                csrf=csrf_token(session),
                notice=notice,
            )
        except UsageError as exc:
            return self._page(
                request, session, "Pending", f'<p class="error" id="error">{esc(exc)}</p>', 400
            )
        return self._page(request, session, self.title, body, status)

    async def _bulk(self, request: HttpRequest, session: Session) -> Response:
        """``POST /bulk``: approve or decline the selected requests (or one row's), each
        through the intake and recorded once; the list again, what happened at its top."""
        posted = await form(request)
        action = (posted.get("action") or [""])[0]
        back = dict(parse_qsl((posted.get("back") or [""])[0]))
        ids = parse_ids(posted.get("id") or [])
        if action not in ("approve", "decline") or isinstance(ids, str):
            why = ids if isinstance(ids, str) else "choose Approve or Decline"
            notice = Markup(f'<p class="error" id="error" role="alert">{esc(why)}.</p>')
            return await self._list_page(request, session, back, notice, 400)
        chosen: QuickAction = "approve" if action == "approve" else "decline"
        reason = (posted.get("reason") or [""])[0].strip() or None
        items = await answer_many(self.views, ids, chosen, reason, session.user)
        if any(i.result == "recorded" for i in items):
            self.watcher.poke()
        notice = bulk_section(items, chosen, base=base(request))
        return await self._list_page(request, session, back, notice)

    async def _to_list(self, request: HttpRequest) -> Response:
        from starlette.responses import RedirectResponse

        return RedirectResponse(href(base(request)), status_code=303)

    async def _counts(self, request: HttpRequest, session: Session) -> Response:
        """``GET /counts``: the list's counts for its filters, as JSON (the live script)."""
        from starlette.responses import JSONResponse

        try:
            found = await self.views.counts(request)
        except UsageError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400, headers=HEADERS)
        return JSONResponse(found, headers=HEADERS)

    async def _to_detail(self, request: HttpRequest) -> Response:
        return see_other(request, request.path_params["rid"])

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
                message or unreadable(rid, exc),
                base=base(request),
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
            base=base(request),
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
        posted = await form(request)
        outcome = await self.views.answer(rid, posted, session.user)
        if outcome.status == 303:
            self.watcher.poke()
            return see_other(request, rid)
        return await self._show(
            request,
            session,
            rid,
            status=outcome.status,
            values=posted if outcome.status == 400 else None,
            errors=outcome.errors,
            message=outcome.message,
        )

    async def _cancel(self, request: HttpRequest, session: Session) -> Response:
        rid = request.path_params["rid"]
        posted = await form(request)
        reason = (posted.get("reason") or [""])[0].strip() or None
        outcome = await self.views.cancel(rid, reason, session.user)
        if outcome.status == 303:
            self.watcher.poke()
            return see_other(request, rid)
        return await self._show(
            request, session, rid, status=outcome.status, message=outcome.message
        )

    async def _status(self, request: HttpRequest, session: Session) -> Response:
        from starlette.responses import JSONResponse

        rid = request.path_params["rid"]
        try:
            found = await self.views.status(rid)
        except CheckpointError as exc:
            return unreadable_json(rid, exc, HEADERS)
        if found is None:
            return JSONResponse({"error": "no such request"}, status_code=404, headers=HEADERS)
        return JSONResponse(found, headers=HEADERS)

    async def _history(self, request: HttpRequest, session: Session) -> Response:
        try:
            body = await self.views.history_page(request, base(request))
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
            **HEADERS,
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

    async def _login_page(self, request: HttpRequest) -> Response:
        return await self.signin.page(request)

    async def _static(self, request: HttpRequest) -> Response:
        from starlette.responses import PlainTextResponse, Response

        name = request.path_params["name"]
        media = _STATIC.get(name)
        if media is None:
            return PlainTextResponse("not found", status_code=404)
        data = importlib.resources.files("toolnexus.inbox").joinpath("static", name).read_bytes()
        headers = {"cache-control": "public, max-age=3600", "x-content-type-options": "nosniff"}
        return Response(data, media_type=media, headers=headers)


Endpoint = Callable[["HttpRequest"], Awaitable["Response"]]
_Targets = dict[tuple[str, Action | None], Endpoint]


def _by_target(handlers: _Targets) -> Endpoint:
    """One endpoint for the paths that name a request: the handler of the method and the
    action the raw path names, with the id as the ``rid`` path parameter."""

    async def endpoint(request: HttpRequest) -> Response:
        from starlette.responses import PlainTextResponse

        target = request_target(request.scope)
        if target is None:
            return PlainTextResponse("not found", status_code=404, headers=HEADERS)
        rid, action = target
        method = "GET" if request.method == "HEAD" else request.method
        handler = handlers.get((method, action))
        if handler is None:
            allowed = sorted({m for m, a in handlers if a == action})
            if not allowed:
                return PlainTextResponse("not found", status_code=404, headers=HEADERS)
            headers = {**HEADERS, "allow": ", ".join(allowed)}
            return PlainTextResponse("method not allowed", status_code=405, headers=headers)
        request.scope["path_params"] = {"rid": rid}
        return await handler(request)

    return endpoint


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
