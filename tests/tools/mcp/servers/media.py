"""A real MCP server (the ``mcp`` SDK's server side) whose tools answer with non-text content:
images (real PNG bytes), audio, embedded resources and resource links. Runs over stdio."""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import mcp_types as t
from mcp.server.mcpserver import MCPServer

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # tests/, for png_support

from png_support import make_png

PNG = base64.b64encode(make_png(2, 3)).decode()
WAV = base64.b64encode(b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(24)).decode()
PDF = base64.b64encode(b"%PDF-1.4 tiny").decode()

server = MCPServer("media")


@server.tool()
def picture() -> t.CallToolResult:
    """A caption and a PNG."""
    return t.CallToolResult(
        content=[
            t.TextContent(type="text", text="a 2x3 picture"),
            t.ImageContent(type="image", data=PNG, mime_type="image/png"),
        ]
    )


@server.tool()
def only_media() -> t.CallToolResult:
    """An image, a clip and a PDF, with no text at all."""
    return t.CallToolResult(
        content=[
            t.ImageContent(type="image", data=PNG, mime_type="image/png"),
            t.AudioContent(type="audio", data=WAV, mime_type="audio/wav"),
            t.EmbeddedResource(
                type="resource",
                resource=t.BlobResourceContents(
                    uri="file:///docs/a.pdf", mime_type="application/pdf", blob=PDF
                ),
            ),
        ]
    )


@server.tool()
def resources() -> t.CallToolResult:
    """A text item, an embedded text resource, a link with and without a name."""
    return t.CallToolResult(
        content=[
            t.EmbeddedResource(
                type="resource",
                resource=t.TextResourceContents(uri="file:///notes.txt", text="note text"),
            ),
            t.TextContent(type="text", text="intro"),
            t.ResourceLink(type="resource_link", uri="https://x.test/r.pdf", name="report"),
            t.ResourceLink(
                type="resource_link", uri="https://x.test/s.bin", name="", mime_type="image/png"
            ),
        ]
    )


@server.tool()
def broken() -> t.CallToolResult:
    """An error that carries a screenshot."""
    return t.CallToolResult(
        content=[
            t.TextContent(type="text", text="render failed"),
            t.TextContent(type="text", text="   "),
            t.TextContent(type="text", text="see screenshot"),
            t.ImageContent(type="image", data=PNG, mime_type="image/png"),
        ],
        is_error=True,
    )


@server.tool()
def measured() -> t.CallToolResult:
    """Structured content beside an image."""
    return t.CallToolResult(
        content=[t.ImageContent(type="image", data=PNG, mime_type="image/png")],
        structured_content={"width": 2, "height": 3},
    )


@server.tool()
def corrupt() -> t.CallToolResult:
    """An image whose data is not base64."""
    return t.CallToolResult(
        content=[t.ImageContent(type="image", data="%%% not base64 %%%", mime_type="image/png")]
    )


if __name__ == "__main__":
    server.run()
