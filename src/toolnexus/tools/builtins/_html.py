"""HTML to Markdown and to plain text, for ``webfetch``.

Built on the standard library's forgiving ``html.parser``: broken or unclosed markup never
raises, it just renders as well as it can. What is kept:

- headings (``# ...``), paragraphs and line breaks, lists (``- item`` / ``1. item``, nested
  by indentation), block quotes (``> ``), preformatted blocks (fenced with ``````` ```),
  horizontal rules, table rows (cells joined by `` | ``);
- in Markdown also links ``[text](href)``, images ``![alt](src)``, ``**strong**``,
  ``*emphasis*`` and ```code```; plain text keeps only their text (an image's alt text).

Dropped entirely: ``head``, ``script``, ``style``, ``noscript``, ``template``, ``svg``,
``iframe``, ``object``, ``canvas``, form controls. Whitespace outside ``pre`` collapses as a
browser would; at most one blank line separates blocks; entities are decoded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Literal

__all__ = ["html_to_markdown", "html_to_text"]

Mode = Literal["markdown", "text"]

_SKIPPED = frozenset(
    {
        "head",
        "script",
        "style",
        "noscript",
        "template",
        "svg",
        "iframe",
        "object",
        "canvas",
        "select",
        "textarea",
        "button",
    }
)
_BLOCKS = frozenset(
    {
        "p",
        "div",
        "section",
        "article",
        "header",
        "footer",
        "main",
        "nav",
        "aside",
        "form",
        "table",
        "thead",
        "tbody",
        "tfoot",
        "figure",
        "figcaption",
        "address",
        "details",
        "summary",
        "dl",
        "dt",
        "dd",
        "fieldset",
        "center",
        "body",
        "html",
    }
)
_PARAGRAPHS = frozenset({"p", "table", "figure", "dl", "details", "address", "fieldset"})
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_INLINE_MARKS = {"strong": "**", "b": "**", "em": "*", "i": "*", "code": "`", "kbd": "`"}
_SPACES = re.compile(r"[ \t\r\n\f\v]+")
_BLANK_RUNS = re.compile(r"\n{3,}")
_TRAILING_SPACES = re.compile(r"[ \t]+\n")


def html_to_markdown(html: str) -> str:
    """Readable Markdown from an HTML document or fragment.

    >>> html_to_markdown("<h1>Hi</h1><p>See <a href='/x'>this</a>.</p>")
    '# Hi\\n\\nSee [this](/x).'
    """
    return _render(html, "markdown")


def html_to_text(html: str) -> str:
    """The visible text of an HTML document or fragment, blocks on their own lines.

    >>> html_to_text("<h1>Hi</h1><p>See <a href='/x'>this</a>.</p>")
    'Hi\\n\\nSee this.'
    """
    return _render(html, "text")


def _render(html: str, mode: Mode) -> str:
    renderer = _Renderer(mode)
    renderer.feed(html)
    renderer.close()
    text = "".join(renderer.finish())
    text = _TRAILING_SPACES.sub("\n", text)
    return _BLANK_RUNS.sub("\n\n", text).strip()


@dataclass(slots=True)
class _Frame:
    """An element whose rendering waits for its end tag (its content is buffered)."""

    tag: str
    parts: list[str] = field(default_factory=lambda: [])
    href: str = ""


class _Renderer(HTMLParser):
    def __init__(self, mode: Mode) -> None:
        super().__init__(convert_charrefs=True)
        self.mode = mode
        self.out: list[str] = []
        self.frames: list[_Frame] = []
        self.skip = 0
        self.pre = 0
        self.lists: list[list[int]] = []  # per open list: [next number] (0 for bullets)
        self.cells = 0

    # --- output -------------------------------------------------------------------------

    def _target(self) -> list[str]:
        return self.frames[-1].parts if self.frames else self.out

    def _tail(self) -> str:
        """The last two characters emitted so far, across open frames."""
        tail = ""
        for parts in [self.out, *(f.parts for f in self.frames)]:
            tail = (tail + "".join(parts[-2:]))[-2:]
        return tail

    def _emit(self, text: str) -> None:
        if text:
            self._target().append(text)

    def _breaks(self, count: int) -> None:
        """End the current line and leave ``count - 1`` blank lines (none at the start)."""
        tail = self._tail()
        if not tail:
            return
        have = len(tail) - len(tail.rstrip("\n"))
        self._emit("\n" * max(0, count - have))

    # --- parser callbacks ---------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self.skip += 1
            return
        if tag == "body":
            self.skip = 0  # a page that never closed <head>
        if self.skip:
            return
        attr = {k: v or "" for k, v in attrs}
        markdown = self.mode == "markdown"
        if tag in _HEADINGS:
            self._breaks(2)
            if markdown:
                self._emit("#" * _HEADINGS[tag] + " ")
        elif tag in _BLOCKS:
            self._breaks(2 if tag in _PARAGRAPHS else 1)
        elif tag == "br":
            self._emit("\n")
        elif tag == "hr":
            self._breaks(2)
            self._emit("---" if markdown else "")
            self._breaks(2)
        elif tag in ("ul", "ol"):
            self._breaks(1 if self.lists else 2)
            self.lists.append([1 if tag == "ol" else 0])
        elif tag == "li":
            self._breaks(1)
            self._emit(self._bullet())
        elif tag == "tr":
            self._breaks(1)
            self.cells = 0
        elif tag in ("td", "th"):
            if self.cells:
                self._emit(" | ")
            self.cells += 1
        elif tag == "img":
            alt = _SPACES.sub(" ", attr.get("alt", "")).strip()
            src = attr.get("src", "")
            if markdown and src:
                self._emit(f"![{alt}]({src})")
            elif alt:
                self._emit(alt)
        elif tag == "pre":
            self._breaks(2)
            self.pre += 1
            self.frames.append(_Frame("pre"))
        elif tag == "blockquote":
            self._breaks(2)
            self.frames.append(_Frame("blockquote"))
        elif tag == "a" and markdown:
            self.frames.append(_Frame("a", href=attr.get("href", "").strip()))
        elif tag in _INLINE_MARKS and markdown and not self.pre:
            self.frames.append(_Frame(tag))

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self.skip = max(0, self.skip - 1)
            return
        if self.skip:
            return
        if tag in _HEADINGS or tag in _BLOCKS:
            self._breaks(2 if tag in _PARAGRAPHS or tag in _HEADINGS else 1)
        elif tag in ("ul", "ol"):
            if self.lists:
                self.lists.pop()
            self._breaks(1 if self.lists else 2)
        elif tag == "li" or tag == "tr":
            self._breaks(1)
        if any(f.tag == tag for f in self.frames):
            while self.frames:
                frame = self.frames.pop()
                self._close(frame)
                if frame.tag == tag:
                    break

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        if self.pre:
            self._emit(data)
            return
        text = _SPACES.sub(" ", data)
        if text.startswith(" ") and self._tail()[-1:] in ("", " ", "\n"):
            text = text[1:]
        self._emit(text)

    # --- buffered elements --------------------------------------------------------------

    def finish(self) -> list[str]:
        while self.frames:
            self._close(self.frames.pop())
        return self.out

    def _close(self, frame: _Frame) -> None:
        inner = "".join(frame.parts)
        if frame.tag == "pre":
            self.pre = max(0, self.pre - 1)
            body = inner.strip("\n")
            if self.mode == "markdown":
                self._emit(f"```\n{body}\n```")
            else:
                self._emit(body)
            self._breaks(2)
        elif frame.tag == "blockquote":
            body = _BLANK_RUNS.sub("\n\n", inner).strip("\n")
            if self.mode == "markdown":
                body = "\n".join(f"> {line}" if line else ">" for line in body.split("\n"))
            self._emit(body)
            self._breaks(2)
        elif frame.tag == "a":
            label = inner.strip()
            if label and frame.href and not frame.href.lower().startswith("javascript:"):
                self._emit(_spaced(inner, f"[{label}]({frame.href})"))
            else:
                self._emit(inner)
        else:
            label = inner.strip()
            mark = _INLINE_MARKS[frame.tag]
            self._emit(_spaced(inner, f"{mark}{label}{mark}") if label else inner)

    def _bullet(self) -> str:
        if not self.lists:
            return "- "
        indent = "  " * (len(self.lists) - 1)
        counter = self.lists[-1]
        if counter[0]:
            number = counter[0]
            counter[0] += 1
            return f"{indent}{number}. "
        return f"{indent}- "


def _spaced(inner: str, rendered: str) -> str:
    """``rendered`` with the whitespace that surrounded ``inner`` moved outside the markup."""
    lead = " " if inner[:1].isspace() else ""
    trail = " " if inner[-1:].isspace() else ""
    return f"{lead}{rendered}{trail}"
