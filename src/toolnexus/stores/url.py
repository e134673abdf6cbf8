"""`resolve_store`: turn the client's ``store=`` option into a `ConversationStore`.

Accepted forms::

    None | "memory"                 an InMemoryConversationStore (process lifetime)
    "sqlite:///relative/state.db"   a SqliteStore on a path relative to the working directory
    "sqlite:////abs/state.db"       a SqliteStore on an absolute path
    "sqlite://" | "sqlite:///:memory:"  a SqliteStore on a private in-memory database
    "postgresql://…" | "postgres://…"   a PostgresStore (needs the ``postgres`` extra)
    an object with async get/save[/delete]  used as it is

The SQLite forms follow SQLAlchemy's spelling. The path after ``sqlite:///`` is taken literally
(no percent-decoding); query strings are refused so that options can be added later without
changing what an existing URL means. A Postgres URL is handed to libpq as it is (its query
options, e.g. ``?options=-csearch_path%3Dapp``, included).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .._types import Message
from ..errors import UsageError
from .base import ConversationStore
from .memory import InMemoryConversationStore

__all__ = ["resolve_store"]

_FORMS = (
    'None, "memory", "sqlite:///relative/path.db", "sqlite:////absolute/path.db", '
    '"sqlite://" (in-memory SQLite), "postgresql://…", or an object with async '
    "get(id) and save(id, messages) methods"
)


def resolve_store(spec: object) -> ConversationStore:
    """Resolve a store option to a `ConversationStore`.

    Example:
        >>> resolve_store("sqlite:///state.db")
        SqliteStore('state.db')
        >>> type(resolve_store(None)).__name__
        'InMemoryConversationStore'

    Args:
        spec: ``None``, a store URL, or a store object (see the module docstring).

    Raises:
        UsageError: the spec is none of the accepted forms.
        ImportError: a Postgres URL without the ``postgres`` extra installed.
    """
    if spec is None or spec == "memory":
        return InMemoryConversationStore()
    if isinstance(spec, str):
        return _from_url(spec)
    get = getattr(spec, "get", None)
    save = getattr(spec, "save", None)
    if callable(get) and callable(save):
        for name, method in (("get", get), ("save", save)):
            if _plainly_sync(method):
                raise UsageError(
                    f"store {type(spec).__name__}.{name} must be async (an `async def`)"
                )
        delete = getattr(spec, "delete", None)
        if callable(delete):
            return spec  # pyright: ignore[reportReturnType]
        return _WithoutDelete(spec, get, save)
    raise UsageError(f"store must be one of: {_FORMS}; got {type(spec).__name__}")


def _from_url(url: str) -> ConversationStore:
    scheme, sep, rest = url.partition("://")
    if scheme in ("postgresql", "postgres") and sep:
        from .postgres import PostgresStore  # psycopg is imported only when asked for

        return PostgresStore(url)
    if scheme != "sqlite" or not sep:
        raise UsageError(f"store must be one of: {_FORMS}; got {url!r}")
    if rest == "":
        from .sqlite import SqliteStore

        return SqliteStore(":memory:")
    if "?" in rest:
        raise UsageError(f"sqlite store URLs take no query options yet: {url!r}")
    if not rest.startswith("/"):
        raise UsageError(
            f"a sqlite URL has no host: write sqlite:///relative.db or sqlite:////abs.db, "
            f"got {url!r}"
        )
    path = rest[1:]
    if not path:
        raise UsageError(f"the sqlite URL names no file: {url!r}")
    from .sqlite import SqliteStore

    return SqliteStore(path)


def _plainly_sync(method: Callable[..., Any]) -> bool:
    """True for a plain function or method that is clearly not a coroutine function."""
    is_plain = inspect.isfunction(method) or inspect.ismethod(method)
    return is_plain and not inspect.iscoroutinefunction(method)


class _WithoutDelete:
    """Adapts a host store that has ``get``/``save`` but no ``delete``."""

    __slots__ = ("_get", "_inner", "_save")

    def __init__(self, inner: object, get: Callable[..., Any], save: Callable[..., Any]) -> None:
        self._inner = inner
        self._get = get
        self._save = save

    async def get(self, id: str) -> list[Message] | None:
        return await self._get(id)

    async def save(self, id: str, messages: list[Message]) -> None:
        await self._save(id, messages)

    async def delete(self, id: str) -> bool:
        raise UsageError(f"store {type(self._inner).__name__} has no delete method")

    def __repr__(self) -> str:
        return f"{self._inner!r} (without delete)"
