"""MCP results with images, audio and resources become content parts (COMPAT §4, §6), against a
real MCP server (``servers/media.py``, built on the ``mcp`` SDK) over stdio."""

from __future__ import annotations

import base64
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from mcp_servers import SERVERS

from png_support import make_png, read_png_size
from toolnexus import ToolResult
from toolnexus.testing import ScriptedModel, call, tool_calls
from toolnexus.testing import text as reply
from toolnexus.tools.mcp import McpSource, load_mcp

MODULE = pytest.mark.asyncio(loop_scope="module")
PNG = base64.b64encode(make_png(2, 3)).decode()
WAV = base64.b64encode(b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(24)).decode()
PDF = base64.b64encode(b"%PDF-1.4 tiny").decode()
IMAGE = {"type": "image", "mimeType": "image/png", "data": PNG}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def source() -> AsyncIterator[McpSource]:
    config = {"m": {"command": [sys.executable, str(SERVERS / "media.py")]}}
    async with await load_mcp(config) as loaded:
        assert loaded.status() == {"m": "connected"}, loaded.errors()
        yield loaded


async def run(source: McpSource, name: str) -> ToolResult:
    tool = next(t for t in source.tools if t.name == f"m_{name}")
    return await tool.execute({}, None)


@MODULE
async def test_an_image_is_a_part_beside_the_text(source: McpSource) -> None:
    result = await run(source, "picture")
    assert (result.output, result.is_error, result.metadata) == (
        "a 2x3 picture",
        False,
        {"server": "m"},
    )
    assert result.parts == [IMAGE]
    assert read_png_size(base64.b64decode(result.parts[0]["data"])) == (2, 3)


@MODULE
async def test_media_without_text_is_described_in_the_output(source: McpSource) -> None:
    result = await run(source, "only_media")
    assert result.output == (
        "image (image/png, 73 bytes)\naudio (audio/wav, 40 bytes)\nfile (application/pdf, 13 bytes)"
    )
    assert result.parts == [
        IMAGE,
        {"type": "audio", "mimeType": "audio/wav", "data": WAV},
        {"type": "file", "mimeType": "application/pdf", "data": PDF, "name": "file:///docs/a.pdf"},
    ]


@MODULE
async def test_resource_text_follows_the_text_and_links_are_url_parts(source: McpSource) -> None:
    result = await run(source, "resources")
    assert result.output == "intro\nnote text"
    assert result.parts == [
        {
            "type": "file",
            "mimeType": "application/octet-stream",
            "url": "https://x.test/r.pdf",
            "name": "report",
        },
        {"type": "file", "mimeType": "image/png", "url": "https://x.test/s.bin"},
    ]


@MODULE
async def test_an_error_keeps_its_parts_and_joins_non_blank_text(source: McpSource) -> None:
    result = await run(source, "broken")
    assert (result.output, result.is_error) == ("render failed\n\nsee screenshot", True)
    assert result.parts == [IMAGE]


@MODULE
async def test_structured_content_keeps_its_parts(source: McpSource) -> None:
    result = await run(source, "measured")
    assert result.output == '{"width":2,"height":3}'
    assert result.parts == [IMAGE]


@MODULE
@pytest.mark.parametrize("style", ["openai", "anthropic"])
async def test_mcp_parts_reach_the_model_in_each_wire_style(
    source: McpSource, style: str, client_for: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    async with ScriptedModel(
        [tool_calls(call("m_only_media", {}, id="c1")), reply("seen")]
    ) as model:
        async with client_for(model, style) as client:
            result = await client.run("look", source.tools)
    assert result.text == "seen"
    image_url = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    header = {"type": "text", "text": "Output of tool m_only_media (c1):"}
    sent = model.requests[1].body["messages"]
    if style == "openai":
        assert sent[3] == {
            "role": "user",
            "content": [
                header,
                image_url,
                header,
                {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}},
                header,
                {
                    "type": "file",
                    "file": {
                        "filename": "file:///docs/a.pdf",
                        "file_data": f"data:application/pdf;base64,{PDF}",
                    },
                },
            ],
        }
        assert capsys.readouterr().err == ""
    else:
        blocks = sent[2]["content"][0]["content"]
        assert blocks[1:] == [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            {"type": "text", "text": "[unsupported audio part (audio/wav, 40 bytes)]"},
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
            },
        ]
        assert "sent as a text placeholder" in capsys.readouterr().err


@MODULE
async def test_a_server_sending_corrupt_base64_gets_an_error_result_not_a_bad_request(
    source: McpSource, client_for: Any
) -> None:
    async with ScriptedModel([tool_calls(call("m_corrupt", {}, id="c1")), reply("ok")]) as model:
        async with client_for(model, "openai") as client:
            result = await client.run("look", source.tools)
    record = result.tool_calls[0]
    assert record.is_error
    assert record.output == (
        "tool returned an invalid content part: a image part's data is not valid padded base64"
    )
    assert "%%%" not in str(model.requests[1].body)
