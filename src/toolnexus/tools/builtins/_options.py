"""The options of the built-in tools, read from the ``builtins`` dict.

::

    await create_toolkit(builtins={
        "workspace": "/srv/job-42",           # confine every path-taking built-in to this root
        "bash": {"allow": ["git", "pytest"]},  # or False (no bash tool) or True (unrestricted)
                                               # "sandbox": True runs it under bubblewrap
        "private_network": False,              # webfetch refuses loopback/private/... addresses
        "max_output_bytes": 20_000,            # cap every built-in's output
    })

Every option is off by default, so the built-ins keep the contract's behaviour: no workspace,
unrestricted ``bash``, loopback and private addresses reachable, and output capped at
`DEFAULT_MAX_OUTPUT_BYTES`. The keys ``enabled``, ``disabled`` and ``tools`` are the toggles
(see `toolnexus.tools.builtins`). Any other key, or an option of the wrong type, is a
`UsageError`: a misspelt security option must not silently leave the built-ins unconfined.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ...errors import UsageError
from ._sandbox import SandboxPolicy, parse_sandbox

__all__ = ["DEFAULT_MAX_OUTPUT_BYTES", "BashPolicy", "BuiltinOptions", "parse_builtin_options"]

DEFAULT_MAX_OUTPUT_BYTES = 51_200
"""What a built-in returns at most (50 KiB of UTF-8) when ``max_output_bytes`` is not set."""

_TOGGLES = frozenset({"enabled", "disabled", "tools"})
_OPTIONS = frozenset({"workspace", "bash", "private_network", "max_output_bytes"})


@dataclass(frozen=True, slots=True, kw_only=True)
class BashPolicy:
    """What the ``bash`` tool may run.

    Attributes:
        enabled: ``False`` removes the tool.
        allow: when set, only commands whose first word is one of these names run, without a
            shell (see `toolnexus.tools.builtins.bash`).
        sandbox: when set, every command runs in a bubblewrap sandbox (see `_sandbox`).
    """

    enabled: bool = True
    allow: tuple[str, ...] | None = None
    sandbox: SandboxPolicy | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BuiltinOptions:
    """The parsed options shared by the built-ins.

    Attributes:
        workspace: the real path of the confining root, or ``None``.
        bash: what ``bash`` may run.
        private_network: ``False`` makes ``webfetch`` refuse non-public addresses.
        max_output_bytes: the cap on each built-in's output, in UTF-8 bytes.
    """

    workspace: Path | None = None
    bash: BashPolicy = field(default_factory=BashPolicy)
    private_network: bool = True
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES


def parse_builtin_options(cfg: Mapping[str, Any] | bool | None) -> BuiltinOptions:
    """Read the options out of a ``builtins`` value; ``True``/``False``/``None`` give defaults.

    Raises:
        UsageError: an unknown key, a workspace that is not an existing directory, a ``bash``
            value that is not a bool or ``{"allow": [names], "sandbox": ...}``, a sandbox that
            cannot run here (see `_sandbox`), or a bad output cap.

    Example:
        >>> parse_builtin_options({"bash": False}).bash.enabled
        False
    """
    if not isinstance(cfg, Mapping):
        return BuiltinOptions()
    unknown = sorted(str(k) for k in cfg if k not in _TOGGLES and k not in _OPTIONS)
    if unknown:
        known = ", ".join(sorted(_TOGGLES | _OPTIONS))
        raise UsageError(f"builtins: unknown option(s) {', '.join(unknown)} (known: {known})")
    workspace = _workspace(cfg.get("workspace"))
    return BuiltinOptions(
        workspace=workspace,
        bash=_bash(cfg.get("bash", True), workspace),
        private_network=_flag("private_network", cfg.get("private_network", True)),
        max_output_bytes=_cap(cfg.get("max_output_bytes", DEFAULT_MAX_OUTPUT_BYTES)),
    )


def _workspace(value: Any) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, str | os.PathLike) or not os.fspath(cast(Any, value)):
        raise UsageError("builtins: workspace must be a directory path")
    real = Path(os.path.realpath(os.fspath(cast(str, value))))
    if not real.is_dir():
        raise UsageError(f"builtins: workspace {os.fspath(cast(str, value))!r} is not a directory")
    return real


def _bash(value: Any, workspace: Path | None) -> BashPolicy:
    if isinstance(value, bool):
        return BashPolicy(enabled=value)
    if not isinstance(value, Mapping):
        raise UsageError(
            'builtins: bash must be true, false or {"allow": [command names], "sandbox": ...}'
        )
    spec = cast(Mapping[str, Any], value)
    extra = sorted(str(k) for k in spec if k not in ("allow", "sandbox"))
    if extra:
        raise UsageError(
            f"builtins: unknown bash option(s) {', '.join(extra)} (known: allow, sandbox)"
        )
    sandbox = parse_sandbox(spec.get("sandbox"), workspace)
    allow = spec.get("allow")
    if allow is None:
        return BashPolicy(sandbox=sandbox)
    if isinstance(allow, str) or not isinstance(allow, list | tuple):
        raise UsageError("builtins: bash.allow must be a list of command names")
    names = tuple(cast(list[Any] | tuple[Any, ...], allow))
    for name in names:
        if not isinstance(name, str) or not name or any(c.isspace() for c in name):
            raise UsageError(f"builtins: bash.allow entry {name!r} is not a command name")
    return BashPolicy(allow=cast(tuple[str, ...], names), sandbox=sandbox)


def _flag(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise UsageError(f"builtins: {key} must be true or false")
    return value


def _cap(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError("builtins: max_output_bytes must be a positive whole number")
    return value
