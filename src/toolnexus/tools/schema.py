"""JSON-Schema inference from a function's signature, for native tools.

The top level is always the object shape every provider accepts for function calling::

    {"type": "object", "properties": {...}, "required": [...]}

Parameters map as JSON Schema has them: ``str`` → ``string``, ``int`` → ``integer``, ``float`` →
``number``, ``bool`` → ``boolean``, ``list[T]`` → ``array`` of ``T``, ``dict`` → ``object``,
``Literal[...]`` → ``enum``, ``T | None`` → ``T`` made nullable. ``TypedDict`` classes map
field by field. Anything else (dataclasses, pydantic models, enums, ``datetime``…) is handed to
pydantic, whose JSON Schema is used as it comes, minus its auto-generated ``title`` keys.
An ``integer`` admits ``2`` and ``2.0`` (JSON Schema counts any number with a zero fraction as an
integer; the tool function receives the ``int`` 2) and rejects ``2.5``. A type with no JSON Schema
is named precisely: ``list[socket.socket]`` blames ``socket.socket`` at ``param[]``. References
are inlined, so a schema is self-contained; only recursive types keep a top-level ``$defs`` with
``#/$defs/…`` references.

Descriptions come from ``Annotated[T, "text"]``, from pydantic ``Field(description=...)``
(as the default or inside ``Annotated``, constraints such as ``ge=`` included), or else from
the Google-style ``Args:`` section of the docstring. A parameter is required when it has no
default. A parameter annotated `ToolContext` (or an unannotated ``ctx``/``context``) receives
the call's context and is left out of the schema. ``*args``, ``**kwargs`` or a parameter
without an annotation make inference impossible: that is a `UsageError` asking for an explicit
``input_schema=``.

pydantic is imported only when a parameter needs it.
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import re
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._types import JSONSchema, ToolContext
from ..errors import UsageError

__all__ = [
    "FunctionSignature",
    "Parameter",
    "callable_doc",
    "callable_name",
    "function_signature",
    "infer_schema",
    "is_context_parameter",
    "resolve_hints",
]

_CONTEXT_NAMES = frozenset({"ctx", "context"})
_DATA_KEYWORDS = frozenset({"default", "enum", "const", "examples"})
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})
_REF_PREFIX = "#/$defs/"
_CONSTRAINTS = (
    "description",
    "format",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "examples",
)
_ARRAY_ORIGINS: tuple[Any, ...] = (
    list,
    set,
    frozenset,
    collections.abc.Sequence,
    collections.abc.MutableSequence,
    collections.abc.Set,
    collections.abc.MutableSet,
    collections.abc.Iterable,
    collections.abc.Collection,
)
_MAPPING_ORIGINS: tuple[Any, ...] = (
    dict,
    collections.abc.Mapping,
    collections.abc.MutableMapping,
)
_ARGS_HEADER = re.compile(r"^(\s*)(?:Args|Arguments|Parameters|Params)\s*:\s*$")
_ARG_LINE = re.compile(r"^\*{0,2}([A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True, slots=True)
class Parameter:
    """One parameter of a native tool's function, as the tool binds it.

    Attributes:
        name: the parameter (and schema property) name.
        annotation: the resolved type hint, ``Annotated`` extras included.
        required: the function has no default for it.
        positional_only: the function must receive it positionally.
        context: it receives the `ToolContext` instead of a model argument.
        fill: produces the value when the model omits the argument and the Python-level
            default cannot be used as is (a pydantic ``Field(...)`` default, or a
            positional-only parameter); else ``None``.
    """

    name: str
    annotation: Any
    required: bool = False
    positional_only: bool = False
    context: bool = False
    fill: Callable[[], Any] | None = None


@dataclass(frozen=True, slots=True)
class FunctionSignature:
    """What `function_signature` learns from a function.

    Attributes:
        schema: the inferred input schema.
        parameters: every parameter, in signature order (the context one flagged).
        context_param: the name of the parameter that receives the `ToolContext`, if any.
    """

    schema: JSONSchema
    parameters: tuple[Parameter, ...]
    context_param: str | None


def infer_schema(fn: Callable[..., Any]) -> JSONSchema:
    """The JSON Schema of ``fn``'s arguments.

    Raises:
        UsageError: when a parameter has no annotation, is ``*args``/``**kwargs``, or has a
            type no JSON Schema can be derived for.

    Example:
        >>> def add(a: int, b: int = 1) -> int:
        ...     return a + b
        >>> infer_schema(add)["required"]
        ['a']
    """
    return function_signature(fn).schema


def function_signature(fn: Callable[..., Any]) -> FunctionSignature:
    """Inspect ``fn`` once: its schema, its parameters and its context parameter.

    Raises:
        UsageError: as `infer_schema`.
    """
    label = callable_name(fn)
    signature = _signature(fn, label)
    hints = resolve_hints(fn, label)
    arg_docs = _docstring_args(callable_doc(fn))
    defs = _Definitions()
    properties: dict[str, JSONSchema] = {}
    required: list[str] = []
    parameters: list[Parameter] = []
    context_param: str | None = None

    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise UsageError(_cannot_infer(label, f"it takes {_star(param)}"))
        annotation = hints.get(param.name, inspect.Parameter.empty)
        positional_only = param.kind is param.POSITIONAL_ONLY
        if is_context_parameter(param.name, annotation):
            context_param = param.name
            parameters.append(
                Parameter(
                    name=param.name,
                    annotation=annotation,
                    positional_only=positional_only,
                    context=True,
                )
            )
            continue
        if annotation is inspect.Parameter.empty:
            raise UsageError(_cannot_infer(label, f"parameter {param.name!r} has no annotation"))
        default, fill = _default_of(param.default)
        if positional_only and fill is None and default is not inspect.Parameter.empty:
            fill = functools.partial(_same, default)
        if _is_field_info(param.default):
            annotation = typing.Annotated[annotation, param.default]
        try:
            schema = _schema_for(annotation, defs)
        except UsageError:
            raise
        except _NoSchema as exc:
            where = param.name + "".join(exc.path)
            detail = (
                f"parameter {param.name!r} has type {_type_label(annotation)}, and "
                f"{_type_label(exc.tp)} (at {where}) has no JSON Schema"
            )
            raise UsageError(_cannot_infer(label, detail)) from exc.__cause__
        except Exception as exc:
            kind = _type_label(annotation)
            detail = f"parameter {param.name!r} has type {kind}, which has no JSON Schema"
            raise UsageError(_cannot_infer(label, detail)) from exc
        if "description" not in schema and param.name in arg_docs:
            schema["description"] = arg_docs[param.name]
        if default is inspect.Parameter.empty:
            required.append(param.name)
        elif _is_json_value(default):
            schema["default"] = default
        properties[param.name] = schema
        parameters.append(
            Parameter(
                name=param.name,
                annotation=annotation,
                required=default is inspect.Parameter.empty,
                positional_only=positional_only,
                fill=fill,
            )
        )

    result: JSONSchema = {"type": "object", "properties": properties, "required": required}
    result = _inline_refs(result, defs)
    return FunctionSignature(
        schema=result, parameters=tuple(parameters), context_param=context_param
    )


def callable_name(fn: Callable[..., Any]) -> str:
    """The ``__name__`` of ``fn`` (of the wrapped function for a `functools.partial`)."""
    target = _unwrap(fn)
    name = getattr(target, "__name__", None)
    return name if isinstance(name, str) else type(target).__name__


def callable_doc(fn: Callable[..., Any]) -> str:
    """The cleaned docstring of ``fn``, or ``""``."""
    return inspect.getdoc(_unwrap(fn)) or ""


def _unwrap(fn: Callable[..., Any]) -> Any:
    target: Any = fn
    while isinstance(target, functools.partial):
        target = target.func  # pyright: ignore[reportUnknownMemberType]
    return target


def _signature(fn: Callable[..., Any], label: str) -> inspect.Signature:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise UsageError(_cannot_infer(label, f"its signature cannot be read ({exc})")) from exc


def resolve_hints(fn: Callable[..., Any], label: str | None = None) -> dict[str, Any]:
    """``fn``'s parameter type hints, string annotations resolved, ``Annotated`` kept.

    Raises:
        UsageError: when the hints cannot be resolved.
    """
    label = label or callable_name(fn)
    target = _unwrap(fn)
    if not inspect.isroutine(target) and callable(target):
        target = type(target).__call__  # a callable instance: its __call__ holds the hints
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception:
        pass
    try:
        evaluated = inspect.signature(fn, eval_str=True)
    except Exception as exc:
        detail = f"its type hints cannot be resolved ({type(exc).__name__}: {exc})"
        raise UsageError(_cannot_infer(label, detail)) from exc
    return {
        name: p.annotation
        for name, p in evaluated.parameters.items()
        if p.annotation is not inspect.Parameter.empty
    }


def _cannot_infer(label: str, why: str) -> str:
    return (
        f"cannot infer an input schema for {label}: {why}; "
        "pass input_schema= to define_tool explicitly"
    )


def _star(param: inspect.Parameter) -> str:
    return f"*{param.name}" if param.kind is param.VAR_POSITIONAL else f"**{param.name}"


def _type_label(annotation: Any) -> str:
    """``socket.socket``, ``list[socket.socket]``: a class by its qualified name, generics as
    Python writes them."""
    if isinstance(annotation, type) and typing.get_origin(annotation) is None:
        module, name = annotation.__module__, annotation.__qualname__
        if module in ("builtins", "__main__") or "<locals>" in name:
            return annotation.__name__
        return f"{module}.{name}"
    return repr(annotation).replace("typing.", "")


def is_context_parameter(name: str, annotation: Any) -> bool:
    """True for a parameter that receives the `ToolContext`.

    That is one annotated ``ToolContext`` (``| None`` allowed), or an unannotated one named
    ``ctx`` or ``context``.
    """
    if annotation is inspect.Parameter.empty:
        return name in _CONTEXT_NAMES
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if annotation is ToolContext:
        return True
    if _is_union(annotation):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return members == [ToolContext]
    return False


def _is_union(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    return origin is typing.Union or origin is types.UnionType


def _is_field_info(value: Any) -> bool:
    # A FieldInfo can only exist once pydantic is imported; don't import it to find out.
    fields = sys.modules.get("pydantic.fields")
    return fields is not None and isinstance(value, fields.FieldInfo)


def _same(value: Any) -> Any:
    return value


def _default_of(default: Any) -> tuple[Any, Callable[[], Any] | None]:
    """The effective default and, for a pydantic ``Field``, how to produce it."""
    if not _is_field_info(default):
        return default, None
    factory = default.default_factory
    if factory is not None:
        return inspect.Parameter.empty, factory
    value = default.default
    if type(value).__name__ == "PydanticUndefinedType":
        return inspect.Parameter.empty, None
    return value, lambda: value


def _is_json_value(value: Any) -> bool:
    if value is None or isinstance(value, str | bool | int | float):
        return True
    if isinstance(value, list | tuple):
        return all(_is_json_value(v) for v in value)  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, dict):
        return all(
            isinstance(k, str) and _is_json_value(v)
            for k, v in value.items()  # pyright: ignore[reportUnknownVariableType]
        )
    return False


# --- type → schema -----------------------------------------------------------------------


class _Definitions:
    """Named schemas collected while mapping one signature, inlined at the end."""

    def __init__(self) -> None:
        self.schemas: dict[str, JSONSchema] = {}
        self.owners: dict[str, Any] = {}

    def claim(self, base: str, owner: Any) -> tuple[str, bool]:
        """A name for ``owner``'s definition and whether it is already (being) defined."""
        name, n = base, 1
        while name in self.schemas:
            if self.owners.get(name) is owner:
                return name, True
            n += 1
            name = f"{base}_{n}"
        self.owners[name] = owner
        return name, False

    def add_generated(self, local: dict[str, JSONSchema]) -> dict[str, str]:
        """Merge pydantic's ``$defs``; a clash with a different schema is renamed."""
        renames: dict[str, str] = {}
        for name, definition in local.items():
            cleaned = _clean(definition, {})
            target, n = name, 1
            while target in renames.values() or (
                target in self.schemas
                and (target in self.owners or self.schemas[target] != cleaned)
            ):
                n += 1
                target = f"{name}_{n}"
            renames[name] = target
        for name, definition in local.items():
            self.schemas[renames[name]] = _clean(definition, renames)
        return renames


def _schema_for(tp: Any, defs: _Definitions) -> JSONSchema:
    if tp is Any or tp is object:
        return {}
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is None or tp is type(None):
        return {"type": "null"}
    if tp is list or tp is set or tp is frozenset or tp is tuple:
        return {"type": "array"}
    if tp is dict:
        return {"type": "object"}
    if isinstance(tp, typing.TypeVar):
        return {}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return _annotated_schema(args[0], args[1:], defs)
    if origin is typing.Literal:
        return _literal_schema(args)
    if _is_union(tp):
        return _union_schema(args, defs)
    if origin in _ARRAY_ORIGINS or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        schema: JSONSchema = {"type": "array"}
        if args:
            schema["items"] = _inner(args[0], defs, "[]")
        if origin in (set, frozenset, collections.abc.Set, collections.abc.MutableSet):
            schema["uniqueItems"] = True
        return schema
    if origin in _MAPPING_ORIGINS:
        schema = {"type": "object"}
        if len(args) == 2 and args[1] is not Any:
            schema["additionalProperties"] = _inner(args[1], defs, "{}")
        return schema
    if typing.is_typeddict(tp):
        return _typeddict_schema(tp, defs)
    try:
        return _pydantic_schema(tp, defs)
    except Exception as exc:
        raise _NoSchema(tp) from exc


class _NoSchema(Exception):
    """``tp`` has no JSON Schema; ``path`` leads to it from the parameter (``[]``, ``{}``,
    ``.field``)."""

    def __init__(self, tp: Any) -> None:
        super().__init__(_type_label(tp))
        self.tp = tp
        self.path: list[str] = []


def _inner(tp: Any, defs: _Definitions, step: str) -> JSONSchema:
    """The schema of a part of a type (an item, a value, a field), recording where it failed."""
    try:
        return _schema_for(tp, defs)
    except _NoSchema as exc:
        exc.path.insert(0, step)
        raise


def _annotated_schema(base: Any, metadata: tuple[Any, ...], defs: _Definitions) -> JSONSchema:
    schema = _schema_for(base, defs)
    texts = [m.strip() for m in metadata if isinstance(m, str) and m.strip()]
    others = tuple(m for m in metadata if not isinstance(m, str))
    if others:
        try:
            constrained = _pydantic_schema(typing.Annotated[(base, *others)], _Definitions())  # pyright: ignore[reportUnknownArgumentType]
        except Exception:  # a type pydantic cannot constrain: keep any plain description
            constrained = {}
            for meta in others:
                text = getattr(meta, "description", None)
                if isinstance(text, str):
                    constrained["description"] = text
        for key in _CONSTRAINTS:
            if key in constrained:
                schema[key] = constrained[key]
    if texts:
        schema["description"] = " ".join(texts)
    return schema


def _literal_schema(values: tuple[Any, ...]) -> JSONSchema:
    schema: JSONSchema = {"enum": list(values)}
    kinds = {_json_type(v) for v in values}
    if len(kinds) == 1 and None not in kinds:
        schema["type"] = kinds.pop()
    return schema


def _json_type(value: Any) -> str | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    return None


def _union_schema(members: tuple[Any, ...], defs: _Definitions) -> JSONSchema:
    concrete = [m for m in members if m is not type(None)]
    if len(concrete) == 1:
        schema = _schema_for(concrete[0], defs)
    else:
        schema = {"anyOf": [_schema_for(m, defs) for m in concrete]}
    return _nullable(schema) if len(concrete) < len(members) else schema


def _nullable(schema: JSONSchema) -> JSONSchema:
    """``schema`` that also admits ``null`` (a type list where possible, else ``anyOf``)."""
    if not schema:
        return schema
    kind = schema.get("type")
    if "$ref" in schema or not isinstance(kind, str | list):
        return {"anyOf": [schema, {"type": "null"}]}
    kinds: list[Any] = [kind] if isinstance(kind, str) else list(kind)  # pyright: ignore[reportUnknownArgumentType]
    out = {**schema, "type": kinds if "null" in kinds else [*kinds, "null"]}
    enum = out.get("enum")
    if isinstance(enum, list) and None not in enum:
        out["enum"] = [*enum, None]
    return out


def _typeddict_schema(tp: Any, defs: _Definitions) -> JSONSchema:
    # pydantic refuses typing.TypedDict before Python 3.12, so these are mapped here.
    name, known = defs.claim(tp.__name__, tp)
    ref: JSONSchema = {"$ref": f"#/$defs/{name}"}
    if known:
        return ref
    defs.schemas[name] = {}  # placeholder: a recursive TypedDict refers to itself
    hints = typing.get_type_hints(tp, include_extras=True)
    schema: JSONSchema = {
        "type": "object",
        "properties": {key: _inner(hint, defs, f".{key}") for key, hint in hints.items()},
        "required": [key for key in hints if key in tp.__required_keys__],
    }
    doc = tp.__doc__
    if isinstance(doc, str) and doc.strip():
        schema["description"] = inspect.cleandoc(doc)
    defs.schemas[name] = schema
    return ref


def _pydantic_schema(tp: Any, defs: _Definitions) -> JSONSchema:
    from pydantic import TypeAdapter

    generated: JSONSchema = TypeAdapter(tp).json_schema(ref_template="#/$defs/{model}")
    renames = defs.add_generated(generated.pop("$defs", {}))
    return _clean(generated, renames)


def _clean(node: Any, renames: dict[str, str]) -> Any:
    """Drop pydantic's generated ``title`` keys and apply ``$defs`` renames."""
    if isinstance(node, list):
        return [_clean(item, renames) for item in node]  # pyright: ignore[reportUnknownVariableType]
    if not isinstance(node, dict):
        return node
    out: JSONSchema = {}
    for key, value in node.items():  # pyright: ignore[reportUnknownVariableType]
        if key == "title" and isinstance(value, str):
            continue
        if key == "$ref" and isinstance(value, str) and value.startswith(_REF_PREFIX):
            name = value[len(_REF_PREFIX) :]
            out[key] = _REF_PREFIX + renames.get(name, name)
        elif key in _DATA_KEYWORDS:
            out[key] = value
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: _clean(v, renames) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
        else:
            out[key] = _clean(value, renames)
    return out


def _inline_refs(schema: JSONSchema, defs: _Definitions) -> JSONSchema:
    """Replace ``#/$defs/X`` references by their definitions, except on a cycle.

    A definition reached again while it is being inlined stays a reference, and only such
    definitions are kept in the top-level ``$defs``.
    """
    if not defs.schemas:
        return schema
    table = defs.schemas
    kept: set[str] = set()

    def walk(node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(item, stack) for item in node]  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(node, dict):
            return node
        fields: dict[str, Any] = node  # pyright: ignore[reportUnknownVariableType]
        ref = fields.get("$ref")
        name = (
            ref[len(_REF_PREFIX) :]
            if isinstance(ref, str) and ref.startswith(_REF_PREFIX)
            else None
        )
        if name is not None and name in table:
            rest = {k: walk(v, stack) for k, v in fields.items() if k != "$ref"}
            if name in stack:
                kept.add(name)
                return {"$ref": ref, **rest}
            return {**walk(table[name], (*stack, name)), **rest}
        return {k: (v if k in _DATA_KEYWORDS else walk(v, stack)) for k, v in fields.items()}

    result: JSONSchema = walk(schema, ())
    out_defs: dict[str, JSONSchema] = {}
    while kept - out_defs.keys():
        name = min(kept - out_defs.keys())
        out_defs[name] = walk(table[name], (name,))
    if out_defs:
        result["$defs"] = dict(sorted(out_defs.items()))
    return result


# --- docstrings ---------------------------------------------------------------------------


def _docstring_args(doc: str) -> dict[str, str]:
    """Per-parameter descriptions from a Google-style ``Args:`` section."""
    found: dict[str, str] = {}
    lines = doc.splitlines()
    for index, line in enumerate(lines):
        header = _ARGS_HEADER.match(line)
        if header is None:
            continue
        base = len(header.group(1))
        entry_indent: int | None = None
        current: str | None = None
        for raw in lines[index + 1 :]:
            if not raw.strip():
                continue
            indent = len(raw) - len(raw.lstrip())
            if indent <= base:
                break
            text = raw.strip()
            if entry_indent is None:
                entry_indent = indent
            match = _ARG_LINE.match(text) if indent == entry_indent else None
            if match is not None:
                current = str(match.group(1))
                found[current] = str(match.group(2)).strip()
            elif current is not None:
                found[current] = f"{found[current]} {text}".strip()
        break
    return {name: text for name, text in found.items() if text}
