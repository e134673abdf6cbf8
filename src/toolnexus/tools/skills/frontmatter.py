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

The rules are the toolnexus package's, so a skill folder reads the same on both:

- A header exists only when the text starts with ``---`` and a newline **and** a later line
  starts with ``---`` (the first such line closes it). Without a closing fence the whole text
  is the body (which then has no name).
- The header is parsed with a real YAML parser (PyYAML's ``safe_load``, imported on first use
  so that ``import toolnexus`` stays light): block scalars, chomping, quoting and anchors mean
  what YAML says. Only scalar values (str, int, float, bool) are kept, as ``str(v).strip()``.
- **Line-wise rescue.** When YAML refuses the header, returns something other than a mapping,
  or leaves ``name``/``description`` present but not scalar, the column-0 ``key: value`` lines
  are read for ``name`` and ``description`` only (indented, comment and blank lines skipped;
  the first occurrence wins and a value YAML gave stays; a value that is empty or starts with
  one of ``| > & * [ { !`` is skipped; one pair of matching quotes is stripped). So an unquoted
  description holding ``: `` still loads, with the line's text as its description.
- The header is *malformed* only when YAML refused it and no name was rescued; then
  ``yaml_error`` carries the parser's message.

The parse never raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

__all__ = ["Frontmatter", "parse_frontmatter"]

_FENCE = "---"
_RESCUED = ("name", "description")
_UNRESCUABLE_STARTS = ("|", ">", "&", "*", "[", "{", "!")


@dataclass(frozen=True, slots=True, kw_only=True)
class Frontmatter:
    """The parsed header of a SKILL.md file.

    Attributes:
        fields: the scalar header values as trimmed text (``name``, ``description``, and
            whatever else the author wrote).
        body: everything after the closing fence (the whole text when there is no header).
        yaml_error: the YAML parser's message (newlines as spaces) when it refused the
            header, else ``""``.
    """

    fields: dict[str, str] = field(default_factory=dict[str, str])
    body: str = ""
    yaml_error: str = ""

    @property
    def malformed(self) -> bool:
        """True when YAML refused the header and no ``name`` could be rescued from it."""
        return bool(self.yaml_error) and "name" not in self.fields


def parse_frontmatter(text: str) -> Frontmatter:
    """Split ``text`` into its header fields and its body. Never raises.

    >>> parse_frontmatter("---\\nname: demo\\n---\\nHello").fields
    {'name': 'demo'}
    """
    text = text.removeprefix("\ufeff")
    lines = _lines(text)
    if not lines or lines[0].rstrip("\r\n") != _FENCE or not lines[0].endswith("\n"):
        return Frontmatter(body=text)
    for index in range(1, len(lines)):
        if lines[index].startswith(_FENCE):
            header = "".join(lines[1:index])
            body = "".join(lines[index + 1 :])
            break
    else:
        return Frontmatter(body=text)
    fields: dict[str, str] = {}
    error = ""
    needs_rescue = False
    try:
        parsed = _load_yaml(header)
    except Exception as exc:
        # PyYAML raises YAMLError for bad syntax, but deeply nested input can also surface as
        # RecursionError or ValueError; any of them means "YAML refused it", never a crash.
        error = " ".join(str(exc).split("\n")).strip() or type(exc).__name__
        needs_rescue = True
    else:
        if isinstance(parsed, dict):
            for key, value in cast(dict[Any, Any], parsed).items():
                if _is_scalar(value):
                    fields[str(key)] = str(value).strip()
                elif str(key) in _RESCUED and value is not None:
                    needs_rescue = True
        elif parsed is not None:
            needs_rescue = True
    if needs_rescue:
        for key, value in _rescue(header).items():
            fields.setdefault(key, value)
    return Frontmatter(fields=fields, body=body, yaml_error=error)


def _rescue(header: str) -> dict[str, str]:
    """``name`` and ``description`` read from column-0 ``key: value`` lines, first wins."""
    found: dict[str, str] = {}
    for line in header.split("\n"):
        line = line.rstrip("\r")
        if not line or line[0].isspace() or line.startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep or key not in _RESCUED or key in found:
            continue
        if value and not value[0].isspace():
            continue  # "name:x" is not a YAML key/value line
        value = value.strip()
        if not value or value.startswith(_UNRESCUABLE_STARTS):
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        found[key] = value
    return found


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


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float)  # bool is an int
