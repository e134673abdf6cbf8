"""Re-export modules whose names load their defining module on first use (PEP 562).

A module that re-exports many names (the package's ``__init__``, `toolnexus.client`,
`toolnexus.serve`) keeps its ``__all__`` and its ``if TYPE_CHECKING:`` imports (what type
checkers read) and gets its module ``__getattr__`` / ``__dir__`` from `lazy_names`::

    if not TYPE_CHECKING:  # unseen by type checkers: a misspelt name stays a static error
        __getattr__, __dir__ = lazy_names(globals(), {"Client": ".client"})

The first access imports the defining module and stores the value in the re-exporting module's
namespace, so later accesses are plain attribute reads and every path yields the one object
its module defines (identity, ``isinstance`` and pickling are those of the defining module).
It imports nothing at run time itself: it is on the path of ``import toolnexus``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # ``typing.TYPE_CHECKING`` without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping


def lazy_names(
    namespace: dict[str, object],
    homes: Mapping[str, str],
    *,
    submodules: Collection[str] = (),
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``(__getattr__, __dir__)`` pair for the module whose ``globals()`` is ``namespace``.

    ``homes`` maps each lazy name to the module defining it, relative to the re-exporting
    module's package (``".stores.sqlite"``). ``submodules`` are the package's own submodules
    that a bare ``import`` of it should also reach as attributes (``toolnexus.agents``).
    Any other name is the usual ``AttributeError`` naming the module.
    """
    module_name = str(namespace["__name__"])
    package = str(namespace["__package__"])

    def __getattr__(name: str) -> object:
        from importlib import import_module

        home = homes.get(name)
        if home is None:
            if name in submodules:
                return import_module(f".{name}", module_name)
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}", name=name)
        value = getattr(import_module(home, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(homes))

    return __getattr__, __dir__
