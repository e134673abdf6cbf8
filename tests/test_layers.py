"""Imports point down (STYLE 16): no module of ``toolnexus`` reaches, by any path, back to itself.

Every module under ``src/toolnexus`` is parsed with `ast` (none is imported) and every import of
ours counts: at module level, inside a function (a deferred import that hides a cycle is still a
cycle) and under ``if TYPE_CHECKING:`` (a cycle the type checker sees is a cycle of the design).
Relative imports are resolved against the importing module's package; ``from pkg import name``
is an edge to the submodule ``pkg.name`` when there is one, else to ``pkg``. A package's
``__init__`` is a module of its own, the package's face: importing ``toolnexus.agents.runtime``
is an edge to that module, not to ``toolnexus.agents``.

The same graph a floor coarser — each top-level module and each subpackage one node, as in
DESIGN §4 — must run one way too, but for the edges named in `UPWARD`, each with its reason.

    .venv/bin/python -m pytest tests/test_layers.py -p no:cacheprovider
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import toolnexus

PACKAGE = Path(toolnexus.__file__).parent
ROOT = "toolnexus"

UPWARD: dict[tuple[str, str], str] = {
    ("toolnexus.agents.agent", "toolnexus.serve.app"): (
        "Agent.serve: COMPAT pins the public Agent (with serve) at toolnexus.agents and "
        "toolnexus.agents.surface, and serve/ runs agent runtimes, so the agents folder and "
        "serve/ point at each other a floor up; module by module the agent spec "
        "(agents/spec.py) stays below serve/ and only the public face agents/agent.py is above"
    ),
    ("toolnexus.agents.agent", "toolnexus.serve.server"): (
        "Agent.serve's return type, ServeHandle: the same face as the entry above"
    ),
}
"""Imports from a package to one that stands above it, allowed one by one (never a cycle of
modules: only the coarse graph has these). An entry that no longer exists fails the check."""


@dataclass(frozen=True, slots=True)
class Edge:
    """One import of ours: where it is and which names it takes."""

    source: str
    target: str
    line: int
    names: tuple[str, ...]
    at: str = ""
    """The module the import stands in, when ``source`` is a coarser node holding it."""

    def __str__(self) -> str:
        taken = f" ({', '.join(self.names)})" if self.names else ""
        return f"{self.source} -> {self.target}{taken}  [{self.at or self.source}:{self.line}]"


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its ``__init__.py``)."""
    found: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(node: ast.AST, here: str, is_package: bool) -> Iterator[tuple[str, str | None]]:
    """``(module, name)`` for each name an import statement takes (``name`` ``None`` for a
    plain ``import a.b``), with relative modules made absolute."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, None
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = here if is_package else here.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}" if base else package
        for alias in node.names:
            yield base, alias.name


def import_graph(known: Mapping[str, Path]) -> list[Edge]:
    """Every import of one of ``known``'s modules by another, at any depth of the source."""
    edges: list[Edge] = []
    for here, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            targets: dict[str, list[str]] = {}
            for module, name in _imported(node, here, is_package):
                if module != ROOT and not module.startswith(ROOT + "."):
                    continue
                sub = f"{module}.{name}" if name is not None else None
                target = sub if sub in known else module
                assert target in known, f"{here}:{getattr(node, 'lineno', 0)} imports {target}"
                if target != here:
                    targets.setdefault(target, []).extend([name] if name and sub != target else [])
            for target, names in targets.items():
                line = getattr(node, "lineno", 0)
                edges.append(Edge(here, target, line, tuple(names)))
    return edges


def strongly_connected(nodes: list[str], edges: list[tuple[str, str]]) -> list[list[str]]:
    """The groups of two or more nodes that reach each other (Tarjan), each sorted."""
    after: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        after[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(start: str) -> None:  # iterative: the graph is deeper than a test should recurse
        work = [(start, iter(after[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, todo = work[-1]
            step = next(todo, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(after[step])))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))

    for node in nodes:
        if node not in index:
            visit(node)
    return sorted(groups)


def one_loop(group: list[str], edges: list[Edge]) -> list[Edge]:
    """A shortest way round through ``group``'s first member, edge by edge."""
    inside = set(group)
    start = group[0]
    came: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for edge in edges:
                if edge.source != node or edge.target not in inside or edge.target in came:
                    continue
                came[edge.target] = edge
                if edge.target == start:
                    loop = [edge]
                    while loop[0].source != start:
                        loop.insert(0, came[loop[0].source])
                    return loop
                following.append(edge.target)
        frontier = following
    raise AssertionError(f"no way round {group}")  # a strongly connected group always has one


def report(groups: list[list[str]], edges: list[Edge]) -> str:
    lines: list[str] = []
    for group in groups:
        lines.append(f"circle of {len(group)}: {', '.join(group)}")
        lines += [f"    {edge}" for edge in one_loop(group, edges)]
    return "\n".join(lines)


def floor_of(module: str) -> str:
    """The coarse node of a module: the top-level module, or the top-level subpackage."""
    return ".".join(module.split(".")[:2])


KNOWN = modules()
EDGES = import_graph(KNOWN)


def test_no_module_imports_itself_back_by_any_path() -> None:
    groups = strongly_connected(sorted(KNOWN), [(e.source, e.target) for e in EDGES])
    assert groups == [], "import cycles (each shown once round):\n" + report(groups, EDGES)


def test_packages_and_top_level_modules_stand_one_above_another_but_for_the_named_edges() -> None:
    kept = [e for e in EDGES if (e.source, e.target) not in UPWARD]
    coarse = [
        Edge(floor_of(e.source), floor_of(e.target), e.line, (f"to {e.target}",), e.source)
        for e in kept
        if floor_of(e.source) != floor_of(e.target)
    ]
    nodes = sorted({floor_of(m) for m in KNOWN})
    groups = strongly_connected(nodes, [(e.source, e.target) for e in coarse])
    assert groups == [], "packages in a circle (an import each way):\n" + report(groups, coarse)


def test_every_named_upward_edge_still_exists() -> None:
    present = {(e.source, e.target) for e in EDGES}
    assert [pair for pair in UPWARD if pair not in present] == [], "remove it from UPWARD"


def test_the_graph_holds_deferred_and_type_checking_imports() -> None:
    pairs = {(e.source, e.target) for e in EDGES}
    # a function-level import (Toolkit.serve), a TYPE_CHECKING one, a module-level one
    assert ("toolnexus.toolkit", "toolnexus.serve.app") in pairs
    assert ("toolnexus.tracing", "toolnexus.llm.base") in pairs
    assert ("toolnexus.client", "toolnexus.loop.engine") in pairs
    # ``from pkg import name``: an edge to the submodule ``pkg.name``, else to the package's face
    assert ("toolnexus.loop.engine", "toolnexus.loop.edits") in pairs  # ``from . import edits``
    assert ("toolnexus.cli.inbox", "toolnexus.inbox") in pairs  # ``from ..inbox import inbox_app``
    assert len(KNOWN) > 150


def test_the_leaf_below_every_surface_imports_nothing_of_ours() -> None:
    # what the CLI and the inbox show passes through _visible: it must stand below both
    assert [str(e) for e in EDGES if e.source == "toolnexus._visible"] == []
    users = {e.source for e in EDGES if e.target == "toolnexus._visible"}
    assert {"toolnexus.cli.render", "toolnexus.cli.repl", "toolnexus.inbox.html"} <= users


def test_a_cycle_is_found_and_shown_round_once() -> None:
    edges = [
        Edge("a", "b", 1, ("B",)),
        Edge("b", "c", 2, ()),
        Edge("c", "a", 3, ("A",)),
        Edge("c", "d", 4, ()),
    ]
    groups = strongly_connected(["a", "b", "c", "d"], [(e.source, e.target) for e in edges])
    assert groups == [["a", "b", "c"]]
    assert report(groups, edges).splitlines() == [
        "circle of 3: a, b, c",
        "    a -> b (B)  [a:1]",
        "    b -> c  [b:2]",
        "    c -> a (A)  [c:3]",
    ]
    assert strongly_connected(["a", "b"], [("a", "b")]) == []
