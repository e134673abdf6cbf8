"""``toolnexus.builtin``: the built-in tools, under the existing package's path.

A thin re-export: every name is the same object as ``toolnexus.<name>``.
"""

from .tools.builtins import (
    BuiltinsConfig,
    builtins_enabled,
    create_builtin_tools,
    select_builtins,
)

__all__ = ["BuiltinsConfig", "builtins_enabled", "create_builtin_tools", "select_builtins"]
