"""``toolnexus.builtin``: the built-in tools, under the existing package's path.

A thin re-export: every name is the same object as in `toolnexus.tools.builtins` (and as
``toolnexus.<name>`` where the top level has it).
"""

from .parts import MEDIA_TYPES
from .tools.builtins import (
    IGNORE_DIRS,
    KILL_GRACE_MS,
    BuiltinsConfig,
    builtin_shell,
    builtins_enabled,
    create_builtin_tools,
    select_builtins,
)

__all__ = [
    "IGNORE_DIRS",
    "KILL_GRACE_MS",
    "MEDIA_TYPES",
    "BuiltinsConfig",
    "builtin_shell",
    "builtins_enabled",
    "create_builtin_tools",
    "select_builtins",
]
