"""A request id as an operator types it: whole, or its first characters.

Every command that takes a request id resolves it here, once, over the store's ids
(`InboxIndex.find_request_ids`, an index range on every backend): an id the store holds is
itself (even when it also begins other ids: ``req-1`` beside ``req-10``); otherwise a
beginning that exactly one id has is that id; one that several have is a usage error naming
them; one that none has is the command's unknown-request error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ..errors import UnknownRequest, UsageError

if TYPE_CHECKING:  # the store modules load with the command that runs, not for ``--help``
    from ..stores.inbox_index import InboxIndex
    from ..stores.requests import RunStore

__all__ = ["SHOWN", "index_of", "resolve_id"]

SHOWN = 8
"""How many of the ids a prefix is ambiguous between are named."""


async def resolve_id(runs: RunStore, given: str, *, unknown: str | None = None) -> str:
    """The id of the one request ``given`` names (whole, or as a unique prefix).

    Args:
        runs: the store (an `InboxIndex` too: every built-in store is).
        given: what the operator typed.
        unknown: the `UnknownRequest` message when no id begins with ``given`` (default:
            ``no request "…" in the store``).

    Raises:
        UnknownRequest: no id begins with ``given``.
        UsageError: several do (the message names them), or ``given`` is empty.
    """
    index = index_of(runs)
    found = await index.find_request_ids(given, limit=SHOWN + 1)
    if given in found or len(found) == 1:
        return given if given in found else found[0]
    if not found:
        raise UnknownRequest(unknown or f'no request "{given}" in the store')
    named = ", ".join(found[:SHOWN])
    more = " and more" if len(found) > SHOWN else ""
    raise UsageError(
        f'"{given}" begins more than one request id: {named}{more}; type more of the id'
    )


def index_of(runs: RunStore) -> InboxIndex:
    """``runs`` as the `InboxIndex` it is (every built-in store is).

    Raises:
        UsageError: a store that keeps no index of its requests.
    """
    from ..stores.inbox_index import InboxIndex

    if not isinstance(runs, InboxIndex):
        raise UsageError(f"the store {type(runs).__name__} keeps no index of its requests")
    return cast(InboxIndex, runs)
