"""``import toolnexus`` loads nothing behind the namespace until a name is used (DESIGN §8).

Each name loads its module on first use (PEP 562, `toolnexus._lazy`). These tests pin what
that must not change: which modules a bare import loads (checked in fresh interpreters through
``sys.modules``, not by timing), that every public name still resolves to the one object its
module defines on every path, ``from toolnexus import *``, pickling across processes, and the
ordinary ``AttributeError`` for unknown names. Timings live in bench/bench_import.py.
"""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import toolnexus

# What ``import toolnexus`` loaded before it was lazy (``python -X importtime``), and must not
# load again: the event loop and what it drags in, the stdlib modules our own modules use at
# import time, the optional dependencies, and our client stack.
MUST_NOT_LOAD = (
    "asyncio",
    "concurrent.futures",
    "ssl",
    "socket",
    "selectors",
    "subprocess",
    "logging",
    "traceback",
    "inspect",
    "typing",
    "dataclasses",
    "enum",
    "re",
    "json",
    "uuid",
    "secrets",
    "datetime",
    "urllib.parse",
    "aiohttp",
    "pydantic",
    "jsonschema",
    "mcp",
    "yaml",
    "psycopg",
    "starlette",
    "typer",
    "opentelemetry",
    "toolnexus.client",
    "toolnexus._types",
    "toolnexus.errors",
    "toolnexus.llm",
    "toolnexus.loop",
    "toolnexus.stores",
    "toolnexus.suspension",
)
# The only modules of ours a bare import may load: the package and its lazy-name helper.
BARE_IMPORT = ["toolnexus", "toolnexus._lazy"]


def fresh(code: str) -> str:
    """Run ``code`` in a fresh interpreter of this venv; its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def loaded_by(statement: str) -> list[str]:
    """The modules that ``statement`` adds to ``sys.modules`` in a fresh interpreter."""
    probe = (
        "import sys\n"
        "before = set(sys.modules)\n"
        f"{statement}\n"
        "added = sorted(set(sys.modules) - before)\n"
        "import json\n"
        "print(json.dumps(added))\n"
    )
    return json.loads(fresh(probe))


def test_a_bare_import_loads_none_of_the_listed_modules() -> None:
    added = loaded_by("import toolnexus")
    assert [m for m in MUST_NOT_LOAD if m in added] == []
    assert [m for m in added if m.startswith("toolnexus")] == BARE_IMPORT


def test_the_probe_sees_the_listed_modules_once_a_name_is_used() -> None:
    # Guards the test above against passing vacuously: the same probe, after one name is read.
    added = loaded_by("import toolnexus\ntoolnexus.create_client")
    for name in ("asyncio", "ssl", "logging", "typing", "toolnexus.loop", "toolnexus.llm"):
        assert name in added
    assert "toolnexus.client" in loaded_by("from toolnexus import Client")


def test_reading_one_light_name_loads_only_its_module() -> None:
    added = loaded_by("from toolnexus import UsageError")
    assert [m for m in added if m.startswith("toolnexus")] == [*BARE_IMPORT, "toolnexus.errors"]
    assert "asyncio" not in added


def _type_checking_imports() -> dict[str, str]:
    """name -> module of the ``from .x import name`` lines under ``if TYPE_CHECKING:`` in
    ``toolnexus/__init__.py`` (what type checkers see)."""
    tree = ast.parse(Path(toolnexus.__file__).read_text(encoding="utf-8"))
    blocks = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name)
        if node.test.id == "TYPE_CHECKING"
    ]
    assert len(blocks) == 1
    homes: dict[str, str] = {}
    for node in blocks[0].body:
        assert isinstance(node, ast.ImportFrom)
        assert node.level == 1
        for alias in node.names:
            assert alias.asname is None, alias.name
            homes[alias.name] = f".{node.module}"
    return homes


def test_the_lazy_names_are_all_and_what_type_checkers_see() -> None:
    lazy = {name: module for module, names in toolnexus._EXPORTS.items() for name in names}
    assert sum(len(names) for names in toolnexus._EXPORTS.values()) == len(lazy)
    assert set(lazy) | {"__version__"} == set(toolnexus.__all__)
    assert lazy == _type_checking_imports()


def test_no_submodule_shadows_a_public_name() -> None:
    # Importing ``toolnexus.<x>`` binds the attribute ``x`` on the package; a submodule named
    # like a lazy name would replace it once anything imported that submodule.
    submodules = {info.name for info in pkgutil.iter_modules(toolnexus.__path__)}
    assert submodules & set(toolnexus.__all__) == set()
    assert toolnexus._SUBMODULES - submodules == set()


def test_every_name_is_its_modules_object_whichever_path_comes_first() -> None:
    # A fresh interpreter imports each defining module before the top level reads the name.
    probe = (
        "import importlib, toolnexus\n"
        "bad = []\n"
        "for module, names in toolnexus._EXPORTS.items():\n"
        "    home = importlib.import_module(module, 'toolnexus')\n"
        "    bad += [n for n in names if getattr(toolnexus, n) is not getattr(home, n)]\n"
        "print(bad)\n"
    )
    assert fresh(probe).strip() == "[]"
    for module, names in toolnexus._EXPORTS.items():
        home = importlib.import_module(module, "toolnexus")
        assert [n for n in names if getattr(toolnexus, n) is not getattr(home, n)] == []


def test_a_compat_path_imported_first_gives_the_same_classes() -> None:
    probe = (
        "import toolnexus.types as t, toolnexus.client as c\n"
        "import toolnexus\n"
        "assert t.Tool is toolnexus.Tool and t.Answer is toolnexus.Answer\n"
        "assert c.Client is toolnexus.Client and c.create_client is toolnexus.create_client\n"
        "assert isinstance(toolnexus.Answer(id='r', ok=True), t.Answer)\n"
        "print(toolnexus.Tool.__module__, toolnexus.Client.__module__)\n"
    )
    assert fresh(probe).split() == ["toolnexus._types", "toolnexus.client"]


@pytest.mark.parametrize("first", ["toolnexus._types", "toolnexus.suspension", "toolnexus"])
def test_type_hints_of_the_context_and_the_result_resolve_whichever_module_loads_first(
    first: str,
) -> None:
    probe = (
        f"import {first}\n"
        "import typing, toolnexus\n"
        "context = typing.get_type_hints(toolnexus.ToolContext)\n"
        "result = typing.get_type_hints(toolnexus.RunResult)\n"
        "assert 'toolnexus.suspension.Answer' in str(context['answer']), context['answer']\n"
        "print(result['pending'])\n"
    )
    assert "toolnexus.suspension.Request" in fresh(probe)


def test_star_import_binds_exactly_all() -> None:
    probe = (
        "import toolnexus\n"
        "ns = {}\n"
        "exec('from toolnexus import *', ns)\n"
        "ns.pop('__builtins__')\n"
        "assert sorted(ns) == sorted(toolnexus.__all__), set(ns) ^ set(toolnexus.__all__)\n"
        "assert all(ns[n] is getattr(toolnexus, n) for n in ns)\n"
        "print(len(ns))\n"
    )
    assert int(fresh(probe)) == len(toolnexus.__all__)


def test_pickles_made_through_the_namespace_load_in_a_process_that_never_imported_it() -> None:
    dump = (
        "import pickle, sys, toolnexus as tn\n"
        "sys.stdout.buffer.write(pickle.dumps(\n"
        "    [tn.Answer(id='r1', ok=False, reason='no'), tn.UsageError('bad'), tn.Client]))\n"
    )
    load = (
        "import pickle, sys\n"
        "answer, error, client = pickle.loads(sys.stdin.buffer.read())\n"
        "import toolnexus as tn\n"
        "assert type(answer) is tn.Answer and answer == tn.Answer(id='r1', ok=False, reason='no')\n"
        "assert type(error) is tn.UsageError and str(error) == 'bad'\n"
        "assert client is tn.Client\n"
        "print(type(answer).__module__)\n"
    )
    made = subprocess.run(
        [sys.executable, "-c", dump], capture_output=True, timeout=60, check=True
    ).stdout
    loaded = subprocess.run(
        [sys.executable, "-c", load], input=made, capture_output=True, timeout=60, check=False
    )
    assert loaded.returncode == 0, loaded.stderr.decode()
    assert loaded.stdout.decode().strip() == "toolnexus.suspension"


def test_an_unknown_name_is_an_ordinary_attribute_error() -> None:
    with pytest.raises(
        AttributeError, match=r"^module 'toolnexus' has no attribute 'nope'$"
    ) as info:
        getattr(toolnexus, "nope")  # noqa: B009
    assert info.value.name == "nope"
    assert not hasattr(toolnexus, "create_clients")
    assert not hasattr(toolnexus, "_private")
    assert getattr(toolnexus, "nope", "fallback") == "fallback"
    with pytest.raises(ImportError, match="cannot import name 'nope' from 'toolnexus'"):
        exec("from toolnexus import nope", {})


def test_a_public_submodule_is_reachable_after_a_bare_import() -> None:
    probe = (
        "import toolnexus\n"
        "assert toolnexus.types.Tool is toolnexus.Tool\n"
        "print(toolnexus.agents.AgentRuntime.__name__, toolnexus.testing.ScriptedModel.__name__)\n"
    )
    assert fresh(probe).split() == ["AgentRuntime", "ScriptedModel"]
    assert "toolnexus.agents" not in loaded_by("import toolnexus")


def test_dir_lists_every_public_name_before_any_is_used() -> None:
    listed = fresh("import toolnexus\nprint('\\n'.join(dir(toolnexus)))").split()
    assert set(toolnexus.__all__) <= set(listed)
    assert "toolnexus.client" not in loaded_by("import toolnexus\ndir(toolnexus)")


def cli_loads(argv: list[str]) -> list[str]:
    """The modules ``toolnexus <argv>`` loads, run in-process in a fresh interpreter (its own
    output swallowed)."""
    return loaded_by(
        "import contextlib, io\n"
        "from toolnexus.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        f"    main({argv!r})"
    )


def test_the_command_lines_help_needs_no_event_loop(tmp_path: Path) -> None:
    pytest.importorskip("typer")
    added = cli_loads(["--help"])
    assert "typer" in added
    heavy = ("asyncio", "toolnexus.client", "toolnexus._types", "toolnexus.stores.requests")
    assert [m for m in heavy if m in added] == []
    # The probe sees the event loop once a command runs.
    assert "asyncio" in cli_loads(["pending", "--store", f"sqlite:///{tmp_path}/runs.db", "--json"])
