"""The site checks' rules as data (`toolnexus.security.SiteGuard`, `is_json_type`): which
``Host`` names an app, which ``Origin`` is its own, which options are refused. The served
routes are tried over real uvicorn in tests/serve/test_site_guard.py and in Chromium in
tests/serve/test_cross_site_browser.py."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus.errors import UsageError
from toolnexus.security import SiteGuard, check_site, is_json_type


async def app(scope: Any, receive: Any, send: Any) -> None:
    return None


GUARD = SiteGuard(
    app,
    hosts=["api.example.com", "pinned.example:8443", "*.corp.example", "::2"],
    origins=["https://ui.example", "http://localhost:*"],
    public_url="https://public.example/agents/refunds",
)


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("localhost", True),
        ("localhost:8000", True),
        ("LOCALHOST.:8000", True),
        ("127.0.0.1:1", True),
        ("[::1]:8000", True),
        ("api.example.com", True),
        ("API.Example.Com:9", True),
        ("pinned.example:8443", True),
        ("pinned.example:8444", False),
        ("pinned.example", False),
        ("a.corp.example", True),
        ("a.b.corp.example:1", True),
        ("corp.example", False),
        ("evilcorp.example", False),
        ("[::2]:80", True),
        ("public.example", True),
        ("evil.example", False),
        ("localhost.evil.example", False),
        ("127.0.0.1.evil.example", False),
        ("", False),
    ],
)
def test_a_host_is_served_when_it_is_loopback_public_or_allowed(host: str, allowed: bool) -> None:
    assert GUARD.host_allowed(host) is allowed


@pytest.mark.parametrize(
    ("origin", "host", "fetch_site", "allowed"),
    [
        ("http://127.0.0.1:8000", "127.0.0.1:8000", None, True),
        ("http://127.0.0.1:8001", "127.0.0.1:8000", None, False),
        ("http://localhost:8000", "127.0.0.1:8000", None, True),  # allowed: localhost:*
        ("https://app.example", "app.example", None, True),
        ("http://app.example", "app.example", None, True),
        ("https://app.example", "app.example:443", None, True),
        ("https://app.example:8443", "app.example", None, False),
        ("https://evil.example", "app.example", None, False),
        ("https://public.example", "127.0.0.1:8000", None, True),
        ("https://public.example:444", "127.0.0.1:8000", None, False),
        ("https://ui.example", "127.0.0.1:8000", None, True),
        ("https://ui.example:443", "127.0.0.1:8000", None, True),
        ("http://ui.example", "127.0.0.1:8000", None, False),
        ("null", "127.0.0.1:8000", None, False),
        ("null", "127.0.0.1:8000", "cross-site", False),
        ("null", "127.0.0.1:8000", "same-origin", True),
        ("garbage", "127.0.0.1:8000", None, False),
        ("http://127.0.0.1:8000/path", "127.0.0.1:8000", None, False),
        ("http://127.0.0.1:8000", None, None, False),
    ],
)
def test_an_origin_passes_when_it_is_the_apps_own_public_or_allowed(
    origin: str, host: str | None, fetch_site: str | None, allowed: bool
) -> None:
    assert GUARD.origin_allowed(origin, host, fetch_site) is allowed


def test_star_allows_every_host_and_every_origin() -> None:
    guard = SiteGuard(app, hosts="*", origins=["*"])
    assert guard.host_allowed("anything.example")
    assert guard.origin_allowed("https://anything.example", "x")
    assert guard.origin_allowed("null", "x")


def test_null_is_an_origin_a_host_may_allow() -> None:
    assert SiteGuard(app, origins=["null"]).origin_allowed("null", "127.0.0.1")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"hosts": ["a b"]}, "allowed_hosts takes names without whitespace"),
        ({"hosts": [""]}, "allowed_hosts takes names without whitespace"),
        ({"origins": ["ui.example"]}, 'allowed_origins takes "scheme://host[:port]"'),
        ({"origins": ["https://ui.example/app"]}, 'allowed_origins takes "scheme://host[:port]"'),
        ({"public_url": "public.example"}, "the public URL must be an http(s) URL"),
        ({"public_url": "ftp://public.example"}, "the public URL must be an http(s) URL"),
    ],
)
def test_bad_site_options_are_usage_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError) as refused:
        check_site(**options)
    assert message in str(refused.value)


@pytest.mark.parametrize(
    ("content_type", "json"),
    [
        ("application/json", True),
        ("application/json; charset=utf-8", True),
        ("Application/JSON", True),
        ("application/a2a+json", True),
        ("text/plain", False),
        ("text/plain; application/json", False),
        ("application/x-www-form-urlencoded", False),
        ("multipart/form-data; boundary=x", False),
        ("application/jsonp", False),
        ("", False),
        (None, False),
    ],
)
def test_only_a_json_media_type_declares_json(content_type: str | None, json: bool) -> None:
    assert is_json_type(content_type) is json
