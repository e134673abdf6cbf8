"""``toolnexus.native``: Python functions as tools, under the existing package's path.

A thin re-export: every name is the same object as ``toolnexus.<name>``.
"""

from .tools.native import define_tool, tool

__all__ = ["define_tool", "tool"]
