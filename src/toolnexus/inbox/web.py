"""The inbox's HTTP plumbing: the headers every page carries, where the app is mounted, the
posted form or JSON body, the caller's token and address, and the redirects.

Shared by the routes of `toolnexus.inbox.app`, the sign-in (`toolnexus.inbox.signin`) and the
JSON API (`toolnexus.inbox.api`); starlette is imported where a response is built, so the
module imports without the ``inbox`` extra.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from ..errors import CheckpointError
from .html import CSP, href, quote_id
from .live import log
from .views import unreadable_message

if TYPE_CHECKING:
    from starlette.requests import Request as HttpRequest
    from starlette.responses import Response

__all__ = [
    "HEADERS",
    "address",
    "base",
    "bearer",
    "form",
    "json_body",
    "see_other",
    "too_many",
    "unreadable",
    "unreadable_json",
    "wants_json",
]

HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    # Not "no-referrer": under it a browser sends "Origin: null" with the page's own form
    # posts, and the site check could not tell them from a sandboxed page's.
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
"""What every page (and the JSON the pages read) is served with."""


def base(request: HttpRequest) -> str:
    """Where the app is mounted (``""`` at the root)."""
    return str(request.scope.get("root_path") or "").rstrip("/")


def address(request: HttpRequest) -> str:
    """The client's address, as the server saw it: the peer, or the address a trusted proxy
    forwarded (`toolnexus.serve.server.start` trusts only the ``trusted_proxies`` it is
    given, none by default; a host running the app in its own server configures that)."""
    return request.client.host if request.client is not None else ""


def bearer(request: HttpRequest) -> str | None:
    """The token of an ``Authorization: Bearer`` header; ``None`` without one (no header, or
    another scheme)."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def wants_json(request: HttpRequest) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept or "text/event-stream" in accept


def too_many(seconds: int) -> Response:
    from starlette.responses import JSONResponse

    return JSONResponse(
        {"error": f"too many wrong tokens from this address; retry after {seconds} s"},
        status_code=429,
        headers={"retry-after": str(seconds)},
    )


def see_other(request: HttpRequest, rid: str) -> Response:
    """303 to the request's page."""
    from starlette.responses import RedirectResponse

    return RedirectResponse(href(base(request), f"requests/{quote_id(rid)}"), status_code=303)


async def form(request: HttpRequest) -> dict[str, list[str]]:
    """The posted form (read once per request: the CSRF check and the handler share it)."""
    from .forms import parse_form

    cached = request.scope.get("toolnexus.inbox.form")
    if cached is None:
        cached = parse_form(await request.body())
        request.scope["toolnexus.inbox.form"] = cached
    return cast(dict[str, list[str]], cached)


async def json_body(request: HttpRequest) -> dict[str, Any] | None:
    """The JSON object posted; ``None`` when the body is not one."""
    import json

    try:
        value = json.loads(await request.body())
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def unreadable(rid: str, exc: CheckpointError) -> str:
    """What the pages say of an unreadable checkpoint; the log keeps the store's own words
    (which name the database)."""
    log.warning("inbox: %s", exc)
    return unreadable_message(rid, exc)


def unreadable_json(
    rid: str, exc: CheckpointError, headers: Mapping[str, str] | None = None
) -> Response:
    from starlette.responses import JSONResponse

    body = {"error": unreadable(rid, exc), "id": rid, "unreadable": True}
    return JSONResponse(body, status_code=500, headers=headers)
