"""Choosing a dialect by style, and the API key a style falls back to."""

from __future__ import annotations

import os

from ..errors import UsageError
from .base import Dialect
from .openai import OpenAIDialect
from .parts_wire import PartPolicy

__all__ = ["api_key_from_env", "dialect_for", "env_key_names"]


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
