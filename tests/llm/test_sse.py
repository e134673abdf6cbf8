"""The incremental SSE parser: framing, fields, chunk boundaries and hostile input."""

from __future__ import annotations

import pytest

from toolnexus.errors import BadResponse
from toolnexus.llm.base import SSEEvent
from toolnexus.llm.sse import SSEParser


def parse(*chunks: bytes, flush: bool = True) -> list[SSEEvent]:
    parser = SSEParser()
    events: list[SSEEvent] = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    if flush:
        events.extend(parser.flush())
    return events


STREAM = (
    ": keep-alive\r\n"
    "event: message_start\r\n"
    'data: {"a": "é€😀"}\r\n'
    "\r\n"
    "data: first\n"
    "data: second\n"
    "\n"
    "event: ping\r"
    "data:\r"
    "\r"
    "data: [DONE]\n\n"
).encode()
EXPECTED = [
    SSEEvent(data='{"a": "é€😀"}', event="message_start"),
    SSEEvent(data="first\nsecond"),
    SSEEvent(data="", event="ping"),
    SSEEvent(data="[DONE]"),
]


def test_a_whole_stream_in_one_chunk_yields_every_event() -> None:
    assert parse(STREAM) == EXPECTED


def test_splitting_the_stream_at_every_byte_gives_the_same_events() -> None:
    for cut in range(1, len(STREAM)):
        assert parse(STREAM[:cut], STREAM[cut:]) == EXPECTED, cut


def test_one_byte_chunks_give_the_same_events() -> None:
    assert parse(*(STREAM[i : i + 1] for i in range(len(STREAM)))) == EXPECTED


def test_a_multibyte_character_split_across_chunks_is_decoded_whole() -> None:
    raw = "data: 😀\n\n".encode()
    assert parse(raw[:7], raw[7:8], raw[8:]) == [SSEEvent(data="😀")]


def test_an_event_is_returned_as_soon_as_its_blank_line_arrives() -> None:
    parser = SSEParser()
    assert parser.feed(b"data: x\n") == []
    assert parser.feed(b"\n") == [SSEEvent(data="x")]


def test_cr_at_a_chunk_end_followed_by_lf_is_one_line_ending() -> None:
    assert parse(b"data: a\r", b"\n\r", b"\n") == [SSEEvent(data="a")]


def test_a_lone_cr_ends_a_line_even_when_the_next_chunk_is_empty() -> None:
    assert parse(b"data: a\r", b"", b"\r") == [SSEEvent(data="a")]


def test_only_one_space_after_the_colon_is_stripped() -> None:
    assert parse(b"data:  two spaces\n\n") == [SSEEvent(data=" two spaces")]


def test_a_value_without_space_after_the_colon_is_kept_whole() -> None:
    assert parse(b"data:tight\n\n") == [SSEEvent(data="tight")]


def test_a_colon_inside_the_value_is_part_of_the_value() -> None:
    assert parse(b'data: {"k": "a:b"}\n\n') == [SSEEvent(data='{"k": "a:b"}')]


def test_a_data_line_without_colon_contributes_an_empty_line() -> None:
    assert parse(b"data\ndata: x\n\n") == [SSEEvent(data="\nx")]


def test_comments_alone_dispatch_nothing() -> None:
    assert parse(b": ping\n\n: another\n\n") == []


def test_an_event_field_without_data_dispatches_nothing() -> None:
    assert parse(b"event: lonely\n\ndata: x\n\n") == [SSEEvent(data="x")]


def test_the_event_name_does_not_leak_into_the_next_event() -> None:
    assert parse(b"event: a\ndata: 1\n\ndata: 2\n\n") == [
        SSEEvent(data="1", event="a"),
        SSEEvent(data="2"),
    ]


def test_unknown_fields_id_and_retry_are_ignored() -> None:
    assert parse(b"id: 7\nretry: 10\nfoo: bar\ndata: x\n\n") == [SSEEvent(data="x")]


def test_a_leading_byte_order_mark_is_skipped() -> None:
    assert parse(b"\xef\xbb", b"\xbfdata: x\n\n") == [SSEEvent(data="x")]


def test_flush_dispatches_an_event_missing_its_final_blank_line() -> None:
    assert parse(b"data: [DONE]") == [SSEEvent(data="[DONE]")]


def test_without_flush_an_unterminated_event_is_held_back() -> None:
    assert parse(b"data: [DONE]\n", flush=False) == []


def test_flush_on_an_empty_stream_yields_nothing() -> None:
    assert parse() == []


def test_invalid_utf8_becomes_replacement_characters() -> None:
    assert parse(b"data: \xff\xfe ok\n\n") == [SSEEvent(data="\ufffd\ufffd ok")]


def test_a_truncated_multibyte_character_at_eof_is_replaced_not_raised() -> None:
    assert parse(b"data: \xe2\x82") == [SSEEvent(data="\ufffd")]


def test_an_endless_line_raises_bad_response_instead_of_growing() -> None:
    parser = SSEParser(max_event_chars=64)
    assert parser.feed(b"data: " + b"x" * 40) == []
    with pytest.raises(BadResponse, match="larger than 64"):
        parser.feed(b"x" * 40)


def test_an_endless_event_of_many_data_lines_raises_bad_response() -> None:
    parser = SSEParser(max_event_chars=64)
    assert parser.feed(b"data: " + b"x" * 40 + b"\n") == []
    with pytest.raises(BadResponse, match="larger than 64"):
        parser.feed(b"data: " + b"x" * 40 + b"\n")


def test_the_size_limit_resets_after_each_event() -> None:
    parser = SSEParser(max_event_chars=64)
    events: list[SSEEvent] = []
    for _ in range(10):
        events.extend(parser.feed(b"data: " + b"x" * 40 + b"\n\n"))
    assert len(events) == 10
