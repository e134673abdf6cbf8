"""An MCP ``tools/call`` result as a `ToolResult`: its text as ``output``, everything else as
content parts (COMPAT §4 "Result mapping", §6).

- ``text`` items are the output, joined by newlines (an error joins its non-blank ones by a
  blank line, else says ``MCP tool returned an error``); ``structuredContent`` wins as compact
  JSON on a success;
- ``image`` / ``audio`` with string data and a mime type → ``{type, mimeType, data}``, the data
  verbatim;
- ``resource_link`` → a ``file`` part by URL (``name`` only when the server gave one);
- an embedded ``resource`` with a ``blob`` → a ``file`` part by data, named by its URI; one with
  ``text`` adds that text to the output after the text items.

Parts are kept on every branch, errors and structured results included. A result with parts and
no text says what it holds: one ``<type> (<mimeType>, <n> bytes)`` line per part.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .._types import ToolResult
from ..parts import describe_part

if TYPE_CHECKING:
    from mcp_types import CallToolResult

__all__ = ["ERROR_TEXT", "to_tool_result"]

ERROR_TEXT = "MCP tool returned an error"
_OCTET = "application/octet-stream"


def _mime(block: Any) -> str:
    mime = getattr(block, "mime_type", None)
    return mime if isinstance(mime, str) and mime else _OCTET


def _collect(content: list[Any]) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """The text items, the embedded resources' texts and the parts, in order."""
    texts: list[str] = []
    resource_texts: list[str] = []
    parts: list[dict[str, Any]] = []
    for block in content:
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(str(block.text))
        elif kind in ("image", "audio"):
            data, mime = getattr(block, "data", None), getattr(block, "mime_type", None)
            if isinstance(data, str) and isinstance(mime, str) and mime:
                parts.append({"type": kind, "mimeType": mime, "data": data})
        elif kind == "resource_link":
            link: dict[str, Any] = {"type": "file", "mimeType": _mime(block), "url": str(block.uri)}
            name = getattr(block, "name", None)
            if isinstance(name, str) and name:
                link["name"] = name
            parts.append(link)
        elif kind == "resource":
            resource = block.resource
            blob, text = getattr(resource, "blob", None), getattr(resource, "text", None)
            if isinstance(blob, str):
                parts.append(
                    {
                        "type": "file",
                        "mimeType": _mime(resource),
                        "data": blob,
                        "name": str(resource.uri),
                    }
                )
            elif isinstance(text, str):
                resource_texts.append(text)
    return texts, resource_texts, parts


def to_tool_result(result: CallToolResult, server: str = "") -> ToolResult:
    """The `ToolResult` for a ``tools/call`` result of ``server`` (metadata ``{"server"}``)."""
    meta = {"server": server}
    texts, resource_texts, parts = _collect(list(result.content))
    if result.is_error:
        output = "\n\n".join(t for t in texts if t.strip()) or ERROR_TEXT
    elif result.structured_content is not None:
        output = json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False)
    else:
        output = "\n".join(texts + resource_texts)
        if not output and parts:
            output = "\n".join(describe_part(p) for p in parts)
    return ToolResult(output, bool(result.is_error), meta, parts or None)
