"""Configuration that fails loudly: misspelt top-level keys, relative paths, servers that
cannot start (``strict``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp_servers import DEMO

from toolnexus import create_toolkit
from toolnexus.errors import UsageError
from toolnexus.tools.mcp import load_mcp, parse_mcp_config

SERVER = {"command": "npx", "args": ["fs"]}


@pytest.mark.parametrize(
    ("config", "key", "meant"),
    [
        ({"mcpServer": {"fs": SERVER}}, "mcpServer", "mcpServers"),
        ({"mcp_servers": {"fs": SERVER}}, "mcp_servers", "mcpServers"),
        ({"server": {"fs": SERVER}}, "server", "servers"),
        ({"MCPSERVERS": {"fs": SERVER}}, "MCPSERVERS", "mcpServers"),
        ({"mcpserver": {"fs": SERVER}}, "mcpserver", "mcpServers"),
        ({"mcp-server": {"fs": SERVER}, "builtins": False}, "mcp-server", "mcpServers"),
        ({"bultins": {"bash": False}}, "bultins", "builtins"),
        ({"mcpServers": {"fs": SERVER}, "bultins": {"bash": False}}, "bultins", "builtins"),
        ({"servers": {"fs": SERVER}, "agent": []}, "agent", "agents"),
    ],
)
def test_a_misspelt_top_level_key_is_an_error_naming_the_intended_one(
    config: dict[str, Any], key: str, meant: str
) -> None:
    with pytest.raises(UsageError) as caught:
        parse_mcp_config(config)
    assert repr(key) in str(caught.value)
    assert f"did you mean {meant!r}" in str(caught.value)


def test_an_unknown_key_beside_a_wrapper_is_an_error() -> None:
    with pytest.raises(UsageError, match=r"unknown top-level key 'telemetry'"):
        parse_mcp_config({"mcpServers": {"fs": SERVER}, "telemetry": True})


def test_vs_code_inputs_and_a_schema_pointer_are_accepted() -> None:
    config = parse_mcp_config(
        {"$schema": "https://x/schema.json", "inputs": [], "servers": {"fs": SERVER}}
    )
    assert [s.name for s in config.servers] == ["fs"]


def test_a_bare_server_map_still_takes_any_server_name() -> None:
    config = parse_mcp_config({"server": SERVER, "builtins": {"bash": False}})
    assert [s.name for s in config.servers] == ["server"]


def test_the_reserved_mcp_server_key_with_serve_options_is_not_an_error() -> None:
    config = parse_mcp_config({"mcpServer": {"name": "me"}, "mcpServers": {"fs": SERVER}})
    assert [s.name for s in config.servers] == ["fs"]


# -- paths are the file's ---------------------------------------------------------------------


def _write(folder: Path, servers: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def test_relative_paths_resolve_against_the_files_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "conf"
    (conf / "srv").mkdir(parents=True)
    (conf / "srv" / "server.py").write_text("")
    (conf / "bin").mkdir()
    path = _write(
        conf,
        {
            "a": {"command": "python", "args": ["srv/server.py", "-v", "missing.py"], "cwd": "."},
            "b": {"command": "./bin/run", "args": ["srv/server.py"]},
            "c": {"command": "npx", "cwd": "srv"},
        },
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    a, b, c = parse_mcp_config(str(path)).servers
    assert a.cwd == str(conf)
    assert a.command == ("python", str(conf / "srv" / "server.py"), "-v", "missing.py")
    assert b.command == (str(conf / "bin" / "run"), str(conf / "srv" / "server.py"))
    assert b.cwd is None
    assert c.command == ("npx",)
    assert c.cwd == str(conf / "srv")


def test_python_is_this_interpreter_only_when_the_server_asks(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "plain": {"command": "python3", "args": ["x"]},
            "mine": {"command": "python", "args": ["x"], "currentPython": True},
            "other": {"command": "node", "args": ["x"], "currentPython": True},
        },
    )
    plain, mine, other = parse_mcp_config(path).servers
    assert plain.command[0] == "python3"
    assert mine.command[0] == sys.executable
    assert other.command[0] == "node"


async def test_the_example_config_works_from_another_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = Path(__file__).resolve().parents[3] / "examples" / "tool_sources" / "mcp.json"
    monkeypatch.chdir(tmp_path)
    assert not (tmp_path / "notes_server.py").exists()
    async with await load_mcp(str(example)) as source:
        assert source.status() == {"notes": "connected"}
        assert any(t.name.startswith("notes_") for t in source.tools)


# -- servers that cannot start ------------------------------------------------------------------


def _broken() -> dict[str, Any]:
    return {
        "mcpServers": {
            "ok": {"command": [sys.executable, str(DEMO)]},
            "gone": {"command": "no-such-command-tn-4242"},
            "crash": {"command": [sys.executable, "-c", "import sys; sys.exit(3)"]},
        }
    }


async def test_a_server_that_cannot_start_is_reported_in_status_and_errors() -> None:
    async with await create_toolkit(_broken(), builtins=False) as tk:
        status, errors = tk.mcp_status(), tk.mcp_errors()
    assert status == {"ok": "connected", "gone": "failed", "crash": "failed"}
    assert errors["gone"] == "command not found: no-such-command-tn-4242"
    assert "code 3" in errors["crash"]
    assert set(errors) == {"gone", "crash"}


async def test_strict_raises_at_creation_naming_every_failed_server() -> None:
    with pytest.raises(UsageError) as caught:
        await create_toolkit(_broken(), builtins=False, strict=True)
    message = str(caught.value)
    assert "gone: command not found: no-such-command-tn-4242" in message
    assert "crash: " in message
    assert "ok:" not in message


async def test_strict_is_quiet_when_every_server_connects() -> None:
    config = {"mcpServers": {"ok": {"command": [sys.executable, str(DEMO)]}}}
    async with await create_toolkit(config, builtins=False, strict=True) as tk:
        assert tk.mcp_status() == {"ok": "connected"}
        assert tk.mcp_errors() == {}
