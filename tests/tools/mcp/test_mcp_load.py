"""load_mcp / list_mcp_tools against real server processes: tools, isolation, cancel, close."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mcp_servers import DEMO, DEMO_TOOLS, alive, demo, refused_url, script

from toolnexus import RunCancelled, ToolResult
from toolnexus.tools.mcp import McpSource, list_mcp_tools, load_mcp, load_mcp_with_context

MODULE = pytest.mark.asyncio(loop_scope="module")


async def text_of(source: McpSource, name: str, args: dict[str, Any] | None = None) -> str:
    tool = next(t for t in source.tools if t.name == name)
    result: ToolResult = await tool.execute(args or {}, None)
    assert not result.is_error, result.output
    return result.output


def original_names(source: McpSource, prefix: str) -> set[str]:
    return {t.name.removeprefix(prefix) for t in source.tools if t.name.startswith(prefix)}


# -- one healthy load, inspected by many tests ----------------------------------------------


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def healthy() -> AsyncIterator[McpSource]:
    config = {
        "mcpServers": {
            "my server.v2": demo("--page-size", "4"),
            "allow": demo(tools={"echo": True, "pid": True, "cwd": False}),
            "drop": demo(tools={"echo": False, "no_such_tool": False}),
            "off": {"command": ["never-started-binary"], "disabled": True},
        }
    }
    async with await load_mcp(config) as source:
        yield source


@MODULE
async def test_every_enabled_server_connects(healthy: McpSource) -> None:
    assert healthy.status() == {
        "my server.v2": "connected",
        "allow": "connected",
        "drop": "connected",
        "off": "disabled",
    }
    assert healthy.errors() == {}


@MODULE
async def test_tool_names_are_the_sanitized_server_and_tool(healthy: McpSource) -> None:
    names = {t.name for t in healthy.tools}
    assert "my_server_v2_echo" in names
    assert all(t.source == "mcp" for t in healthy.tools)


@MODULE
async def test_a_tool_keeps_its_description_and_input_schema(healthy: McpSource) -> None:
    echo = next(t for t in healthy.tools if t.name == "my_server_v2_echo")
    assert echo.description == "Echo the text back."
    assert echo.input_schema["type"] == "object"
    assert echo.input_schema["properties"]["text"]["type"] == "string"
    assert echo.input_schema["required"] == ["text"]


@MODULE
async def test_paginated_tools_list_is_read_to_the_end(healthy: McpSource) -> None:
    assert original_names(healthy, "my_server_v2_") == DEMO_TOOLS


@MODULE
async def test_a_true_entry_makes_the_tools_map_an_allowlist(healthy: McpSource) -> None:
    assert original_names(healthy, "allow_") == {"echo", "pid"}


@MODULE
async def test_false_entries_drop_tools_and_unknown_names_are_ignored(healthy: McpSource) -> None:
    assert original_names(healthy, "drop_") == DEMO_TOOLS - {"echo"}


@MODULE
async def test_a_disabled_server_is_never_started(healthy: McpSource) -> None:
    assert not [t for t in healthy.tools if t.name.startswith("off_")]
    assert "off" not in healthy.errors()


@MODULE
async def test_a_loaded_tool_runs_on_its_server(healthy: McpSource) -> None:
    assert await text_of(healthy, "allow_echo", {"text": "héllo"}) == "héllo"


# -- failures are isolated ---------------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def mixed() -> AsyncIterator[tuple[McpSource, float]]:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # accept, read the request, never answer
        writer.close()

    silent_server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = silent_server.sockets[0].getsockname()[1]
    config = {
        "good": demo(),
        "missing": {"command": ["no-such-mcp-server-binary"]},
        "crash": script("crash"),
        "hang": script("hang", timeout=1000),
        "refused": {"url": refused_url()},
        "silent": {"url": f"http://127.0.0.1:{port}/mcp", "timeout": 1000},
    }
    started = time.perf_counter()
    source = await load_mcp(config)
    elapsed = time.perf_counter() - started
    try:
        yield source, elapsed
    finally:
        await source.close()
        silent_server.close()
        await silent_server.wait_closed()


@MODULE
async def test_a_healthy_server_loads_beside_failing_ones(mixed: tuple[McpSource, float]) -> None:
    source, _ = mixed
    assert source.status()["good"] == "connected"
    assert await text_of(source, "good_echo", {"text": "still here"}) == "still here"


@MODULE
async def test_a_missing_command_fails_only_its_server(mixed: tuple[McpSource, float]) -> None:
    source, _ = mixed
    assert source.status()["missing"] == "failed"
    assert source.errors()["missing"] == "command not found: no-such-mcp-server-binary"


@MODULE
async def test_a_crash_on_start_reports_exit_code_and_stderr(
    mixed: tuple[McpSource, float],
) -> None:
    source, _ = mixed
    assert source.status()["crash"] == "failed"
    assert source.errors()["crash"].startswith(
        "server process exited with code 3: fatal: configuration missing"
    )


@MODULE
async def test_a_hanging_server_fails_within_its_timeout(mixed: tuple[McpSource, float]) -> None:
    source, elapsed = mixed
    assert source.errors()["hang"] == "timed out after 1000 ms during initialize"
    assert elapsed < 15  # the default 30 s never came into play


@MODULE
async def test_a_refused_connection_fails_only_its_server(mixed: tuple[McpSource, float]) -> None:
    source, _ = mixed
    assert source.status()["refused"] == "failed"
    assert source.errors()["refused"].startswith("cannot connect to http://127.0.0.1:")


@MODULE
async def test_a_remote_that_never_answers_times_out(mixed: tuple[McpSource, float]) -> None:
    source, _ = mixed
    assert source.errors()["silent"] == "timed out after 1000 ms during initialize"


@MODULE
async def test_failed_servers_contribute_no_tools(mixed: tuple[McpSource, float]) -> None:
    source, _ = mixed
    prefixes = {t.name.split("_", 1)[0] for t in source.tools}
    assert prefixes == {"good"}


# -- cancel and close --------------------------------------------------------------------


async def test_a_set_cancel_event_aborts_the_whole_load(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    cancel = asyncio.Event()
    config = {"hang": script("hang", environment={"DEMO_PIDFILE": str(pidfile)})}
    asyncio.get_running_loop().call_later(0.5, cancel.set)
    started = time.perf_counter()
    with pytest.raises(RunCancelled):
        await load_mcp(config, cancel=cancel)
    assert time.perf_counter() - started < 10
    assert not alive(int(pidfile.read_text()))


async def test_an_already_set_cancel_starts_nothing() -> None:
    cancel = asyncio.Event()
    cancel.set()
    with pytest.raises(RunCancelled):
        await load_mcp({"x": {"command": ["no-such-binary"]}}, cancel=cancel)


async def test_close_stops_the_server_and_every_process_it_started() -> None:
    source = await load_mcp({"s": demo()})
    server_pid = int(await text_of(source, "s_pid"))
    grandchild_pid = int(await text_of(source, "s_spawn_child"))
    assert alive(server_pid)
    assert alive(grandchild_pid)
    await source.close()
    assert not alive(server_pid)
    assert not alive(grandchild_pid)


async def test_a_server_that_ignores_eof_is_killed_on_close(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    config = {"stubborn": script("stubborn", timeout=500, env={"DEMO_PIDFILE": str(pidfile)})}
    source = await load_mcp(config)
    assert source.status() == {"stubborn": "failed"}
    await source.close()
    assert not alive(int(pidfile.read_text()))


async def test_close_is_idempotent() -> None:
    source = await load_mcp({"missing": {"command": ["no-such-binary"]}})
    await source.close()
    await source.close()
    assert source.status() == {"missing": "failed"}


# -- what the child process gets -----------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def env_source(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[McpSource]:
    os.environ["TN_TEST_INHERITED"] = "from-parent"
    os.environ["TN_TEST_PART"] = "expanded"
    workdir = tmp_path_factory.mktemp("cwd")
    entry = demo(env={"TN_TEST_GIVEN": "given", "TN_TEST_REF": "x-${TN_TEST_PART}"})
    entry["cwd"] = str(workdir)
    try:
        async with await load_mcp({"e": entry}) as source:
            yield source
    finally:
        del os.environ["TN_TEST_INHERITED"], os.environ["TN_TEST_PART"]


@MODULE
async def test_the_child_inherits_the_process_environment(env_source: McpSource) -> None:
    assert await text_of(env_source, "e_env", {"name": "TN_TEST_INHERITED"}) == "from-parent"


@MODULE
async def test_the_child_gets_the_configured_environment(env_source: McpSource) -> None:
    assert await text_of(env_source, "e_env", {"name": "TN_TEST_GIVEN"}) == "given"


@MODULE
async def test_environment_values_expand_env_references(env_source: McpSource) -> None:
    # The child got "x-" + the variable's value; that value is a secret, masked on the way back.
    assert await text_of(env_source, "e_env", {"name": "TN_TEST_REF"}) == "x-***"


@MODULE
async def test_the_child_runs_in_the_configured_cwd(env_source: McpSource) -> None:
    workdir = env_source.config.servers[0].cwd
    assert await text_of(env_source, "e_cwd") == workdir


# -- list_mcp_tools ----------------------------------------------------------------------


async def test_list_mcp_tools_reports_unfiltered_tools_and_isolated_failures(
    tmp_path: Path,
) -> None:
    pidfile = tmp_path / "pid"
    config = {
        "demo": demo(tools={"echo": True}, env={"DEMO_PIDFILE": str(pidfile)}),
        "crash": script("crash"),
    }
    inventory = await list_mcp_tools(config)
    assert inventory.status() == {"demo": "connected", "crash": "failed"}
    assert {t.name for t in inventory.servers["demo"].tools} == DEMO_TOOLS
    assert "exited with code 3" in (inventory.servers["crash"].error or "")
    assert not alive(int(pidfile.read_text()))


async def test_list_mcp_tools_does_not_warn_about_the_tools_filter(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        await list_mcp_tools({"demo": demo(tools={"no_such_tool": False})})
    assert "no tool named" not in caplog.text


async def test_a_missing_working_directory_is_named(tmp_path: Path) -> None:
    missing = str(tmp_path / "gone")
    async with await load_mcp({"s": demo(cwd=missing)}) as source:
        assert source.errors() == {"s": f"working directory not found: {missing}"}


async def test_a_command_that_is_not_executable_is_named(tmp_path: Path) -> None:
    plain = tmp_path / "server.sh"
    plain.write_text("#!/bin/sh\n")
    async with await load_mcp({"s": {"command": [str(plain)]}}) as source:
        assert source.errors() == {"s": f"cannot start {plain}: Permission denied"}


async def test_lines_on_stdout_that_are_not_json_are_skipped() -> None:
    noisy = (
        "import runpy, sys; print('starting up...', flush=True); "
        f"sys.argv = [{str(DEMO)!r}]; runpy.run_path({str(DEMO)!r}, run_name='__main__')"
    )
    async with await load_mcp({"noisy": {"command": [sys.executable, "-c", noisy]}}) as source:
        assert source.status() == {"noisy": "connected"}
        assert await text_of(source, "noisy_echo", {"text": "clean"}) == "clean"


async def test_load_mcp_with_context_takes_the_cancel_signal_first() -> None:
    cancel = asyncio.Event()
    cancel.set()
    with pytest.raises(RunCancelled):
        await load_mcp_with_context({"x": {"command": ["no-such-binary"]}}, cancel)
