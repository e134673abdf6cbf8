"""Who may call a served app: `load_callers` reads a callers file (or a ``{name: token}``
mapping) into what `toolnexus.security.BearerAuth` checks — each caller's name by the hex
sha256 of its token.

A callers file is the inbox's users file with ``callers`` for ``users`` and no ``kinds``::

    {"callers": [
        {"name": "billing", "token_sha256": "<64 hex digits>"},
        {"name": "support", "token": "a long random secret"}
    ]}

An entry is checked by the inbox's own reader (`toolnexus.inbox.auth.load_users`: the name,
exactly one of ``token`` / ``token_sha256``, the token's form), so the two files never drift
apart; what only callers need — at least one, no two with one name or one token, a token of
at least `toolnexus.security.MIN_TOKEN_LENGTH` characters — is checked here, each with a
message that names the entry.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from ..errors import UsageError
from ..inbox.auth import InboxUser, load_users
from ..security import MIN_TOKEN_LENGTH

__all__ = ["load_callers"]

_KEYS = frozenset({"name", "token", "token_sha256"})


def load_callers(callers: object) -> dict[str, str]:
    """Each caller's name by the hex sha256 of its token.

    Args:
        callers: the path of a callers file (see the module docs), a ``{name: token}``
            mapping, or a list of caller entries.

    Raises:
        UsageError: the file cannot be read or is not JSON; no callers; an entry that is
            not an object, has unknown keys, a bad name or token, a token shorter than
            `MIN_TOKEN_LENGTH`; two callers with one name or one token.
    """
    where = "callers"
    if isinstance(callers, str | os.PathLike):
        where = f"the callers file {os.fspath(cast(Any, callers))!r}"
        entries = _read(Path(cast(Any, callers)), where)
    elif isinstance(callers, Mapping):
        pairs = cast(Mapping[Any, Any], callers).items()
        entries: list[Any] = [{"name": name, "token": token} for name, token in pairs]
    elif isinstance(callers, list | tuple):
        entries = list(cast(list[Any], callers))
    else:
        raise UsageError(
            "callers must be a callers file path, a {name: token} mapping or a list, got "
            f"{type(callers).__name__}"
        )
    if not entries:
        raise UsageError(f"{where}: no callers (give at least one)")
    names: dict[str, str] = {}
    by_digest: dict[str, str] = {}
    for index, entry in enumerate(entries):
        name, digest = _caller(entry, f"{where}: caller #{index + 1}")
        if name in names.values():
            raise UsageError(f"{where}: two callers are named {name!r}")
        if digest in by_digest:
            raise UsageError(f"{where}: callers {by_digest[digest]!r} and {name!r} share a token")
        names[digest] = by_digest[digest] = name
    return names


def _read(path: Path, where: str) -> list[Any]:
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read {where}: {exc}") from exc
    except ValueError as exc:
        raise UsageError(f"{where} is not JSON: {exc}") from exc
    listed = cast(Mapping[str, Any], raw).get("callers") if isinstance(raw, Mapping) else None
    if not isinstance(listed, list):
        raise UsageError(f'{where} must hold {{"callers": [...]}}')
    return cast(list[Any], listed)


def _caller(entry: object, where: str) -> tuple[str, str]:
    """``(name, token sha256)`` of one entry, checked by the inbox's reader."""
    if not isinstance(entry, Mapping):
        raise UsageError(f"{where} must be an object, got {type(entry).__name__}")
    item = dict(cast(Mapping[str, Any], entry))
    unknown = sorted(set(item) - _KEYS)
    if unknown:
        raise UsageError(f"{where}: unknown keys {unknown} (a caller has name and token)")
    try:
        load_users([item])  # the users file's rules for one entry
    except UsageError as exc:
        raise UsageError(f"{where}: {exc}") from None
    name: str = item["name"]
    token = item.get("token")
    if token is None:
        return name, str(item["token_sha256"]).lower()
    if len(token) < MIN_TOKEN_LENGTH:
        raise UsageError(
            f"{where} ({name!r}): the token is shorter than {MIN_TOKEN_LENGTH} characters; "
            "use a long random secret"
        )
    return name, InboxUser.with_token(name, token).token_sha256
