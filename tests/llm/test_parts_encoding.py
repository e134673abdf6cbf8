"""Content parts on the wire: the exact request JSON each dialect receives (COMPAT §6).

Real PNG bytes (made by `png_support.make_png`) go through a real client to the loopback
`ScriptedModel`; the assertions read the body the server parsed.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

import toolnexus as tn
from png_support import make_png, read_png_size
from toolnexus import Tool, ToolResult
from toolnexus.testing import ScriptedModel, call, tool_calls
from toolnexus.testing import text as reply

PNG = make_png(3, 2)
B64 = base64.b64encode(PNG).decode()
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(24)
WAV_B64 = base64.b64encode(WAV).decode()
DATA_URL = f"data:image/png;base64,{B64}"


def snap_tool(*parts: Any, output: str = "rendered", name: str = "snap") -> Tool:
    """A native tool whose result carries ``parts``."""

    async def run(args: dict[str, Any], ctx: Any) -> ToolResult:
        return ToolResult(output, parts=list(parts))

    return Tool(
        name=name,
        description="takes a picture",
        input_schema={"type": "object", "properties": {}},
        source="native",
        execute=run,
    )


def sent(scripted: ScriptedModel, i: int = 0) -> list[dict[str, Any]]:
    return scripted.requests[i].body["messages"]


# -- attached parts (the prompt) ---------------------------------------------------------------


async def test_an_image_prompt_is_an_image_url_block_on_openai(scripted, client_for) -> None:
    scripted.add(reply("a red square"))
    async with client_for(scripted, "openai") as client:
        result = await client.run([tn.text("What is this?"), tn.image(PNG, mime_type="image/png")])
    assert sent(scripted) == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": DATA_URL}},
            ],
        }
    ]
    url = sent(scripted)[0]["content"][1]["image_url"]["url"]
    assert read_png_size(base64.b64decode(url.split(",", 1)[1])) == (3, 2)
    assert result.messages[0] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image", "mimeType": "image/png", "data": B64},
        ],
    }


async def test_an_image_prompt_is_a_base64_image_block_on_anthropic(scripted, client_for) -> None:
    scripted.add(reply("a red square"))
    async with client_for(scripted, "anthropic") as client:
        result = await client.run([tn.text("What is this?"), tn.image(PNG, mime_type="image/png")])
    assert sent(scripted) == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": B64},
                },
            ],
        }
    ]
    assert result.messages[0]["content"][1] == {
        "type": "image",
        "mimeType": "image/png",
        "data": B64,
    }


async def test_part_dicts_and_bare_strings_are_accepted_in_order(
    scripted, client_for, style
) -> None:
    scripted.add(reply("ok"))
    prompt = [
        "first",
        {"type": "image", "mimeType": "image/png", "url": "https://x.test/a.png"},
        "last",
    ]
    async with client_for(scripted, style) as client:
        await client.run(prompt)
    image_block = (
        {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}
        if style == "openai"
        else {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}}
    )
    assert sent(scripted)[0]["content"] == [
        {"type": "text", "text": "first"},
        image_block,
        {"type": "text", "text": "last"},
    ]


async def test_a_pdf_and_wav_audio_are_file_and_input_audio_blocks_on_openai(
    scripted, client_for
) -> None:
    scripted.add(reply("ok"))
    pdf = tn.file(b"%PDF-1.4 tiny", mime_type="application/pdf", name="a.pdf")
    async with client_for(scripted, "openai") as client:
        await client.run([pdf, tn.audio(WAV, mime_type="audio/wav")])
    pdf_b64 = base64.b64encode(b"%PDF-1.4 tiny").decode()
    assert sent(scripted)[0]["content"] == [
        {
            "type": "file",
            "file": {"filename": "a.pdf", "file_data": f"data:application/pdf;base64,{pdf_b64}"},
        },
        {"type": "input_audio", "input_audio": {"data": WAV_B64, "format": "wav"}},
    ]


async def test_a_pdf_is_a_document_block_on_anthropic(scripted, client_for) -> None:
    scripted.add(reply("ok"))
    async with client_for(scripted, "anthropic") as client:
        await client.run([tn.file(b"%PDF", mime_type="application/pdf")])
    assert sent(scripted)[0]["content"] == [
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERg=="},
        }
    ]


async def test_attached_audio_on_anthropic_fails_before_any_http_call(scripted, client_for) -> None:
    async with client_for(scripted, "anthropic") as client:
        with pytest.raises(tn.UnsupportedPartError) as caught:
            await client.run(["listen", tn.audio(WAV, mime_type="audio/wav")])
    assert str(caught.value) == 'no "anthropic" block shape for a audio part (audio/wav)'
    assert (caught.value.part_type, caught.value.mime_type, caught.value.style) == (
        "audio",
        "audio/wav",
        "anthropic",
    )
    assert isinstance(caught.value, ValueError)
    assert scripted.requests == []


async def test_an_attached_url_only_file_fails_on_openai(scripted, client_for) -> None:
    async with client_for(scripted, "openai") as client:
        with pytest.raises(tn.UnsupportedPartError, match=r'no "openai" block shape for a file'):
            await client.run([tn.file("https://x.test/a.pdf")])
    assert scripted.requests == []


async def test_an_attached_part_over_max_part_bytes_fails_before_any_http_call(
    scripted, client_for, style
) -> None:
    async with client_for(scripted, style, max_part_bytes=len(PNG) - 1) as client:
        with pytest.raises(tn.ContentPartError) as caught:
            await client.run([tn.image(PNG, mime_type="image/png")])
    assert str(caught.value) == (
        f"content part is {len(PNG)} decoded bytes, over the maxPartBytes limit of {len(PNG) - 1}"
    )
    assert scripted.requests == []


async def test_max_part_bytes_at_the_exact_size_is_sent(scripted, client_for, style) -> None:
    scripted.add(reply("ok"))
    async with client_for(scripted, style, max_part_bytes=len(PNG)) as client:
        await client.run([tn.image(PNG, mime_type="image/png")])
    assert len(scripted.requests) == 1


async def test_on_unsupported_part_text_sends_a_placeholder_for_an_attached_part(
    scripted, client_for, capsys
) -> None:
    scripted.add(reply("ok"))
    async with client_for(scripted, "anthropic", on_unsupported_part="text") as client:
        await client.run(["listen", tn.audio(WAV, mime_type="audio/wav")])
    placeholder = f"[unsupported audio part (audio/wav, {len(WAV)} bytes)]"
    assert sent(scripted)[0]["content"] == [
        {"type": "text", "text": "listen"},
        {"type": "text", "text": placeholder},
    ]
    assert capsys.readouterr().err == (
        '[toolnexus] no "anthropic" block shape for a audio part (audio/wav) — sent as a text '
        "placeholder\n"
    )


async def test_bad_client_part_options_are_refused(scripted, client_for) -> None:
    with pytest.raises(tn.UsageError, match="on_unsupported_part"):
        client_for(scripted, "openai", on_unsupported_part="drop")
    for bad in (0, -1, True, 1.5, "10"):
        with pytest.raises(tn.UsageError, match="max_part_bytes"):
            client_for(scripted, "openai", max_part_bytes=bad)


# -- tool-derived parts --------------------------------------------------------------------------


async def test_a_tool_image_moves_into_one_user_message_after_the_results_on_openai(
    scripted, client_for
) -> None:
    png = tn.image(PNG, mime_type="image/png", name="shot.png")
    tools = [snap_tool(png), snap_tool(output="nothing", name="noop")]
    scripted.add(
        tool_calls(call("snap", {}, id="c1"), call("noop", {}, id="c2")),
        tool_calls(call("noop", {}, id="c3")),
        reply("a red square"),
    )
    async with client_for(scripted, "openai") as client:
        result = await client.run("take a picture", tools)
    relocated = {
        "role": "user",
        "content": [
            {"type": "text", "text": "Output of tool snap (c1):"},
            {"type": "image_url", "image_url": {"url": DATA_URL}},
        ],
    }
    second = sent(scripted, 1)
    assert second[2:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "rendered"},
        {"role": "tool", "tool_call_id": "c2", "content": "nothing"},
        relocated,
    ]
    # The next turn re-sends the same encoding (the per-run rendering cache).
    third = sent(scripted, 2)
    assert third[:5] == second
    assert third[5:] == [
        {"role": "assistant", "content": None, "tool_calls": third[5]["tool_calls"]},
        {"role": "tool", "tool_call_id": "c3", "content": "nothing"},
    ]
    # The transcript keeps the canonical part, never a wire block.
    assert result.messages[2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "rendered",
        "parts": [{"type": "image", "mimeType": "image/png", "data": B64, "name": "shot.png"}],
        "name": "snap",
    }
    assert "image_url" not in json.dumps(result.messages)


async def test_a_tool_image_is_inside_its_tool_result_on_anthropic(scripted, client_for) -> None:
    scripted.add(tool_calls(call("snap", {}, id="c1")), reply("a red square"))
    async with client_for(scripted, "anthropic") as client:
        result = await client.run(
            "take a picture", [snap_tool(tn.image(PNG, mime_type="image/png"))]
        )
    assert sent(scripted, 1)[2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "c1",
                "content": [
                    {"type": "text", "text": "rendered"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": B64},
                    },
                ],
            }
        ],
    }
    assert result.messages[2]["parts"] == [{"type": "image", "mimeType": "image/png", "data": B64}]
    assert '"source"' not in json.dumps(result.messages)


async def test_tool_text_parts_join_the_output_as_a_content_list_on_openai(
    scripted, client_for
) -> None:
    scripted.add(tool_calls(call("snap", {}, id="c1")), reply("ok"))
    async with client_for(scripted, "openai") as client:
        await client.run("go", [snap_tool(tn.text("caption"), {"type": "text", "text": "more"})])
    assert sent(scripted, 1)[2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": [
            {"type": "text", "text": "rendered"},
            {"type": "text", "text": "caption"},
            {"type": "text", "text": "more"},
        ],
    }


async def test_tool_audio_on_anthropic_becomes_a_placeholder_warned_once(
    scripted, client_for, capsys
) -> None:
    scripted.add(
        tool_calls(call("snap", {}, id="c1")),
        tool_calls(call("snap", {}, id="c2")),
        reply("ok"),
    )
    tool = snap_tool(tn.audio(WAV, mime_type="audio/wav"))
    async with client_for(scripted, "anthropic") as client:
        result = await client.run("listen", [tool])
    assert result.status == "done"
    placeholder = {
        "type": "text",
        "text": f"[unsupported audio part (audio/wav, {len(WAV)} bytes)]",
    }
    blocks = sent(scripted, 2)[2]["content"][0]["content"]
    assert blocks == [{"type": "text", "text": "rendered"}, placeholder]
    err = capsys.readouterr().err
    assert err.count("sent as a text placeholder") == 1
    assert err.startswith('[toolnexus] no "anthropic" block shape for a audio part (audio/wav)')


async def test_an_oversize_tool_part_becomes_a_placeholder_with_the_size_warning(
    scripted, client_for, capsys, style
) -> None:
    scripted.add(tool_calls(call("snap", {}, id="c1")), reply("ok"))
    async with client_for(scripted, style, max_part_bytes=10) as client:
        await client.run("go", [snap_tool(tn.image(PNG, mime_type="image/png"))])
    body = json.dumps(scripted.requests[1].body)
    assert f"[unsupported image part (image/png, {len(PNG)} bytes)]" in body
    assert B64 not in body
    assert capsys.readouterr().err == (
        f"[toolnexus] content part is {len(PNG)} decoded bytes, over the maxPartBytes limit of "
        "10 — sent as a text placeholder\n"
    )


async def test_on_unsupported_part_error_fails_a_run_on_a_tool_part(scripted, client_for) -> None:
    scripted.add(tool_calls(call("snap", {}, id="c1")), reply("never"))
    async with client_for(scripted, "anthropic", on_unsupported_part="error") as client:
        with pytest.raises(tn.UnsupportedPartError):
            await client.run("go", [snap_tool(tn.audio(WAV, mime_type="audio/wav"))])
    assert len(scripted.requests) == 1  # the second request was never sent


async def test_a_tool_returning_a_malformed_part_is_an_error_result(scripted, client_for) -> None:
    scripted.add(tool_calls(call("snap", {}, id="c1")), reply("ok"))
    bad = {"type": "image", "mimeType": "image/png", "data": "not base64!"}
    async with client_for(scripted, "openai") as client:
        result = await client.run("go", [snap_tool(bad)])
    assert result.tool_calls[0].is_error
    assert result.tool_calls[0].output == (
        "tool returned an invalid content part: a image part's data is not valid padded base64"
    )
    assert "parts" not in result.messages[2]


async def test_the_llm_metric_summarises_the_parts_sent(scripted, client_for, style) -> None:
    events: list[dict[str, Any]] = []
    scripted.add(reply("ok"))
    async with client_for(scripted, style, on_metric=events.append) as client:
        await client.run(["look", tn.image(PNG, mime_type="image/png")])
    llm = [e for e in events if e["event"] == "llm"]
    assert llm[0]["parts"] == [{"type": "image", "mimeType": "image/png", "bytes": len(PNG)}]
    assert B64 not in json.dumps(events)


async def test_the_llm_metric_has_no_parts_key_without_parts(scripted, client_for) -> None:
    events: list[dict[str, Any]] = []
    scripted.add(reply("ok"))
    async with client_for(scripted, "openai", on_metric=events.append) as client:
        await client.run("plain")
    assert "parts" not in next(e for e in events if e["event"] == "llm")


async def test_a_streamed_run_encodes_parts_too(scripted, client_for, style) -> None:
    scripted.add(reply("seen"))
    async with client_for(scripted, style) as client:
        events = [e async for e in client.stream(["look", tn.image(PNG, mime_type="image/png")])]
    assert events[-1]["result"].text == "seen"
    assert scripted.requests[0].stream
    content = sent(scripted)[0]["content"]
    assert content[0] == {"type": "text", "text": "look"}
    assert content[1]["type"] == ("image_url" if style == "openai" else "image")


async def test_a_conversation_sends_parts_and_keeps_them_for_the_next_turn(
    scripted, client_for
) -> None:
    scripted.add(reply("a square"), reply("red"))
    async with client_for(scripted, "anthropic") as client:
        conv = client.conversation()
        await conv.send(["what shape?", tn.image(PNG, mime_type="image/png")])
        await conv.send("what colour?")
    assert sent(scripted, 1)[0] == sent(scripted, 0)[0]
    assert sent(scripted, 1)[-1] == {"role": "user", "content": "what colour?"}


# -- translate (§11) -----------------------------------------------------------------------------


async def test_translate_to_anthropic_puts_the_text_first_and_never_fails_on_a_part(
    scripted, client_for
) -> None:
    scripted.add(reply("ok"))
    messages = [
        {
            "role": "user",
            "content": [
                {"type": "image", "mimeType": "image/png", "data": B64},
                {"type": "text", "text": "what "},
                {"type": "audio", "mimeType": "audio/wav", "data": WAV_B64},
                {"type": "text", "text": "is this?"},
            ],
        }
    ]
    async with client_for(scripted, "anthropic") as client:
        result = await client.translate(messages)
    assert result.text == "ok"
    assert sent(scripted)[0]["content"] == [
        {"type": "text", "text": "what is this?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": B64}},
        {"type": "text", "text": f"[unsupported audio part (audio/wav, {len(WAV)} bytes)]"},
    ]


def test_the_pure_translation_encodes_tool_parts_and_placeholders_audio() -> None:
    messages = [
        {
            "role": "user",
            "content": ["hear ", {"type": "audio", "mimeType": "audio/wav", "data": WAV_B64}],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "snap", "arguments": "{}"}}
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": "rendered",
            "parts": [{"type": "image", "mimeType": "image/png", "url": "https://x.test/a.png"}],
            "name": "snap",
        },
    ]
    rendered, system = tn.openai_messages_to_anthropic(messages)
    assert system is None
    assert rendered[0] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "hear "},
            {"type": "text", "text": f"[unsupported audio part (audio/wav, {len(WAV)} bytes)]"},
        ],
    }
    assert rendered[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": [
            {"type": "text", "text": "rendered"},
            {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}},
        ],
    }


async def test_an_anthropic_shaped_history_keeps_tool_result_parts(scripted, client_for) -> None:
    part = {"type": "image", "mimeType": "image/png", "data": B64}
    history = [
        {"role": "user", "content": "take a picture"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "snap", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "c1",
                    "content": "rendered",
                    "is_error": False,
                    "parts": [part],
                }
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "a red square"}]},
    ]
    scripted.add(reply("still red"))
    async with client_for(scripted, "openai") as client:
        result = await client.run("and now?", history=history)
    assert result.messages[2] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": "rendered",
        "parts": [part],
        "name": "snap",
    }
    assert sent(scripted)[3] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Output of tool snap (c1):"},
            {"type": "image_url", "image_url": {"url": DATA_URL}},
        ],
    }


async def test_an_in_process_model_receives_openai_blocks() -> None:
    seen: list[Any] = []

    def generate(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request["messages"])
        return {"content": "ok"}

    client = tn.create_in_process_client(model="local", generate=generate, max_part_bytes=len(PNG))
    async with client:
        await client.run(["look", tn.image(PNG, mime_type="image/png")])
        with pytest.raises(tn.ContentPartError):
            await client.run([tn.image(PNG + b"x", mime_type="image/png")])
    assert len(seen) == 1
    assert seen[0][0]["content"][1] == {"type": "image_url", "image_url": {"url": DATA_URL}}


async def test_toolkit_execute_gives_canonical_parts_to_a_host_loop() -> None:
    toolkit = await tn.create_toolkit(
        extra_tools=[snap_tool(tn.image(PNG, mime_type="image/png"))], builtins=False
    )
    result = await toolkit.execute("snap", {})
    assert result.parts == [{"type": "image", "mimeType": "image/png", "data": B64}]
    assert tn.encode_part(result.parts[0], "anthropic")["source"]["data"] == B64


async def test_on_unsupported_part_also_decides_for_a_part_over_the_limit(
    scripted, client_for, capsys
) -> None:
    scripted.add(reply("ok"))
    async with client_for(scripted, "openai", max_part_bytes=8, on_unsupported_part="text") as c:
        await c.run(["big", tn.image(PNG, mime_type="image/png")])
    assert sent(scripted)[0]["content"][1] == {
        "type": "text",
        "text": f"[unsupported image part (image/png, {len(PNG)} bytes)]",
    }
    assert (
        "over the maxPartBytes limit of 8 — sent as a text placeholder" in capsys.readouterr().err
    )
    scripted.add(tool_calls(call("snap", {}, id="c1")), reply("never"))
    async with client_for(scripted, "openai", max_part_bytes=8, on_unsupported_part="error") as c:
        with pytest.raises(tn.ContentPartError, match="over the maxPartBytes limit of 8"):
            await c.run("go", [snap_tool(tn.image(PNG, mime_type="image/png"))])
    assert len(scripted.requests) == 2  # the tool turn's follow-up was never sent


@pytest.mark.parametrize(
    ("parts", "problem"),
    [
        (["junk"], "not a content part: str"),
        ([{"type": "image", "mimeType": "image/png"}], "carries neither data nor url"),
        (
            [{"type": "hologram", "mimeType": "x/y", "data": "AA=="}],
            'unknown content part type "hologram"',
        ),
    ],
)
async def test_a_host_history_with_a_broken_tool_part_fails_before_any_http_call(
    scripted, client_for, style, parts: list[Any], problem: str
) -> None:
    history = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "snap", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x", "parts": parts, "name": "snap"},
    ]
    async with client_for(scripted, style) as client:
        with pytest.raises(tn.ContentPartError, match=problem):
            await client.run("again", history=history)
    assert scripted.requests == []
