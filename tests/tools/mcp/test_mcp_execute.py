"""Executing MCP tools: result mapping, the idle timeout, progress, cancel, dead servers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as t
import pytest
import pytest_asyncio
from mcp_servers import demo, load_connected

from toolnexus import ToolContext, ToolResult
from toolnexus.tools.mcp import McpSource
from toolnexus.tools.mcp_call import to_tool_result

MODULE = pytest.mark.asyncio(loop_scope="module")
QUICK_MS = 5000  # short, yet longer than the SDK's import on a loaded 2-core machine


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def source() -> AsyncIterator[McpSource]:
    # "quick": the idle timeout must still cover the server's start-up (a Python import of the
    # SDK), so it is short but not tiny.
    config = {"d": demo(), "quick": demo(timeout=QUICK_MS), "mortal": demo()}
    async with await load_connected(config) as loaded:
        assert set(loaded.status().values()) == {"connected"}, loaded.errors()
        yield loaded


async def run(
    source: McpSource, name: str, args: dict[str, Any] | None = None, ctx: ToolContext | None = None
) -> ToolResult:
    tool = next(t for t in source.tools if t.name == name)
    return await tool.execute(args or {}, ctx)


@MODULE
async def test_text_parts_become_the_output(source: McpSource) -> None:
    result = await run(source, "d_echo", {"text": "line"})
    assert (result.output, result.is_error) == ("line", False)


@MODULE
async def test_structured_content_wins_as_compact_json(source: McpSource) -> None:
    result = await run(source, "d_structured")
    assert (result.output, result.is_error) == ('{"b":[1,2],"a":"ü"}', False)


@MODULE
async def test_non_text_content_becomes_parts_beside_the_text(source: McpSource) -> None:
    result = await run(source, "d_mixed")
    assert result.output == "before\nafter"
    assert [(p["type"], p["mimeType"]) for p in result.parts or []] == [
        ("image", "image/png"),
        ("audio", "audio/wav"),
    ]


@MODULE
async def test_an_is_error_result_is_an_error_with_the_joined_text(source: McpSource) -> None:
    result = await run(source, "d_fail")
    assert (result.output, result.is_error) == ("boom\n\nagain", True)


@MODULE
async def test_a_non_conforming_result_is_a_clear_error(source: McpSource) -> None:
    result = await run(source, "d_bad_result")
    assert result.is_error
    assert result.output.startswith("MCP server d returned a non-conforming result for bad_result")


@MODULE
async def test_a_result_names_its_server_in_metadata(source: McpSource) -> None:
    assert (await run(source, "d_echo", {"text": "x"})).metadata == {"server": "d"}


@MODULE
async def test_a_silent_call_times_out_after_the_idle_timeout(source: McpSource) -> None:
    started = time.perf_counter()
    result = await run(source, "quick_sleep", {"seconds": 30})
    assert result.is_error
    assert result.output == f"MCP tool sleep timed out after {QUICK_MS} ms without progress"
    assert time.perf_counter() - started < 15


@MODULE
async def test_a_call_stopped_mid_way_leaves_the_connection_usable(source: McpSource) -> None:
    stopped = await run(source, "d_sleep", {"seconds": 30}, ToolContext(timeout=0.2))
    assert stopped.is_error
    assert (await run(source, "d_echo", {"text": "ok"})).output == "ok"


@MODULE
async def test_progress_keeps_a_long_call_alive_past_the_timeout(source: McpSource) -> None:
    started = time.perf_counter()
    result = await run(source, "quick_progress", {"steps": 14, "interval": 0.4})
    assert (result.output, result.is_error) == ("finished 14 steps", False)
    assert time.perf_counter() - started > QUICK_MS / 1000  # longer than the idle timeout


@MODULE
async def test_the_runs_deadline_caps_a_call_that_reports_progress(source: McpSource) -> None:
    started = time.perf_counter()
    ctx = ToolContext(timeout=0.5)
    result = await run(source, "d_progress", {"steps": 100, "interval": 0.1}, ctx)
    assert (result.output, result.is_error) == (
        "MCP tool progress stopped at the run's deadline",
        True,
    )
    assert time.perf_counter() - started < 10


@MODULE
async def test_a_set_signal_cancels_before_calling(source: McpSource) -> None:
    signal = asyncio.Event()
    signal.set()
    result = await run(source, "d_echo", {"text": "x"}, ToolContext(signal=signal))
    assert (result.output, result.is_error) == ("MCP tool echo cancelled", True)


@MODULE
async def test_the_signal_cancels_an_in_flight_call(source: McpSource) -> None:
    signal = asyncio.Event()
    asyncio.get_running_loop().call_later(0.3, signal.set)
    started = time.perf_counter()
    result = await run(source, "d_sleep", {"seconds": 30}, ToolContext(signal=signal))
    assert (result.output, result.is_error) == ("MCP tool sleep cancelled", True)
    assert time.perf_counter() - started < 10


@MODULE
async def test_a_server_that_dies_mid_call_is_an_error_and_marked_failed(
    source: McpSource,
) -> None:
    result = await run(source, "mortal_die")
    assert result.is_error
    assert "server process exited with code 7: dying on purpose" in result.output
    assert source.status()["mortal"] == "failed"
    assert "connection lost" in source.errors()["mortal"]


@MODULE
async def test_a_call_to_a_dead_server_is_an_error_without_waiting(source: McpSource) -> None:
    await run(source, "mortal_die")
    result = await run(source, "mortal_echo", {"text": "x"})
    assert result.is_error
    assert result.output.startswith('MCP server "mortal"')


# -- the mapping, on SDK result objects ----------------------------------------------------


def test_a_resource_link_is_a_file_part_by_url() -> None:
    result = to_tool_result(
        t.CallToolResult(
            content=[t.ResourceLink(type="resource_link", uri="file:///a.txt", name="a")]
        )
    )
    assert result.output == "file (application/octet-stream, 0 bytes)"
    assert result.parts == [
        {
            "type": "file",
            "mimeType": "application/octet-stream",
            "url": "file:///a.txt",
            "name": "a",
        }
    ]


def test_an_embedded_text_resource_contributes_its_text() -> None:
    embedded = t.EmbeddedResource(
        type="resource", resource=t.TextResourceContents(uri="file:///a", text="inside")
    )
    assert to_tool_result(t.CallToolResult(content=[embedded])).output == "inside"


def test_an_error_without_text_still_says_it_failed() -> None:
    result = to_tool_result(t.CallToolResult(content=[], is_error=True))
    assert (result.output, result.is_error) == ("MCP tool returned an error", True)


def test_structured_content_may_be_any_json_value() -> None:
    result = to_tool_result(t.CallToolResult(content=[], structured_content=[1, "x", None]))
    assert result.output == '[1,"x",null]'
