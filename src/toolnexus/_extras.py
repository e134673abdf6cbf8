"""The distribution's name and the one wording of "this needs an extra".

The import name is ``toolnexus``; the distribution is published as ``toolnexus-sdk`` because
``toolnexus`` on the registry is the 0.21 package this project is a drop-in for (``pip install
toolnexus`` installs that one, not this). Every message about a missing optional dependency names
the extra and both ways to get it, so the fix is one copy-paste away.
"""

from __future__ import annotations

__all__ = ["DISTRIBUTION", "extra_hint", "missing_extra"]

DISTRIBUTION = "toolnexus-sdk"
"""The name to ``pip install`` (the import name stays ``toolnexus``)."""


def extra_hint(extra: str) -> str:
    """``pip install 'toolnexus-sdk[<extra>]'`` and the checkout's form of it."""
    return f"pip install '{DISTRIBUTION}[{extra}]' (from a checkout: pip install -e '.[{extra}]')"


def missing_extra(what: str, extra: str) -> ImportError:
    """The error for ``what`` (e.g. "serving over MCP needs the mcp SDK") without ``extra``."""
    return ImportError(f"{what}: {extra_hint(extra)}")
