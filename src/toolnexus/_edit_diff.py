"""What an edit changed: the approved arguments against the model's, key by key, with values.

An approval answered with edited arguments (`toolnexus.loop.edits`) runs the call with those
instead of the model's; the audit keeps both (`toolnexus.stores.checks.edit_audit`). `changes`
lines them up for a person: objects are compared key by key (nested objects too), anything
else as a whole value, and values are equal only as the same JSON (``1`` is not ``1.0``, nor
``true``). Pure functions over data: the inbox's pages, its exports and the command line show
the same list.

    >>> edit = changes({"order": "A-1", "amount": 300}, {"order": "A-1", "amount": 45})
    >>> [change_text(c) for c in edit]
    ['amount: 300 → 45']
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

__all__ = ["MISSING", "Change", "change_text", "changes", "changes_of", "path_text", "value_text"]


class _Missing:
    """No value on that side: the key was added or removed."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""The `Change.before` of an added key, the `Change.after` of a removed one."""

_CANONICAL = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """One changed value: where (the keys from the top), what it was, what it became."""

    path: tuple[str, ...]
    before: Any = MISSING
    after: Any = MISSING

    @property
    def kind(self) -> Literal["changed", "added", "removed"]:
        if self.before is MISSING:
            return "added"
        if self.after is MISSING:
            return "removed"
        return "changed"

    def to_dict(self) -> dict[str, Any]:
        """As JSON data: ``{"path": [...], "change": ..., "before"?: ..., "after"?: ...}``."""
        out: dict[str, Any] = {"path": list(self.path), "change": self.kind}
        if self.before is not MISSING:
            out["before"] = self.before
        if self.after is not MISSING:
            out["after"] = self.after
        return out


def _same(a: Any, b: Any) -> bool:
    try:
        return _CANONICAL.encode(a) == _CANONICAL.encode(b)
    except (TypeError, ValueError, RecursionError):
        return a is b


def changes(before: Any, after: Any, path: tuple[str, ...] = ()) -> list[Change]:
    """What differs from ``before`` to ``after`` (JSON values), in ``before``'s key order and
    then the added keys'; ``[]`` when they are the same."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        old = cast(Mapping[str, Any], before)
        new = cast(Mapping[str, Any], after)
        out: list[Change] = []
        for key in [*old, *(k for k in new if k not in old)]:
            where = (*path, str(key))
            if key not in new:
                out.append(Change(path=where, before=old[key]))
            elif key not in old:
                out.append(Change(path=where, after=new[key]))
            else:
                out += changes(old[key], new[key], where)
        return out
    if _same(before, after):
        return []
    return [Change(path=path, before=before, after=after)]


def changes_of(original_arguments: str, edited: Any) -> list[Change]:
    """The changes from the model's arguments (its raw JSON text, as the audit keeps it) to
    the ``edited`` ones. Text that is not JSON is one change of the whole."""
    try:
        before: Any = json.loads(original_arguments or "{}")
    except ValueError:
        before = original_arguments
    return changes(before, edited)


def path_text(path: tuple[str, ...]) -> str:
    """``amount``, ``address.city``; a key that is not a plain name is quoted
    (``["a.b"]``); the whole value is ``(arguments)``."""
    if not path:
        return "(arguments)"
    out = ""
    for key in path:
        if _NAME.fullmatch(key):
            out += ("." if out else "") + key
        else:
            out += f"[{json.dumps(key, ensure_ascii=False)}]"
    return out


def value_text(value: Any) -> str:
    """A value as JSON text (``"A-1"``, ``45``, ``{"a":1}``)."""
    if value is MISSING:
        return ""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def change_text(change: Change) -> str:
    """One line: ``amount: 300 → 45``, ``note: added "rush"``, ``coupon: removed "X"``."""
    where = path_text(change.path)
    if change.kind == "added":
        return f"{where}: added {value_text(change.after)}"
    if change.kind == "removed":
        return f"{where}: removed {value_text(change.before)}"
    return f"{where}: {value_text(change.before)} → {value_text(change.after)}"
