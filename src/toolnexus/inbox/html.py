"""The inbox's HTML building blocks: strict escaping, the page layout, times and truncation.

Every piece of outside text (prompts, arguments, names, ids) goes through `esc` exactly once,
at the point where it is put into markup; nothing else builds markup from data. The pages
carry a Content-Security-Policy that allows only the inbox's own script and style, so even a
mistake could not run an injected script.
"""

from __future__ import annotations

import functools
import html
import json
import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

from .paths import quote_id as quote_id  # (the pages build their links with it)

__all__ = [
    "CSP",
    "Markup",
    "age_text",
    "attrs",
    "el",
    "esc",
    "href",
    "iso",
    "join",
    "page",
    "pretty_json",
    "truncate",
    "void",
]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
"""The Content-Security-Policy every page is served with."""


class Markup(str):
    """Text that is already markup (built by these helpers): never escaped again."""

    __slots__ = ()


_escape = html.escape


def esc(value: object) -> Markup:
    """``value`` as text safe inside markup and inside quoted attributes."""
    if isinstance(value, Markup):
        return value
    return Markup(_escape("" if value is None else str(value), quote=True))


def _text(value: object) -> str:
    """`esc` without the `Markup` wrapper, for the builders below."""
    if isinstance(value, Markup):
        return value
    return _escape("" if value is None else str(value), quote=True)


def join(parts: Iterable[object]) -> Markup:
    """Markup pieces (and escaped text) concatenated."""
    return Markup("".join([_text(p) for p in parts]))


@functools.cache
def _attr_name(key: str) -> str:
    return key.rstrip("_").replace("_", "-")


def attrs(**values: object) -> Markup:
    """`` name="value"`` pairs (``data_x`` becomes ``data-x``; ``None``/``False`` omitted,
    ``True`` a bare attribute; ``class_`` for ``class``)."""
    out: list[str] = []
    for key, value in values.items():
        if value is None or value is False:
            continue
        if value is True:
            out.append(" " + _attr_name(key))
        else:
            out.append(f' {_attr_name(key)}="{_text(value)}"')
    return Markup("".join(out))


def el(tag: str, *children: object, **attributes: object) -> Markup:
    """``<tag attrs>children</tag>``, the children escaped unless they are `Markup`."""
    inner = "".join([_text(c) for c in children])
    return Markup(f"<{tag}{attrs(**attributes)}>{inner}</{tag}>")


def void(tag: str, **attributes: object) -> Markup:
    """``<tag attrs>``: an element without content (``input``, ``link``)."""
    return Markup(f"<{tag}{attrs(**attributes)}>")


def href(base: str, path: str = "", **query: object) -> str:
    """A link below the mount point ``base`` with the non-empty query parameters."""
    url = base.rstrip("/") + "/" + path.lstrip("/")
    params = {k: str(v) for k, v in query.items() if v not in (None, "")}
    return url + ("?" + urlencode(params) if params else "")


def truncate(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to ``limit`` characters (with an ellipsis), and whether it was cut."""
    if len(text) <= limit:
        return text, False
    return text[: max(0, limit - 1)] + "…", True


def pretty_json(raw: str) -> str:
    """JSON text indented for reading (as it is, when it is not JSON)."""
    try:
        value: Any = json.loads(raw)
    except ValueError:
        return raw
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def iso(seconds: float | None) -> str:
    """Seconds since the epoch as an RFC 3339 UTC timestamp (``""`` for ``None``)."""
    if seconds is None:
        return ""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


@functools.lru_cache(maxsize=4096)
def _deadline(expires_at: str) -> float | None:
    """An ``expiresAt`` as epoch seconds (``None`` when unreadable: counts as past)."""
    from ..suspension import parse_timestamp

    try:
        return parse_timestamp(expires_at).timestamp()
    except ValueError:
        return None


def age_text(seconds: float) -> str:
    """A duration as ``45s``, ``12m``, ``3h`` or ``2d``."""
    s = max(0.0, seconds)
    if s < 60:
        return f"{int(s)}s"
    if s < 3600:
        return f"{int(s // 60)}m"
    if s < 86400:
        return f"{int(s // 3600)}h"
    return f"{int(s // 86400)}d"


def expiry_markup(expires_at: str | None, now: float | None = None) -> Markup:
    """A ``<time class="expires">`` for an ``expiresAt`` (``expired`` class once past: the
    rule of `toolnexus.stores.checks.is_past`)."""
    if not expires_at:
        return Markup('<span class="no-expiry">–</span>')
    current = time.time() if now is None else now
    deadline = _deadline(expires_at)
    if deadline is None or deadline <= current:
        return Markup(f'<time class="expires expired"{attrs(datetime=expires_at)}>expired</time>')
    left = age_text(deadline - current)
    return Markup(f'<time class="expires"{attrs(datetime=expires_at)}>in {left}</time>')


def _refresh(seconds: int | None) -> str:
    """A page that reloads itself (how a page follows a run without JavaScript)."""
    return "" if seconds is None else f'<meta http-equiv="refresh" content="{int(seconds)}">'


def page(
    title: str,
    body: Markup,
    *,
    base: str,
    user: str | None = None,
    csrf: str = "",
    status: str = "",
    refresh: int | None = None,
) -> str:
    """A whole page: the layout around ``body``, with the navigation for a signed-in user."""
    nav = Markup("")
    if user is not None:
        logout = Markup(
            f'<form method="post" class="logout"{attrs(action=href(base, "logout"))}>'
            f'<input type="hidden" name="csrf"{attrs(value=csrf)}>'
            f'<button type="submit">Sign out</button></form>'
        )
        nav = Markup(
            f'<nav id="top"><a{attrs(href=href(base))}>Pending</a> '
            f"<a{attrs(href=href(base, 'history'))}>History</a> "
            f'<span id="user">{esc(user)}</span>{logout}</nav>'
        )
    return (
        "<!doctype html>\n"
        f'<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · toolnexus inbox</title>"
        f"{_refresh(refresh)}"
        f'<link rel="stylesheet"{attrs(href=href(base, "static/inbox.css"))}>'
        f"<script defer{attrs(src=href(base, 'static/inbox.js'))}></script>"
        f"</head><body{attrs(data_base=base.rstrip('/') + '/', data_status=status or None)}>"
        f"{nav}<h1>{esc(title)}</h1>{body}</body></html>\n"
    )
