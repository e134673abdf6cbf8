"""Content parts: images, files, audio and text handed to a model (COMPAT §6).

A part is bytes or a URL, never a path: building one from a path reads the file *now*. Its
canonical form is a plain dict with exactly the wire keys ``type text mimeType data url name``::

    {"type": "text", "text": "What is in this picture?"}
    {"type": "image", "mimeType": "image/png", "data": "<padded base64>", "name": "cat.png"}
    {"type": "file", "mimeType": "application/pdf", "url": "https://example.com/a.pdf"}

That dict is what the transcript, the checkpoint and the stores keep; a provider's own block
shape is produced at send time only (`toolnexus.llm.parts_wire`).

::

    import toolnexus as tn

    result = await client.run([tn.text("Describe this."), tn.image("cat.png")])

Errors: `ContentPartError` for a part that cannot be built or is malformed, with the texts
COMPAT §6 pins; both error classes are `UsageError`\\s and so also ``ValueError``\\s.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias, cast, runtime_checkable

from .errors import UsageError

__all__ = [
    "DEFAULT_MAX_PART_BYTES",
    "MEDIA_TYPES",
    "BinaryReadable",
    "ContentPart",
    "ContentPartError",
    "PartSource",
    "PartType",
    "UnsupportedPartError",
    "audio",
    "decoded_len",
    "describe_part",
    "estimate_tokens",
    "file",
    "from_dict",
    "get_max_part_bytes",
    "image",
    "is_part_dict",
    "normalize_parts",
    "part",
    "placeholder_text",
    "set_max_part_bytes",
    "summarize",
    "text",
    "to_dict",
    "validate",
]

PartType: TypeAlias = Literal["text", "image", "file", "audio"]
PART_TYPES: frozenset[str] = frozenset({"text", "image", "file", "audio"})
MEDIA_KINDS: frozenset[str] = frozenset({"image", "file", "audio"})

MEDIA_TYPES: dict[str, tuple[str, PartType]] = {
    "png": ("image/png", "image"),
    "jpg": ("image/jpeg", "image"),
    "jpeg": ("image/jpeg", "image"),
    "gif": ("image/gif", "image"),
    "webp": ("image/webp", "image"),
    "pdf": ("application/pdf", "file"),
    "mp3": ("audio/mpeg", "audio"),
    "wav": ("audio/wav", "audio"),
}
"""Lower-cased file extension → (mime type, part type). The only source of mime types: content
is never sniffed and `mimetypes` is never asked."""

DEFAULT_MAX_PART_BYTES = 20 * 1024 * 1024
"""The process-wide ceiling on one part's decoded bytes until `set_max_part_bytes` changes it."""

_max_part_bytes: int | None = DEFAULT_MAX_PART_BYTES
_MIME = re.compile(r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*")


class ContentPartError(UsageError):
    """A content part cannot be built, is malformed, or is over the size limit.

    A `UsageError`, hence also a ``ValueError`` (the reference raises ``ValueError``).
    """


class UnsupportedPartError(UsageError):
    """A part has no block shape in the wire style it is being sent in.

    Attributes:
        part_type: ``image`` / ``file`` / ``audio``.
        mime_type: the part's mime type, when known.
        style: ``openai`` or ``anthropic``.
    """

    def __init__(self, part_type: str, mime_type: str | None, style: str) -> None:
        message = f'no "{style}" block shape for a {part_type} part'
        if mime_type:
            message += f" ({mime_type})"
        super().__init__(message)
        self.part_type = part_type
        self.mime_type = mime_type
        self.style = style


@dataclass(slots=True)
class ContentPart:
    """One content part; the field names are the wire keys.

    ``type`` is ``text`` (with ``text``) or ``image`` / ``file`` / ``audio`` (with ``mimeType``
    and exactly one of ``data`` — standard padded base64 — or ``url``; ``name`` optional).
    Build parts with `text`, `image`, `file`, `audio` or `part`, which validate them.

    Raises:
        ContentPartError: ``type`` is not one of the four.
    """

    type: str
    text: str | None = None
    mimeType: str | None = None
    data: str | None = None
    url: str | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if self.type not in PART_TYPES:
            raise ContentPartError(f'unknown content part type "{self.type}"')

    def to_dict(self) -> dict[str, Any]:
        """The canonical dict (see `to_dict`)."""
        return to_dict(self)


@runtime_checkable
class BinaryReadable(Protocol):
    """A binary file-like source: anything with ``read() -> bytes``."""

    def read(self) -> bytes: ...


PartSource: TypeAlias = "str | os.PathLike[str] | bytes | bytearray | memoryview | BinaryReadable"
"""What `image` / `file` / `audio` build a part from: a path, bytes, a binary file-like
object, a ``data:`` URL or an ``http(s)://`` URL."""


# -- the process-wide limit -----------------------------------------------------------------


def _check_limit(limit: Any) -> int | None:
    if limit is None:
        return None
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ContentPartError(f"max_part_bytes must be a positive int or None, got {limit!r}")
    return limit


def set_max_part_bytes(limit: int | None) -> None:
    """Set the process-wide ceiling on one part's decoded bytes (``None``: no ceiling).

    A client's ``max_part_bytes`` option, or a constructor's ``max_part_bytes=``, wins over it.
    """
    global _max_part_bytes
    _max_part_bytes = _check_limit(limit)


def get_max_part_bytes() -> int | None:
    """The process-wide ceiling on one part's decoded bytes (default 20 MiB); ``None`` = none."""
    return _max_part_bytes


# -- reading parts ------------------------------------------------------------------------


def _field(p: Any, key: str) -> Any:
    if isinstance(p, ContentPart):
        return getattr(p, key)
    return cast(Mapping[str, Any], p).get(key)


def decoded_len(p: ContentPart | Mapping[str, Any]) -> int:
    """The number of bytes ``data`` decodes to (0 for a URL or text part), without decoding."""
    data = _field(p, "data")
    if not isinstance(data, str) or not data:
        return 0
    padding = 2 if data.endswith("==") else 1 if data.endswith("=") else 0
    return len(data) * 3 // 4 - padding


def summarize(p: ContentPart | Mapping[str, Any]) -> dict[str, Any]:
    """``{type, mimeType, bytes}``: what may be logged or put in a metric about a part (never
    its data)."""
    return {"type": _field(p, "type"), "mimeType": _field(p, "mimeType"), "bytes": decoded_len(p)}


def estimate_tokens(p: ContentPart | Mapping[str, Any]) -> int:
    """A rough token count: ``len(text) // 4`` for text (at least 1), else ``decoded // 750``
    (at least 85)."""
    if _field(p, "type") == "text":
        return max(1, len(_field(p, "text") or "") // 4)
    return max(85, decoded_len(p) // 750)


def describe_part(p: ContentPart | Mapping[str, Any]) -> str:
    """``<type> (<mimeType>, <n> bytes)``, e.g. ``image (image/png, 67 bytes)``."""
    return f"{_field(p, 'type')} ({_field(p, 'mimeType')}, {decoded_len(p)} bytes)"


def placeholder_text(p: ContentPart | Mapping[str, Any], style: str) -> str:
    """The text sent instead of a part that cannot be sent in ``style``:
    ``[unsupported <type> part (<mimeType>, <n> bytes)]`` (COMPAT §6, byte-exact)."""
    del style  # the same text for every style; kept for the reference's signature
    return (
        f"[unsupported {_field(p, 'type')} part ({_field(p, 'mimeType')}, {decoded_len(p)} bytes)]"
    )


def is_part_dict(value: Any) -> bool:
    """True for ``{type: "text", text: str}`` or ``{type: image|file|audio, mimeType: str}``."""
    if not isinstance(value, dict):
        return False
    d = cast(dict[str, Any], value)
    kind = d.get("type")
    if kind == "text":
        return isinstance(d.get("text"), str)
    return kind in MEDIA_KINDS and isinstance(d.get("mimeType"), str)


# -- validation -----------------------------------------------------------------------------


def _size_problem(n: int, limit: int | None) -> str | None:
    if limit is not None and n > limit:
        return f"content part is {n} decoded bytes, over the maxPartBytes limit of {limit}"
    return None


def size_problem(p: ContentPart | Mapping[str, Any], limit: int | None) -> str | None:
    """The size error text for ``p`` under ``limit`` (``None`` when it fits)."""
    return _size_problem(decoded_len(p), limit)


def shape_problem(p: ContentPart | Mapping[str, Any], *, check_data: bool = True) -> str | None:
    """What is wrong with ``p``'s shape, or ``None``. ``check_data`` also decodes ``data``."""
    kind = _field(p, "type")
    if not isinstance(kind, str) or kind not in PART_TYPES:
        return f'unknown content part type "{kind}"'
    if kind == "text":
        return None if isinstance(_field(p, "text"), str) else "a text part needs text"
    mime = _field(p, "mimeType")
    if not isinstance(mime, str) or not mime:
        return f"a {kind} part needs a mimeType"
    if not _MIME.fullmatch(mime):
        return f'a {kind} part has a malformed mimeType "{mime[:100]}"'
    data, url, name = _field(p, "data"), _field(p, "url"), _field(p, "name")
    if data is not None and url is not None:
        return f"a {kind} part carries both data and url — exactly one is allowed"
    if data is None and url is None:
        return f"a {kind} part carries neither data nor url — exactly one is required"
    if data is not None:
        if not isinstance(data, str):
            return f"a {kind} part's data must be a base64 string, got {type(data).__name__}"
        if check_data and not _is_base64(data):
            return f"a {kind} part's data is not valid padded base64"
    if url is not None and (not isinstance(url, str) or not url):
        return f"a {kind} part's url must be a non-empty string"
    if name is not None and not isinstance(name, str):
        return f"a {kind} part's name must be a string, got {type(name).__name__}"
    return None


def _is_base64(data: str) -> bool:
    import base64  # here, not at the top: ``import toolnexus`` stays cheap
    import binascii

    if len(data) % 4:
        return False
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def validate(
    p: ContentPart | Mapping[str, Any],
    *,
    max_part_bytes: int | None = None,
    check_size: bool = True,
) -> None:
    """Check ``p``'s shape, its base64 and its size (``max_part_bytes``, else the process limit;
    not with ``check_size=False``).

    Raises:
        ContentPartError: the first problem, in the pinned wording.
    """
    if not isinstance(p, ContentPart | Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ContentPartError(f"not a content part: {type(p).__name__}")
    problem = shape_problem(p)
    if problem is None and check_size:
        limit = _check_limit(max_part_bytes) if max_part_bytes is not None else _max_part_bytes
        problem = size_problem(p, limit)
    if problem is not None:
        raise ContentPartError(problem)


def to_dict(p: ContentPart | Mapping[str, Any]) -> dict[str, Any]:
    """The canonical dict: ``{type: "text", text}`` or ``{type, mimeType, data|url, name?}``
    (``name`` only when truthy). Does not validate."""
    kind = _field(p, "type")
    if kind == "text":
        return {"type": "text", "text": _field(p, "text")}
    out: dict[str, Any] = {"type": kind, "mimeType": _field(p, "mimeType")}
    if _field(p, "data") is not None:
        out["data"] = _field(p, "data")
    else:
        out["url"] = _field(p, "url")
    name = _field(p, "name")
    if name:
        out["name"] = name
    return out


def from_dict(d: Mapping[str, Any]) -> ContentPart:
    """A validated `ContentPart` from a part dict (unknown keys are ignored)."""
    validate(d)
    return ContentPart(
        type=d["type"],
        text=d.get("text") if d["type"] == "text" else None,
        mimeType=d.get("mimeType"),
        data=d.get("data"),
        url=d.get("url"),
        name=d.get("name") or None,
    )


def normalize_parts(
    items: Iterable[Any], *, max_part_bytes: int | None = None, check_size: bool = True
) -> list[dict[str, Any]]:
    """Canonical, validated dicts from `ContentPart`\\s, part dicts and bare strings (text).

    Raises:
        ContentPartError: an item is not a part, or a part is malformed or over the limit.
    """
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, str):
            out.append({"type": "text", "text": item})
            continue
        if not isinstance(item, ContentPart | dict):
            raise ContentPartError(f"not a content part: {type(item).__name__}")
        part_ = cast("ContentPart | dict[str, Any]", item)
        validate(part_, max_part_bytes=max_part_bytes, check_size=check_size)
        out.append(to_dict(part_))
    return out


# -- constructors -----------------------------------------------------------------------------


def text(value: str) -> ContentPart:
    """A text part.

    Raises:
        ContentPartError: ``value`` is not a string.
    """
    p = ContentPart(type="text", text=value)
    validate(p)
    return p


def image(
    source: PartSource,
    *,
    mime_type: str | None = None,
    name: str | None = None,
    max_part_bytes: int | None = None,
) -> ContentPart:
    """An image part from a path, bytes, a binary file, a ``data:`` URL or an http(s) URL.

    >>> image(b"\\x89PNG...", mime_type="image/png").mimeType
    'image/png'
    """
    return _build("image", source, mime_type, name, max_part_bytes)


def file(
    source: PartSource,
    *,
    mime_type: str | None = None,
    name: str | None = None,
    max_part_bytes: int | None = None,
) -> ContentPart:
    """A file (document) part; sources as `image`."""
    return _build("file", source, mime_type, name, max_part_bytes)


def audio(
    source: PartSource,
    *,
    mime_type: str | None = None,
    name: str | None = None,
    max_part_bytes: int | None = None,
) -> ContentPart:
    """An audio part; sources as `image`."""
    return _build("audio", source, mime_type, name, max_part_bytes)


def part(
    *,
    type: str,
    mimeType: str | None = None,
    data: str | None = None,
    url: str | None = None,
    name: str | None = None,
    text: str | None = None,
) -> ContentPart:
    """A part from its wire fields, validated (size against the process limit)."""
    p = ContentPart(type=type, text=text, mimeType=mimeType, data=data, url=url, name=name)
    validate(p)
    return p


def _suffix(path: str) -> str:
    """The extension of ``path``'s last component, with its dot (``""`` when none)."""
    return os.path.splitext(os.path.basename(path.replace("\\", "/")))[1]


def _mime_for_extension(path: str) -> str:
    suffix = _suffix(path)
    if not suffix or suffix == ".":
        raise ContentPartError("file has no extension — pass an explicit mime_type")
    ext = suffix[1:].lower()
    found = MEDIA_TYPES.get(ext)
    if found is None:
        raise ContentPartError(f'unknown file extension ".{ext}" — pass an explicit mime_type')
    return found[0]


def _b64(raw: bytes | bytearray | memoryview) -> str:
    import base64

    return base64.b64encode(bytes(raw)).decode("ascii")


def _build(
    kind: PartType,
    source: Any,
    mime_type: str | None,
    name: str | None,
    max_part_bytes: int | None,
) -> ContentPart:
    data: str | None = None
    url: str | None = None
    if isinstance(source, bytes | bytearray | memoryview):
        if not mime_type:
            raise ContentPartError("mime_type is required when building a part from bytes")
        data = _b64(cast("bytes | bytearray | memoryview", source))
    elif isinstance(source, str) and source.startswith("data:"):
        data, found = _data_url(source)
        mime_type = mime_type or found
    elif isinstance(source, str) and source.startswith(("http://", "https://")):
        url = source
        if not mime_type:
            from urllib.parse import urlsplit

            ext = _suffix(urlsplit(source).path)[1:].lower()
            if ext not in MEDIA_TYPES:
                raise ContentPartError(
                    "mime_type is required for a URL whose extension is not in the media table"
                )
            mime_type = MEDIA_TYPES[ext][0]
    elif isinstance(source, str | os.PathLike):
        path = os.fspath(cast("str | os.PathLike[str]", source))
        mime_type = mime_type or _mime_for_extension(path)
        with open(path, "rb") as handle:
            data = _b64(handle.read())
        name = name or os.path.basename(path)
    elif callable(getattr(source, "read", None)):
        data, mime_type, name = _from_reader(source, mime_type, name)
    else:
        raise ContentPartError("a content part needs a path, bytes, or a URL")
    if not isinstance(mime_type, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ContentPartError(f"a {kind} part needs a mimeType")
    _check_kind(kind, mime_type)
    p = ContentPart(type=kind, mimeType=mime_type, data=data, url=url, name=name or None)
    validate(p, max_part_bytes=max_part_bytes)
    return p


def _from_reader(
    source: Any, mime_type: str | None, name: str | None
) -> tuple[str, str, str | None]:
    raw = source.read()
    if not isinstance(raw, bytes | bytearray | memoryview):
        raise ContentPartError(
            "a file-like content part source must be opened in binary mode — its read() "
            f"returned {type(raw).__name__}, not bytes"
        )
    source_name = getattr(source, "name", None)
    has_name = isinstance(source_name, str) and bool(source_name)
    if not mime_type:
        if not has_name:
            raise ContentPartError("mime_type is required for a file-like source with no name")
        mime_type = _mime_for_extension(cast(str, source_name))
    if has_name and not name:
        name = os.path.basename(cast(str, source_name))
    return _b64(cast("bytes | bytearray | memoryview", raw)), mime_type, name


def _data_url(url: str) -> tuple[str, str]:
    header, comma, payload = url[len("data:") :].partition(",")
    params = header.split(";")
    if not comma or params[-1].lower() != "base64":
        raise ContentPartError("only base64 data: URLs are supported")
    mime = params[0].strip()
    if not mime:
        raise ContentPartError("data: URL carries no mime type")
    return payload, mime


def _check_kind(kind: str, mime: str) -> None:
    """An image part carries an ``image/*`` type and an audio part an ``audio/*`` one."""
    if kind in ("image", "audio") and not mime.lower().startswith(f"{kind}/"):
        raise ContentPartError(f'an {kind} part needs an {kind}/* mimeType, got "{mime[:100]}"')
