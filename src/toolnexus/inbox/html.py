"""The inbox's HTML building blocks: strict escaping, the page layout, times and truncation.

Every piece of outside text (prompts, arguments, names, ids) goes through `esc` exactly once,
at the point where it is put into markup; nothing else builds markup from data. The pages
carry a Content-Security-Policy that allows only the inbox's own script and style, so even a
mistake could not run an injected script.

Text shown as text is also marked (`toolnexus._visible`): each control character, bidi
control and invisible character becomes ``<span class="invisible" title="U+202E
RIGHT-TO-LEFT OVERRIDE">⟨U+202E⟩</span>``, so ``refund 5000`` cannot read as ``refund 0005``
and nothing hides in a prompt or an argument. Tab, newline and carriage return are white space
to a browser and stay. What is not shown as text stays exact: attribute values (a form's
values are posted back as they are), and the JSON a ``<textarea>`` is filled with carries
those characters as ``\\u`` escapes instead (`json_text`: the same data when posted).
"""

from __future__ import annotations

import functools
import html
import json
import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

from .._visible import describe, escape_json, shown, split_marked, visible
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
    "json_text",
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
_LAYOUT = "\t\n\r"
"""White space to a browser: never marked."""


def _mark(char: str) -> str:
    return f'<span class="invisible" title="{describe(char)}">{_escape(shown(char))}</span>'


def _marked(text: str) -> str:
    """``text`` escaped, each control or invisible character in it a visible mark."""
    if text.isascii() and text.isprintable():  # most of a page: one C pass, no call
        return _escape(text, quote=True)
    parts = split_marked(text, keep=_LAYOUT)
    if len(parts) == 1:
        return _escape(text, quote=True)
    out: list[str] = []
    for i, part in enumerate(parts):  # the odd parts are the marked characters
        if i % 2:
            out.append(_mark(part))
        elif part:
            out.append(_escape(part, quote=True))
    return "".join(out)


def esc(value: object) -> Markup:
    """``value`` as text safe inside markup, its invisible characters marked visibly."""
    if isinstance(value, Markup):
        return value
    return Markup(_marked("" if value is None else str(value)))


def _text(value: object) -> str:
    """`esc` without the `Markup` wrapper, for the builders below."""
    if isinstance(value, Markup):
        return value
    return _marked("" if value is None else str(value))


def _exact(value: object) -> str:
    """``value`` escaped for a quoted attribute or a ``<textarea>``, character for character:
    what the browser posts back is what was put there."""
    if isinstance(value, Markup):
        return value
    return _escape("" if value is None else str(value), quote=True)


def _plain(value: object) -> str:
    """``value`` for an element that can hold no markup (``<title>``, ``<option>``): escaped,
    its invisible characters shown as in the terminal (``⟨U+202E⟩``, without the span)."""
    if isinstance(value, Markup):
        return value
    return _escape(visible("" if value is None else str(value), keep=_LAYOUT), quote=True)


def json_text(raw: str) -> Markup:
    """JSON text for a ``<textarea>``: escaped, and its control and invisible characters
    written as JSON escapes (``\\u202e``), so what is shown is visible and, posted back
    unchanged, parses to exactly the same value."""
    return Markup(_exact(escape_json(raw)))


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
            out.append(f' {_attr_name(key)}="{_exact(value)}"')
    return Markup("".join(out))


_NO_MARKUP = {"textarea": _exact, "title": _plain, "option": _plain}
"""How the text of an element that can hold no markup is written: a ``<textarea>`` holds what
is posted back (exactly), the others text only (marks without their span)."""


def el(tag: str, *children: object, **attributes: object) -> Markup:
    """``<tag attrs>children</tag>``, the children escaped (and marked, see above) unless
    they are `Markup`."""
    write = _NO_MARKUP.get(tag, _text)
    inner = "".join([write(c) for c in children])
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
    name: str | None = None,
) -> str:
    """A whole page: the product's header (with the navigation for a signed-in user), the
    title, ``body`` (``name``: the page's ``data-page``, for its layout)."""
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
    brand = Markup(
        f'<a class="brand"{attrs(href=href(base))}><span class="mark" aria-hidden="true">tn'
        "</span>toolnexus <b>inbox</b></a>"
    )
    return (
        "<!doctype html>\n"
        f'<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_plain(title)} · toolnexus inbox</title>"
        f"{_refresh(refresh)}"
        f'<link rel="stylesheet"{attrs(href=href(base, "static/inbox.css"))}>'
        f"<script defer{attrs(src=href(base, 'static/inbox.js'))}></script>"
        f"</head><body{attrs(data_base=base.rstrip('/') + '/', data_status=status or None)}"
        f"{attrs(data_page=name)}>"
        f'<header class="bar">{brand}{nav}</header>'
        f"<h1>{esc(title)}</h1>{body}</body></html>\n"
    )
