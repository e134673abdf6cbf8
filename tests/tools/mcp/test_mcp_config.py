"""parse_mcp_config: the mcp.json superset, and clear errors for malformed files."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from toolnexus.errors import UsageError
from toolnexus.tools.mcp_config import (
    DEFAULT_TIMEOUT,
    DEFAULT_TIMEOUT_MS,
    McpConfig,
    ToolInfo,
    apply_tools_filter,
    is_enabled,
    is_remote,
    parse_mcp_config,
)


def one(entry: Any, name: str = "s") -> Any:
    return parse_mcp_config({"mcpServers": {name: entry}}).servers[0]


@pytest.mark.parametrize("wrapper", ["mcpServers", "servers", "mcp"])
def test_each_wrapper_key_holds_the_server_map(wrapper: str) -> None:
    config = parse_mcp_config({wrapper: {"fs": {"command": ["fs-server"]}}})
    assert [s.name for s in config.servers] == ["fs"]


def test_a_raw_server_map_ignores_the_reserved_sibling_keys() -> None:
    config = parse_mcp_config(
        {
            "fs": {"command": ["fs-server"]},
            "builtins": {"bash": False},
            "agents": {"x": {"url": "http://a"}},
            "a2a": {},
            "mcpServer": {"command": ["nope"]},
        }
    )
    assert [s.name for s in config.servers] == ["fs"]


def test_a_raw_map_may_hold_a_server_named_mcp() -> None:
    config = parse_mcp_config({"mcp": {"command": ["x"]}, "other": {"url": "http://h/mcp"}})
    assert sorted(s.name for s in config.servers) == ["mcp", "other"]


def test_the_top_level_builtins_key_is_exposed() -> None:
    config = parse_mcp_config({"mcpServers": {}, "builtins": {"bash": False}})
    assert config.builtins == {"bash": False}


def test_a_url_makes_a_remote_server_and_a_command_a_local_one() -> None:
    config = parse_mcp_config(
        {"servers": {"r": {"url": "https://h.example/mcp"}, "l": {"command": ["srv"]}}}
    )
    remote, local = config.servers
    assert (remote.type, is_remote(remote)) == ("remote", True)
    assert (local.type, is_remote(local)) == ("local", False)


def test_the_claude_desktop_command_string_takes_args() -> None:
    assert one({"command": "npx", "args": ["-y", "fs"]}).command == ("npx", "-y", "fs")


def test_a_command_string_with_spaces_is_one_executable() -> None:
    assert one({"command": "/opt/My Tools/srv"}).command == ("/opt/My Tools/srv",)


def test_env_is_an_alias_of_environment() -> None:
    assert dict(one({"command": ["x"], "env": {"A": "1"}}).environment) == {"A": "1"}


def test_numeric_environment_values_become_strings() -> None:
    assert dict(one({"command": ["x"], "environment": {"PORT": 8080}}).environment) == {
        "PORT": "8080"
    }


def test_the_timeout_defaults_to_thirty_seconds() -> None:
    assert one({"command": ["x"]}).timeout == DEFAULT_TIMEOUT_MS == 30000
    assert DEFAULT_TIMEOUT == 30.0  # seconds, the toolnexus package's constant


def test_disabled_true_wins_over_enabled_true() -> None:
    assert not is_enabled(one({"command": ["x"], "disabled": True, "enabled": True}))


def test_enabled_false_switches_a_server_off() -> None:
    assert not is_enabled(one({"command": ["x"], "enabled": False}))


def test_a_server_is_on_by_default() -> None:
    assert is_enabled(one({"command": ["x"]}))


def test_type_sse_is_remote_over_the_legacy_transport() -> None:
    server = one({"type": "sse", "url": "http://h/sse"})
    assert (server.type, server.sse) == ("remote", True)


def test_vscode_stdio_and_http_types_are_understood() -> None:
    assert one({"type": "stdio", "command": "x"}).type == "local"
    assert one({"type": "http", "url": "http://h/mcp"}).type == "remote"


def test_header_values_are_kept_unexpanded_until_connect() -> None:
    server = one({"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}})
    assert dict(server.headers) == {"Authorization": "Bearer ${TOKEN}"}


def test_a_config_file_is_read_from_its_path(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"fs": {"command": ["srv"], "cwd": "/tmp"}}}))
    assert parse_mcp_config(path).servers[0].cwd == "/tmp"


def test_a_parsed_config_passes_through() -> None:
    config = McpConfig()
    assert parse_mcp_config(config) is config


# -- malformed input -------------------------------------------------------------------


def test_bad_json_names_the_file_and_the_position(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {"fs": {"command": ["x"],}}}')
    with pytest.raises(UsageError, match=r"mcp\.json: invalid JSON at line 1 column"):
        parse_mcp_config(path)


def test_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read"):
        parse_mcp_config(tmp_path / "absent.json")


def test_a_top_level_array_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text("[]")
    with pytest.raises(UsageError, match="top level must be a JSON object"):
        parse_mcp_config(path)


def test_a_server_that_is_not_an_object_is_named() -> None:
    with pytest.raises(UsageError, match=r'server "fs": must be an object, got a string'):
        parse_mcp_config({"mcpServers": {"fs": "npx fs"}})


def test_a_server_without_command_or_url_is_named() -> None:
    with pytest.raises(UsageError, match=r'server "fs": needs a "command"'):
        parse_mcp_config({"mcpServers": {"fs": {"timeout": 5}}})


def test_a_wrapper_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(UsageError, match="'mcpServers' must be an object"):
        parse_mcp_config({"mcpServers": ["fs"]})


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"command": 42}, '"command" must be a non-empty array'),
        ({"command": []}, '"command" must be a non-empty array'),
        ({"command": ["x", 1]}, '"command" must be a non-empty array'),
        ({"command": "x", "args": "-v"}, '"args" must be an array of strings'),
        ({"command": ["x"], "timeout": "fast"}, '"timeout" must be a positive number'),
        ({"command": ["x"], "timeout": -1}, '"timeout" must be a positive number'),
        ({"command": ["x"], "timeout": True}, '"timeout" must be a positive number'),
        ({"command": ["x"], "env": ["A=1"]}, '"env" must be an object of strings'),
        ({"command": ["x"], "env": {"A": {"nested": 1}}}, '"env.A" must be a string'),
        ({"command": ["x"], "disabled": "yes"}, '"disabled" must be a boolean'),
        ({"command": ["x"], "cwd": 3}, '"cwd" must be a string'),
        ({"command": ["x"], "tools": {"a": "yes"}}, '"tools.a" must be true or false'),
        ({"url": "ftp://h/x"}, '"url" must start with http'),
        ({"url": 5}, '"url" must be a string'),
        ({"url": "http://h", "headers": {"A": None}}, '"headers.A" must be a string'),
        ({"type": "grpc", "url": "http://h"}, "unknown \"type\" 'grpc'"),
        ({"type": "local", "url": "http://h"}, 'a local server needs a "command"'),
        ({"type": "remote", "command": ["x"]}, 'a remote server needs a "url"'),
    ],
)
def test_wrong_types_name_the_server_and_the_field(entry: dict[str, Any], problem: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_mcp_config({"mcpServers": {"bad-one": entry}})
    assert 'server "bad-one"' in str(caught.value)
    assert problem in str(caught.value)


# -- the per-server tools filter ---------------------------------------------------------

TOOLS = [ToolInfo(name="read"), ToolInfo(name="write"), ToolInfo(name="delete")]


def names(tools: list[ToolInfo]) -> list[str]:
    return [t.name for t in tools]


def test_no_filter_keeps_every_tool() -> None:
    assert names(apply_tools_filter(TOOLS, None)) == ["read", "write", "delete"]
    assert names(apply_tools_filter(TOOLS, {})) == ["read", "write", "delete"]


def test_one_true_entry_makes_an_allowlist() -> None:
    assert names(apply_tools_filter(TOOLS, {"read": True, "write": False})) == ["read"]


def test_only_false_entries_make_a_drop_list() -> None:
    assert names(apply_tools_filter(TOOLS, {"delete": False})) == ["read", "write"]


def test_unknown_names_are_ignored_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        kept = apply_tools_filter(TOOLS, {"nope": False, "gone": False}, server="fs")
    assert names(kept) == ["read", "write", "delete"]
    warnings = [r for r in caplog.records if "no tool named" in r.getMessage()]
    assert len(warnings) == 1
    assert "'gone'" in warnings[0].getMessage()
    assert "'nope'" in warnings[0].getMessage()


def test_importing_the_mcp_source_does_not_import_the_sdk() -> None:
    probe = (
        "import sys, toolnexus, toolnexus.tools.mcp; "
        "print(sorted(m for m in ('mcp', 'mcp_types', 'anyio', 'httpx2') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
