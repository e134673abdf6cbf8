"""Wire text with holes: the `Template` a rendered reply is kept as, and the `slot` markers.

A reply's wire text is rendered once with a marker where each per-request value goes (`slot`)
and compiled into a `Template`; answering a request fills the holes. The reply data
(`toolnexus.testing._replies`) caches its templates and the renderer
(`toolnexus.testing._render`) makes them, so both stand on this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Template", "slot"]

_SLOT = re.compile(r'"\\u0000tn:(\w+)\\u0000"')


def slot(name: str) -> str:
    """The marker of the hole ``name`` in wire text, before `Template.compile` splits it."""
    # json.dumps escapes NUL as \u0000, which no value a user scripts can collide with
    # unless it is exactly this sentinel.
    return f"\x00tn:{name}\x00"


@dataclass(frozen=True, slots=True)
class Template:
    """Wire text with holes: ``parts[0] + value(slots[0]) + parts[1] + ...``.

    Slot names are ``model``, ``id`` and ``c0``, ``c1``, ... for the calls the server numbers.
    Slot values are JSON text (quoted strings).
    """

    parts: tuple[str, ...]
    slots: tuple[str, ...]
    auto_ids: int

    @classmethod
    def compile(cls, text: str, auto_ids: int) -> Template:
        pieces = _SLOT.split(text)
        return cls(parts=tuple(pieces[0::2]), slots=tuple(pieces[1::2]), auto_ids=auto_ids)

    def fill(self, values: dict[str, str]) -> str:
        out = [self.parts[0]]
        for name, part in zip(self.slots, self.parts[1:], strict=True):
            out.append(values[name])
            out.append(part)
        return "".join(out)
