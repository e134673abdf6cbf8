"""Run the toolnexus 0.21 package's own tests against this library (the drop-in measurement).

Downloads the 0.21.0 sdist from PyPI (``pip download``; or takes ``--sdist PATH``), unpacks its
``tests/`` into a scratch directory outside the repository, in the upstream layout
(``<scratch>/python/tests``), and runs them with pytest in this interpreter, so ``import
toolnexus`` is ours: the package's ``src/`` is never put on the path, and nothing of it is copied
into the repository.

The tests also read files of the upstream repository that the sdist lacks: the language-neutral
fixtures (``examples/subagent-*/fixture.json``, ``examples/persona-agent``, ``examples/media``,
``examples/skills``, ``examples/judge``, ...) and ``spikes/issues/93``. ``--upstream DIR`` names a
folder holding them (its entries are copied next to ``python/``); without it they are fetched
from GitHub (``--upstream-ref``, default ``main``) where the network allows, else the tests that
read them fail and are counted as failures.

Left out: only the tests that reach a private name of the package (``_collect_parts``,
``client._post``, ...), found by reading each test module's syntax tree: a module-level or local
``from toolnexus... import _x``, an attribute ``mod._x`` of an imported toolnexus module, or
``setattr(mod, "_x", ...)``, followed through the module's helper functions and fixtures. A
module-level private import is replaced by a stub so the module's other tests still run. A test
module that does not import (a missing module of ours) counts each of its tests as failed.

    .venv/bin/python scripts/ref021_suite.py                      # download, run, summarise
    .venv/bin/python scripts/ref021_suite.py --sdist /tmp/ref021/toolnexus-0.21.0.tar.gz \\
        --upstream /tmp/ref021/upstream --failures                # and list each failure
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

VERSION = "0.21.0"
RAW = "https://raw.githubusercontent.com/muthuishere/toolnexus/{ref}/{path}"
UPSTREAM_FILES = [
    *(f"examples/subagent-{n}/fixture.json" for n in
      ("budgets", "durable-resume", "escalation", "fanout", "lifecycle")),
    "examples/persona-agent/fixture.json",
    *(f"examples/persona-agent/ava/{n}.md" for n in ("HEARTBEAT", "MEMORY", "SOUL", "USER")),
    "examples/agent-hooks/fixture.json",
    "examples/compaction/fixture.json",
    "examples/media/fixture.png",
    "examples/media/fixture.png.base64",
    "examples/mcp.json",
    "examples/skills/hello-world/SKILL.md",
    "examples/skills/hello-world/scripts/greet.sh",
    *(f"examples/judge/{n}.json" for n in
      ("base", "decisions", "degenerate", "hardened", "near-uniform", "numbers", "wide")),
    "examples/judge/adapters/gate-cases.json",
    "examples/judge/adapters/state-cases.json",
    *(f"examples/judge/batteries/{n}.json" for n in
      ("agent-router", "content-guard", "is-complete", "model-router", "skill-relevance",
       "tool-guard", "tool-relevance", "tool-result-filter", "user-text-cases")),
    *(f"spikes/issues/93/fixtures/{n}/SKILL.md" for n in
      ("anchors", "broken-flow", "colon-space", "colon-space-quoted", "colon-space-single",
       "list-value", "nested-map", "no-name", "url-colon")),
    "spikes/issues/93/probe/.claude-plugin/plugin.json",
    *(f"spikes/issues/93/probe/skills/{n}/SKILL.md" for n in
      ("block-folded", "block-literal", "broken-tab", "broken-unclosed", "hash-inline",
       "list-block", "no-frontmatter", "p-dup-keys", "p-open-brace", "p-two-colons",
       "p-undef-alias", "plain")),
]  # fmt: skip
"""The upstream files the 0.21 tests read (fetched when ``--upstream`` is not given)."""


def fetch_sdist(into: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", f"toolnexus=={VERSION}", "--no-deps",
         "--no-binary", ":all:", "-q", "-d", str(into)],
        check=True,
    )  # fmt: skip
    return next(into.glob(f"toolnexus-{VERSION}.tar.gz"))


def unpack_tests(sdist: Path, scratch: Path) -> Path:
    """``scratch/python/tests``, the upstream layout the tests find their fixtures from."""
    prefix = f"toolnexus-{VERSION}/"
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(prefix + "tests/")]
        for m in members:
            m.name = "python/" + m.name[len(prefix) :]
        tar.extractall(scratch, members=members, filter="data")
    return scratch / "python" / "tests"


def place_upstream(scratch: Path, upstream: Path | None, ref: str) -> str:
    """Put the upstream files next to ``python/``; say where they came from."""
    if upstream is not None:
        for entry in upstream.iterdir():
            copy = shutil.copytree if entry.is_dir() else shutil.copy2
            copy(entry, scratch / entry.name)
        return f"upstream files from {upstream}"
    missing = 0
    for path in UPSTREAM_FILES:
        target = scratch / path
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with urllib.request.urlopen(RAW.format(ref=ref, path=path), timeout=20) as r:
                target.write_bytes(r.read())
        except OSError:
            missing += 1
    if missing:
        return f"upstream files: {missing} of {len(UPSTREAM_FILES)} could not be fetched"
    return f"upstream files fetched from GitHub at {ref}"


def _toolnexus_aliases(tree: ast.Module) -> set[str]:
    """Names bound to a toolnexus module by ``import toolnexus.x as y``."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "toolnexus":
                    names.add(a.asname or a.name.split(".")[0])
    return names


def _private_imports(node: ast.AST) -> list[str]:
    found: list[str] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.ImportFrom) and (sub.module or "").split(".")[0] == "toolnexus":
            found += [a.asname or a.name for a in sub.names if a.name.startswith("_")]
    return found


def _reaches_private(fn: ast.AST, aliases: set[str], stubbed: set[str]) -> bool:
    if _private_imports(fn):
        return True
    for sub in ast.walk(fn):
        if isinstance(sub, ast.Name) and sub.id in stubbed:
            return True
        if (
            isinstance(sub, ast.Attribute)
            and sub.attr.startswith("_")
            and not sub.attr.startswith("__")
            and isinstance(sub.value, ast.Name)
            and sub.value.id in aliases
        ):
            return True
        if (
            isinstance(sub, ast.Call)
            and len(sub.args) >= 2
            and isinstance(sub.args[0], ast.Name)
            and sub.args[0].id in aliases
            and isinstance(sub.args[1], ast.Constant)
            and str(sub.args[1].value).startswith("_")
        ):
            return True
    return False


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    out: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef):
                    out[f"{node.name}::{sub.name}"] = sub
    return out


def _is_test(key: str) -> bool:
    return key.split("::")[-1].startswith("test")


def prepare(path: Path) -> list[str]:
    """Stub the module-level private imports of ``path``; return the node ids to leave out."""
    source = path.read_text()
    tree = ast.parse(source)
    aliases = _toolnexus_aliases(tree)
    stubbed: set[str] = set()
    lines = source.splitlines()
    for node in tree.body:
        names = _private_imports(node) if isinstance(node, ast.ImportFrom) else []
        if names:
            stubbed.update(names)
            end = node.end_lineno or node.lineno
            stub = "; ".join(f"{n} = None" for n in names) + "  # private name, left out"
            lines[node.lineno - 1 : end] = [stub] + [""] * (end - node.lineno)
    if stubbed:
        path.write_text("\n".join(lines) + "\n")
    fns = _functions(tree)
    bad = {k for k, fn in fns.items() if _reaches_private(fn, aliases, stubbed)}
    changed = True
    while changed:  # follow helpers and fixtures: a function that calls or requests a bad one
        changed = False
        for key, fn in fns.items():
            if key in bad:
                continue
            used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
            used |= {a.arg for a in fn.args.args}
            if any(name in used for name in bad if "::" not in name):
                bad.add(key)
                changed = True
    return [f"{path.name}::{key}" for key in sorted(bad) if _is_test(key)]


def count_tests(path: Path, left_out: set[str]) -> int:
    """The test functions of a module (for one that does not import), less those left out."""
    keys = [k for k in _functions(ast.parse(path.read_text())) if _is_test(k)]
    return sum(f"{path.name}::{k}" not in left_out for k in keys)


def run(tests: Path, left_out: list[str], junit: Path) -> int:
    """Run pytest; return how many tests it deselected (the left-out ones, parameters each)."""
    (tests.parent / "pytest.ini").write_text(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
    )
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--timeout", "60",
            "--continue-on-collection-errors", f"--junitxml={junit}", "tests"]  # fmt: skip
    for node in left_out:
        args += ["--deselect", f"tests/{node}"]
    done = subprocess.run(args, cwd=tests.parent, capture_output=True, text=True, check=False)
    found = re.search(r"(\d+) deselected", done.stdout)
    return int(found.group(1)) if found else 0


def summarise(junit: Path, tests: Path, left_out: list[str], deselected: int, show: bool) -> None:
    root = ET.parse(junit).getroot()
    outcome: Counter[str] = Counter()
    failing: Counter[str] = Counter()
    names: list[str] = []
    for case in root.iter("testcase"):
        kinds = {child.tag for child in case}
        module = case.get("classname", "").split(".")[-1]
        if not module:  # a module that does not import: each of its tests counts as failed
            module = case.get("name", "").split(".")[-1]
            n = count_tests(tests / f"{module}.py", set(left_out))
            outcome["failed"] += n
            failing[f"{module} (does not import)"] += n
            names.append(f"{module}: does not import ({n} tests)")
        elif "failure" in kinds or "error" in kinds:
            outcome["failed"] += 1
            failing[module] += 1
            names.append(f"{module}::{case.get('name')}")
        elif "skipped" in kinds:
            outcome["skipped"] += 1
        else:
            outcome["passed"] += 1
    ran = sum(outcome.values())
    counted = ran - outcome["skipped"]
    print(f"collected {ran + deselected}, left out (private names) {deselected}, run {ran}")
    print(
        f"passed {outcome['passed']}, failed {outcome['failed']}, skipped {outcome['skipped']}"
        f" — {100 * outcome['passed'] / max(counted, 1):.1f} % of those run and not skipped"
    )
    for module, n in sorted(failing.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {n:4d}  {module}")
    if show:
        print("failing:", *sorted(names), sep="\n  ")
        print("left out:", *left_out, sep="\n  ")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sdist", type=Path, help="the toolnexus 0.21.0 sdist (else download)")
    parser.add_argument("--upstream", type=Path, help="a folder with the upstream files")
    parser.add_argument("--upstream-ref", default="main", help="the git ref to fetch them at")
    parser.add_argument("--failures", action="store_true", help="list every failing test")
    opts = parser.parse_args()
    import toolnexus

    with tempfile.TemporaryDirectory(prefix="ref021-") as tmp:
        scratch = Path(tmp)
        sdist = opts.sdist or fetch_sdist(scratch)
        tests = unpack_tests(sdist, scratch)
        print(f"toolnexus {VERSION} tests against {toolnexus.__file__}")
        print(place_upstream(scratch, opts.upstream, opts.upstream_ref))
        left_out = [n for p in sorted(tests.glob("test_*.py")) for n in prepare(p)]
        junit = scratch / "junit.xml"
        deselected = run(tests, left_out, junit)
        summarise(junit, tests, left_out, deselected, opts.failures)


if __name__ == "__main__":
    main()
