"""Argument parsing and JSON-Schema validation of tool calls."""

import subprocess
import sys
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from toolnexus._types import JSONSchema, Tool, ToolResult
from toolnexus.tools.validation import parse_arguments, validate_arguments


async def _noop(args: dict[str, Any], ctx: Any = None) -> ToolResult:
    return ToolResult("")


def make_tool(schema: Any, *, name: str = "add", validate: bool = True) -> Tool:
    return Tool(
        name=name,
        description="",
        input_schema=schema,
        source="native",
        execute=_noop,
        validate_args=validate,
    )


ADD: JSONSchema = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}


# --- validate_arguments --------------------------------------------------------------------


def test_valid_arguments_give_none() -> None:
    assert validate_arguments(make_tool(ADD), {"a": 1, "b": 2.5}) is None


def test_missing_required_property_is_named() -> None:
    message = validate_arguments(make_tool(ADD), {"a": 1})

    assert message == "invalid arguments for tool \"add\": 'b' is a required property"


def test_wrong_type_names_the_property_and_the_value() -> None:
    message = validate_arguments(make_tool(ADD), {"a": "x", "b": 1})

    assert message == "invalid arguments for tool \"add\": 'a': 'x' is not of type 'number'"


def test_several_errors_are_listed_in_a_stable_order() -> None:
    message = validate_arguments(make_tool(ADD), {"a": "x"})

    assert message == (
        "invalid arguments for tool \"add\": 'b' is a required property; "
        "'a': 'x' is not of type 'number'"
    )


def test_extra_property_is_rejected_when_additional_properties_is_false() -> None:
    schema = {**ADD, "additionalProperties": False}

    message = validate_arguments(make_tool(schema), {"a": 1, "b": 2, "c": 3})

    assert message == (
        'invalid arguments for tool "add": '
        "Additional properties are not allowed ('c' was unexpected)"
    )


def test_extra_property_is_accepted_by_default() -> None:
    assert validate_arguments(make_tool(ADD), {"a": 1, "b": 2, "c": 3}) is None


def test_at_most_three_errors_are_listed() -> None:
    schema = {"type": "object", "properties": {k: {"type": "string"} for k in "abcde"}}

    message = validate_arguments(make_tool(schema), dict.fromkeys("abcde", 1))

    assert message is not None
    assert message.count("is not of type") == 3
    assert message.endswith("(and 2 more)")


def test_nested_paths_are_rendered_with_dots_and_indexes() -> None:
    schema = {
        "type": "object",
        "properties": {
            "p": {"type": "object", "properties": {"tags": {"items": {"type": "string"}}}}
        },
    }

    message = validate_arguments(make_tool(schema), {"p": {"tags": ["ok", 7]}})

    assert message == "invalid arguments for tool \"add\": 'p.tags[1]': 7 is not of type 'string'"


def test_enum_violation_lists_the_choices() -> None:
    schema = {"type": "object", "properties": {"mode": {"enum": ["fast", "slow"]}}}

    message = validate_arguments(make_tool(schema), {"mode": "warp"})

    assert message == (
        "invalid arguments for tool \"add\": 'mode': 'warp' is not one of ['fast', 'slow']"
    )


def test_any_of_failure_reports_the_closest_branch() -> None:
    schema = {
        "type": "object",
        "properties": {
            "p": {
                "anyOf": [
                    {"type": "object", "properties": {"x": {"type": "integer"}}},
                    {"type": "null"},
                ]
            }
        },
    }

    message = validate_arguments(make_tool(schema), {"p": {"x": "one"}})

    assert message == "invalid arguments for tool \"add\": 'p.x': 'one' is not of type 'integer'"


def test_huge_values_are_cut_short_in_the_message() -> None:
    message = validate_arguments(make_tool(ADD), {"a": "x" * 10_000, "b": 1})

    assert message is not None
    assert len(message) < 300
    assert message.endswith("…")


def test_non_object_arguments_are_rejected() -> None:
    message = validate_arguments(make_tool(ADD), [1, 2])

    assert message == "invalid arguments for tool \"add\": [1, 2] is not of type 'object'"


def test_validation_is_skipped_when_the_tool_opts_out() -> None:
    assert validate_arguments(make_tool(ADD, validate=False), {"a": "x"}) is None


def test_deeply_nested_arguments_are_rejected_not_crashed() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#"}}}
    args: dict[str, Any] = {}
    for _ in range(5000):
        args = {"a": args}

    message = validate_arguments(make_tool(schema), args)

    assert message == 'invalid arguments for tool "add": arguments are nested too deeply'


# --- invalid schemas -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "objekt"},
        {"type": "object", "properties": {"a": {"type": 5}}},
        {"type": "object", "required": "a"},
        {"type": "object", "properties": {"a": {"pattern": "("}}},
        None,
        ["not", "a", "schema"],
    ],
)
def test_an_invalid_schema_disables_validation(schema: Any) -> None:
    assert validate_arguments(make_tool(schema), {"a": "anything"}) is None


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "object", "properties": {"a": {"minimum": "x"}}}, {"a": 1}),
        ({"type": "object", "properties": {"a": {"maxLength": "x"}}}, {"a": "s"}),
        ({"type": "object", "properties": {"a": {"minItems": None, "maxItems": "x"}}}, {"a": []}),
        ({"type": "object", "properties": {"a": {"enum": 5}}}, {"a": 1}),
        ({"type": "object", "required": [["a"]]}, {}),
    ],
)
def test_a_schema_that_breaks_the_small_checker_disables_validation(
    schema: Any, value: Any
) -> None:
    t = make_tool(schema)

    assert validate_arguments(t, value) is None
    assert validate_arguments(t, value) is None


def test_valid_arguments_do_not_import_jsonschema() -> None:
    # Importing jsonschema costs a process ~60-100 ms: a worker's first resume paid it for
    # arguments the small checker accepts. Invalid ones still get jsonschema's wording.
    code = (
        "import sys\n"
        "from toolnexus._types import Tool, ToolResult\n"
        "from toolnexus.tools.validation import validate_arguments\n"
        "schema = {'type': 'object', 'properties': {'a': {'type': 'number'}},"
        " 'required': ['a']}\n"
        "t = Tool(name='t', description='', input_schema=schema, source='native',"
        " execute=lambda args, ctx=None: ToolResult(''))\n"
        "assert validate_arguments(t, {'a': 1}) is None\n"
        "print('jsonschema' in sys.modules)\n"
        "print(validate_arguments(t, {'a': 'x'}))\n"
        "print('jsonschema' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.splitlines()

    assert out == [
        "False",
        "invalid arguments for tool \"t\": 'a': 'x' is not of type 'number'",
        "True",
    ]


def test_a_schema_that_breaks_at_use_disables_validation() -> None:
    t = make_tool({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}})

    assert validate_arguments(t, {"a": 1}) is None
    assert validate_arguments(t, {"a": 2}) is None


def test_unknown_dialect_uses_the_latest_draft_without_warning() -> None:
    schema = {"$schema": "https://example.com/custom", **ADD}

    assert validate_arguments(make_tool(schema), {"a": 1}) is not None


# --- caching -------------------------------------------------------------------------------


def test_the_compiled_validator_is_cached_on_the_tool() -> None:
    t = make_tool(ADD)

    validate_arguments(t, {"a": 1, "b": 2})
    first = t._validator  # pyright: ignore[reportPrivateUsage]
    validate_arguments(t, {"a": "x"})

    assert first is not None
    assert t._validator is first  # pyright: ignore[reportPrivateUsage]


def test_the_decision_to_skip_an_invalid_schema_is_cached() -> None:
    t = make_tool({"type": "objekt"})

    validate_arguments(t, {})
    first = t._validator  # pyright: ignore[reportPrivateUsage]
    validate_arguments(t, {})

    assert first is not None
    assert t._validator is first  # pyright: ignore[reportPrivateUsage]


def test_assigning_a_new_schema_recompiles() -> None:
    t = make_tool(ADD)
    assert validate_arguments(t, {"a": 1, "b": 2}) is None

    t.input_schema = {"type": "object", "required": ["z"]}

    assert validate_arguments(t, {"a": 1, "b": 2}) is not None


# --- the fast path agrees with jsonschema --------------------------------------------------


class Text(str):
    pass


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "number"}, True),
        ({"type": "number"}, 3),
        ({"type": "integer"}, 1.0),
        ({"type": "integer"}, 1.5),
        ({"type": "integer"}, False),
        ({"type": "string"}, Text("x")),
        ({"type": ["string", "null"]}, None),
        ({"type": ["string", "null"]}, 0),
        ({"enum": [1, "a"]}, True),
        ({"enum": [1, "a"]}, 1.0),
        ({"enum": [[1], {"k": 1}]}, [1]),
        ({"enum": [None]}, None),
        ({"const": "x"}, "x"),
        ({"const": "x"}, "y"),
        ({"minimum": 2, "maximum": 4}, 5),
        ({"minimum": 2}, "not a number"),
        ({"minLength": 2, "maxLength": 3}, "abcd"),
        ({"minItems": 1, "items": {"type": "string"}}, []),
        ({"items": {"type": "string"}}, ["a", 1]),
        ({"items": {"type": "string"}}, "not an array"),
        ({"properties": {"a": {"type": "string"}}}, {"a": 1}),
        ({"properties": {"a": {"type": "string"}}}, "not an object"),
        ({"required": ["a"]}, {}),
        ({"additionalProperties": {"type": "number"}}, {"x": 1, "y": "two"}),
        ({"additionalProperties": False, "properties": {"a": {}}}, {"a": 1}),
        ({"type": "object", "properties": {"a": {"format": "email"}}}, {"a": "no-at"}),
        ({"not": {"type": "string"}}, "s"),
    ],
)
def test_validation_agrees_with_jsonschema(schema: JSONSchema, value: Any) -> None:
    validator: Any = Draft202012Validator(schema)
    wrapped = {
        "type": "object",
        "properties": {"v": schema},
        "required": ["v"],
    }

    accepted = validate_arguments(make_tool(wrapped), {"v": value}) is None

    assert accepted == validator.is_valid(value)


# --- parse_arguments -----------------------------------------------------------------------


@pytest.mark.parametrize("raw", [None, "", "   ", "null"])
def test_empty_arguments_parse_to_an_empty_dict(raw: str | None) -> None:
    assert parse_arguments(raw) == ({}, None)


def test_a_json_object_parses_to_a_dict() -> None:
    assert parse_arguments('{"q": "cats", "n": 2}') == ({"q": "cats", "n": 2}, None)


def test_bytes_are_parsed_as_json() -> None:
    assert parse_arguments(b'{"q": 1}') == ({"q": 1}, None)


def test_a_dict_is_returned_as_is() -> None:
    args = {"q": 1}

    parsed, error = parse_arguments(args)

    assert parsed is args
    assert error is None


def test_malformed_json_is_reported_with_the_tool_name() -> None:
    parsed, error = parse_arguments('{"q": ', name="search")

    assert parsed == {}
    assert error is not None
    assert error.startswith('malformed JSON arguments for tool "search": Expecting value')


@pytest.mark.parametrize(
    ("raw", "kind"),
    [("[1, 2]", "array"), ('"text"', "string"), ("3", "number"), ("true", "boolean")],
)
def test_non_object_json_is_reported(raw: str, kind: str) -> None:
    assert parse_arguments(raw, name="search") == (
        {},
        f'malformed JSON arguments for tool "search": expected a JSON object, got {kind}',
    )


def test_a_non_string_value_is_reported() -> None:
    assert parse_arguments([1], name="t") == (  # pyright: ignore[reportArgumentType]
        {},
        'malformed JSON arguments for tool "t": expected a JSON object, got list',
    )


def test_deeply_nested_json_is_reported_not_crashed() -> None:
    parsed, error = parse_arguments("[" * 100_000)

    assert parsed == {}
    assert error == "malformed JSON arguments: nested too deeply"
