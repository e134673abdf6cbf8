"""First steps that never mislead: every missing extra is named (with the distribution's own name,
which is not the 0.21 package's), every install line in the README and the docs installs this
project, and the docs say what is in this release.

A missing extra is made missing for real in a child interpreter (``sys.modules[name] = None``
makes its import fail exactly as an uninstalled package's does).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from toolnexus._extras import DISTRIBUTION, extra_hint

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))


def without(modules: list[str], code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a child interpreter where ``modules`` cannot be imported."""
    blocked = "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
    return subprocess.run(
        [sys.executable, "-c", f"import sys\n{blocked}{code}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=ROOT,
    )


def test_the_distribution_is_not_the_021_package() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "toolnexus-sdk"
    assert extra_hint("mcp") == (
        "pip install 'toolnexus-sdk[mcp]' (from a checkout: pip install -e '.[mcp]')"
    )


def test_serving_mcp_without_the_sdk_names_the_extra() -> None:
    done = without(
        ["mcp", "mcp_types"],
        "import asyncio\n"
        "from toolnexus import create_toolkit\n"
        "from toolnexus.serve import serve_app\n"
        "tk = asyncio.run(create_toolkit(builtins=False))\n"
        "try:\n"
        "    serve_app(tk, mcp=True)\n"
        "except ImportError as exc:\n"
        "    print(exc)\n",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ("serving over MCP needs the mcp SDK: " + extra_hint("mcp"))


def test_the_serve_command_without_the_mcp_sdk_says_which_extra(tmp_path: Path) -> None:
    (tmp_path / "plain_app.py").write_text(
        "from toolnexus import create_client, create_toolkit\n"
        "async def make():\n"
        "    return create_client(base_url='http://127.0.0.1:9', model='m', api_key='k'), "
        "await create_toolkit(builtins=False)\n"
    )
    done = without(
        ["mcp", "mcp_types"],
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "from toolnexus.cli import main\n"
        "sys.exit(main(['serve', '--app', 'plain_app:make', '--mcp', '--port', '0']))\n",
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "pip install 'toolnexus-sdk[mcp]'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("modules", "code", "extra"),
    [
        (
            ["uvicorn"],
            "from toolnexus.serve.server import start\nimport asyncio\n"
            "asyncio.run(start(None, '127.0.0.1:0'))",
            "serve",
        ),
        (
            ["psycopg"],
            "from toolnexus.stores.url import resolve_store\nresolve_store('postgresql://db/app')",
            "postgres",
        ),
        (
            ["opentelemetry"],
            "from toolnexus import create_client\n"
            "create_client(base_url='http://x', model='m', api_key='k', tracing=True)",
            "otel",
        ),
    ],
)
def test_every_missing_extra_is_named(modules: list[str], code: str, extra: str) -> None:
    done = without(modules, code)
    assert done.returncode != 0
    assert f"pip install '{DISTRIBUTION}[{extra}]'" in done.stderr


_INSTALL = re.compile(r"pip install[^\n`]*")


@pytest.mark.parametrize("path", [ROOT / "README.md", *DOCS], ids=lambda p: p.name)
def test_every_install_line_installs_this_project(path: Path) -> None:
    """From a checkout (``-e .`` / ``-e '.[extra]'``) or by the distribution's own name, never
    ``pip install toolnexus`` (the 0.21 package on the registry)."""
    for line in _INSTALL.findall(path.read_text()):
        if "toolnexus" not in line:
            continue  # another package's install line (a tool's example, say)
        assert DISTRIBUTION in line or "-e ." in line or "-e '." in line, (path.name, line)


def test_the_docs_say_what_is_in_this_release() -> None:
    index = (ROOT / "docs" / "index.md").read_text()
    assert "later release" not in index
    section = index.split("## What is in this release", 1)[1].split("\n## ", 1)[0]
    # every page the section points at exists, and every shipped surface is named
    for link in re.findall(r"\]\(([a-z0-9_-]+\.md)\)", section):
        assert (ROOT / "docs" / link).is_file(), link
    for surface in ("inbox", "toolnexus serve", "toolnexus worker", "A2A", "MCP", "agents"):
        assert surface in section, surface
    for path in [ROOT / "README.md", *DOCS]:
        assert "lands in a later release" not in path.read_text(), path.name
