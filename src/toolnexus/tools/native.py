"""Native tools: a Python function becomes a `Tool` (``source="native"``).

::

    @define_tool
    def add(a: int, b: int = 1) -> int:
        \"\"\"Add two numbers.\"\"\"
        return a + b

The schema is inferred from the type hints (see `toolnexus.tools.schema`), the description is
the docstring's first line, and the name is the function's name, sanitized. Explicit
``name=``, ``description=`` and ``input_schema=`` override each of them.

Decisions, so that nobody has to read the code to learn them:

- **Sync functions run directly on the event loop.** Tool functions are usually cheap, and a
  thread hop costs more than most of them take. A blocking function should be ``async def``
  (or hand its blocking part to ``asyncio.to_thread`` itself).
- **Arguments are converted to the annotated types** after validation: ``int`` parameters get
  ``int`` (``3.0`` → ``3``), ``float`` ones ``float``, ``set``/``tuple`` their container, and
  dataclasses, pydantic models, enums, ``datetime`` and the like are built by pydantic.
  ``TypedDict`` parameters get a plain ``dict`` (with their fields converted). A value that
  cannot be converted is an error result, ``invalid arguments for tool "<name>": …``; the
  function is not called. Arguments the function does not take are dropped.
- **With an explicit ``input_schema``** the function gets the arguments as keyword arguments,
  unless it has exactly one non-context parameter and that parameter is not a property of the
  schema: then it receives the whole arguments dict (``def run(args: dict)``).
- **Results**: a `str` is the output; a `ToolResult` passes through unchanged (so a tool can
  return ``pending(...)``); ``None`` is ``""``; dicts, lists, numbers, booleans, dataclasses and
  pydantic models become compact JSON text; anything else its ``str()``.
- **A raise** becomes ``ToolResult("<ExceptionType>: <message>", is_error=True)``, so the model
  learns what went wrong. Cancellation (`asyncio.CancelledError`) is never caught.
"""

from __future__ import annotations

import collections.abc as abc
import dataclasses
import inspect
import json
import types
import typing
from collections.abc import Callable
from typing import Any, overload

from .._types import JSONSchema, Tool, ToolContext, ToolResult, sanitize
from ..errors import UsageError
from .execute import log_tool_failure
from .schema import (
    Parameter,
    callable_doc,
    callable_name,
    function_signature,
    is_context_parameter,
    resolve_hints,
)

__all__ = ["define_tool", "to_tool_result", "tool"]

Converter = Callable[[Any], Any]


@overload
def define_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: JSONSchema | None = None,
) -> Tool: ...


@overload
def define_tool(
    fn: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: JSONSchema | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def define_tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: JSONSchema | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a function (sync or async) into a native `Tool`.

    Usable directly, ``define_tool(fn, name="x")``, or as a decorator, ``@define_tool`` and
    ``@define_tool(name="x")``. A function parameter annotated `ToolContext` (or an
    unannotated ``ctx``) receives the call's context.

    Args:
        fn: the function; omit it to get a decorator.
        name: the tool name (default: the function's name); sanitized to ``[a-zA-Z0-9_-]``.
        description: the tool description (default: the docstring's first line, or ``""``).
        input_schema: an explicit JSON Schema; required when the signature cannot be inferred.

    Raises:
        UsageError: ``fn`` is not callable, the name is empty, or the schema cannot be
            inferred and none was given.

    Example:
        >>> @define_tool(name="greet")
        ... async def hello(who: str) -> str:
        ...     \"\"\"Say hello.\"\"\"
        ...     return f"hello {who}"
        >>> (hello.name, hello.description, hello.input_schema["required"])
        ('greet', 'Say hello.', ['who'])
    """
    if fn is None:

        def decorate(func: Callable[..., Any]) -> Tool:
            return _build(func, name, description, input_schema)

        return decorate
    return _build(fn, name, description, input_schema)


tool = define_tool
"""Alias of `define_tool`, for use as ``@tool``."""


def _build(
    fn: Callable[..., Any],
    name: str | None,
    description: str | None,
    input_schema: JSONSchema | None,
) -> Tool:
    if isinstance(fn, Tool) or not callable(fn):
        raise UsageError(f"define_tool needs a function, got {type(fn).__name__}")
    tool_name = sanitize(name if name is not None else callable_name(fn))
    if not tool_name:
        raise UsageError("a tool name must not be empty")
    if description is None:
        doc = callable_doc(fn).strip()
        description = doc.splitlines()[0].strip() if doc else ""
    if input_schema is None:
        signature = function_signature(fn)
        schema = signature.schema
        bind = _keyword_binder(signature.parameters)
    else:
        if not isinstance(input_schema, dict):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UsageError(f"input_schema for tool {tool_name!r} must be a dict")
        schema = input_schema
        bind = _explicit_binder(fn, schema)
    return Tool(
        name=tool_name,
        description=description,
        input_schema=schema,
        source="native",
        execute=_executor(fn, tool_name, bind),
    )


Binder = Callable[[dict[str, Any], ToolContext | None], tuple[list[Any], dict[str, Any]]]


class _BadArguments(Exception):
    """An argument that cannot be converted to its parameter's type."""


def _executor(fn: Callable[..., Any], tool_name: str, bind: Binder) -> Callable[..., Any]:
    async def execute(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        try:
            positional, keywords = bind(args, ctx)
        except _BadArguments as exc:
            return ToolResult(f'invalid arguments for tool "{tool_name}": {exc}', True)
        try:
            value = fn(*positional, **keywords)
            # (A text or a ToolResult — what most tools return — is never awaited: the ABC
            # check inside isawaitable is skipped for them.)
            if not isinstance(value, str | ToolResult) and inspect.isawaitable(value):
                value = await value
            return to_tool_result(value)
        except Exception as exc:
            log_tool_failure(tool_name, exc)
            return ToolResult(_error_text(exc), is_error=True)

    execute.__qualname__ = f"{tool_name}.execute"
    return execute


def _error_text(exc: Exception) -> str:
    """``"<ExceptionType>: <message>"``, or just the type when there is no message."""
    kind = type(exc).__name__
    try:
        text = str(exc)
    except Exception:  # an exception whose __str__ itself fails
        text = ""
    return f"{kind}: {text}" if text else kind


def to_tool_result(value: Any) -> ToolResult:
    """Normalise a tool function's return value to a `ToolResult`.

    Example:
        >>> to_tool_result({"sum": 3}).output
        '{"sum":3}'
    """
    if isinstance(value, str):
        return ToolResult(value)
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult("")
    if _is_json_kind(value) or _is_structured(value):
        try:
            text = _ENCODER.encode(value)
        except (TypeError, ValueError):  # circular, or a hostile __str__/model_dump
            return ToolResult(str(value))
        return ToolResult(text)
    return ToolResult(str(value))


def _is_json_kind(value: object) -> bool:
    return isinstance(value, dict | list | tuple | int | float)


def _is_structured(value: object) -> bool:
    return (dataclasses.is_dataclass(value) and not isinstance(value, type)) or callable(
        getattr(value, "model_dump", None)
    )


def _plain(value: object) -> object:
    """``json.dumps`` fallback: dataclasses and pydantic models as dicts, else ``str()``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, set | frozenset):
        return list(typing.cast("set[object]", value))
    return str(value)


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_plain)


# --- binding arguments to parameters -----------------------------------------------------


def _keyword_binder(parameters: tuple[Parameter, ...]) -> Binder:
    plan = [(p, None if p.context else _converter(p.annotation, set())) for p in parameters]

    def bind(args: dict[str, Any], ctx: ToolContext | None) -> tuple[list[Any], dict[str, Any]]:
        positional: list[Any] = []
        keywords: dict[str, Any] = {}
        for param, convert in plan:
            if param.context:
                value: Any = ctx if ctx is not None else ToolContext()
            elif param.name in args:
                value = args[param.name]
                if convert is not None:
                    value = _converted(convert, value, param.name)
            elif param.fill is not None:
                value = param.fill()
            elif param.required:
                raise _BadArguments(f"missing required argument {param.name!r}")
            else:
                continue
            if param.positional_only:
                positional.append(value)
            else:
                keywords[param.name] = value
        return positional, keywords

    return bind


def _explicit_binder(fn: Callable[..., Any], schema: JSONSchema) -> Binder:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return lambda args, ctx: ([args], {})
    try:
        hints = resolve_hints(fn)
    except UsageError:
        hints = {}
    params = list(signature.parameters.values())
    context = [
        p.name
        for p in params
        if is_context_parameter(p.name, hints.get(p.name, p.annotation))
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    others = [
        p
        for p in params
        if p.name not in context and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    has_var_keyword = any(p.kind is p.VAR_KEYWORD for p in params)
    properties: object = schema.get("properties")
    names: dict[str, Any] = (
        typing.cast("dict[str, Any]", properties) if isinstance(properties, dict) else {}
    )
    context_name = context[0] if context else None

    if not has_var_keyword and len(others) == 1 and others[0].name not in names:
        convert = _converter(hints.get(others[0].name, Any), set())

        def bind_dict(
            args: dict[str, Any], ctx: ToolContext | None
        ) -> tuple[list[Any], dict[str, Any]]:
            value = _converted(convert, args, others[0].name) if convert else args
            keywords = {context_name: ctx or ToolContext()} if context_name else {}
            return [value], keywords

        return bind_dict

    parameters = tuple(
        Parameter(
            name=p.name,
            annotation=hints.get(p.name, Any),
            positional_only=p.kind is p.POSITIONAL_ONLY,
            context=p.name == context_name,
        )
        for p in params
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    )
    bind_known = _keyword_binder(parameters)
    if not has_var_keyword:
        return bind_known
    known = {p.name for p in parameters}

    def bind_all(args: dict[str, Any], ctx: ToolContext | None) -> tuple[list[Any], dict[str, Any]]:
        positional, keywords = bind_known(args, ctx)
        keywords.update((k, v) for k, v in args.items() if k not in known)
        return positional, keywords

    return bind_all


def _converted(convert: Converter, value: Any, name: str) -> Any:
    try:
        return convert(value)
    except (ValueError, TypeError) as exc:
        raise _BadArguments(f"{name!r}: {_conversion_message(exc)}") from exc


def _conversion_message(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    parts: list[str] = []
    for error in typing.cast(list[dict[str, Any]], errors())[:3]:
        where = ".".join(str(part) for part in error.get("loc", ()))
        parts.append(f"{where}: {error.get('msg', '')}" if where else str(error.get("msg", "")))
    return "; ".join(parts)


# --- converters: JSON values → annotated Python types ------------------------------------

_PASS_THROUGH: frozenset[Any] = frozenset({str, bool, Any, object, type(None), dict, list})
_SEQUENCES: dict[Any, Callable[[Any], Any]] = {
    list: list,
    set: set,
    frozenset: frozenset,
    tuple: tuple,
}
_ABSTRACT_SEQUENCES: frozenset[Any] = frozenset(
    {abc.Sequence, abc.MutableSequence, abc.Set, abc.MutableSet, abc.Iterable, abc.Collection}
)
_ABSTRACT_MAPPINGS: frozenset[Any] = frozenset({abc.Mapping, abc.MutableMapping})


def _converter(tp: Any, seen: set[Any]) -> Converter | None:
    """How to turn a validated JSON value into ``tp``; ``None`` when it already is one."""
    if _hashable(tp) and tp in _PASS_THROUGH:
        return None
    if tp is int:
        return _to_int
    if tp is float:
        return _to_float
    if tp in _SEQUENCES:
        return _SEQUENCES[tp]
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return _converter(args[0], seen)
    if origin is typing.Literal or isinstance(tp, typing.TypeVar):
        return None
    if origin is typing.Union or origin is types.UnionType:
        return _union_converter(tp, args, seen)
    if origin in _SEQUENCES or origin in _ABSTRACT_SEQUENCES:
        return _sequence_converter(tp, origin, args, seen)
    if origin is dict or origin in _ABSTRACT_MAPPINGS:
        item = _converter(args[1], seen) if len(args) == 2 else None
        return None if item is None else _mapping_converter(item)
    if typing.is_typeddict(tp):
        return _typeddict_converter(tp, seen)
    return _pydantic_converter(tp)


def _hashable(tp: Any) -> bool:
    try:
        hash(tp)
    except TypeError:
        return False
    return True


def _to_int(value: Any) -> int:
    if type(value) is int:
        return value
    if type(value) is float and value.is_integer():
        return int(value)
    raise ValueError(f"expected an integer, got {value!r}"[:200])


def _to_float(value: Any) -> float:
    if type(value) is float:
        return value
    if type(value) is int:
        return float(value)
    raise ValueError(f"expected a number, got {value!r}"[:200])


def _union_converter(tp: Any, members: tuple[Any, ...], seen: set[Any]) -> Converter | None:
    concrete = [m for m in members if m is not type(None)]
    converters = [_converter(m, seen) for m in concrete]
    if all(c is None for c in converters):
        return None
    if len(concrete) == 1 and converters[0] is not None:
        inner = converters[0]
        return lambda value: None if value is None else inner(value)
    return _pydantic_converter(tp)


def _sequence_converter(
    tp: Any, origin: Any, args: tuple[Any, ...], seen: set[Any]
) -> Converter | None:
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        return _pydantic_converter(tp)  # a fixed-length tuple
    item = _converter(args[0], seen) if args else None
    build = _SEQUENCES.get(origin, list)
    if item is None:
        return None if build is list else build

    def convert(value: Any) -> Any:
        if not isinstance(value, list | tuple):
            raise ValueError(f"expected an array, got {type(value).__name__}")
        return build(item(v) for v in value)  # pyright: ignore[reportUnknownVariableType]

    return convert


def _mapping_converter(item: Converter) -> Converter:
    def convert(value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError(f"expected an object, got {type(value).__name__}")
        return {k: item(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]

    return convert


def _typeddict_converter(tp: Any, seen: set[Any]) -> Converter | None:
    if tp in seen:  # a recursive TypedDict: its inner levels stay plain dicts
        return None
    seen.add(tp)
    hints = typing.get_type_hints(tp, include_extras=True)
    fields = {key: c for key, hint in hints.items() if (c := _converter(hint, seen)) is not None}
    if not fields:
        return None

    def convert(value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError(f"expected an object, got {type(value).__name__}")
        out: dict[str, Any] = dict(value)  # pyright: ignore[reportUnknownArgumentType]
        for key, field_convert in fields.items():
            if key in out:
                out[key] = field_convert(out[key])
        return out

    return convert


def _pydantic_converter(tp: Any) -> Converter | None:
    from pydantic import TypeAdapter

    try:
        adapter: TypeAdapter[Any] = TypeAdapter(tp)
    except Exception:  # a type pydantic cannot build: hand the JSON value over as it is
        return None
    return adapter.validate_python
