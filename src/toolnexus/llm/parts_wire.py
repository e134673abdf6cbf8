"""Content parts on the wire: each dialect's block shapes, and what happens to a part that
cannot be sent (COMPAT §6).

Parts live in the transcript as canonical dicts (`toolnexus.parts`); this module turns them
into provider blocks when a request body is built, and nowhere else. Which parts may fail the
request depends on their *provenance*:

- a part in a ``user`` message was *attached* by the host: a part over the size limit is a
  `ContentPartError`, one without a block shape in the style an `UnsupportedPartError`, both
  raised before any HTTP call;
- any other part is *tool-derived*: it is replaced by a text placeholder, with one
  ``[toolnexus] … — sent as a text placeholder`` line on stderr per kind of failure and client.

A client's ``on_unsupported_part`` (``"error"`` / ``"text"``) forces one behaviour for both.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, TypeAlias, cast

from ..errors import UsageError
from ..parts import (
    MEDIA_KINDS,
    ContentPart,
    ContentPartError,
    UnsupportedPartError,
    get_max_part_bytes,
    is_part_dict,
    placeholder_text,
    shape_problem,
    size_problem,
    summarize,
    to_dict,
)

__all__ = [
    "OnUnsupportedPart",
    "PartPolicy",
    "content_has_parts",
    "encode_part",
    "has_parts",
    "transcript_parts",
    "warn",
]

log = logging.getLogger("toolnexus")

OnUnsupportedPart: TypeAlias = Literal["error", "text"] | None

_AUDIO_FORMATS = {
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/wav": "wav",
    "audio/x-wav": "wav",
}


def warn(text: str) -> None:
    """A warning hosts can observe: ``[toolnexus] <text>`` on stderr (COMPAT G4), and logged."""
    # merge: compat may add a shared G4 helper; this one can become a call to it.
    sys.stderr.write(f"[toolnexus] {text}\n")
    log.warning("toolnexus: %s", text)


def _source(p: Mapping[str, Any]) -> dict[str, Any]:
    if p.get("data") is not None:
        return {"type": "base64", "media_type": p["mimeType"], "data": p["data"]}
    return {"type": "url", "url": p["url"]}


def _data_url(p: Mapping[str, Any]) -> str:
    return f"data:{p['mimeType']};base64,{p['data']}"


def encode_part(p: ContentPart | Mapping[str, Any], style: str) -> dict[str, Any]:
    """The provider block for the part ``p`` in ``style`` (``openai``/``anthropic``).

    ========  ===========================================  ===================================
    part      openai                                        anthropic
    ========  ===========================================  ===================================
    text      ``{type: text, text}``                        the same
    image     ``{type: image_url, image_url: {url}}``       ``{type: image, source}``
    file      ``{type: file, file: {filename, file_data}}`` ``{type: document, source}``
    audio     ``{type: input_audio, input_audio: {…}}``     unsupported
    ========  ===========================================  ===================================

    Raises:
        UnsupportedPartError: no block shape: anthropic audio, an openai file given only by
            URL, openai audio by URL or in a format other than mp3/wav.
        UsageError: ``style`` is neither style.
    """
    if style not in ("openai", "anthropic"):
        raise UsageError(f'style must be "openai" or "anthropic", got {style!r}')
    if isinstance(p, ContentPart):
        p = to_dict(p)
    kind = p.get("type")
    if kind == "text":
        return {"type": "text", "text": p.get("text")}
    mime = p.get("mimeType")
    if style == "openai":
        if kind == "image":
            url = p["url"] if p.get("data") is None else _data_url(p)
            return {"type": "image_url", "image_url": {"url": url}}
        if kind == "file" and p.get("data") is not None:
            filename = p.get("name") or "file"
            return {"type": "file", "file": {"filename": filename, "file_data": _data_url(p)}}
        fmt = _AUDIO_FORMATS.get(str(mime).lower())
        if kind == "audio" and p.get("data") is not None and fmt is not None:
            return {"type": "input_audio", "input_audio": {"data": p["data"], "format": fmt}}
    else:
        if kind == "image":
            return {"type": "image", "source": _source(p)}
        if kind == "file":
            return {"type": "document", "source": _source(p)}
    raise UnsupportedPartError(str(kind), mime if isinstance(mime, str) else None, style)


class PartPolicy:
    """How one client sends parts: the size ceiling, ``on_unsupported_part``, and the warnings
    it already gave (once per kind of failure per client).

    Args:
        on_unsupported: ``None`` (by provenance), ``"error"`` or ``"text"``.
        max_part_bytes: the decoded-byte ceiling per part; ``None`` = the process-wide one
            (`toolnexus.get_max_part_bytes`), read at each request.

    Raises:
        UsageError: an option of the wrong type or value.
    """

    __slots__ = ("_warned", "max_part_bytes", "on_unsupported")

    def __init__(
        self, on_unsupported: OnUnsupportedPart = None, max_part_bytes: int | None = None
    ) -> None:
        if on_unsupported not in (None, "error", "text"):
            raise UsageError(
                f'on_unsupported_part must be None, "error" or "text", got {on_unsupported!r}'
            )
        if max_part_bytes is not None and (
            not isinstance(max_part_bytes, int)  # pyright: ignore[reportUnnecessaryIsInstance]
            or isinstance(max_part_bytes, bool)
            or max_part_bytes < 1
        ):
            raise UsageError(f"max_part_bytes must be a positive int, got {max_part_bytes!r}")
        self.on_unsupported: OnUnsupportedPart = on_unsupported
        self.max_part_bytes = max_part_bytes
        self._warned: set[tuple[str, ...]] = set()

    def lenient(self) -> PartPolicy:
        """This policy with every failure sent as a placeholder (``translate`` never fails on a
        part); warnings are shared with this one."""
        other = PartPolicy("text", self.max_part_bytes)
        other._warned = self._warned
        return other

    def _raises(self, attached: bool) -> bool:
        return self.on_unsupported == "error" or (self.on_unsupported is None and attached)

    def _placeholder(
        self, p: Mapping[str, Any], style: str, key: tuple[str, ...], why: str
    ) -> dict[str, Any]:
        if key not in self._warned:
            self._warned.add(key)
            warn(f"{why} — sent as a text placeholder")
        return {"type": "text", "text": placeholder_text(p, style)}

    def block(self, p: Mapping[str, Any], style: str, *, attached: bool) -> dict[str, Any]:
        """The block for part ``p``, or its text placeholder.

        Raises:
            ContentPartError: ``p`` is malformed, or it is over the size limit and may fail.
            UnsupportedPartError: ``p`` has no block shape in ``style`` and may fail.
        """
        if not isinstance(p, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ContentPartError(f"not a content part: {type(p).__name__}")
        problem = shape_problem(p, check_data=False)
        if problem is not None:
            raise ContentPartError(problem)
        if p.get("type") == "text":
            return encode_part(p, style)
        limit = self.max_part_bytes if self.max_part_bytes is not None else get_max_part_bytes()
        too_big = size_problem(p, limit)
        if too_big is not None:
            if self._raises(attached):
                raise ContentPartError(too_big)
            key = ("size", str(p.get("type")), str(p.get("mimeType")))
            return self._placeholder(p, style, key, too_big)
        try:
            return encode_part(p, style)
        except UnsupportedPartError as exc:
            if self._raises(attached):
                raise
            return self._placeholder(p, style, ("shape", exc.part_type, style), str(exc))

    def content(self, content: list[Any], style: str, *, attached: bool) -> list[Any]:
        """A list ``content`` with its canonical non-text parts encoded; text parts and native
        blocks pass through."""
        return [
            self.block(cast(Mapping[str, Any], item), style, attached=attached)
            if _is_media_part(item)
            else item
            for item in content
        ]


def _is_media_part(item: Any) -> bool:
    return is_part_dict(item) and cast(dict[str, Any], item)["type"] in MEDIA_KINDS


def content_has_parts(message: Mapping[str, Any]) -> bool:
    """Whether a message's list ``content`` holds a canonical non-text part."""
    content = message.get("content")
    return isinstance(content, list) and any(
        _is_media_part(item) for item in cast(list[Any], content)
    )


def has_parts(message: Mapping[str, Any]) -> bool:
    """Whether a canonical message carries content parts to encode: in its list ``content`` or
    as a tool result's ``parts`` (cheap for the common case: a string content, no ``parts``)."""
    return bool(message.get("parts")) or content_has_parts(message)


def message_parts(message: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    """The non-text parts of one canonical message: list content, then tool ``parts``."""
    content = message.get("content")
    if isinstance(content, list):
        for item in cast(list[Any], content):
            if _is_media_part(item):
                yield cast(Mapping[str, Any], item)
    raw = message.get("parts")
    if isinstance(raw, list):
        for item in cast(list[Any], raw):
            if _is_media_part(item):
                yield cast(Mapping[str, Any], item)


def transcript_parts(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`summarize` of every non-text part in a transcript being sent (for the ``llm`` metric)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        # Called on every turn: the common message (string content, no parts) costs one key
        # test and one lookup.
        if "parts" in message or type(message.get("content")) is list:
            out.extend(summarize(p) for p in message_parts(message))
    return out
