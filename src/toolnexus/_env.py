"""``${NAME}`` expansion for header values taken from configuration.

Secrets such as API tokens live in the environment, and configuration names them:
``{"Authorization": "Bearer ${API_TOKEN}"}``. Expansion happens at call time so a rotated
variable takes effect without rebuilding anything. The expanded values are secrets: nothing in
this module logs them, and callers must keep them out of logs and error messages too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import overload

__all__ = ["env_references", "expand_env", "expand_env_headers"]

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(value: str, env: Mapping[str, str] | None = None) -> str:
    """Replace every ``${NAME}`` in ``value`` with the variable's value.

    An unset variable expands to the empty string. Text that is not a well-formed reference
    (``$NAME``, ``${}``, ``${1X}``) is left as it is.

    Args:
        value: the text to expand.
        env: where variables are looked up; ``os.environ`` when omitted.

    Example:
        >>> expand_env("Bearer ${TOKEN}", {"TOKEN": "s3cret"})
        'Bearer s3cret'
        >>> expand_env("${MISSING}/x", {})
        '/x'
    """
    if "${" not in value:
        return value
    source: Mapping[str, str] = os.environ if env is None else env
    return _VARIABLE.sub(lambda match: source.get(match.group(1), ""), value)


def env_references(value: str) -> list[str]:
    """The variable names ``value`` references, in order, each once.

    >>> env_references("${USER}:${TOKEN}@${USER}")
    ['USER', 'TOKEN']
    """
    if "${" not in value:
        return []
    return list(dict.fromkeys(_VARIABLE.findall(value)))


@overload
def expand_env_headers(headers: None, env: Mapping[str, str] | None = None) -> None: ...


@overload
def expand_env_headers(
    headers: Mapping[str, str], env: Mapping[str, str] | None = None
) -> dict[str, str]: ...


def expand_env_headers(
    headers: Mapping[str, str] | None, env: Mapping[str, str] | None = None
) -> dict[str, str] | None:
    """A new dict with ``${NAME}`` expanded in every header value (names are kept as is).

    ``None`` gives ``None`` (no headers configured), as in the toolnexus package; ``{}`` gives
    ``{}``.

    Example:
        >>> expand_env_headers({"X-Key": "${KEY}"}, {"KEY": "abc"})
        {'X-Key': 'abc'}
    """
    if headers is None:
        return None
    return {name: expand_env(str(value), env) for name, value in headers.items()}
