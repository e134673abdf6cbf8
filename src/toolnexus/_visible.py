"""Text made safe to show a person: nothing in it can drive a terminal or hide itself.

A prompt, a tool's arguments, a tool's output and the model's text are written by whoever
controls the model or the tool, and a terminal obeys what it prints: ``ESC[2J`` clears the
screen, OSC 52 writes the clipboard, OSC 8 puts a link target out of sight, and the Unicode
bidi overrides reorder what is read (``refund 5000`` reads as ``refund 0005``). `visible`
replaces every such character with a visible stand-in, one character at a time:

- C0 controls U+0000–U+001F: their Control Pictures U+2400–U+241F — ESC ``␛``, BEL ``␇``,
  CR ``␍``, BS ``␈``, LF ``␊``, TAB ``␉``, NUL ``␀``;
- DEL U+007F: ``␡`` (U+2421);
- C1 controls U+0080–U+009F: ``\\x80`` … ``\\x9f`` (the 8-bit CSI U+009B is ``\\x9b``);
- everything else that is invisible or reorders text: ``⟨U+202E⟩`` (the code point between
  U+27E8 and U+27E9). That is general category Cf — the bidi controls U+202A–U+202E,
  U+2066–U+2069, U+200E, U+200F and U+061C, the zero width space and joiners U+200B–U+200D,
  U+2060–U+2064, U+FEFF, the soft hyphen U+00AD, the tag characters U+E0000–U+E007F and the
  rest of Cf — plus the line and paragraph separators U+2028 and U+2029, the variation
  selectors U+FE00–U+FE0F, U+E0100–U+E01EF and U+180B–U+180F, the invisible letters U+115F,
  U+1160, U+3164, U+FFA0, U+17B4 and U+17B5, the combining grapheme joiner U+034F, and lone
  surrogates (a ``str`` decoded with ``surrogateescape``, which no terminal could be sent).

Every escape sequence starts with ESC or a C1 introducer, so none survives: its body is
printable and stays as it was — ``ESC[2J`` shows as ``␛[2J``, ``ESC]52;c;…BEL`` as
``␛]52;c;…␇``, ``ESC]8;;http://evil.example ESC\\`` as ``␛]8;;http://evil.example␛\\`` (the
hidden target in plain sight); DCS, APC, PM and SOS alike, terminated or not. Because each
character is judged alone, text that arrives in pieces (a streamed reply) is safe piece by
piece, and the work is linear in the text. The price of marking the variation selectors and
the joiners: an emoji sequence shows its parts (``❤⟨U+FE0F⟩``) — what an approver reads must
be exactly what is there.

``keep`` leaves the layout characters a surface can show for what they are: the terminal's
multi-line output (streamed text, tool output) keeps ``"\\n\\t"``; one-line output (a table
cell, a prompt line) keeps nothing, so a newline shows as ``␊``; HTML keeps ``"\\t\\n\\r"``
(white space to a browser). CR is never kept on a terminal: it returns to the line's start and
overwrites it.

JSON stays JSON: `escape_json` writes the same characters as ``\\uXXXX`` escapes, so the
text parses back to exactly the same data with nothing raw in it.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["describe", "escape_json", "shown", "split_marked", "visible"]

_INVISIBLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),  # soft hyphen
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x0600, 0x0605),  # Arabic number signs (Cf)
    (0x061C, 0x061C),  # Arabic letter mark
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),  # Hangul fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels (invisible)
    (0x180B, 0x180F),  # Mongolian variation selectors and vowel separator
    (0x200B, 0x200F),  # zero width space, joiners, LRM, RLM
    (0x2028, 0x202E),  # line and paragraph separators, bidi embeddings and overrides
    (0x2060, 0x206F),  # word joiner, invisible operators, bidi isolates, deprecated formats
    (0x3164, 0x3164),  # Hangul filler
    (0xD800, 0xDFFF),  # lone surrogates (a str from surrogateescape)
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFEFF, 0xFEFF),  # zero width no-break space (BOM)
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xFFF9, 0xFFFB),  # interlinear annotation
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),  # Egyptian hieroglyph format controls
    (0x1BCA0, 0x1BCA3),  # shorthand format controls
    (0x1D173, 0x1D17A),  # musical symbol format controls
    (0xE0000, 0xE007F),  # tags
    (0xE0100, 0xE01EF),  # variation selectors supplement
)
"""Every character marked besides the controls (Unicode 16's Cf, Zl and Zp included: a test
holds this against the running Python's `unicodedata`)."""

_C1_NAMES = {
    0x84: "INDEX",
    0x85: "NEXT LINE",
    0x8D: "REVERSE LINE FEED",
    0x90: "DEVICE CONTROL STRING",
    0x98: "START OF STRING",
    0x9B: "CONTROL SEQUENCE INTRODUCER",
    0x9C: "STRING TERMINATOR",
    0x9D: "OPERATING SYSTEM COMMAND",
    0x9E: "PRIVACY MESSAGE",
    0x9F: "APPLICATION PROGRAM COMMAND",
}


def _code(cp: int) -> str:
    return f"\\U{cp:08x}"


def _class(spans: list[tuple[int, int]]) -> str:
    merged: list[tuple[int, int]] = []
    for lo, hi in spans:  # one range per run: fewer tests per character
        if merged and merged[-1][1] == lo - 1:
            lo = merged.pop()[0]
        merged.append((lo, hi))
    return "".join(_code(lo) if lo == hi else f"{_code(lo)}-{_code(hi)}" for lo, hi in merged)


@functools.cache
def _patterns(keep: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """What finds the marked characters of ASCII text (C0 and DEL only: a small class) and of
    any text; each one capturing group, so `re.split` keeps the marks."""
    if set(keep) - set("\t\n\r"):
        raise ValueError(f"keep takes tab, newline and carriage return only, got {keep!r}")
    controls = [(cp, cp) for cp in range(0x20) if chr(cp) not in keep]
    ascii_only = _class([*controls, (0x7F, 0x7F)])
    every = _class([*controls, (0x7F, 0x9F), *_INVISIBLE])
    return re.compile(f"([{ascii_only}])"), re.compile(f"([{every}])")


def _marks(text: str, keep: str) -> re.Pattern[str] | None:
    """The pattern that finds ``text``'s marked characters; ``None`` when it has none.

    `str.isascii` is a flag CPython keeps on every string, so ASCII text — most of what is
    shown — is settled by `str.isprintable` (no control character in it) or searched with the
    small class.
    """
    if text.isascii():
        if text.isprintable():
            return None
        pattern = _patterns(keep)[0]
    else:
        pattern = _patterns(keep)[1]
    return None if pattern.search(text) is None else pattern


@functools.lru_cache(maxsize=1024)
def shown(char: str) -> str:
    """The visible stand-in of one marked character (see the table above).

    >>> shown("\\x1b"), shown("\\x9b"), shown("\\u202e")
    ('␛', '\\\\x9b', '⟨U+202E⟩')
    """
    cp = ord(char)
    if cp < 0x20:
        return chr(0x2400 + cp)
    if cp == 0x7F:
        return "\u2421"
    if 0x80 <= cp <= 0x9F:
        return f"\\x{cp:02x}"
    return f"\u27e8U+{cp:04X}\u27e9"


def describe(char: str) -> str:
    """What one marked character is, for a tooltip: ``U+202E RIGHT-TO-LEFT OVERRIDE``."""
    cp = ord(char)
    if cp < 0x20:
        name = unicodedata.name(chr(0x2400 + cp)).removeprefix("SYMBOL FOR ")
    elif cp == 0x7F:
        name = "DELETE"
    elif 0x80 <= cp <= 0x9F:
        name = _C1_NAMES.get(cp, "C1 CONTROL")
    elif 0xD800 <= cp <= 0xDFFF:
        name = "SURROGATE"
    else:
        name = unicodedata.name(char, "INVISIBLE CHARACTER")
    return f"U+{cp:04X} {name}"


def _stand_in(found: re.Match[str]) -> str:
    return shown(found.group(0))


def visible(text: str, *, keep: str = "") -> str:
    """``text`` with every control and invisible character shown by its stand-in.

    Args:
        text: what to show.
        keep: the layout characters (of tab, newline and carriage return) left as they are.

    Returns ``text`` itself when nothing needs marking (one regex search).

    >>> visible("refund \\u202e0005 \\x1b[2J")
    'refund ⟨U+202E⟩0005 ␛[2J'
    >>> visible("two\\nlines", keep="\\n")
    'two\\nlines'
    """
    pattern = _marks(text, keep)
    return text if pattern is None else pattern.sub(_stand_in, text)


def split_marked(text: str, *, keep: str = "") -> list[str]:
    """``text`` cut around its marked characters: the even items are plain text (maybe
    empty), the odd items one marked character each — for a surface that draws the marks
    itself (the inbox wraps each in a ``<span>``). ``[text]`` when nothing is marked."""
    pattern = _marks(text, keep)
    return [text] if pattern is None else pattern.split(text)


def _json_escape(found: re.Match[str]) -> str:
    cp = ord(found.group(0))
    if cp <= 0xFFFF:
        return f"\\u{cp:04x}"
    cp -= 0x10000
    return f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}"


def escape_json(text: str) -> str:
    """JSON text (as `json.dumps` writes it) with every marked character written as a
    ``\\uXXXX`` escape: the same data when parsed, and nothing raw for a terminal to obey.

    Tab, newline and carriage return are left alone (outside strings they are JSON's white
    space; inside them `json.dumps` has escaped them already). Other characters, accents
    included, stay readable (unlike ``ensure_ascii=True``).

    >>> escape_json('{"order": "\\u202e0005"}')
    '{"order": "\\\\u202e0005"}'
    """
    pattern = _marks(text, "\t\n\r")
    return text if pattern is None else pattern.sub(_json_escape, text)
