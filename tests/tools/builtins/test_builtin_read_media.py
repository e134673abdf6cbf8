"""The ``read`` built-in returns images, PDFs and audio as content parts (COMPAT §5, §6)."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builtin_support import Builtin

import toolnexus as tn
from png_support import make_png, read_png_size
from toolnexus.testing import ScriptedModel, call, tool_calls
from toolnexus.testing import text as reply
from toolnexus.tools.builtins import create_builtin_tools

PNG = make_png(5, 4)


@pytest.fixture
def process_limit() -> Iterator[None]:
    """Restores the process-wide part limit a test changes."""
    before = tn.get_max_part_bytes()
    yield
    tn.set_max_part_bytes(before)


async def test_a_png_is_an_image_part_named_by_its_basename(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "pics").mkdir()
    (in_tmp / "pics" / "shot.png").write_bytes(PNG)

    result = await builtin("read").execute({"path": "pics/shot.png", "offset": 3, "limit": 1})

    assert (result.output, result.is_error, result.metadata) == (
        f"pics/shot.png (image/png, {len(PNG)} bytes)",
        False,
        None,
    )
    assert result.parts == [
        {
            "type": "image",
            "mimeType": "image/png",
            "data": base64.b64encode(PNG).decode(),
            "name": "shot.png",
        }
    ]
    assert read_png_size(base64.b64decode(result.parts[0]["data"])) == (5, 4)


@pytest.mark.parametrize(
    ("name", "mime", "kind"),
    [
        ("a.JPG", "image/jpeg", "image"),
        ("a.webp", "image/webp", "image"),
        ("doc.pdf", "application/pdf", "file"),
        ("clip.mp3", "audio/mpeg", "audio"),
        ("clip.Wav", "audio/wav", "audio"),
    ],
)
async def test_each_media_extension_gives_its_part(
    builtin: Builtin, in_tmp: Path, name: str, mime: str, kind: str
) -> None:
    (in_tmp / name).write_bytes(b"\x00\x01\x02 media bytes")

    result = await builtin("read").execute({"path": name})

    assert result.output == f"{name} ({mime}, 15 bytes)"
    assert result.parts is not None
    assert (result.parts[0]["type"], result.parts[0]["mimeType"]) == (kind, mime)


async def test_an_empty_image_is_a_zero_byte_part(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "e.gif").write_bytes(b"")
    result = await builtin("read").execute({"path": "e.gif"})
    assert result.output == "e.gif (image/gif, 0 bytes)"
    assert result.parts == [{"type": "image", "mimeType": "image/gif", "data": "", "name": "e.gif"}]


async def test_other_binary_files_are_still_refused(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "x.bin").write_bytes(PNG)
    result = await builtin("read").execute({"path": "x.bin"})
    assert (result.output, result.is_error, result.parts) == (
        "read: x.bin is a binary file",
        True,
        None,
    )


async def test_an_image_outside_the_workspace_is_refused(builtin: Builtin, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "secret.png").write_bytes(PNG)
    os.symlink(tmp_path / "secret.png", root / "link.png")
    read = builtin("read", workspace=str(root))

    for path in ("../secret.png", str(tmp_path / "secret.png"), "link.png"):
        result = await read.execute({"path": path})
        assert result.is_error, path
        assert result.parts is None
        assert "outside" in result.output


async def test_an_image_inside_the_workspace_is_read(builtin: Builtin, tmp_path: Path) -> None:
    (tmp_path / "in.png").write_bytes(PNG)
    result = await builtin("read", workspace=str(tmp_path)).execute({"path": "in.png"})
    assert not result.is_error
    assert result.parts is not None


async def test_a_missing_image_is_an_error(builtin: Builtin, in_tmp: Path) -> None:
    result = await builtin("read").execute({"path": "nope.png"})
    assert (result.output, result.is_error) == ("read: file not found: nope.png", True)


async def test_an_image_over_the_process_limit_is_refused_unread(
    builtin: Builtin, in_tmp: Path, process_limit: None
) -> None:
    (in_tmp / "big.png").write_bytes(PNG)
    tn.set_max_part_bytes(len(PNG) - 1)
    result = await builtin("read").execute({"path": "big.png"})
    assert result.is_error
    assert result.output == (
        f"read: big.png is {len(PNG)} bytes, over the maxPartBytes limit of {len(PNG) - 1}"
    )


@pytest.mark.parametrize("style", ["openai", "anthropic"])
async def test_the_model_sees_the_image_read(in_tmp: Path, client_for: Any, style: str) -> None:
    (in_tmp / "chart.png").write_bytes(PNG)
    read = [t for t in create_builtin_tools() if t.name == "read"]
    async with ScriptedModel(
        [tool_calls(call("read", {"path": "chart.png"}, id="r1")), reply("a chart")]
    ) as model:
        async with client_for(model, style) as client:
            result = await client.run("what does chart.png show?", read)
    assert result.text == "a chart"
    data = base64.b64encode(PNG).decode()
    sent = model.requests[1].body["messages"]
    if style == "openai":
        assert sent[2] == {
            "role": "tool",
            "tool_call_id": "r1",
            "content": f"chart.png (image/png, {len(PNG)} bytes)",
        }
        assert sent[3]["content"][1] == {
            "type": "image_url",
            "image_url": {"url": f"data:image/png;base64,{data}"},
        }
    else:
        assert sent[2]["content"][0]["content"][1] == {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": data},
        }
