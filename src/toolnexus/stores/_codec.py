"""The one JSON encoding every conversation store uses, and its argument checks.

Every backend stores a transcript as compact JSON text, so a transcript means the same thing
in memory, in SQLite and in Postgres: what one store accepts, the others accept, and what comes
back is plain JSON data (tuples come back as lists, and so on). Encoding is the caller's side of
the boundary (bad input is a `UsageError`); decoding is the store's (bad stored data is a
`StoreError`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import cast

from .._types import Message
from ..errors import StoreError, UsageError

__all__ = ["check_id", "decode_messages", "encode_messages"]

_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def check_id(id: object) -> str:
    """Return ``id`` when it is a usable conversation id, else raise `UsageError`."""
    if not isinstance(id, str):
        raise UsageError(f"a conversation id must be a string, got {type(id).__name__}")
    if not id.isascii():
        _check_unicode(id, "the conversation id")
    return id


def encode_messages(messages: object) -> str:
    """Encode a transcript (a list of message dicts) as compact JSON text.

    Raises:
        UsageError: ``messages`` is not a list of dicts, or holds something JSON cannot carry
            (NaN, infinities, sets, objects, cycles, lone surrogates).
    """
    if not isinstance(messages, list | tuple):
        raise UsageError(f"messages must be a list of dicts, got {type(messages).__name__}")
    for index, message in enumerate(cast("Sequence[object]", messages)):
        if not isinstance(message, dict):
            raise UsageError(f"messages[{index}] must be a dict, got {type(message).__name__}")
    try:
        text = _encoder.encode(messages)
    except (TypeError, ValueError, RecursionError) as exc:
        raise UsageError(f"messages must be JSON-serialisable: {exc}") from exc
    if not text.isascii():
        _check_unicode(text, "messages")
    return text


def decode_messages(text: object, id: str, where: str) -> list[Message]:
    """Decode stored transcript text back into a list of message dicts.

    Args:
        text: the stored JSON text (anything else is reported as corrupt).
        id: the conversation id, for the error message.
        where: the store's description (e.g. its path), for the error message.

    Raises:
        StoreError: the stored text is not a JSON array of objects (hand-edited, truncated).
    """
    try:
        value: object = json.loads(text)  # pyright: ignore[reportArgumentType]
    except (TypeError, ValueError, RecursionError) as exc:
        raise StoreError(
            f"conversation {id!r} in {where} holds invalid JSON ({exc}); "
            "the stored row was left as it is"
        ) from exc
    items = cast("list[object]", value) if isinstance(value, list) else None
    if items is None or not all(isinstance(item, dict) for item in items):
        raise StoreError(
            f"conversation {id!r} in {where} is not a JSON array of message objects; "
            "the stored row was left as it is"
        )
    return cast("list[Message]", items)


def _check_unicode(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise UsageError(f"{what} must be valid Unicode text: {exc.reason}") from exc
