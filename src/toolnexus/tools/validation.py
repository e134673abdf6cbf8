"""Checking a tool call's arguments before the tool runs.

The model's raw arguments go through `parse_arguments` (JSON text → dict) and then
`validate_arguments` (dict → JSON-Schema check against ``tool.input_schema``). Both return a
short message the model can act on instead of raising, so a bad call costs one turn, not a run::

    args, error = parse_arguments('{"a": "x"}', name="add")
    error = error or validate_arguments(add_tool, args)
    # 'invalid arguments for tool "add": \\'b\\' is a required property; ...'

Validation runs on every tool call, so the common case is kept cheap: the schema is compiled
once per tool and cached on ``tool._validator``, and a small compiled checker accepts valid
arguments for the usual schema shapes (objects of typed properties, arrays, enums, simple
bounds) in a few microseconds. Anything it is not sure about, and every rejection, is decided
by ``jsonschema``, which also words the errors; ``jsonschema`` is imported and the tool's
validator built only then (importing it costs a process ≈ 60–100 ms, which a worker's first
resume or a run's first tool call would otherwise pay for arguments the small checker
accepts). A schema that ``jsonschema`` rejects as invalid disables validation for that tool
instead of failing the run — the same outcome as arguments the small checker accepted, so
deciding lazily changes no result. The cache follows ``tool.input_schema`` by identity:
assigning a new schema recompiles, mutating the cached one in place does not.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

from .._types import Tool

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

__all__ = ["json_kind", "parse_arguments", "validate_arguments"]

MAX_ERRORS = 3
"""How many errors a message lists at most."""

_MAX_ERROR_CHARS = 200

Check = Callable[[Any], bool]


class _Compiled:
    """A tool's compiled schema: ``validator`` is ``None`` when the schema is unusable, or
    not built yet (``built`` false: nothing has needed ``jsonschema`` so far)."""

    __slots__ = ("built", "fast", "schema", "validator")

    def __init__(self, schema: object, fast: Check, *, built: bool = False) -> None:
        self.schema = schema
        self.validator: Validator | None = None
        self.fast = fast
        self.built = built


def validate_arguments(tool: Tool, args: Any) -> str | None:
    """Check ``args`` against ``tool.input_schema``.

    Returns ``None`` when the arguments are valid, when ``tool.validate_args`` is false, or
    when the schema itself is invalid; otherwise a message naming the tool and up to
    `MAX_ERRORS` problems, in a stable order.

    Example:
        >>> t = Tool(name="add", description="", source="native", execute=print,
        ...          input_schema={"type": "object", "properties": {"a": {"type": "number"}},
        ...                        "required": ["a"]})
        >>> validate_arguments(t, {"a": 1}) is None
        True
        >>> validate_arguments(t, {})
        'invalid arguments for tool "add": \\'a\\' is a required property'
    """
    if not tool.validate_args:
        return None
    compiled: _Compiled | None = tool._validator  # pyright: ignore[reportPrivateUsage]
    if compiled is None or compiled.schema is not tool.input_schema:
        compiled = _compile(tool.input_schema)
        tool._validator = compiled  # pyright: ignore[reportPrivateUsage]
    try:
        if compiled.fast(args):
            return None
    except Exception:  # a malformed schema can break the small checker: jsonschema decides
        pass
    if not compiled.built:
        _build(compiled)
    validator = compiled.validator
    if validator is None:
        return None
    try:
        errors = list(validator.iter_errors(args))
    except RecursionError:
        return f'invalid arguments for tool "{tool.name}": arguments are nested too deeply'
    except Exception:  # the schema breaks at use (bad $ref, bad regex): stop validating
        compiled.validator = None
        compiled.fast = _always
        return None
    if not errors:
        return None
    return f'invalid arguments for tool "{tool.name}": {_summarise(errors)}'


def parse_arguments(
    raw: str | bytes | dict[str, Any] | None, *, name: str | None = None
) -> tuple[dict[str, Any], str | None]:
    """Turn the model's raw arguments into a dict.

    ``None``, an empty string and JSON ``null`` mean no arguments (``{}``). A dict is returned
    as it is. Malformed JSON, or JSON that is not an object, gives ``({}, message)``.

    Args:
        raw: the arguments as the provider sent them.
        name: the tool's name, used in the message.

    Example:
        >>> parse_arguments('{"q": "cats"}')
        ({'q': 'cats'}, None)
        >>> parse_arguments("[1]", name="search")
        ({}, 'malformed JSON arguments for tool "search": expected a JSON object, got array')
    """
    if raw is None:
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    where = f' for tool "{name}"' if name is not None else ""
    if not isinstance(raw, str | bytes):  # pyright: ignore[reportUnnecessaryIsInstance]
        kind = type(raw).__name__
        return {}, f"malformed JSON arguments{where}: expected a JSON object, got {kind}"
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        reason = str(exc) if isinstance(exc, ValueError) else "nested too deeply"
        return {}, f"malformed JSON arguments{where}: {reason}"
    if value is None:
        return {}, None
    if not isinstance(value, dict):
        kind = json_kind(value)  # pyright: ignore[reportUnknownArgumentType]
        return {}, f"malformed JSON arguments{where}: expected a JSON object, got {kind}"
    return value, None  # pyright: ignore[reportUnknownVariableType]


_JSON_KINDS: dict[type, str] = {
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def json_kind(value: object) -> str:
    """The JSON name of ``value``'s type (``array``, ``string``, …), for messages."""
    return _JSON_KINDS.get(type(value)) or type(value).__name__


# --- compiling -----------------------------------------------------------------------------


def _compile(schema: object) -> _Compiled:
    """The small checker now; the ``jsonschema`` validator when first needed (`_build`)."""
    if not isinstance(schema, dict | bool):
        return _Compiled(schema, _always, built=True)
    usable = cast(Any, schema)
    try:
        fast = _fast_check(usable)
    except Exception:  # a malformed schema (``"enum": 5``): jsonschema decides every call
        fast = _never
    return _Compiled(usable, fast)


def _build(compiled: _Compiled) -> None:
    """Build the ``jsonschema`` validator; an invalid schema disables validation instead."""
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import Draft202012Validator, validator_for

    compiled.built = True
    usable = cast(Any, compiled.schema)
    try:
        cls = validator_for(usable, default=Draft202012Validator)
        cls.check_schema(usable)
        compiled.validator = cls(usable)
    except (SchemaError, Exception):  # an invalid schema: run the tool unvalidated
        compiled.fast = _always


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


# Keywords the fast checker understands; any other keyword sends its node to jsonschema.
_ANNOTATIONS = frozenset(
    {
        "description",
        "title",
        "default",
        "examples",
        "$comment",
        "$schema",
        "$id",
        "$defs",
        "definitions",
        "format",
        "nullable",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
_UNDERSTOOD = _ANNOTATIONS | {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
}


_NUMBER_TYPES: frozenset[type] = frozenset({int, float})


def _is_number(value: Any) -> bool:
    return type(value) in _NUMBER_TYPES


# JSON types as the exact Python types json.loads produces (subclasses go to jsonschema).
_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "null": (type(None),),
    "object": (dict,),
    "array": (list,),
}


def _fast_check(schema: object) -> Check:
    """A predicate that is True only for instances ``schema`` accepts.

    False means "not sure": the caller then asks jsonschema. The checker is therefore strict
    where semantics are subtle (``1.0`` is not an ``integer`` here, enums match by type and
    value), and gives up on keywords it does not know.
    """
    if schema is True:
        return _always
    if not isinstance(schema, dict) or schema.keys() - _UNDERSTOOD:
        return _never
    if "$schema" in schema and "draft-03" in str(schema["$schema"]):  # pyright: ignore[reportUnknownArgumentType]
        return _never
    node: dict[str, Any] = schema  # pyright: ignore[reportUnknownVariableType]
    checks: list[Check] = []
    kind = node.get("type")
    if kind is not None:
        checks.append(_type_check(kind))
    if "enum" in node or "const" in node:
        choices: Iterable[Any] = node["enum"] if "enum" in node else [node["const"]]
        checks.append(_enum_check(choices))
    for check in (_object_check(node), _array_check(node), _bounds_check(node)):
        if check is not None:
            checks.append(check)
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]

    def every(value: Any) -> bool:
        for check in checks:  # noqa: SIM110 - a generator costs more than these checks
            if not check(value):
                return False
        return True

    return every


def _type_check(kind: Any) -> Check:
    names = cast("list[Any]", [kind] if isinstance(kind, str) else kind)
    if not isinstance(names, list):  # pyright: ignore[reportUnnecessaryIsInstance]
        return _never
    if not names or not all(name in _PYTHON_TYPES for name in names):
        return _never
    allowed = frozenset(t for name in names for t in _PYTHON_TYPES[name])
    if len(allowed) == 1:
        (only,) = allowed
        return lambda value: type(value) is only
    return lambda value: type(value) in allowed


def _enum_check(choices: Iterable[Any]) -> Check:
    allowed = {
        (type(c), c)  # pyright: ignore[reportUnknownArgumentType]
        for c in choices
        if c is None or isinstance(c, str | int | float | bool)
    }

    def check(value: Any) -> bool:
        try:
            return (type(value), value) in allowed
        except TypeError:  # unhashable (a list or an object): let jsonschema compare
            return False

    return check


def _object_check(node: dict[str, Any]) -> Check | None:
    properties: object = node.get("properties", {})
    required: object = node.get("required", [])
    additional = node.get("additionalProperties", True)
    if not (isinstance(properties, dict) and isinstance(required, list)):
        return _never
    if not properties and not required and additional is True:
        return None
    known = {str(k): _fast_check(v) for k, v in cast("dict[Any, Any]", properties).items()}
    needed = [str(name) for name in cast("list[Any]", required)]
    extra: Check | None = None if additional is True else _fast_check(additional)

    def check(value: Any) -> bool:
        if type(value) is not dict:
            return True  # object keywords do not apply to other types
        for name in needed:
            if name not in value:
                return False
        for name, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            sub = known.get(name)  # pyright: ignore[reportUnknownArgumentType]
            if sub is not None:
                if not sub(item):
                    return False
            elif extra is not None and not extra(item):
                return False
        return True

    return check


def _array_check(node: dict[str, Any]) -> Check | None:
    items = node.get("items", True)
    low = node.get("minItems")
    high = node.get("maxItems")
    if items is True and low is None and high is None:
        return None
    if isinstance(items, list):  # draft 4–2019 tuple form
        return _never
    each = _fast_check(items)

    def check(value: Any) -> bool:
        if type(value) is not list:
            return True
        size = len(value)  # pyright: ignore[reportUnknownArgumentType]
        if (low is not None and size < low) or (high is not None and size > high):
            return False
        if each is not _always:
            for item in value:  # pyright: ignore[reportUnknownVariableType]
                if not each(item):
                    return False
        return True

    return check


def _bounds_check(node: dict[str, Any]) -> Check | None:
    minimum, maximum = node.get("minimum"), node.get("maximum")
    shortest, longest = node.get("minLength"), node.get("maxLength")
    if minimum is None and maximum is None and shortest is None and longest is None:
        return None

    def check(value: Any) -> bool:
        if _is_number(value):
            return (minimum is None or value >= minimum) and (maximum is None or value <= maximum)
        if type(value) is str:
            size = len(value)
            return (shortest is None or size >= shortest) and (longest is None or size <= longest)
        return True

    return check


# --- wording -------------------------------------------------------------------------------


def _summarise(errors: list[ValidationError]) -> str:
    described = sorted({_describe(error) for error in errors})
    shown = [text for _, text in described[:MAX_ERRORS]]
    if len(described) > MAX_ERRORS:
        shown.append(f"(and {len(described) - MAX_ERRORS} more)")
    return "; ".join(shown)


def _describe(error: ValidationError) -> tuple[tuple[tuple[int, int, str], ...], str]:
    while error.context:  # anyOf/oneOf: report the branch that got furthest into the value
        error = max(error.context, key=lambda e: len(e.absolute_path))
    path = list(error.absolute_path)
    message = error.message
    if len(message) > _MAX_ERROR_CHARS:
        message = message[: _MAX_ERROR_CHARS - 1] + "…"
    key = tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in path)
    return key, (f"{_render_path(path)}: {message}" if path else message)


def _render_path(path: list[str | int]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return repr(text)
