"""The content-part model: constructors, validation, the pinned error texts (COMPAT §6)."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn
from png_support import make_png
from toolnexus import content
from toolnexus.testing import ScriptedModel

PNG = make_png(2, 2)
B64 = base64.b64encode(PNG).decode()


@pytest.fixture
def process_limit() -> Iterator[None]:
    before = tn.get_max_part_bytes()
    yield
    tn.set_max_part_bytes(before)


def fails(text: str) -> Any:
    """``pytest.raises`` for a `ContentPartError` with exactly ``text``."""
    return pytest.raises(tn.ContentPartError, match=f"^{__import__('re').escape(text)}$")


# -- building parts ----------------------------------------------------------------------------


def test_a_path_is_read_now_with_the_mime_from_the_extension(tmp_path: Path) -> None:
    (tmp_path / "Cat.PNG").write_bytes(PNG)
    p = tn.image(tmp_path / "Cat.PNG")
    assert (p.type, p.mimeType, p.data, p.url, p.name) == (
        "image",
        "image/png",
        B64,
        None,
        "Cat.PNG",
    )
    (tmp_path / "Cat.PNG").write_bytes(b"changed")
    assert p.data == B64  # bytes, never a path


def test_a_str_path_works_and_an_explicit_mime_wins(tmp_path: Path) -> None:
    (tmp_path / "notes.data").write_bytes(b"%PDF")
    p = tn.file(str(tmp_path / "notes.data"), mime_type="application/pdf", name="n.pdf")
    assert (p.mimeType, p.name, p.data) == ("application/pdf", "n.pdf", "JVBERg==")


def test_a_missing_file_raises_the_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        tn.image(tmp_path / "nope.png")


@pytest.mark.parametrize("raw", [PNG, bytearray(PNG), memoryview(PNG)])
def test_bytes_like_sources_need_a_mime_type(raw: Any) -> None:
    assert tn.image(raw, mime_type="image/png").data == B64
    with fails("mime_type is required when building a part from bytes"):
        tn.image(raw)


def test_a_binary_file_object_is_read_fully_and_not_closed(tmp_path: Path) -> None:
    (tmp_path / "a.wav").write_bytes(b"RIFF")
    with open(tmp_path / "a.wav", "rb") as handle:
        p = tn.audio(handle)
        assert not handle.closed
    assert (p.mimeType, p.name, p.data) == ("audio/wav", "a.wav", "UklGRg==")


def test_a_nameless_file_object_needs_a_mime_type() -> None:
    with fails("mime_type is required for a file-like source with no name"):
        tn.image(io.BytesIO(PNG))
    assert tn.image(io.BytesIO(PNG), mime_type="image/png").name is None


def test_a_text_mode_file_object_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_text("not binary")
    with (
        open(tmp_path / "a.png") as handle,
        fails(
            "a file-like content part source must be opened in binary mode — its read() returned "
            "str, not bytes"
        ),
    ):
        tn.image(handle)


def test_a_base64_data_url_keeps_its_data_and_mime() -> None:
    p = tn.image(f"data:image/png;base64,{B64}")
    assert (p.mimeType, p.data, p.url) == ("image/png", B64, None)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("data:image/png,rawbytes", "only base64 data: URLs are supported"),
        ("data:image/png;base64", "only base64 data: URLs are supported"),
        (f"data:;base64,{B64}", "data: URL carries no mime type"),
        ("data:image/png;base64,@@@@", "a image part's data is not valid padded base64"),
        ("data:image/png;base64,iVBORw0KGgo", "a image part's data is not valid padded base64"),
    ],
)
def test_a_bad_data_url_is_refused(url: str, problem: str) -> None:
    with fails(problem):
        tn.image(url)


def test_an_http_url_is_kept_as_url_with_the_mime_from_its_path() -> None:
    p = tn.image("https://x.test/a/b.JPEG?size=2#frag")
    assert (p.mimeType, p.url, p.data) == (
        "image/jpeg",
        "https://x.test/a/b.JPEG?size=2#frag",
        None,
    )
    with fails("mime_type is required for a URL whose extension is not in the media table"):
        tn.image("https://x.test/picture")
    assert tn.file("http://x.test/get", mime_type="application/pdf").url == "http://x.test/get"


def test_unknown_and_missing_extensions_need_a_mime_type(tmp_path: Path) -> None:
    (tmp_path / "a.tiff").write_bytes(PNG)
    (tmp_path / "noext").write_bytes(PNG)
    with fails('unknown file extension ".tiff" — pass an explicit mime_type'):
        tn.image(tmp_path / "a.tiff")
    with fails("file has no extension — pass an explicit mime_type"):
        tn.image(tmp_path / "noext")


@pytest.mark.parametrize("source", [123, None, 4.5, ["a.png"], {"path": "a.png"}])
def test_a_source_that_is_neither_path_bytes_nor_url_is_refused(source: Any) -> None:
    with fails("a content part needs a path, bytes, or a URL"):
        tn.image(source)


@pytest.mark.parametrize(
    ("build", "problem"),
    [
        (
            lambda: tn.image(PNG, mime_type="text/plain"),
            'an image part needs an image/* mimeType, got "text/plain"',
        ),
        (
            lambda: tn.audio(PNG, mime_type="image/png"),
            'an audio part needs an audio/* mimeType, got "image/png"',
        ),
        (lambda: tn.file(PNG, mime_type="pdf"), 'a file part has a malformed mimeType "pdf"'),
        (lambda: tn.file(PNG, mime_type="a b/c"), 'a file part has a malformed mimeType "a b/c"'),
    ],
)
def test_wrong_mime_types_are_refused(build: Any, problem: str) -> None:
    with fails(problem):
        build()


def test_the_size_check_uses_the_argument_else_the_process_limit(process_limit: None) -> None:
    assert tn.get_max_part_bytes() == 20 * 1024 * 1024
    with fails(f"content part is {len(PNG)} decoded bytes, over the maxPartBytes limit of 10"):
        tn.image(PNG, mime_type="image/png", max_part_bytes=10)
    assert tn.image(PNG, mime_type="image/png", max_part_bytes=len(PNG)).data == B64
    tn.set_max_part_bytes(10)
    with fails(f"content part is {len(PNG)} decoded bytes, over the maxPartBytes limit of 10"):
        tn.image(PNG, mime_type="image/png")
    assert tn.image(PNG, mime_type="image/png", max_part_bytes=1000).data == B64
    tn.set_max_part_bytes(None)
    assert tn.get_max_part_bytes() is None
    assert tn.image(bytes(30_000_000), mime_type="image/png").mimeType == "image/png"


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "100"])
def test_a_bad_limit_is_refused(bad: Any, process_limit: None) -> None:
    with pytest.raises(tn.ContentPartError, match="max_part_bytes"):
        tn.set_max_part_bytes(bad)
    with pytest.raises(tn.ContentPartError, match="max_part_bytes"):
        tn.image(PNG, mime_type="image/png", max_part_bytes=bad)


# -- part(), validation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"type": "video", "url": "https://x"}, 'unknown content part type "video"'),
        ({"type": "text"}, "a text part needs text"),
        ({"type": "text", "text": 5}, "a text part needs text"),
        ({"type": "image", "data": B64}, "a image part needs a mimeType"),
        (
            {"type": "image", "mimeType": "image/png", "data": B64, "url": "https://x"},
            "a image part carries both data and url — exactly one is allowed",
        ),
        (
            {"type": "file", "mimeType": "application/pdf"},
            "a file part carries neither data nor url — exactly one is required",
        ),
        (
            {"type": "image", "mimeType": "image/png", "data": PNG},
            "a image part's data must be a base64 string, got bytes",
        ),
        (
            {"type": "image", "mimeType": "image/png", "data": B64[:-2]},
            "a image part's data is not valid padded base64",
        ),
        (
            {"type": "image", "mimeType": "image/png", "data": B64[:8] + "\n" + B64[8:]},
            "a image part's data is not valid padded base64",
        ),
        (
            {"type": "image", "mimeType": "image/png", "url": ""},
            "a image part's url must be a non-empty string",
        ),
        (
            {"type": "image", "mimeType": "image/png", "url": "https://x", "name": 3},
            "a image part's name must be a string, got int",
        ),
    ],
)
def test_part_validates_every_field(fields: dict[str, Any], problem: str) -> None:
    with fails(problem):
        tn.part(**fields)
    if fields["type"] != "video":  # ContentPart itself refuses an unknown type at once
        with fails(problem):
            content.validate(fields)


def test_a_content_part_refuses_an_unknown_type_at_construction() -> None:
    with fails('unknown content part type "video"'):
        tn.ContentPart(type="video")


def test_the_errors_are_value_errors_and_usage_errors() -> None:
    assert issubclass(tn.ContentPartError, ValueError)
    assert issubclass(tn.ContentPartError, tn.UsageError)
    assert issubclass(tn.UnsupportedPartError, ValueError)
    error = tn.UnsupportedPartError("audio", None, "anthropic")
    assert str(error) == 'no "anthropic" block shape for a audio part'


def test_canonical_dicts_and_their_predicates() -> None:
    p = tn.image(PNG, mime_type="image/png", name="")
    assert content.to_dict(p) == {"type": "image", "mimeType": "image/png", "data": B64}
    assert p.to_dict() == content.to_dict(p)
    named = tn.file("https://x.test/a.pdf", name="a.pdf")
    assert content.to_dict(named) == {
        "type": "file",
        "mimeType": "application/pdf",
        "url": "https://x.test/a.pdf",
        "name": "a.pdf",
    }
    assert content.to_dict(tn.text("hi")) == {"type": "text", "text": "hi"}
    assert content.from_dict(content.to_dict(named)) == named
    assert content.is_part_dict({"type": "text", "text": "x"})
    assert content.is_part_dict({"type": "audio", "mimeType": "audio/wav"})
    assert not content.is_part_dict({"type": "text"})
    assert not content.is_part_dict({"type": "image_url", "image_url": {}})
    assert not content.is_part_dict(p)


def test_normalize_parts_keeps_order_and_refuses_non_parts() -> None:
    dicts = content.normalize_parts(
        ["a", tn.image(PNG, mime_type="image/png"), {"type": "text", "text": "b"}]
    )
    assert [d["type"] for d in dicts] == ["text", "image", "text"]
    with fails("not a content part: int"):
        content.normalize_parts(["a", 7])
    with fails("not a content part: bytes"):
        content.normalize_parts([PNG])


def test_the_helpers_describe_parts_without_their_data() -> None:
    p = tn.image(PNG, mime_type="image/png")
    assert content.decoded_len(p) == len(PNG)
    for n in range(0, 8):
        assert content.decoded_len({"data": base64.b64encode(bytes(n)).decode()}) == n
    assert tn.summarize(p) == {"type": "image", "mimeType": "image/png", "bytes": len(PNG)}
    assert tn.summarize(tn.image("https://x.test/a.png"))["bytes"] == 0
    assert content.describe_part(p) == f"image (image/png, {len(PNG)} bytes)"
    assert (
        content.placeholder_text(p, "openai")
        == f"[unsupported image part (image/png, {len(PNG)} bytes)]"
    )
    assert tn.estimate_tokens(tn.text("x" * 41)) == 10
    assert tn.estimate_tokens(tn.text("")) == 1
    assert tn.estimate_tokens(p) == 85
    assert (
        tn.estimate_tokens({"type": "image", "data": base64.b64encode(bytes(75_000)).decode()})
        == 100
    )


def test_the_media_table_is_the_pinned_one() -> None:
    assert tn.MEDIA_TYPES == {
        "png": ("image/png", "image"),
        "jpg": ("image/jpeg", "image"),
        "jpeg": ("image/jpeg", "image"),
        "gif": ("image/gif", "image"),
        "webp": ("image/webp", "image"),
        "pdf": ("application/pdf", "file"),
        "mp3": ("audio/mpeg", "audio"),
        "wav": ("audio/wav", "audio"),
    }


# -- encode_part ---------------------------------------------------------------------------------


def test_encode_part_gives_each_dialects_block() -> None:
    wav = tn.audio(b"RIFF", mime_type="audio/x-wav")
    assert tn.encode_part(wav, "openai") == {
        "type": "input_audio",
        "input_audio": {"data": "UklGRg==", "format": "wav"},
    }
    mp3 = tn.audio(b"ID3", mime_type="audio/mp3")
    assert tn.encode_part(mp3, "openai")["input_audio"]["format"] == "mp3"
    assert tn.encode_part(tn.file("https://x.test/a.pdf"), "anthropic") == {
        "type": "document",
        "source": {"type": "url", "url": "https://x.test/a.pdf"},
    }
    assert (
        tn.encode_part(tn.file(b"%PDF", mime_type="application/pdf"), "openai")["file"]["filename"]
        == "file"
    )


@pytest.mark.parametrize(
    ("p", "style"),
    [
        (tn.audio(b"OggS", mime_type="audio/ogg"), "openai"),
        (tn.audio("https://x.test/a.mp3"), "openai"),
        (tn.file("https://x.test/a.pdf"), "openai"),
        (tn.audio(b"RIFF", mime_type="audio/wav"), "anthropic"),
    ],
)
def test_encode_part_refuses_what_a_dialect_cannot_carry(p: tn.ContentPart, style: str) -> None:
    with pytest.raises(tn.UnsupportedPartError) as caught:
        tn.encode_part(p, style)
    assert (caught.value.part_type, caught.value.mime_type, caught.value.style) == (
        p.type,
        p.mimeType,
        style,
    )


def test_encode_part_refuses_an_unknown_style() -> None:
    with pytest.raises(tn.UsageError, match="style"):
        tn.encode_part(tn.text("x"), "gemini")


# -- prompts ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prompt", "error", "problem"),
    [
        (["look", 42], tn.ContentPartError, "not a content part: int"),
        (
            [{"type": "video", "url": "https://x"}],
            tn.ContentPartError,
            'unknown content part type "video"',
        ),
        (
            [{"type": "image", "mimeType": "image/png", "data": "!!!!"}],
            tn.ContentPartError,
            "a image part's data is not valid padded base64",
        ),
        ([{"type": "text"}], tn.ContentPartError, "a text part needs text"),
        (42, tn.UsageError, "prompt must be a string or a list of content parts, got int"),
        (b"bytes", tn.UsageError, "prompt must be a string or a list of content parts, got bytes"),
    ],
)
async def test_a_bad_prompt_fails_before_any_http_call(
    client_for: Any, prompt: Any, error: type[Exception], problem: str
) -> None:
    async with ScriptedModel() as model:
        async with client_for(model, "openai") as client:
            with pytest.raises(error, match=f"^{__import__('re').escape(problem)}$"):
                await client.run(prompt)
        assert model.requests == []


async def test_an_empty_parts_prompt_is_an_empty_user_content(client_for: Any) -> None:
    from toolnexus.testing import text as reply

    async with ScriptedModel([reply("?")]) as model:
        async with client_for(model, "openai") as client:
            result = await client.run([])
    assert result.messages == [
        {"role": "user", "content": []},
        {"role": "assistant", "content": "?"},
    ]
