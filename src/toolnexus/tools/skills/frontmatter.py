"""SKILL.md frontmatter: a ``---``-fenced YAML header over a Markdown body.

::

    ---
    name: pdf-tools
    description: >
      Extract text and tables
      from PDF files.
    ---
    # PDF tools
    ...

The header is parsed with a real YAML parser (PyYAML's ``safe_load``, imported on first use so
that ``import toolnexus`` stays light), so folded and literal block scalars, chomping indicators
and quoting all mean what YAML says they mean. Only scalar values are kept, coerced to text and
trimmed; lists, mappings and nulls count as absent.

The parse never raises. It tells apart three outcomes, because `list_skills` reports them
differently: no header at all (every field absent, the whole text is the body), a header that
is well formed, and a header that is malformed (YAML that does not parse, parses to something
other than a mapping, or an opening fence that is never closed).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any, cast

__all__ = ["Frontmatter", "parse_frontmatter"]

_FENCE = "---"


@dataclass(frozen=True, slots=True, kw_only=True)
class Frontmatter:
    """The parsed header of a SKILL.md file.

    Attributes:
        fields: the scalar header values, coerced to text and trimmed (``name``,
            ``description``, and whatever else the author wrote).
        body: everything after the closing fence (the whole text when there is no header).
        malformed: True when a header was opened but could not be read as a YAML mapping.
    """

    fields: dict[str, str] = field(default_factory=dict[str, str])
    body: str = ""
    malformed: bool = False


def parse_frontmatter(text: str) -> Frontmatter:
    """Split ``text`` into its YAML header fields and its body. Never raises.

    >>> parse_frontmatter("---\\nname: demo\\n---\\nHello").fields
    {'name': 'demo'}
    """
    text = text.removeprefix("\ufeff")
    lines = _lines(text)
    if not lines or lines[0].rstrip() != _FENCE:
        return Frontmatter(body=text)
    for index in range(1, len(lines)):
        if lines[index].rstrip() == _FENCE:
            header = "".join(lines[1:index])
            body = "".join(lines[index + 1 :])
            break
    else:
        return Frontmatter(body=text, malformed=True)
    try:
        parsed = _load_yaml(header)
    except Exception:
        # PyYAML raises YAMLError for bad syntax, but deeply nested input can also surface as
        # RecursionError or ValueError; any of them means "unreadable header", never a crash.
        return Frontmatter(body=body, malformed=True)
    if parsed is None:
        return Frontmatter(body=body)
    if not isinstance(parsed, dict):
        return Frontmatter(body=body, malformed=True)
    fields: dict[str, str] = {}
    for key, value in cast(dict[Any, Any], parsed).items():
        text_value = _scalar_text(value)
        if text_value is not None:
            fields[str(key)] = text_value
    return Frontmatter(fields=fields, body=body)


def _lines(text: str) -> list[str]:
    """``text`` split after each ``\\n`` only (``str.splitlines`` also breaks on form feeds,
    ``\\u2028`` and friends, which YAML and Markdown treat as ordinary characters)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _load_yaml(source: str) -> Any:
    import yaml  # deferred: keeps `import toolnexus` free of PyYAML

    return yaml.safe_load(source)


def _scalar_text(value: Any) -> str | None:
    """A YAML scalar as trimmed text; ``None`` for nulls, lists and mappings."""
    if isinstance(value, bool):
        return "true" if value else "false"  # YAML's spelling, not Python's
    if isinstance(value, str | int | float):
        return str(value).strip()
    if isinstance(value, datetime.date):  # also datetime.datetime
        return value.isoformat()
    return None
