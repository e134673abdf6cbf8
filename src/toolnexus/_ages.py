"""Ages written as people write them (``90s``, ``15m``, ``12h``, ``30d``, ``2w``), read once for
the command line's ``--older-than`` and the inbox's age filter alike."""

from __future__ import annotations

import re

__all__ = ["age_seconds"]

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def age_seconds(text: str) -> float | None:
    """Seconds in ``text`` (a bare number is seconds), or ``None`` when it is not an age; each
    caller words the refusal for its own field."""
    found = _AGE.match(text)
    if found is None:
        return None
    return float(found.group(1)) * _UNIT[found.group(2)]
