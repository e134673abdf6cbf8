"""What the store commands share: opening a run store from a URL, building an `Answer` from
the flags, reading ages, and printing records."""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any, cast

from .._ages import age_seconds
from ..errors import UsageError

if TYPE_CHECKING:  # the records load with the command that uses them, not for ``--help``
    from ..intake import Reply
    from ..stores.requests import AnswerRecord, RunStore

__all__ = ["open_store", "parse_age", "record_json", "reply_from_flags"]


@contextlib.asynccontextmanager
async def open_store(url: str, *, create: bool = False) -> AsyncGenerator[RunStore]:
    """The durable run store at ``url``, closed afterwards.

    A SQLite file that does not exist is refused, not created, unless ``create``: the commands
    that only read and answer would make an empty database of a mistyped path. (The inbox, a
    server that waits for runs to halt, creates it.)

    Raises:
        UsageError: ``url`` names no durable store (``memory`` would forget at once), or a
            SQLite file that does not exist.
        ImportError: a Postgres URL without the ``postgres`` extra.
    """
    from ..stores.url import resolve_store

    if not url or url.strip() == "memory":
        raise UsageError(
            "--store needs a durable store: sqlite:///path.db or postgresql://user@host/db"
        )
    store: Any = resolve_store(url)
    if not callable(getattr(store, "post_answer", None)):
        raise UsageError(f"the store at {url!r} keeps no halted runs")
    path = getattr(store, "path", None)
    if not create and isinstance(path, str) and path != ":memory:" and not _is_file(path):
        # Opening would create an empty database: a typo in --store would list nothing,
        # call every request unknown and leave a stray file behind.
        raise UsageError(
            f"no store at {url!r}: the SQLite file {path!r} does not exist (check the path; "
            "the app that halts the runs creates it)"
        )
    try:
        yield store
    finally:
        close = getattr(store, "aclose", None)
        if close is not None:
            await close()


def _is_file(path: str) -> bool:
    """One stat at a command's start, before the store is opened (nothing else to wait for)."""
    return os.path.isfile(path)


def reply_from_flags(
    *,
    approve: bool,
    decline: bool,
    reason: str | None,
    data: str | None,
    text: str | None,
    args: str | None = None,
) -> Reply:
    """The reply the ``answer`` command's flags carry (exactly one of them); the answer intake
    (`toolnexus.intake`) makes the request's `Answer` of it.

    ``--approve --args JSON`` approves with edited arguments (docs/suspension.md).

    Raises:
        UsageError: none or several of ``--approve``/``--decline``/``--data``/``--text``, a
            ``--reason`` without ``--decline``, ``--args`` without ``--approve``, or
            ``--data``/``--args`` that is not a JSON object.
    """
    from ..intake import Approve, Data, Decline, Text

    given = [
        name
        for name, on in (
            ("--approve", approve),
            ("--decline", decline),
            ("--data", data is not None),
            ("--text", text is not None),
        )
        if on
    ]
    if len(given) != 1:
        which = " and ".join(given) if given else "none"
        raise UsageError(
            f"give exactly one of --approve, --decline, --data or --text (got {which})"
        )
    if reason is not None and not decline:
        raise UsageError("--reason goes with --decline")
    if args is not None and not approve:
        raise UsageError(f"--args goes with --approve, not with {given[0]}")
    if approve:
        return Approve(arguments=_json_object(args, "--args") if args is not None else None)
    if decline:
        return Decline(reason)
    if text is not None:
        return Text(text)
    return Data(_json_object(data or "", "--data"))


def _json_object(text: str, flag: str) -> dict[str, Any]:
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"{flag} is not JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise UsageError(f"{flag} must be a JSON object")
    return cast(dict[str, Any], parsed)


def parse_age(text: str, flag: str = "--older-than") -> float:
    """Seconds in an age such as ``90s``, ``15m``, ``12h``, ``30d`` or ``2w`` (bare: seconds),
    read as the inbox reads its age filter (`toolnexus._ages`).

    Raises:
        UsageError: anything else (the message names ``flag``).
    """
    seconds = age_seconds(text)
    if seconds is None:
        raise UsageError(f"{flag} takes an age such as 30d, 12h or 15m, got {text!r}")
    return seconds


def record_json(record: AnswerRecord) -> dict[str, Any]:
    """An answer record as JSON-safe data. A claim's ``lease_until`` is a number, or ``null``
    with ``lease_forever`` true for a request held until an operator acts (JSON has no
    infinity)."""
    lease = record.lease_until
    forever = lease is not None and math.isinf(lease)
    return {
        "request_id": record.request_id,
        "status": record.status,
        "answer": record.answer.to_dict(),
        "answered_at": record.answered_at,
        "answered_by": record.answered_by,
        "digest": record.digest,
        "original": record.original,
        "problem": record.problem,
        "flagged_at": record.flagged_at,
        "settled_at": record.settled_at,
        "holder": record.holder,
        "lease_until": None if forever else lease,
        "lease_forever": forever,
    }
