"""Images in and out of the loop: a prompt made of parts, and a tool that returns a picture.

1. ``client.run([tn.text(...), tn.image(path)])`` sends the image with the question.
2. A ``snapshot`` tool returns ``ToolResult(output, parts=[tn.image(...)])``; the model sees
   the picture after the tool's text (in an OpenAI-style request it arrives in a user message
   right after the tool results, in an Anthropic-style one inside the ``tool_result``).

    python examples/image_prompt.py [picture.png]

Without a path it uses a 2×2 orange PNG written to a temporary directory. Without
``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` the "model" is a local scripted one that decodes
the PNG it receives and says how big it is, which shows that the bytes arrived intact.
"""

from __future__ import annotations

import asyncio
import base64
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any

from _model import llm

import toolnexus as tn
from toolnexus.testing import RecordedRequest, Reply, call, text, tool_calls

ORANGE_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGP438MARAwQCgAvPgYtmKN0KQAAAABJRU5ErkJggg=="
)


@tn.define_tool
def snapshot(label: str) -> tn.ToolResult:
    """Take a snapshot of the dashboard and return it as an image."""
    return tn.ToolResult(
        f"snapshot {label!r} taken", parts=[tn.image(ORANGE_PNG, mime_type="image/png")]
    )


def png_size(data_url: str) -> tuple[int, int]:
    """Width and height from the IHDR chunk of a base64 PNG data URL."""
    raw = base64.b64decode(data_url.split(",", 1)[1])
    return struct.unpack(">II", raw[16:24])


def images_seen(request: RecordedRequest) -> list[str]:
    """Every image data URL in an OpenAI-style request, in order."""
    urls: list[str] = []
    for message in request.body["messages"]:
        content: Any = message.get("content")
        if isinstance(content, list):
            for block in content:
                if block.get("type") == "image_url":
                    urls.append(block["image_url"]["url"])
    return urls


def brain(request: RecordedRequest) -> Reply:
    """The scripted model: describe the newest image, asking for a snapshot once."""
    seen = images_seen(request)
    width, height = png_size(seen[-1])
    if len(seen) == 1 and "dashboard" in str(request.body["messages"][-1].get("content")):
        return tool_calls(call("snapshot", {"label": "dashboard"}))
    return text(f"I see a {width}×{height} PNG ({len(seen)} image(s) so far).")


async def main(path: Path) -> None:
    toolkit = await tn.create_toolkit(extra_tools=[snapshot], builtins=False)
    async with llm(brain) as options, tn.create_client(**options) as client:
        first = await client.run([tn.text("What is in this picture?"), tn.image(path)])
        print("1)", first.text)
        second = await client.run(
            [tn.text("Compare it with the dashboard."), tn.image(path)], toolkit
        )
        print("2)", second.text)
        stored = second.messages[-2]
        print("   transcript keeps:", [tn.summarize(p) for p in stored.get("parts", [])])


if __name__ == "__main__":
    if len(sys.argv) > 1:
        asyncio.run(main(Path(sys.argv[1])))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            picture = Path(tmp) / "orange.png"
            picture.write_bytes(ORANGE_PNG)
            asyncio.run(main(picture))
