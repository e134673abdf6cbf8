"""Canonical ⇄ Anthropic message conversion and history normalisation."""

from __future__ import annotations

import copy
import doctest
from typing import Any

import pytest

from toolnexus.errors import UsageError
from toolnexus.llm import convert
from toolnexus.llm.convert import (
    AnthropicRendering,
    appended_since,
    compact_json,
    from_anthropic,
    make_usage,
    normalize_finish_reason,
    normalize_history,
    text_of,
    to_anthropic,
)


def call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_the_module_docstring_examples_hold() -> None:
    assert doctest.testmod(convert).failed == 0


# --- to_anthropic -------------------------------------------------------------------------


def test_system_and_developer_messages_are_hoisted_and_joined() -> None:
    messages, system = to_anthropic(
        [
            {"role": "system", "content": "A"},
            {"role": "user", "content": "hi"},
            {"role": "developer", "content": [{"type": "text", "text": "B"}]},
        ]
    )
    assert system == "A\n\nB"
    assert messages == [{"role": "user", "content": "hi"}]


def test_an_explicit_system_overrides_hoisted_ones() -> None:
    _, system = to_anthropic([{"role": "system", "content": "A"}], system="X")
    assert system == "X"


def test_no_system_text_gives_none() -> None:
    _, system = to_anthropic([{"role": "system", "content": ""}, {"role": "user", "content": "q"}])
    assert system is None


def test_parts_content_is_flattened_without_separator() -> None:
    messages, _ = to_anthropic(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "a"},
                    {"type": "image_url", "image_url": {"url": "x"}},
                    {"type": "text", "text": "b"},
                ],
            }
        ]
    )
    assert messages == [{"role": "user", "content": "ab"}]


def test_assistant_text_comes_before_its_tool_use_blocks() -> None:
    messages, _ = to_anthropic(
        [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "let me", "tool_calls": [call("c1", "f", '{"a":1}')]},
        ]
    )
    assert messages[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "let me"},
            {"type": "tool_use", "id": "c1", "name": "f", "input": {"a": 1}},
        ],
    }


def test_object_form_arguments_are_accepted() -> None:
    messages, _ = to_anthropic([{"role": "assistant", "tool_calls": [call("c1", "f", {"x": [1]})]}])
    assert messages[0]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "f", "input": {"x": [1]}}
    ]


@pytest.mark.parametrize("arguments", ["{not json", "[1, 2]", "3", "", None])
def test_arguments_that_are_not_a_json_object_become_an_empty_input(arguments: Any) -> None:
    messages, _ = to_anthropic([{"role": "assistant", "tool_calls": [call("c1", "f", arguments)]}])
    assert messages[0]["content"][0]["input"] == {}


def test_consecutive_tool_results_merge_into_one_user_turn() -> None:
    messages, _ = to_anthropic(
        [
            {"role": "assistant", "content": None, "tool_calls": [call("a", "f", "{}")]},
            {"role": "tool", "tool_call_id": "a", "content": "one"},
            {"role": "tool", "tool_call_id": "b", "content": "two", "is_error": True},
        ]
    )
    assert messages[1] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "one"},
            {"type": "tool_result", "tool_use_id": "b", "content": "two", "is_error": True},
        ],
    }


def test_a_user_message_after_tool_results_joins_the_same_turn() -> None:
    messages, _ = to_anthropic(
        [
            {"role": "tool", "tool_call_id": "a", "content": "one"},
            {"role": "user", "content": "and now?"},
        ]
    )
    assert messages == [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "one"},
                {"type": "text", "text": "and now?"},
            ],
        }
    ]


def test_consecutive_user_strings_merge_into_text_blocks() -> None:
    messages, _ = to_anthropic([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    assert messages == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]


def test_an_empty_assistant_turn_is_dropped() -> None:
    messages, _ = to_anthropic(
        [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "", "tool_calls": []},
            {"role": "user", "content": "b"},
        ]
    )
    assert messages == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]


def test_only_the_false_is_error_marker_is_left_out() -> None:
    messages, _ = to_anthropic(
        [{"role": "tool", "tool_call_id": "a", "content": "ok", "is_error": False, "name": "f"}]
    )
    assert messages[0]["content"] == [{"type": "tool_result", "tool_use_id": "a", "content": "ok"}]


def test_to_anthropic_does_not_modify_its_input() -> None:
    original = [
        {"role": "tool", "tool_call_id": "a", "content": "one"},
        {"role": "tool", "tool_call_id": "b", "content": "two"},
        {"role": "user", "content": "x"},
    ]
    snapshot = copy.deepcopy(original)
    to_anthropic(original)
    assert original == snapshot


@pytest.mark.parametrize(
    ("messages", "complaint"),
    [
        (["hello"], r"messages\[0\] must be a dict"),
        ([{"content": "x"}], r"messages\[0\] has no role"),
        ([{"role": "wizard", "content": "x"}], "unsupported role 'wizard'"),
        ([{"role": "user", "content": 42}], "content must be"),
        ([{"role": "tool", "content": "x"}], "without tool_call_id"),
        ([{"role": "assistant", "tool_calls": "nope"}], "tool_calls must be a list"),
        ([{"role": "assistant", "tool_calls": ["nope"]}], r"tool_calls\[0\] must be a dict"),
        ([{"role": "assistant", "tool_calls": [{"id": "a"}]}], "no function name"),
        ([{"role": "assistant", "tool_calls": [call("", "f", "{}")]}], "has no id"),
    ],
)
def test_unreadable_messages_raise_usage_error(messages: list[Any], complaint: str) -> None:
    with pytest.raises(UsageError, match=complaint):
        to_anthropic(messages)


# --- AnthropicRendering: a growing transcript, each message rendered once ------------------

GROWING: list[dict[str, Any]] = [
    {"role": "system", "content": "S"},
    {"role": "user", "content": "q"},
    {"role": "assistant", "content": "t", "tool_calls": [call("a", "f", '{"x": 1}')]},
    {"role": "tool", "tool_call_id": "a", "content": "one"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("b", "f", "{}"), call("c", "g", "{}")],
    },
    {"role": "tool", "tool_call_id": "b", "content": "two"},
    {"role": "tool", "tool_call_id": "c", "content": "x", "is_error": True},
    {"role": "user", "content": "more"},
    {"role": "developer", "content": "D"},
    {"role": "assistant", "content": "done"},
]


def test_rendering_a_growing_transcript_step_by_step_equals_rendering_it_whole() -> None:
    rendering = AnthropicRendering()
    for end in range(len(GROWING) + 1):
        assert rendering.render(GROWING[:end]) == to_anthropic(GROWING[:end])


def test_what_an_earlier_render_returned_is_never_changed_by_a_later_one() -> None:
    rendering = AnthropicRendering()
    transcript: list[dict[str, Any]] = []
    returned: list[tuple[list[dict[str, Any]], Any]] = []
    for message in GROWING:
        transcript.append(message)
        rendered, system = rendering.render(transcript)
        returned.append((rendered, copy.deepcopy(rendered)))
        assert system == to_anthropic(transcript)[1]
    for rendered, snapshot in returned:
        assert rendered == snapshot


def test_a_transcript_that_is_not_an_extension_is_rendered_afresh() -> None:
    rendering = AnthropicRendering()
    rendering.render(GROWING[:4])
    replaced = [*GROWING[:3], {"role": "tool", "tool_call_id": "a", "content": "other"}]
    assert rendering.render(replaced) == to_anthropic(replaced)
    assert rendering.render(GROWING[:2]) == to_anthropic(GROWING[:2])


def test_after_an_unreadable_message_the_next_render_starts_afresh() -> None:
    rendering = AnthropicRendering()
    rendering.render(GROWING[:2])
    with pytest.raises(UsageError, match=r"messages\[2\] has an unsupported role"):
        rendering.render([*GROWING[:2], {"role": "wizard", "content": "x"}])
    assert rendering.render(GROWING[:4]) == to_anthropic(GROWING[:4])


def test_every_new_message_is_checked_before_any_is_rendered() -> None:
    messages: list[Any] = [{"role": "wizard", "content": "x"}, "not a dict"]
    with pytest.raises(UsageError, match=r"messages\[3\] must be a dict"):
        AnthropicRendering().render([*GROWING[:2], *messages])


def test_appended_since_is_the_tail_of_an_extended_transcript_else_none() -> None:
    head = GROWING[:3]
    assert appended_since(GROWING[:5], head) == GROWING[3:5]
    assert appended_since(GROWING[:3], head) == []
    assert appended_since(GROWING[:2], head) is None
    assert appended_since([*GROWING[:2], dict(GROWING[3]), GROWING[3]], head) is None


# --- from_anthropic -----------------------------------------------------------------------


def test_tool_use_blocks_become_tool_calls_with_compact_arguments() -> None:
    out = from_anthropic(
        [
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "checking"},
                    {"type": "tool_use", "id": "t1", "name": "f", "input": {"city": "Zürich"}},
                ],
            }
        ]
    )
    assert out == [
        {
            "role": "assistant",
            "content": "checking",
            "tool_calls": [call("t1", "f", '{"city":"Zürich"}')],
        }
    ]


def test_an_assistant_turn_of_only_tool_use_has_null_content() -> None:
    out = from_anthropic(
        [{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f"}]}]
    )
    assert out == [{"role": "assistant", "content": None, "tool_calls": [call("t1", "f", "{}")]}]


def test_each_tool_result_block_becomes_one_tool_message_before_the_text() -> None:
    out = from_anthropic(
        [
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "one"},
                    {
                        "type": "tool_result",
                        "tool_use_id": "t2",
                        "content": [{"type": "text", "text": "two"}],
                        "is_error": True,
                    },
                    {"type": "text", "text": "next"},
                ],
            }
        ]
    )
    assert out == [
        {"role": "tool", "tool_call_id": "t1", "content": "one"},
        {"role": "tool", "tool_call_id": "t2", "content": "two", "is_error": True},
        {"role": "user", "content": "next"},
    ]


def test_string_content_passes_through_as_a_copy() -> None:
    original = {"role": "user", "content": "hi"}
    out = from_anthropic([original])
    assert out == [original]
    assert out[0] is not original


def test_unknown_block_types_are_skipped() -> None:
    out = from_anthropic(
        [
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "A"}],
            }
        ]
    )
    assert out == [{"role": "assistant", "content": "A"}]


@pytest.mark.parametrize(
    ("block", "complaint"),
    [
        ("text", r"content\[0\] must be a dict"),
        ({"type": "tool_use", "id": "t"}, "tool_use without id or name"),
        ({"type": "tool_result", "content": "x"}, "unreadable tool_result"),
        ({"type": "tool_result", "tool_use_id": "t", "content": 5}, "unreadable tool_result"),
    ],
)
def test_unreadable_anthropic_blocks_raise_usage_error(block: Any, complaint: str) -> None:
    with pytest.raises(UsageError, match=complaint):
        from_anthropic([{"role": "user", "content": [block]}])


def test_a_round_trip_through_anthropic_keeps_a_tool_conversation() -> None:
    canonical = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "hm", "tool_calls": [call("a", "f", '{"x":1}')]},
        {"role": "tool", "tool_call_id": "a", "content": "r", "is_error": True},
        {"role": "assistant", "content": "done"},
    ]
    rendered, _ = to_anthropic(canonical)
    assert from_anthropic(rendered) == canonical


# --- normalize_history --------------------------------------------------------------------


def test_a_canonical_history_is_returned_as_copies() -> None:
    history = [{"role": "user", "content": [{"type": "text", "text": "a"}]}]
    out = normalize_history(history)
    assert out == history
    assert out[0] is not history[0]


def test_an_anthropic_history_is_detected_by_its_tool_blocks() -> None:
    out = normalize_history(
        [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}],
            },
        ]
    )
    assert out == [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [call("t", "f", "{}")]},
        {"role": "tool", "tool_call_id": "t", "content": "r"},
    ]


@pytest.mark.parametrize(
    ("history", "complaint"),
    [
        ([None], r"messages\[0\] must be a dict, got NoneType"),
        ([{"role": "user", "content": "a"}, {"content": "b"}], r"messages\[1\] has no role"),
        ([{"role": "", "content": "b"}], r"messages\[0\] has no role"),
        ([{"role": 3, "content": "b"}], r"messages\[0\] has no role"),
    ],
)
def test_normalize_history_rejects_malformed_messages(history: list[Any], complaint: str) -> None:
    with pytest.raises(UsageError, match=complaint):
        normalize_history(history)


# --- small canonical helpers --------------------------------------------------------------


def test_compact_json_uses_no_spaces_and_keeps_unicode() -> None:
    assert compact_json({"a": [1, "é"]}) == '{"a":[1,"é"]}'


def test_text_of_rejects_content_of_an_unknown_shape() -> None:
    assert text_of({"text": "x"}) is None


def test_make_usage_sums_a_missing_total_and_zeroes_garbage() -> None:
    assert make_usage(3, "4", None) == {
        "prompt_tokens": 3,
        "completion_tokens": 0,
        "total_tokens": 3,
    }


def test_make_usage_ignores_negative_and_boolean_counts() -> None:
    assert make_usage(-1, True, 9) == {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "total_tokens": 9,
    }


@pytest.mark.parametrize(
    ("raw", "tools", "expected"),
    [
        ("stop", True, "tool_calls"),
        ("tool_calls", False, "stop"),
        ("length", False, "length"),
        ("max_tokens", False, "length"),
        ("content_filter", False, "content_filter"),
        ("refusal", False, "content_filter"),
        ("end_turn", False, "stop"),
        (None, False, "stop"),
    ],
)
def test_finish_reasons_normalise_to_four(raw: Any, tools: bool, expected: str) -> None:
    assert normalize_finish_reason(raw, tools) == expected


def test_bare_strings_inside_a_parts_array_count_as_text() -> None:
    assert text_of(["a", {"type": "text", "text": "b"}]) == "ab"
