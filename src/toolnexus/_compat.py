"""Helpers for the existing package's call shapes (COMPAT §0): one place, used everywhere.

The rules, and the helper for each:

* **G1 — sync where the package is sync.** Make the function synchronous and return an object
  that mixes in `SelfAwaitable`: ``x = f()`` works, and so does our older ``x = await f()``
  (``__await__`` completes at once and gives back the object itself)::

      class SkillSource(SelfAwaitable): ...
      src = load_skills("skills")          # the package's form
      src = await load_skills("skills")    # ours, unchanged

* **G2 — dual-typed errors.** Where we raise a typed error and the package a builtin, raise a
  class that is both. Ready-made: `UsageTypeError` (`UsageError` + `TypeError`),
  `UsageNotImplementedError` (+ `NotImplementedError`), `UsageRuntimeError` (+ `RuntimeError`),
  `CallbackTypeError` (`CallbackError` + `TypeError`, for misuse inside a hook that must pass the
  hook wrapper untouched). For another pair, `dual_error(ours, builtin)` makes (and caches) one.
  `UsageError` is already a `ValueError`.

* **G3 — records that also read as mappings.** A dataclass that mixes in `MappingRecord` and
  sets ``_mapping_keys`` reads as a read-only `Mapping` over exactly those keys (``r["k"]``,
  ``get``, ``in``, ``keys``, ``items``, ``len``, iteration, ``dict(r)``) and compares equal to a
  plain dict with the same keys and values. Attributes outside ``_mapping_keys`` stay
  attribute-only. ``r[k]`` for a key outside the mapping raises `KeyError`.

* **G5 — positional field order.** `reorder_positional(ref_order, args, kwargs, where=...)` maps
  a call in the package's positional order onto keyword arguments, for an ``__init__`` that
  must accept both orders; too many positionals, or a field given twice, is a `UsageTypeError`.

* **G4 — stderr lines.** `warn_stderr(text)` writes ``[toolnexus] <text>`` to ``sys.stderr``
  and logs it on the ``toolnexus`` logger; `warn_once(key, text)` does so once per ``key`` per
  process (a host can count the lines).

This module imports nothing heavy: it is safe to import from anywhere in the package.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Generator, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Self, TypeVar, cast

from .errors import CallbackError, ToolnexusError, UsageError

__all__ = [
    "CallbackTypeError",
    "MappingRecord",
    "SelfAwaitable",
    "UsageNotImplementedError",
    "UsageRuntimeError",
    "UsageTypeError",
    "dual_error",
    "no_stream_error",
    "reorder_positional",
    "warn_once",
    "warn_stderr",
]

log = logging.getLogger("toolnexus")

E = TypeVar("E", bound=BaseException)


# -- G1 ------------------------------------------------------------------------------------------


class SelfAwaitable:
    """Mixin: ``await obj`` completes at once with ``obj`` itself (the G1 bridge).

    For results of functions that became synchronous: code that still awaits them keeps
    working, code written against the existing package does not need to.
    """

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, Self]:
        return self
        yield  # pragma: no cover - makes this a generator function


# -- G2 ------------------------------------------------------------------------------------------


class UsageTypeError(UsageError, TypeError):
    """A `UsageError` that is also a `TypeError` (where the existing package raises one)."""


class UsageNotImplementedError(UsageError, NotImplementedError):
    """A `UsageError` that is also a `NotImplementedError`."""


class UsageRuntimeError(UsageError, RuntimeError):
    """A `UsageError` that is also a `RuntimeError`."""


class CallbackTypeError(CallbackError, TypeError):
    """A `CallbackError` that is also a `TypeError`: library misuse detected inside a host
    callback, which passes the callback wrapper untouched."""


_DUALS: dict[tuple[type[BaseException], type[BaseException]], type[BaseException]] = {
    (UsageError, TypeError): UsageTypeError,
    (UsageError, NotImplementedError): UsageNotImplementedError,
    (UsageError, RuntimeError): UsageRuntimeError,
    (CallbackError, TypeError): CallbackTypeError,
}


def dual_error(ours: type[E], builtin: type[BaseException]) -> type[E]:
    """The class that is both ``ours`` (a toolnexus error) and ``builtin``; made once per pair.

    >>> issubclass(dual_error(UsageError, TypeError), TypeError)
    True
    """
    if not issubclass(ours, ToolnexusError):
        raise TypeError(f"dual_error: {ours.__name__} is not a toolnexus error")
    if issubclass(ours, builtin):
        return ours
    key = (ours, builtin)
    cls = _DUALS.get(key)
    if cls is None:
        cls = type(f"{ours.__name__}{builtin.__name__}", (ours, builtin), {"__module__": __name__})
        _DUALS[key] = cls
    return cls  # pyright: ignore[reportReturnType]


def no_stream_error(instead: str) -> UsageNotImplementedError:
    """What streaming from an in-process model raises: the existing package's phrase, typed."""
    return UsageNotImplementedError(
        f"toolnexus: create_in_process_client does not support streaming — use {instead}"
    )


# -- G3 ------------------------------------------------------------------------------------------


class MappingRecord(Mapping[str, Any]):
    """Mixin for a record that also reads as a read-only `Mapping` over ``_mapping_keys``.

    Equality: equal to a plain `dict` (or any non-record `Mapping`) with exactly those keys
    and values; between two records of the same class, the dataclass' own ``__eq__`` (when the
    subclass defines one) decides. Records stay unhashable if they were.
    """

    __slots__ = ()
    _mapping_keys: ClassVar[tuple[str, ...]] = ()

    def __getitem__(self, key: str) -> Any:
        if key in self._mapping_keys:
            return getattr(self, key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping_keys)

    def __len__(self) -> int:
        return len(self._mapping_keys)

    def __contains__(self, key: object) -> bool:
        return key in self._mapping_keys

    def as_mapping(self) -> dict[str, Any]:
        """A plain dict over the mapping keys (what ``dict(record)`` gives)."""
        return {k: getattr(self, k) for k in self._mapping_keys}

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MappingRecord):
            if type(other) is not type(self):
                return NotImplemented
            return all(getattr(self, f) == getattr(other, f) for f in _fields(self))
        if isinstance(other, Mapping):
            return self.as_mapping() == dict(other)  # pyright: ignore[reportUnknownArgumentType]
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # pyright: ignore[reportAssignmentType]


def _fields(record: object) -> tuple[str, ...]:
    names = getattr(type(record), "__dataclass_fields__", None)
    if isinstance(names, dict):
        return tuple(cast("dict[str, Any]", names))
    keys: tuple[str, ...] = getattr(type(record), "_mapping_keys", ())
    return keys


# -- G5 ------------------------------------------------------------------------------------------


def reorder_positional(
    ref_order: Sequence[str], args: Sequence[Any], kwargs: Mapping[str, Any], *, where: str
) -> dict[str, Any]:
    """Keyword arguments for a call made in the existing package's positional order.

    >>> reorder_positional(("a", "b"), (1,), {"b": 2}, where="f")
    {'a': 1, 'b': 2}
    """
    if len(args) > len(ref_order):
        raise UsageTypeError(
            f"{where} takes at most {len(ref_order)} positional arguments ({len(args)} given)"
        )
    out = dict(kwargs)
    for name, value in zip(ref_order, args, strict=False):
        if name in out:
            raise UsageTypeError(f"{where} got multiple values for argument {name!r}")
        out[name] = value
    return out


# -- G4 ------------------------------------------------------------------------------------------

_WARNED: set[object] = set()


def warn_stderr(text: str) -> None:
    """Write ``[toolnexus] <text>`` to stderr (hosts watch it) and log it as a warning."""
    print(f"[toolnexus] {text}", file=sys.stderr, flush=True)
    log.warning("toolnexus: %s", text)


def warn_once(key: object, text: str) -> bool:
    """`warn_stderr` once per ``key`` per process. Returns whether the line was written."""
    if key in _WARNED:
        return False
    _WARNED.add(key)
    warn_stderr(text)
    return True
