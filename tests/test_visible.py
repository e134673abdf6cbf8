"""`toolnexus._visible`: every control character, escape sequence, bidi control and invisible
format character is shown by a visible stand-in; ordinary text is left as it is; JSON escaped
with `escape_json` parses back to exactly the same data."""

from __future__ import annotations

import json
import sys
import time
import unicodedata

import pytest

from toolnexus._visible import describe, escape_json, shown, split_marked, visible

CLEAR = "\x1b[2J"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4K\x07"  # OSC 52, BEL-terminated: "rm -rf ~" to the clipboard
LINK = "\x1b]8;;http://evil.example\x1b\\refund 5\x1b]8;;\x1b\\"  # OSC 8, ST-terminated
RLO = "\u202e"
HOSTILE = f"{CLEAR}{CLIPBOARD}{LINK} order {RLO}0005 \x9b2J\x9d0;title\x9c"

FORMAT_CATEGORIES = ("Cc", "Cf", "Cs", "Zl", "Zp")


def every_char_of(categories: tuple[str, ...]) -> str:
    """Every code point this Python's Unicode database puts in one of ``categories``."""
    return "".join(
        chr(cp) for cp in range(sys.maxunicode + 1) if unicodedata.category(chr(cp)) in categories
    )


def raw_marks(text: str) -> list[str]:
    """The characters of ``text`` a terminal would obey or a reader could not see."""
    return [c for c in text if unicodedata.category(c) in FORMAT_CATEGORIES]


# -- each class of character -----------------------------------------------------------------


def test_each_c0_control_shows_as_its_control_picture() -> None:
    c0 = "".join(chr(cp) for cp in range(0x20))
    assert visible(c0) == "".join(chr(0x2400 + cp) for cp in range(0x20))
    assert visible("\x1b") == "␛"
    assert visible("a\tb\nc\rd\x08e\x07") == "a␉b␊c␍d␈e␇"


def test_delete_shows_as_its_symbol_and_c1_controls_as_hex_escapes() -> None:
    assert visible("\x7f") == "\u2421"
    assert visible("".join(chr(cp) for cp in range(0x80, 0xA0))) == "".join(
        f"\\x{cp:02x}" for cp in range(0x80, 0xA0)
    )
    assert visible("\x9b2J") == "\\x9b2J"


@pytest.mark.parametrize(
    ("char", "name"),
    [
        ("\u202a", "LEFT-TO-RIGHT EMBEDDING"),
        ("\u202b", "RIGHT-TO-LEFT EMBEDDING"),
        ("\u202c", "POP DIRECTIONAL FORMATTING"),
        ("\u202d", "LEFT-TO-RIGHT OVERRIDE"),
        ("\u202e", "RIGHT-TO-LEFT OVERRIDE"),
        ("\u2066", "LEFT-TO-RIGHT ISOLATE"),
        ("\u2067", "RIGHT-TO-LEFT ISOLATE"),
        ("\u2068", "FIRST STRONG ISOLATE"),
        ("\u2069", "POP DIRECTIONAL ISOLATE"),
        ("\u200e", "LEFT-TO-RIGHT MARK"),
        ("\u200f", "RIGHT-TO-LEFT MARK"),
        ("\u061c", "ARABIC LETTER MARK"),
    ],
)
def test_each_bidi_control_is_shown_by_its_code_point(char: str, name: str) -> None:
    code = f"U+{ord(char):04X}"
    assert visible(f"refund {char}0005") == f"refund ⟨{code}⟩0005"
    assert describe(char) == f"{code} {name}"


@pytest.mark.parametrize(
    "char",
    [
        "\u200b",  # zero width space
        "\u200c",  # zero width non-joiner
        "\u200d",  # zero width joiner
        "\u2060",  # word joiner
        "\u2064",  # invisible plus
        "\ufeff",  # zero width no-break space
        "\u00ad",  # soft hyphen
        "\U000e0001",  # language tag
        "\U000e0041",  # tag latin capital letter A
        "\U000e007f",  # cancel tag
        "\u2028",  # line separator
        "\u2029",  # paragraph separator
        "\ufe0f",  # variation selector-16
        "\U000e0100",  # variation selector-17
        "\u180b",  # Mongolian free variation selector one
        "\u3164",  # Hangul filler
        "\u115f",  # Hangul choseong filler
        "\u034f",  # combining grapheme joiner
        "\ud800",  # a lone surrogate
    ],
)
def test_each_invisible_character_is_shown_by_its_code_point(char: str) -> None:
    assert visible(f"a{char}b") == f"a⟨U+{ord(char):04X}⟩b"


def test_every_control_format_and_separator_character_of_this_unicode_is_marked() -> None:
    everything = every_char_of(FORMAT_CATEGORIES)
    assert len(everything) > 2000  # the surrogates alone are 2048
    shown_text = visible(everything)
    assert raw_marks(shown_text) == []
    assert split_marked(everything)[1::2] == list(everything)  # each one marked, one by one


def test_ordinary_text_is_returned_as_it_is() -> None:
    for text in (
        "Deploy version 1.2.3 to production?",
        "Déployer à Zürich — 5 000 €",
        "部署到生产环境？",
        "שלום עולם 5000",  # right-to-left letters are text, not controls: left as they are
        "مرحبا",
        "party 🎉 time",
        "",
        "[bold]markup[/bold] :warning:",
    ):
        assert visible(text) is text
        assert split_marked(text) == [text]
        assert escape_json(text) is text


def test_keep_leaves_only_the_layout_characters_asked_for() -> None:
    text = "one\ntwo\tthree\rfour\x1b"
    assert visible(text, keep="\n\t") == "one\ntwo\tthree␍four␛"
    assert visible(text, keep="\n\t\r") == "one\ntwo\tthree\rfour␛"
    assert visible(text) == "one␊two␉three␍four␛"
    with pytest.raises(ValueError, match="keep takes"):
        visible(text, keep="\x1b")


# -- escape sequences ------------------------------------------------------------------------


def test_csi_osc52_and_osc8_are_shown_with_their_bodies_in_plain_sight() -> None:
    assert visible(CLEAR) == "␛[2J"
    assert visible(CLIPBOARD) == "␛]52;c;cm0gLXJmIH4K␇"
    assert visible(LINK) == "␛]8;;http://evil.example␛\\refund 5␛]8;;␛\\"


@pytest.mark.parametrize(
    ("sequence", "expected"),
    [
        ("\x1bP1$r0m\x1b\\", "␛P1$r0m␛\\"),  # DCS
        ("\x1b_payload\x1b\\", "␛_payload␛\\"),  # APC
        ("\x1b^private\x1b\\", "␛^private␛\\"),  # PM
        ("\x1bXstring\x1b\\", "␛Xstring␛\\"),  # SOS
        ("\x1b]0;title\x07", "␛]0;title␇"),  # OSC, BEL-terminated
        ("\x1b]52;c;unterminated", "␛]52;c;unterminated"),  # OSC that never ends
        ("text\x1b", "text␛"),  # ESC at the end
        ("\x1b\x1b[", "␛␛["),
        ("\x1bc", "␛c"),  # full reset
        ("\x9b31m\x9d8;;http://x\x9c", "\\x9b31m\\x9d8;;http://x\\x9c"),  # 8-bit introducers
        ("\x90q\x9c\x98s\x9c\x9e\x9c\x9f\x9c", "\\x90q\\x9c\\x98s\\x9c\\x9e\\x9c\\x9f\\x9c"),
    ],
)
def test_every_kind_of_escape_sequence_is_neutralised(sequence: str, expected: str) -> None:
    out = visible(sequence)
    assert out == expected
    assert raw_marks(out) == []


def test_a_streamed_text_is_safe_piece_by_piece() -> None:
    # Each character is judged alone: cutting the text anywhere (a sequence split across two
    # deltas of a streamed reply) changes nothing.
    whole = visible(HOSTILE)
    for cut in range(len(HOSTILE) + 1):
        assert visible(HOSTILE[:cut]) + visible(HOSTILE[cut:]) == whole


def test_a_hostile_mix_leaves_nothing_a_terminal_obeys() -> None:
    out = visible(HOSTILE + "\u2066\u200b\ufeff\U000e0041\x00\x7f")
    assert "\x1b" not in out
    assert raw_marks(out) == []
    assert "␛]8;;http://evil.example␛\\" in out
    assert "⟨U+202E⟩0005" in out


def test_very_long_hostile_input_takes_linear_time() -> None:
    # A quadratic pass over a million characters would take hours; a linear one, well under a
    # second (the bound is generous for a busy machine, not a benchmark).
    chunk = "\x9b\u202e\x1b[2J" + "a" * 10
    for piece, times in (("\x1b]", 500_000), (chunk, 70_000), ("\x1b", 1_000_000)):
        started = time.perf_counter()
        out = visible(piece * times)
        assert time.perf_counter() - started < 15
        assert out == visible(piece) * times


# -- the pieces the surfaces use -------------------------------------------------------------


def test_split_marked_puts_each_mark_alone_between_plain_runs() -> None:
    parts = split_marked("a\u202eb\x1b[2Jc", keep="\n")
    assert parts == ["a", "\u202e", "b", "\x1b", "[2Jc"]
    rebuilt = "".join(shown(p) if i % 2 else p for i, p in enumerate(parts))
    assert rebuilt == visible("a\u202eb\x1b[2Jc")


def test_describe_names_controls_c1_and_format_characters() -> None:
    assert describe("\x1b") == "U+001B ESCAPE"
    assert describe("\x07") == "U+0007 BELL"
    assert describe("\x7f") == "U+007F DELETE"
    assert describe("\x9b") == "U+009B CONTROL SEQUENCE INTRODUCER"
    assert describe("\x9d") == "U+009D OPERATING SYSTEM COMMAND"
    assert describe("\x81") == "U+0081 C1 CONTROL"
    assert describe("\u200b") == "U+200B ZERO WIDTH SPACE"
    assert describe("\U000e0041") == "U+E0041 TAG LATIN CAPITAL LETTER A"
    assert describe("\udc80") == "U+DC80 SURROGATE"


DATA = {
    "prompt": HOSTILE,
    "args": {"order": f"{RLO}0005", "note": "café\u200b", "tags": ["\U000e0041\U000e007f"]},
    "lone": "\udc80",
    "del": "\x7f",
    "text": "line one\nline two\ttab",
}


@pytest.mark.parametrize("indent", [None, 2])
def test_escaped_json_parses_back_to_exactly_the_same_data(indent: int | None) -> None:
    text = escape_json(json.dumps(DATA, ensure_ascii=False, indent=indent))
    assert json.loads(text) == DATA
    assert raw_marks(text.replace("\n", "")) == []  # the indent's newlines are JSON's layout
    assert "\\u202e0005" in text
    assert "café" in text  # readable: not ensure_ascii
    assert "\\udb40\\udc41" in text  # a tag character as its surrogate pair
