"""Native tools: define_tool / tool (CONTRACT §6)."""

import asyncio
import dataclasses
import datetime
import enum
from typing import Any, TypedDict

import pytest
from pydantic import BaseModel, Field

from toolnexus._types import Tool, ToolContext, ToolResult
from toolnexus.errors import UsageError
from toolnexus.suspend import pending, pending_of
from toolnexus.suspension import Answer
from toolnexus.tools.native import define_tool, to_tool_result, tool


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


class Person(BaseModel):
    name: str
    age: int


class Shipment(TypedDict):
    to: str
    where: Point


class Size(enum.Enum):
    SMALL = "s"
    LARGE = "l"


async def run(t: Tool, args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
    result = await t.execute(args, ctx)
    assert isinstance(result, ToolResult)
    return result


# --- the four forms ------------------------------------------------------------------------


def add(a: int, b: int = 1) -> int:
    """Add two numbers.

    More detail that is not part of the description.
    """
    return a + b


def test_define_tool_on_a_function_returns_a_native_tool() -> None:
    t = define_tool(add)

    assert (t.name, t.description, t.source) == ("add", "Add two numbers.", "native")
    assert t.input_schema["required"] == ["a"]


def test_define_tool_with_overrides_uses_them() -> None:
    t = define_tool(add, name="plus", description="Sum.")

    assert (t.name, t.description) == ("plus", "Sum.")


def test_bare_decorator_turns_the_function_into_a_tool() -> None:
    @define_tool
    def shout(text: str) -> str:
        return text.upper()

    assert isinstance(shout, Tool)
    assert shout.name == "shout"


def test_decorator_with_arguments_applies_them() -> None:
    @define_tool(name="yell", description="Loud.")
    def shout(text: str) -> str:
        return text.upper()

    assert (shout.name, shout.description) == ("yell", "Loud.")


def test_tool_is_an_alias_of_define_tool() -> None:
    @tool
    def ping() -> str:
        return "pong"

    assert tool is define_tool
    assert ping.name == "ping"


def test_names_are_sanitized() -> None:
    assert define_tool(add, name="my tool.v2").name == "my_tool_v2"
    assert define_tool(lambda: "x").name == "_lambda_"


def test_empty_docstring_gives_empty_description() -> None:
    def quiet() -> None: ...

    assert define_tool(quiet).description == ""


def test_explicit_empty_description_overrides_the_docstring() -> None:
    assert define_tool(add, description="").description == ""


def test_non_callable_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="needs a function"):
        define_tool(42)  # pyright: ignore[reportArgumentType, reportCallIssue]


def test_empty_name_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="must not be empty"):
        define_tool(add, name="")


def test_uninferable_signature_without_schema_is_a_usage_error() -> None:
    def anything(*args: Any) -> None: ...

    with pytest.raises(UsageError, match="input_schema="):
        define_tool(anything)


# --- running -------------------------------------------------------------------------------


async def test_sync_function_runs_and_returns_its_text() -> None:
    @define_tool
    def greet(who: str) -> str:
        return f"hello {who}"

    result = await run(greet, {"who": "ada"})

    assert (result.output, result.is_error) == ("hello ada", False)


async def test_async_function_is_awaited() -> None:
    @define_tool
    async def greet(who: str) -> str:
        await asyncio.sleep(0)
        return f"hi {who}"

    assert (await run(greet, {"who": "bob"})).output == "hi bob"


async def test_callable_instance_with_async_call_is_awaited() -> None:
    class Greeter:
        async def __call__(self, who: str) -> str:
            return f"hey {who}"

    assert (await run(define_tool(Greeter(), name="greeter"), {"who": "cy"})).output == "hey cy"


async def test_missing_optional_argument_uses_the_python_default() -> None:
    assert (await run(define_tool(add), {"a": 2})).output == "3"


async def test_arguments_the_function_does_not_take_are_dropped() -> None:
    assert (await run(define_tool(add), {"a": 2, "b": 2, "junk": "x"})).output == "4"


async def test_missing_required_argument_is_an_error_without_calling() -> None:
    calls: list[int] = []

    @define_tool
    def need(a: int) -> None:
        calls.append(a)

    result = await run(need, {})

    assert result.is_error
    assert result.output == "invalid arguments for tool \"need\": missing required argument 'a'"
    assert calls == []


# --- return values -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ""),
        ({"sum": 3, "ok": True}, '{"sum":3,"ok":true}'),
        ([1, "two"], '[1,"two"]'),
        (7, "7"),
        (2.5, "2.5"),
        (False, "false"),
        ({"word": "héllo"}, '{"word":"héllo"}'),
        (Point(1, 2), '{"x":1,"y":2}'),
        (Person(name="ada", age=36), '{"name":"ada","age":36}'),
        ({"when": datetime.date(2024, 1, 2)}, '{"when":"2024-01-02"}'),
    ],
)
async def test_return_values_become_text(value: Any, expected: str) -> None:
    t = define_tool(lambda: value, name="r")

    result = await run(t, {})

    assert (result.output, result.is_error) == (expected, False)


async def test_other_objects_use_their_str() -> None:
    class Thing:
        def __str__(self) -> str:
            return "a thing"

    assert (await run(define_tool(lambda: Thing(), name="r"), {})).output == "a thing"


async def test_circular_structures_fall_back_to_str() -> None:
    loop: list[Any] = []
    loop.append(loop)

    assert (await run(define_tool(lambda: loop, name="r"), {})).output == "[[...]]"


async def test_tool_result_passes_through_unchanged() -> None:
    returned = ToolResult("custom", is_error=True, metadata={"k": 1})

    assert await run(define_tool(lambda: returned, name="r"), {}) is returned


async def test_pending_result_passes_through_as_a_suspension() -> None:
    @define_tool
    def approve(amount: int) -> ToolResult:
        return pending(kind="approval", prompt=f"Pay {amount}?")

    request = pending_of(await run(approve, {"amount": 5}))

    assert request is not None
    assert (request.kind, request.prompt) == ("approval", "Pay 5?")


def test_to_tool_result_turns_none_into_empty_output() -> None:
    assert to_tool_result(None) == ToolResult("")


# --- raising -------------------------------------------------------------------------------


async def test_a_raise_is_an_error_result_naming_the_exception() -> None:
    @define_tool
    def fail() -> None:
        raise ValueError("boom")

    result = await run(fail, {})

    assert (result.output, result.is_error) == ("ValueError: boom", True)


async def test_an_async_raise_is_an_error_result() -> None:
    @define_tool
    async def fail() -> None:
        raise KeyError("missing")

    assert (await run(fail, {})).output == "KeyError: 'missing'"


async def test_an_exception_without_message_is_named_alone() -> None:
    @define_tool
    def fail() -> None:
        raise RuntimeError

    assert (await run(fail, {})).output == "RuntimeError"


async def test_an_exception_with_a_broken_str_is_still_reported() -> None:
    class Weird(Exception):
        def __str__(self) -> str:
            raise TypeError("no")

    @define_tool
    def fail() -> None:
        raise Weird

    assert (await run(fail, {})).output == "Weird"


async def test_cancellation_is_not_swallowed() -> None:
    @define_tool
    async def stuck() -> None:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await stuck.execute({}, None)


# --- the context ---------------------------------------------------------------------------


async def test_context_parameter_receives_the_context() -> None:
    seen: list[ToolContext] = []

    @define_tool
    def retry(q: str, ctx: ToolContext) -> str:
        seen.append(ctx)
        return "done" if ctx.answer else "first"

    ctx = ToolContext(answer=Answer(id="r1", ok=True))

    assert (await run(retry, {"q": "x"}, ctx)).output == "done"
    assert seen == [ctx]


async def test_context_parameter_gets_an_empty_context_when_none_is_given() -> None:
    @define_tool
    def peek(ctx: ToolContext) -> str:
        return "none" if ctx.answer is None else "some"

    assert (await run(peek, {})).output == "none"


# --- typed conversion ----------------------------------------------------------------------


async def test_int_parameters_get_ints_from_whole_floats() -> None:
    @define_tool
    def kind(n: int) -> str:
        return type(n).__name__ + str(n)

    assert (await run(kind, {"n": 3.0})).output == "int3"


async def test_int_parameter_with_a_fraction_is_an_error_without_calling() -> None:
    calls: list[int] = []

    @define_tool
    def count(n: int) -> None:
        calls.append(n)

    result = await run(count, {"n": 2.5})

    assert result.is_error
    expected = "invalid arguments for tool \"count\": 'n': expected an integer"
    assert result.output.startswith(expected)
    assert calls == []


async def test_float_parameters_get_floats_from_ints() -> None:
    @define_tool
    def half(x: float) -> float:
        assert isinstance(x, float)
        return x / 2

    assert (await run(half, {"x": 3})).output == "1.5"


async def test_dataclass_parameter_gets_an_instance() -> None:
    @define_tool
    def norm(p: Point) -> int:
        assert isinstance(p, Point)
        return p.x + p.y

    assert (await run(norm, {"p": {"x": 1, "y": 2}})).output == "3"


async def test_pydantic_parameter_gets_a_model() -> None:
    @define_tool
    def describe(person: Person) -> str:
        return f"{person.name} is {person.age}"

    assert (await run(describe, {"person": {"name": "ada", "age": 36}})).output == "ada is 36"


async def test_invalid_model_argument_is_an_error_naming_the_field() -> None:
    @define_tool
    def describe(person: Person) -> str:
        return person.name

    result = await run(describe, {"person": {"name": "ada", "age": "old"}})

    assert result.is_error
    assert "'person': age: Input should be a valid integer" in result.output


async def test_typed_dict_parameter_gets_a_dict_with_converted_fields() -> None:
    @define_tool
    def ship(s: Shipment) -> str:
        assert type(s) is dict
        assert isinstance(s["where"], Point)
        return s["to"]

    assert (await run(ship, {"s": {"to": "home", "where": {"x": 1}}})).output == "home"


async def test_list_of_dataclasses_gets_instances() -> None:
    @define_tool
    def total(points: list[Point]) -> int:
        return sum(p.x for p in points)

    assert (await run(total, {"points": [{"x": 1}, {"x": 4}]})).output == "5"


async def test_optional_dataclass_accepts_null() -> None:
    @define_tool
    def where(p: Point | None = None) -> str:
        return "nowhere" if p is None else "somewhere"

    assert (await run(where, {"p": None})).output == "nowhere"


async def test_set_and_enum_and_datetime_parameters_are_converted() -> None:
    @define_tool
    def check(tags: set[str], size: Size, at: datetime.datetime) -> str:
        return f"{sorted(tags)} {size.name} {at.year}"

    args = {"tags": ["b", "a", "b"], "size": "l", "at": "2024-05-01T10:00:00Z"}

    assert (await run(check, args)).output == "['a', 'b'] LARGE 2024"


async def test_field_default_is_filled_when_the_argument_is_missing() -> None:
    @define_tool
    def repeat(word: str, times: int = Field(default=2, description="how often")) -> str:
        return word * times

    assert (await run(repeat, {"word": "ab"})).output == "abab"


async def test_positional_only_parameters_are_passed_positionally() -> None:
    @define_tool
    def sub(a: int, b: int = 10, /) -> int:
        return a - b

    assert (await run(sub, {"a": 15})).output == "5"


# --- explicit input_schema -----------------------------------------------------------------

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


async def test_explicit_schema_is_used_as_given() -> None:
    def search(q):  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType]
        return f"found {q}"

    t = define_tool(search, input_schema=SCHEMA)  # pyright: ignore[reportUnknownArgumentType]

    assert t.input_schema is SCHEMA
    assert (await run(t, {"q": "cats"})).output == "found cats"


async def test_explicit_schema_passes_the_dict_to_a_single_unlisted_parameter() -> None:
    def search(args: dict[str, Any]) -> str:
        return ",".join(sorted(args))

    t = define_tool(search, input_schema=SCHEMA)

    assert (await run(t, {"q": "x", "limit": 3})).output == "limit,q"


async def test_explicit_schema_passes_all_arguments_to_kwargs() -> None:
    def search(**kwargs: Any) -> str:
        return ",".join(f"{k}={v}" for k, v in sorted(kwargs.items()))

    t = define_tool(search, input_schema=SCHEMA)

    assert (await run(t, {"q": "x", "limit": 3})).output == "limit=3,q=x"


async def test_explicit_schema_still_gives_the_context() -> None:
    def search(args: dict[str, Any], ctx: ToolContext) -> str:
        return str(ctx.call_id)

    t = define_tool(search, input_schema=SCHEMA)

    assert (await run(t, {"q": "x"}, ToolContext(call_id="c7"))).output == "c7"


async def test_explicit_schema_converts_annotated_keyword_arguments() -> None:
    def scale(q: str, factor: int) -> str:
        return type(factor).__name__

    t = define_tool(scale, input_schema=SCHEMA)

    assert (await run(t, {"q": "x", "factor": 2.0})).output == "int"


def test_explicit_schema_must_be_a_dict() -> None:
    with pytest.raises(UsageError, match="must be a dict"):
        define_tool(add, input_schema=["nope"])  # pyright: ignore[reportArgumentType, reportCallIssue]
