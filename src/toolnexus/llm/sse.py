"""An incremental server-sent-events parser: bytes in, `SSEEvent`s out.

Both providers stream their replies as SSE. The network hands us chunks split anywhere — inside
a line, between ``\\r`` and ``\\n``, even inside a multi-byte UTF-8 character — so the parser
keeps its state across `SSEParser.feed` calls and never assumes a chunk is a whole event. It
follows the WHATWG "event stream" interpretation rules, with one deliberate leniency: at end of
stream, `SSEParser.flush` dispatches an event that was not closed by a blank line, because some
servers close the connection right after their last ``data:`` line and that line is usually the
terminal one (``[DONE]``).

Example::

    parser = SSEParser()
    for chunk in chunks:
        for event in parser.feed(chunk):
            handle(event)
    for event in parser.flush():
        handle(event)
"""

from __future__ import annotations

import codecs
import re

from ..errors import BadResponse
from .base import SSEEvent

__all__ = ["DEFAULT_MAX_EVENT_CHARS", "SSEParser"]

DEFAULT_MAX_EVENT_CHARS = 16 * 1024 * 1024
"""Largest event (or unterminated line) we buffer before calling the stream hostile."""

_LINE_END = re.compile(r"\r\n|\r|\n")


class SSEParser:
    """Turns a byte stream into server-sent events, one chunk at a time.

    Only the ``data`` and ``event`` fields matter to us; ``id`` and ``retry`` are read and
    ignored, unknown fields and ``:`` comment lines (keep-alives) are skipped. Invalid UTF-8 is
    replaced with U+FFFD rather than failing the whole stream, as the SSE standard asks.

    Args:
        max_event_chars: the most characters one event (its data lines plus any unterminated
            line) may hold; beyond it `feed` raises `BadResponse` instead of growing memory
            without bound on a server that never ends a line.
    """

    __slots__ = ("_buffer", "_data", "_decoder", "_event", "_limit", "_size", "_skip_lf", "_start")

    def __init__(self, *, max_event_chars: int = DEFAULT_MAX_EVENT_CHARS) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._limit = max_event_chars
        self._buffer = ""
        self._data: list[str] = []
        self._size = 0
        self._event: str | None = None
        self._skip_lf = False
        self._start = True

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Consume one chunk and return the events it completed (often none, sometimes many)."""
        return self._consume(self._decoder.decode(chunk))

    def flush(self) -> list[SSEEvent]:
        """Signal end of stream: finish a partial line and dispatch a pending event."""
        events = self._consume(self._decoder.decode(b"", final=True))
        if self._buffer:
            self._line(self._buffer, events)
            self._buffer = ""
        self._line("", events)
        return events

    def _consume(self, text: str) -> list[SSEEvent]:
        if not text:
            return []
        if self._start:
            self._start = False
            text = text.removeprefix("\ufeff")
        if self._skip_lf:
            # The previous chunk ended in "\r"; a "\n" here belongs to that same line ending.
            self._skip_lf = False
            if text.startswith("\n"):
                text = text[1:]
        text = self._buffer + text
        events: list[SSEEvent] = []
        pos = 0
        for match in _LINE_END.finditer(text):
            self._line(text[pos : match.start()], events)
            pos = match.end()
        self._buffer = text[pos:]
        self._skip_lf = text.endswith("\r")
        if self._size + len(self._buffer) > self._limit:
            raise BadResponse(f"stream event larger than {self._limit} characters")
        return events

    def _line(self, line: str, events: list[SSEEvent]) -> None:
        if not line:
            if self._data:
                events.append(SSEEvent(data="\n".join(self._data), event=self._event))
            self._data = []
            self._size = 0
            self._event = None
            return
        if line.startswith(":"):
            return
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._size += len(value) + 1
            if self._size > self._limit:
                raise BadResponse(f"stream event larger than {self._limit} characters")
        elif name == "event":
            self._event = value or None
