"""Choosing a dialect by style, the API key a style falls back to, and when none is needed."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from ..errors import UsageError
from .base import Dialect
from .openai import OpenAIDialect
from .parts_wire import PartPolicy

__all__ = ["api_key_from_env", "dialect_for", "env_key_names", "is_loopback_url"]


def dialect_for(style: str, parts: PartPolicy | None = None) -> Dialect:
    """The dialect of ``style`` (``"openai"`` or ``"anthropic"``), sending content parts under
    ``parts`` (a fresh `PartPolicy` when ``None``)."""
    if style == "openai":
        return OpenAIDialect(parts)
    if style == "anthropic":
        from .anthropic import AnthropicDialect  # loaded when a client speaks it

        return AnthropicDialect(parts)
    raise UsageError(f'style must be "openai" or "anthropic", got {style!r}')


def env_key_names(style: str) -> tuple[str, str, str]:
    """Where a key is looked up, in order: ``OPENROUTER_API_KEY``, the style's own, the other."""
    if style == "anthropic":
        return ("OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY")
    return ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def api_key_from_env(style: str) -> str | None:
    """The first key set in the environment for ``style``, or ``None``."""
    for name in env_key_names(style):
        value = os.environ.get(name)
        if value:
            return value
    return None


def is_loopback_url(url: object) -> bool:
    """True for an ``http(s)`` URL whose host is this machine: ``localhost`` (or a name under
    it), ``127.0.0.0/8`` or ``::1``.

    >>> is_loopback_url("http://127.0.0.1:8080/v1"), is_loopback_url("https://api.openai.com")
    (True, False)
    """
    if not isinstance(url, str):
        return False
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return False
    host = (parts.hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    import ipaddress  # only when a keyless client or an unconfined toolkit first asks

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
