"""``toolnexus.http``: HTTP endpoints as tools, under the existing package's path.

A thin re-export: every name is the same object as ``toolnexus.<name>``. ``DEFAULT_TIMEOUT``
is in **seconds** (``30.0``), the unit of ``http_tool(timeout=)``.
"""

from .tools.http import DEFAULT_TIMEOUT, http_tool

__all__ = ["DEFAULT_TIMEOUT", "http_tool"]
