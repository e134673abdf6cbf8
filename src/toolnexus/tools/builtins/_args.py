"""Reading a built-in's arguments defensively.

The toolkit validates arguments against the schema before a call, but ``Tool.execute`` can be
called directly, so each reader checks the type again and raises `BuiltinError` with a message
the model can act on.
"""

from __future__ import annotations

import math
from typing import Any

from ._output import BuiltinError

__all__ = ["bool_arg", "int_arg", "number_arg", "optional_text_arg", "text_arg"]


def text_arg(args: dict[str, Any], key: str, *, allow_empty: bool = False) -> str:
    """A required string argument."""
    value = args.get(key)
    if not isinstance(value, str):
        raise BuiltinError(f"{key} is required and must be a string")
    if not value and not allow_empty:
        raise BuiltinError(f"{key} must not be empty")
    return value


def optional_text_arg(args: dict[str, Any], key: str) -> str | None:
    """An optional string argument; ``None`` and ``""`` both mean absent."""
    value = args.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise BuiltinError(f"{key} must be a string")
    return value


def number_arg(args: dict[str, Any], key: str, default: float) -> float:
    """An optional positive finite number."""
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BuiltinError(f"{key} must be a number")
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise BuiltinError(f"{key} must be a positive number")
    return number


def int_arg(args: dict[str, Any], key: str, default: int | None, *, minimum: int) -> int | None:
    """An optional whole number ``>= minimum`` (a float is truncated toward zero)."""
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BuiltinError(f"{key} must be a number")
    if not math.isfinite(value):
        raise BuiltinError(f"{key} must be a finite number")
    number = int(value)
    if number < minimum:
        raise BuiltinError(f"{key} must be at least {minimum}")
    return number


def bool_arg(args: dict[str, Any], key: str) -> bool:
    """An optional boolean, ``False`` when absent."""
    value = args.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise BuiltinError(f"{key} must be a boolean")
    return value
