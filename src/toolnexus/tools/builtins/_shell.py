"""Which shell ``bash`` runs commands with: the ``shell`` option, or one found on this machine.

``builtins={"shell": ["/bin/zsh", "-c"]}`` is used verbatim; the command is appended as the last
argument. Without it the shell is looked up once, when the tools are built: ``bash -c`` (ours,
and what the tool is named after), then ``/bin/sh -c``, then ``sh -c`` on ``PATH``. If nothing
resolves while ``bash`` is enabled (and has no allowlist, which runs programs without a shell),
building the built-ins fails with the toolnexus package's `RuntimeError` text.
"""

from __future__ import annotations

import os
import shutil

from ...errors import UsageError

__all__ = ["SHELL_CANDIDATES", "NoShellError", "detect_shell", "no_shell_error"]

SHELL_CANDIDATES: tuple[tuple[str, ...], ...] = (("bash", "-c"), ("/bin/sh", "-c"), ("sh", "-c"))
"""Tried in order when no ``shell`` option is given."""


class NoShellError(UsageError, RuntimeError):  # merge: move to _compat (UsageRuntimeError)
    """No shell interpreter could be found for ``bash`` (a `UsageError` and a `RuntimeError`)."""


def detect_shell() -> tuple[str, ...]:
    """The first candidate whose program resolves, as an absolute argv prefix; ``()`` if none."""
    for program, *flags in SHELL_CANDIDATES:
        found = program if os.path.isabs(program) and os.access(program, os.X_OK) else None
        found = found or shutil.which(program)
        if found:
            return (found, *flags)
    return ()


def no_shell_error() -> NoShellError:
    """The error for a machine with none of the candidates (the package's wording)."""
    tried = ", ".join(program for program, *_ in SHELL_CANDIDATES)
    return NoShellError(
        f"no shell interpreter found (tried: {tried}); set builtins['shell'], or disable the "
        "bash builtin with builtins['tools']['bash'] = False"
    )
