"""COMPAT §4 (MCP) and the §12 ``McpConfig`` mapping, through the public API only, against
real MCP servers built on the ``mcp`` SDK (stdio and streamable HTTP)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import pytest_asyncio

import toolnexus as tn

SERVERS = Path(__file__).parents[1] / "tools" / "mcp" / "servers"
DEMO = SERVERS / "demo.py"
MODULE = pytest.mark.asyncio(loop_scope="module")


def demo(*args: str, **fields: Any) -> dict[str, Any]:
    return {"command": [sys.executable, str(DEMO), *args], **fields}


def refused_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/mcp"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] != "Z"


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The demo server over streamable HTTP (a real uvicorn process)."""
    proc = subprocess.Popen(
        [sys.executable, str(DEMO), "--transport", "http"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    try:
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()


@pytest.fixture(scope="module")
def config(http_url: str) -> dict[str, Any]:
    return {
        "mcpServers": {
            "local": demo(tools={"echo": True, "pid": True, "caps": True, "die": True}),
            "web": {"type": "remote", "url": http_url},
            "off": {"command": ["never-started"], "disabled": True},
            "missing": {"command": ["no-such-mcp-binary-compat"]},
            "refused": {"url": refused_url()},
        },
        "builtins": {"tools": {"bash": False}},
    }


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def source(config: dict[str, Any]) -> AsyncIterator[tn.McpSource]:
    async def answer(request: tn.Request) -> tn.Answer:
        return tn.Answer(id=request.id, ok=True, data={"name": "Ada"})

    loaded = await tn.load_mcp(config, answer)  # wait_for positional, as in the package
    try:
        yield loaded
    finally:
        await loaded.close()


async def call(source: tn.McpSource, name: str, args: dict[str, Any] | None = None) -> str:
    tool = next(t for t in source.tools if t.name == name)
    result = await tool.execute(args or {}, None)
    assert not result.is_error, result.output
    return result.output


# --- McpSource.status and the positional wait_for ----------------------------------------


@MODULE
async def test_status_is_a_mapping_attribute_and_still_callable(source: tn.McpSource) -> None:
    expected = {
        "local": "connected",
        "web": "connected",
        "off": "disabled",
        "missing": "failed",
        "refused": "failed",
    }

    assert source.status["web"] == "connected"
    assert source.status == expected
    assert source.status() == expected
    assert type(source.status()) is dict


@MODULE
async def test_a_positional_wait_for_advertises_elicitation(source: tn.McpSource) -> None:
    assert await call(source, "local_caps") == "elicitation"


@MODULE
async def test_the_remote_server_over_streamable_http_serves_tools(source: tn.McpSource) -> None:
    assert await call(source, "web_echo", {"text": "over http"}) == "over http"


@MODULE
async def test_errors_and_builtins_are_kept(source: tn.McpSource) -> None:
    assert source.errors()["missing"] == "command not found: no-such-mcp-binary-compat"
    assert source.builtins == {"tools": {"bash": False}}


async def test_calling_status_reads_it_afresh_after_a_server_dies() -> None:
    async with await tn.load_mcp({"s": demo()}) as source:
        snapshot = source.status
        tool = next(t for t in source.tools if t.name == "s_die")
        result = await tool.execute({}, None)

        assert result.is_error
        assert snapshot == {"s": "connected"}  # a snapshot stays what it was
        assert snapshot() == {"s": "failed"}  # calling it reads the live state
        assert source.status["s"] == "failed"


# --- list_mcp_tools -------------------------------------------------------------------------


async def test_list_mcp_tools_maps_connected_servers_to_tool_infos(config: dict[str, Any]) -> None:
    inventory = await tn.list_mcp_tools(config)

    assert sorted(inventory.tools) == ["local", "web"]  # connected servers only
    assert inventory.status == {
        "local": "connected",
        "web": "connected",
        "off": "disabled",
        "missing": "failed",
        "refused": "failed",
    }
    assert inventory.status()["missing"] == "failed"
    names = [info.name for info in inventory.tools["local"]]
    assert "spawn_child" in names  # unfiltered, under the original names
    echo = next(info for info in inventory.tools["web"] if info.name == "echo")
    assert isinstance(echo, tn.ToolInfo)
    assert echo.description == "Echo the text back."
    assert echo.input_schema["type"] == "object"
    assert echo.input_schema["additionalProperties"] is False
    assert "text" in echo.input_schema["properties"]
    assert set(inventory.servers) == set(inventory.status)  # ours' per-server view stays


async def test_a_tool_without_properties_lists_an_empty_properties_map(
    config: dict[str, Any],
) -> None:
    inventory = await tn.list_mcp_tools({"local": config["mcpServers"]["local"]})

    pid = next(info for info in inventory.tools["local"] if info.name == "pid")
    assert pid.input_schema["properties"] == {}
    assert pid.input_schema["additionalProperties"] is False


def test_tool_info_takes_name_description_and_schema_positionally() -> None:
    info = tn.ToolInfo("t", "d", {"type": "object"})

    assert (info.name, info.description, info.input_schema) == ("t", "d", {"type": "object"})


# --- cancel, load_mcp_with_context ----------------------------------------------------------


async def test_a_fired_cancel_raises_cancelled_error_and_tears_everything_down(
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "pid"
    cancel = asyncio.Event()
    config = {
        "hang": {
            "command": [sys.executable, str(SERVERS / "hang.py")],
            "env": {"DEMO_PIDFILE": str(pidfile)},
        }
    }

    async def cancel_once_started() -> None:
        while not pidfile.exists() or not pidfile.read_text():  # noqa: ASYNC110 - a file
            await asyncio.sleep(0.02)
        cancel.set()

    setter = asyncio.ensure_future(cancel_once_started())
    with pytest.raises(asyncio.CancelledError) as raised:
        await tn.load_mcp(config, cancel=cancel)  # awaited here: a task would swallow the type
    await setter

    assert isinstance(raised.value, tn.RunCancelled)
    assert not alive(int(pidfile.read_text()))


async def test_load_mcp_with_context_takes_wait_for_second_and_cancel_by_keyword() -> None:
    cancel = asyncio.Event()
    cancel.set()

    with pytest.raises(asyncio.CancelledError):
        await tn.load_mcp_with_context({"x": demo()}, None, cancel=cancel)


async def test_an_event_second_is_still_read_as_cancel() -> None:
    cancel = asyncio.Event()
    cancel.set()

    with pytest.raises(tn.RunCancelled):
        await tn.load_mcp_with_context({"x": demo()}, cancel)


async def test_a_per_server_timeout_fails_only_it_with_the_package_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = {
        "hang": {"command": [sys.executable, str(SERVERS / "hang.py")], "timeout": 800},
        "missing": {"command": ["no-such-mcp-binary-compat"]},
    }
    async with await tn.load_mcp(config) as source:
        assert source.status == {"hang": "failed", "missing": "failed"}

    err = capsys.readouterr().err
    assert '[toolnexus] MCP server "hang" failed: timed out\n' in err
    assert (
        '[toolnexus] MCP server "missing" failed: command not found: no-such-mcp-binary-compat\n'
        in err
    )


# --- parse_mcp_config: the McpConfig mapping (COMPAT §12) -----------------------------------


def test_parse_mcp_config_reads_as_the_servers_dict_as_written() -> None:
    written = {
        "files": {"command": "npx", "args": ["fs"], "env": {"K": "${K}"}},
        "web": {"url": "https://mcp.example/mcp", "headers": {"X": "1"}, "disabled": True},
    }
    cfg = tn.parse_mcp_config({"mcpServers": written, "builtins": False})

    assert cfg == written
    assert dict(cfg) == written
    assert list(cfg) == ["files", "web"]
    assert len(cfg) == 2
    assert cfg["files"]["args"] == ["fs"]
    assert cfg.get("nope") is None
    assert "web" in cfg
    assert dict(cfg.items())["web"]["disabled"] is True
    assert [s.name for s in cfg.servers] == ["files", "web"]  # ours' typed view stays
    assert cfg.builtins is False


def test_the_mapping_is_read_only_and_unchanged_by_the_callers_edits() -> None:
    written: dict[str, Any] = {"files": {"command": ["npx", "fs"]}}
    cfg = tn.parse_mcp_config(written)

    cfg["files"]["command"].append("--evil")
    written["files"]["command"].append("--later")

    assert cfg["files"] == {"command": ["npx", "fs"]}
    with pytest.raises(TypeError):
        cfg["x"] = {}  # type: ignore[index]  # pyright: ignore[reportIndexIssue]


def test_a_flat_file_strips_reserved_keys_from_the_mapping(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"s": {"command": "x"}, "builtins": {"bash": false}, "agents": {}}')

    cfg = tn.parse_mcp_config(str(path))

    assert cfg == {"s": {"command": "x"}}
    assert cfg.builtins == {"bash": False}


def test_a_malformed_server_is_still_a_usage_error() -> None:
    with pytest.raises(tn.UsageError, match='server "s"'):
        tn.parse_mcp_config({"s": {"command": 3}})


# --- is_enabled / is_remote, constants, headers ---------------------------------------------


@pytest.mark.parametrize(
    ("server", "enabled"),
    [
        ({"command": "x"}, True),
        ({"command": "x", "disabled": True}, False),
        ({"command": "x", "enabled": False}, False),
        ({"command": "x", "disabled": "yes"}, True),
        ({"command": "x", "enabled": 0}, True),
    ],
)
def test_is_enabled_takes_a_plain_dict(server: dict[str, Any], enabled: bool) -> None:
    assert tn.is_enabled(server) is enabled


@pytest.mark.parametrize(
    ("server", "remote"),
    [
        ({"type": "remote", "command": "x"}, True),
        ({"type": "local", "url": "http://h"}, False),
        ({"url": "http://h"}, True),
        ({"url": 3}, False),
        ({"command": "x"}, False),
    ],
)
def test_is_remote_takes_a_plain_dict(server: dict[str, Any], remote: bool) -> None:
    assert tn.is_remote(server) is remote


def test_is_enabled_and_is_remote_still_take_server_configs() -> None:
    cfg = tn.parse_mcp_config({"a": {"url": "http://h/mcp", "disabled": True}})

    assert (tn.is_enabled(cfg.servers[0]), tn.is_remote(cfg.servers[0])) == (False, True)


def test_default_timeout_is_thirty_seconds() -> None:
    assert tn.DEFAULT_TIMEOUT == 30.0


def test_expand_env_headers_keeps_none_and_empty_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPAT_TOKEN", "tok")
    monkeypatch.delenv("COMPAT_UNSET", raising=False)

    assert tn.expand_env_headers(None) is None
    assert tn.expand_env_headers({}) == {}
    assert tn.expand_env_headers({"A": "Bearer ${COMPAT_TOKEN}", "B": "${COMPAT_UNSET}"}) == {
        "A": "Bearer tok",
        "B": "",
    }


# --- elicitation helpers --------------------------------------------------------------------


def test_elicitation_params_are_read_as_attributes() -> None:
    params = SimpleNamespace(
        mode="form", message="Who?", url=None, requestedSchema={"type": "object"}
    )

    request = tn.elicitation_to_request(params)

    assert (request.kind, request.prompt, request.url) == ("input", "Who?", None)
    assert request.data == {"schema": {"type": "object"}}
    assert request.id.startswith("elc-")


def test_url_mode_is_authorization_only_when_mode_says_url() -> None:
    by_mode = tn.elicitation_to_request(
        SimpleNamespace(mode="url", message="Log in", url="https://i/x")
    )
    bare_url = tn.elicitation_to_request({"message": "Log in", "url": "https://i/x"})

    assert (by_mode.kind, by_mode.url) == ("authorization", "https://i/x")
    assert (bare_url.kind, bare_url.url, bare_url.data) == ("input", None, None)


def test_a_non_string_message_is_its_text_and_an_empty_schema_no_data() -> None:
    request = tn.elicitation_to_request({"message": 42, "requestedSchema": {}})

    assert (request.prompt, request.data) == ("42", None)


def test_answers_map_to_accept_decline_and_cancel() -> None:
    accepted = tn.answer_to_elicit_result(tn.Answer(id="r", ok=True, data={"name": "Ada"}))
    empty = tn.answer_to_elicit_result(tn.Answer(id="r", ok=True))
    declined = tn.answer_to_elicit_result(tn.Answer(id="r", ok=False, reason="declined"))
    expired = tn.answer_to_elicit_result(tn.Answer(id="r", ok=False, reason="expired"))

    assert (accepted.action, accepted.content) == ("accept", {"name": "Ada"})
    assert (empty.action, empty.content) == ("accept", {})
    assert (declined.action, expired.action) == ("decline", "cancel")


# --- the run loop over an MCP toolkit -------------------------------------------------------


async def test_a_toolkit_built_from_the_package_shapes_runs_an_mcp_tool(
    scripted: Any, client_for: Any
) -> None:
    from toolnexus.testing import call as tool_call
    from toolnexus.testing import text, tool_calls

    scripted.add(tool_calls(tool_call("local_echo", {"text": "hi"}, id="c1")), text("ok"))
    started = time.perf_counter()
    async with await tn.create_toolkit({"local": demo()}, builtins=False) as toolkit:
        assert toolkit.mcp_status() == {"local": "connected"}
        async with client_for(scripted) as client:
            result = await client.run("echo hi", toolkit)

    assert result.text == "ok"
    assert result.tool_calls[0].output == "hi"
    assert time.perf_counter() - started < 60
