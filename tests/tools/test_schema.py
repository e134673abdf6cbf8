"""Schema inference from function signatures (CONTRACT §6)."""

import dataclasses
import enum
import functools
from typing import Annotated, Any, Literal, Optional, TypedDict

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field

from toolnexus._types import ToolContext
from toolnexus.errors import UsageError
from toolnexus.tools.schema import function_signature, infer_schema


def props(fn: Any) -> dict[str, Any]:
    return infer_schema(fn)["properties"]


def valid(schema: dict[str, Any], instance: Any) -> bool:
    validator: Any = Draft202012Validator(schema)
    return validator.is_valid(instance)


@dataclasses.dataclass
class Point:
    """A point on the plane."""

    x: int
    y: float = 0.0


class Address(TypedDict):
    """Where someone lives."""

    street: str
    number: int


class Order(TypedDict, total=False):
    item: str
    at: Point


class Tree(TypedDict):
    value: int
    children: list["Tree"]


class User(BaseModel):
    name: str = Field(description="the full name")
    tags: list[str] = []


class Node(BaseModel):
    label: str
    next: "Node | None" = None


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


# --- the top level -------------------------------------------------------------------------


def test_top_level_is_an_object_with_properties_and_required() -> None:
    def f(a: str) -> None: ...

    assert infer_schema(f) == {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a"],
    }


def test_a_function_without_parameters_has_an_empty_object_schema() -> None:
    def f() -> None: ...

    assert infer_schema(f) == {"type": "object", "properties": {}, "required": []}


def test_every_inferred_schema_is_valid_json_schema() -> None:
    def f(
        a: str,
        p: Point,
        t: Tree,
        n: Node | None = None,
        u: list[User] | None = None,
        o: Order | None = None,
    ) -> None: ...

    Draft202012Validator.check_schema(infer_schema(f))


# --- scalar mappings -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (dict, {"type": "object"}),
        (list, {"type": "array"}),
        (Any, {}),
    ],
)
def test_scalar_types_map_to_their_json_schema_types(
    annotation: Any, expected: dict[str, Any]
) -> None:
    def f(v: Any) -> None: ...

    f.__annotations__ = {"v": annotation}
    assert props(f)["v"] == expected


def test_list_of_int_is_an_array_of_integers() -> None:
    def f(v: list[int]) -> None: ...

    assert props(f)["v"] == {"type": "array", "items": {"type": "integer"}}


def test_set_is_an_array_of_unique_items() -> None:
    def f(v: set[str]) -> None: ...

    assert props(f)["v"] == {"type": "array", "items": {"type": "string"}, "uniqueItems": True}


def test_dict_of_str_to_int_is_an_object_of_integers() -> None:
    def f(v: dict[str, int]) -> None: ...

    assert props(f)["v"] == {"type": "object", "additionalProperties": {"type": "integer"}}


def test_literal_becomes_an_enum() -> None:
    def f(mode: Literal["fast", "slow"]) -> None: ...

    assert props(f)["mode"] == {"enum": ["fast", "slow"], "type": "string"}


def test_mixed_literal_is_an_enum_without_a_type() -> None:
    def f(v: Literal["a", 1]) -> None: ...

    assert props(f)["v"] == {"enum": ["a", 1]}


def test_enum_class_becomes_an_inline_enum() -> None:
    def f(c: Color) -> None: ...

    assert props(f)["c"] == {"enum": ["red", "blue"], "type": "string"}


def test_union_of_types_becomes_any_of() -> None:
    def f(v: int | str) -> None: ...

    assert props(f)["v"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}


# --- optional and defaults -----------------------------------------------------------------


def test_optional_is_the_nullable_inner_schema() -> None:
    def f(v: Optional[str]) -> None: ...  # noqa: UP045

    assert props(f)["v"] == {"type": ["string", "null"]}


def test_pipe_none_is_the_nullable_inner_schema() -> None:
    def f(v: int | None) -> None: ...

    assert props(f)["v"] == {"type": ["integer", "null"]}


def test_optional_without_default_is_still_required() -> None:
    def f(v: str | None) -> None: ...

    assert infer_schema(f)["required"] == ["v"]


def test_optional_literal_admits_null_in_the_enum() -> None:
    def f(v: Literal["a"] | None = None) -> None: ...

    assert props(f)["v"]["enum"] == ["a", None]


def test_parameters_with_defaults_are_not_required() -> None:
    def f(a: str, b: int = 2, c: str | None = None) -> None: ...

    assert infer_schema(f)["required"] == ["a"]


def test_json_defaults_are_advertised() -> None:
    def f(b: int = 2, c: list[str] | None = None) -> None: ...

    assert props(f)["b"]["default"] == 2
    assert props(f)["c"]["default"] is None


def test_non_json_defaults_are_not_advertised() -> None:
    sentinel = object()

    def f(b: Any = sentinel) -> None: ...

    assert "default" not in props(f)["b"]
    assert infer_schema(f)["required"] == []


# --- descriptions --------------------------------------------------------------------------


def test_annotated_string_is_the_description() -> None:
    def f(city: Annotated[str, "the city name"]) -> None: ...

    assert props(f)["city"] == {"type": "string", "description": "the city name"}


def test_field_description_as_default_is_the_description_and_keeps_it_required() -> None:
    def f(n: int = Field(description="how many", ge=1)) -> None: ...

    assert props(f)["n"] == {"type": "integer", "description": "how many", "minimum": 1}
    assert infer_schema(f)["required"] == ["n"]


def test_field_with_a_default_is_not_required() -> None:
    def f(n: int = Field(default=5, description="how many")) -> None: ...

    schema = infer_schema(f)
    assert schema["required"] == []
    assert schema["properties"]["n"]["default"] == 5


def test_annotated_field_carries_description_and_constraints() -> None:
    def f(name: Annotated[str, Field(description="who", max_length=10)]) -> None: ...

    assert props(f)["name"] == {"type": "string", "description": "who", "maxLength": 10}


def test_docstring_args_section_describes_parameters() -> None:
    def f(city: str, days: int = 1) -> None:
        """Forecast.

        Args:
            city: the city to forecast,
                by name.
            days (int): how many days.

        Returns:
            nothing.
        """

    assert props(f)["city"]["description"] == "the city to forecast, by name."
    assert props(f)["days"]["description"] == "how many days."


def test_annotated_description_wins_over_the_docstring() -> None:
    def f(city: Annotated[str, "from the hint"]) -> None:
        """Forecast.

        Args:
            city: from the docstring.
        """

    assert props(f)["city"]["description"] == "from the hint"


# --- structured types ----------------------------------------------------------------------


def test_nested_dataclass_is_inlined_without_titles() -> None:
    def f(p: Point) -> None: ...

    assert props(f)["p"] == {
        "description": "A point on the plane.",
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"default": 0.0, "type": "number"}},
        "required": ["x"],
    }


def test_pydantic_model_keeps_field_descriptions() -> None:
    def f(u: User) -> None: ...

    user = props(f)["u"]
    assert user["properties"]["name"] == {"description": "the full name", "type": "string"}
    assert user["required"] == ["name"]


def test_typed_dict_maps_field_by_field() -> None:
    def f(a: Address) -> None: ...

    assert props(f)["a"] == {
        "type": "object",
        "description": "Where someone lives.",
        "properties": {"street": {"type": "string"}, "number": {"type": "integer"}},
        "required": ["street", "number"],
    }


def test_partial_typed_dict_requires_nothing_and_inlines_nested_dataclasses() -> None:
    def f(o: Order) -> None: ...

    order = props(f)["o"]
    assert order["required"] == []
    assert order["properties"]["at"]["properties"]["x"] == {"type": "integer"}


def test_no_refs_remain_for_non_recursive_types() -> None:
    def f(u: list[User], c: Color, p: Point | None = None) -> None: ...

    assert "$ref" not in repr(infer_schema(f))
    assert "$defs" not in infer_schema(f)


def test_recursive_model_keeps_a_valid_top_level_ref() -> None:
    def f(n: Node) -> None: ...

    schema = infer_schema(f)
    assert schema["properties"]["n"]["properties"]["next"]["anyOf"][0] == {"$ref": "#/$defs/Node"}
    assert valid(schema, {"n": {"label": "a", "next": {"label": "b"}}})
    assert not valid(schema, {"n": {"label": "a", "next": {"label": 3}}})


def test_recursive_typed_dict_keeps_a_valid_top_level_ref() -> None:
    def f(t: Tree) -> None: ...

    schema = infer_schema(f)
    assert schema["$defs"]["Tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    assert valid(schema, {"t": {"value": 1, "children": [{"value": 1, "children": []}]}})
    assert not valid(schema, {"t": {"value": 1, "children": [{"value": "x"}]}})


def test_two_models_with_one_name_do_not_collide() -> None:
    def make(field: str) -> type[BaseModel]:
        namespace = {"__annotations__": {field: str}}
        return type("Thing", (BaseModel,), namespace)

    first, second = make("a"), make("b")

    def f(x: list[first], y: list[second]) -> None:  # pyright: ignore[reportInvalidTypeForm, reportUnknownParameterType]
        ...

    schema = infer_schema(f)  # pyright: ignore[reportUnknownArgumentType]
    assert schema["properties"]["x"]["items"]["required"] == ["a"]
    assert schema["properties"]["y"]["items"]["required"] == ["b"]


# --- the context parameter -----------------------------------------------------------------


def test_tool_context_parameter_is_left_out_of_the_schema() -> None:
    def f(q: str, ctx: ToolContext) -> None: ...

    signature = function_signature(f)
    assert list(signature.schema["properties"]) == ["q"]
    assert signature.schema["required"] == ["q"]
    assert signature.context_param == "ctx"


def test_optional_tool_context_under_any_name_is_the_context() -> None:
    def f(q: str, run: ToolContext | None = None) -> None: ...

    assert function_signature(f).context_param == "run"
    assert list(props(f)) == ["q"]


def test_unannotated_ctx_is_the_context() -> None:
    def f(q: str, ctx=None) -> None: ...  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType]

    assert function_signature(f).context_param == "ctx"  # pyright: ignore[reportUnknownArgumentType]


def test_a_string_parameter_named_context_is_an_ordinary_argument() -> None:
    def f(context: str) -> None: ...

    assert function_signature(f).context_param is None
    assert props(f) == {"context": {"type": "string"}}


# --- inference impossible ------------------------------------------------------------------


def test_unannotated_parameter_is_a_usage_error_naming_input_schema() -> None:
    def f(a, b: int) -> None: ...  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType]

    with pytest.raises(UsageError, match=r"'a' has no annotation.*input_schema="):
        infer_schema(f)  # pyright: ignore[reportUnknownArgumentType]


def test_star_args_is_a_usage_error() -> None:
    def f(*values: int) -> None: ...

    with pytest.raises(UsageError, match=r"\*values.*input_schema="):
        infer_schema(f)


def test_star_kwargs_is_a_usage_error() -> None:
    def f(**options: str) -> None: ...

    with pytest.raises(UsageError, match=r"\*\*options"):
        infer_schema(f)


def test_a_type_without_a_json_schema_is_a_usage_error() -> None:
    class Opaque:
        pass

    def f(o: Opaque) -> None: ...

    with pytest.raises(UsageError, match=r"'o' has type Opaque.*input_schema="):
        infer_schema(f)


def test_unresolvable_string_annotation_is_a_usage_error() -> None:
    def f(a: "NoSuchType") -> None: ...  # noqa: F821  # pyright: ignore[reportUndefinedVariable, reportUnknownParameterType]

    with pytest.raises(UsageError, match="cannot be resolved"):
        infer_schema(f)  # pyright: ignore[reportUnknownArgumentType]


# --- callables other than plain functions --------------------------------------------------


def test_partial_hides_bound_arguments() -> None:
    def f(a: str, b: int) -> None: ...

    assert list(props(functools.partial(f, b=1))) == ["a", "b"]
    assert infer_schema(functools.partial(f, "x"))["required"] == ["b"]


def test_callable_instance_uses_its_call_signature() -> None:
    class Adder:
        def __call__(self, a: int, b: int = 0) -> int:
            return a + b

    assert infer_schema(Adder()) == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "default": 0}},
        "required": ["a"],
    }


def test_bound_method_leaves_self_out() -> None:
    class Service:
        def lookup(self, key: str) -> str:
            return key

    assert list(props(Service().lookup)) == ["key"]


def test_an_element_type_without_a_json_schema_is_named_with_its_path() -> None:
    import socket

    def f(conns: list[socket.socket]) -> None: ...

    with pytest.raises(UsageError) as caught:
        infer_schema(f)
    message = str(caught.value)
    assert "parameter 'conns' has type list[socket.socket]" in message
    assert "socket.socket (at conns[]) has no JSON Schema" in message


def test_a_nested_bad_type_is_found_through_dicts_and_typed_dicts() -> None:
    import socket

    class Peer(TypedDict):
        sock: socket.socket

    def f(peers: dict[str, list[Peer]]) -> None: ...

    with pytest.raises(UsageError, match=r"socket\.socket \(at peers\{\}\[\]\.sock\)"):
        infer_schema(f)


@pytest.mark.parametrize(("value", "ok"), [(2, True), (2.0, True), (2.5, False), ("2", False)])
async def test_an_int_parameter_takes_whole_numbers_only(value: Any, ok: bool) -> None:
    from toolnexus import create_toolkit, define_tool

    @define_tool
    def double(n: int) -> str:
        """Double ``n``."""
        return f"{type(n).__name__} {n * 2}"

    async with await create_toolkit(extra_tools=[double], builtins=False) as tk:
        result = await tk.execute("double", {"n": value})
    assert result.is_error is not ok
    if ok:
        assert result.output == "int 4"
    else:
        assert "is not of type 'integer'" in result.output
