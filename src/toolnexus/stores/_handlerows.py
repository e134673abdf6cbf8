"""How the agent runtime's handle rows become SQL rows and back (SQLite and Postgres).

The runtime store keeps one row per handle, keyed by ``(runtime id, handle id)``, holding the
handle's row (state, inbox, budget, result, pending request, checkpoint, …) as compact JSON
text. A save writes only the rows it is given, so its cost follows what changed, not the size
of the tree.

Encoding is the caller's side of the boundary (bad input is a `UsageError`); decoding is the
store's (a row hand-edited into garbage is a `StoreError` naming the runtime and the handle,
and the row is left as it is).

Before the native tables, a runtime's rows were one document in the conversation store, under
the reserved id ``LEGACY_PREFIX + runtime_id``; `legacy_rows` reads such a document so that the
migrations can move it into the table.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from ..errors import StoreError, UsageError

__all__ = [
    "LEGACY_PREFIX",
    "check_runtime_id",
    "decode_handle_row",
    "encode_handle_rows",
    "legacy_rows",
]

LEGACY_PREFIX = "__toolnexus_runtime__/"
"""The conversation-id prefix under which a runtime's handle table is one document."""

_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def check_runtime_id(value: object) -> str:
    """Return ``value`` when it is a usable runtime id, else raise `UsageError`."""
    if not isinstance(value, str):
        raise UsageError(f"a runtime id must be a string, got {type(value).__name__}")
    return _checked(value, "the runtime id")


def encode_handle_rows(rows: object) -> list[tuple[str, str]]:
    """``(handle id, JSON text)`` per row; a handle given twice keeps its last row.

    Raises:
        UsageError: ``rows`` is not a list of dicts each with a string ``"id"``, or a row
            holds something JSON cannot carry (NaN, sets, objects, cycles, lone surrogates).
    """
    if not isinstance(rows, list | tuple):
        raise UsageError(f"handle rows must be a list of dicts, got {type(rows).__name__}")
    encoded: dict[str, str] = {}
    for index, row in enumerate(cast("Sequence[object]", rows)):
        if not isinstance(row, dict):
            raise UsageError(f"handle rows[{index}] must be a dict, got {type(row).__name__}")
        handle_id = cast(dict[str, Any], row).get("id")
        if not isinstance(handle_id, str):
            raise UsageError(f'handle rows[{index}] needs a string "id", got {handle_id!r}')
        try:
            text = _encoder.encode(row)
        except (TypeError, ValueError, RecursionError) as exc:
            raise UsageError(f"handle row {handle_id!r} must be JSON-serialisable: {exc}") from exc
        encoded.pop(handle_id, None)
        encoded[_checked(handle_id, "a handle id")] = _checked(text, f"handle row {handle_id!r}")
    return list(encoded.items())


def decode_handle_row(runtime_id: str, handle_id: str, text: object, where: str) -> dict[str, Any]:
    """Decode one stored handle row.

    Raises:
        StoreError: the text is not a JSON object whose ``"id"`` is ``handle_id``.
    """
    try:
        value: object = json.loads(text)  # pyright: ignore[reportArgumentType]
    except (TypeError, ValueError, RecursionError) as exc:
        raise StoreError(
            f"the stored row of handle {handle_id!r} of runtime {runtime_id!r} in {where} "
            f"holds invalid JSON ({exc}); the stored row was left as it is"
        ) from exc
    if not isinstance(value, dict) or cast(dict[str, Any], value).get("id") != handle_id:
        raise StoreError(
            f"the stored row of handle {handle_id!r} of runtime {runtime_id!r} in {where} is "
            f'not a JSON object with "id" {handle_id!r}; the stored row was left as it is'
        )
    return cast(dict[str, Any], value)


def legacy_rows(text: object) -> list[tuple[str, str]] | None:
    """The ``(handle id, JSON text)`` rows of a legacy table document; ``None`` if unreadable."""
    try:
        value: object = json.loads(text)  # pyright: ignore[reportArgumentType]
    except (TypeError, ValueError, RecursionError):
        return None
    if not isinstance(value, list):
        return None
    try:
        return encode_handle_rows(cast("list[object]", value))
    except UsageError:
        return None


def _checked(text: str, what: str) -> str:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise UsageError(f"{what} must be valid Unicode text: {exc.reason}") from exc
    return text
