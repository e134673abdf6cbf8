"""From a posted form to the reply it carries, and through the answer intake to its `Answer`.

Pure functions over data: the form as ``{name: [values]}`` (repeated names kept in order) and
the halted `Request`. The form's fields are read into the reply they stand for — approve,
decline with a reason, approve with edited arguments, the answers to the questions, the form's
data, the relayed calls' outputs — and the intake (`toolnexus.intake`) turns that into the
`Answer`, or refuses it with the errors to show beside the fields (``{field name: message}``,
``""`` for the form as a whole). The form is built from the same `toolnexus.intake.Accepts`
(`answer_shape`): the page offers exactly what the request accepts. See docs/inbox.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import parse_qs

from ..intake import Accepts, AnswerRefused, Approve, Data, Decline, Reply, Text, accepts, intake
from ..intake import schema_errors as schema_errors
from ..suspension import Answer, Request

__all__ = [
    "Form",
    "Parsed",
    "answer_shape",
    "input_fields",
    "parse_form",
    "question_items",
    "schema_errors",
    "to_answer",
]

Form = Mapping[str, list[str]]


@dataclass(frozen=True, slots=True)
class Parsed:
    """What a posted form became: an answer, or the errors that kept it from being one."""

    answer: Answer | None
    errors: dict[str, str] = field(default_factory=lambda: {})
    message: str = ""
    """Why, in a sentence naming what the request accepts (a refusal by the intake)."""


def parse_form(body: bytes) -> dict[str, list[str]]:
    """An ``application/x-www-form-urlencoded`` body; malformed bytes are replaced."""
    text = body.decode("utf-8", "replace")
    return parse_qs(text, keep_blank_values=True, max_num_fields=2000)


def _one(form: Form, name: str) -> str:
    values = form.get(name) or [""]
    return values[0]


def _fail(errors: dict[str, str]) -> Parsed:
    return Parsed(None, errors)


def answer_shape(request: Request, *, tool: str = "", edit_schema: Any = None) -> Accepts:
    """What answers ``request`` — the form offers exactly that (`toolnexus.intake.accepts`)."""
    return accepts(request, tool=tool, edit_schema=edit_schema)


def to_answer(request: Request, form: Form, shape: Accepts | None = None) -> Parsed:
    """The `Answer` the form posted for ``request`` means (``action`` picks the button), or the
    errors that keep it from being one.

    Args:
        request: the halted request.
        form: the posted fields.
        shape: what answers it (default: `accepts` of the request alone; pass
            `toolnexus.stores.checks.halted_accepts` of its checkpoint so that edited arguments are
            checked against the schema it keeps).
    """
    shape = shape or accepts(request)
    read = _reply(shape, form)
    if isinstance(read, Parsed):
        return read
    try:
        return Parsed(intake(request, read, known=shape))
    except AnswerRefused as refused:
        return Parsed(None, refused.errors, str(refused))


def _reply(shape: Accepts, form: Form) -> Reply | Parsed:
    """The reply the form's button and fields carry (or the errors reading them)."""
    action = _one(form, "action")
    if action == "decline":
        return Decline(_one(form, "reason"))
    if action in ("approve", "done"):
        option = _one(form, "option")
        return Approve(option=option or None)
    if action == "approve_edited":
        return _edited(_one(form, "arguments"))
    if action == "submit":
        if shape.shape == "questions":
            return Data({"answers": [_chosen(form, item) for item in _items(shape)]})
        if shape.shape == "question":
            return Text(_one(form, "text_other").strip() or _one(form, "text"))
        if shape.shape == "input":
            return _input(shape, form)
        if shape.shape == "relay":
            return _relay(shape, form)
    return _fail({"": f"unknown action {action!r} for a {shape.kind} request"})


def _edited(text: str) -> Reply | Parsed:
    try:
        value = json.loads(text)
    except ValueError as exc:
        return _fail({"arguments": f"not JSON: {exc}"})
    if not isinstance(value, dict):
        return _fail({"arguments": "the arguments must be a JSON object"})
    return Approve(arguments=cast(dict[str, Any], value))


# -- question ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QuestionItem:
    """One question of a ``question`` request, as the form shows it."""

    name: str
    text: str
    header: str
    options: tuple[str, ...]
    multiple: bool
    custom: bool = False
    """Free text is taken besides the options (the form shows an "Other" field)."""


def question_items(request: Request) -> list[QuestionItem]:
    """The questions in ``request.data.questions`` (malformed entries skipped)."""
    return _items(accepts(request))


def _items(shape: Accepts) -> list[QuestionItem]:
    return [
        QuestionItem(f"q{i}", q.text, q.header, q.options, q.multiple, q.custom)
        for i, q in enumerate(shape.questions)
    ]


def _chosen(form: Form, item: QuestionItem) -> Any:
    """The raw answer the form gives ``item`` (the intake checks it)."""
    chosen = [v for v in form.get(item.name, []) if v != ""]
    other = _one(form, f"{item.name}_other").strip()
    if other:
        chosen.append(other)
    if item.multiple:
        return chosen
    if len(chosen) == 1:
        return chosen[0]
    return chosen or ""  # several for a one-option question: the intake says choose one


# -- input: a form generated from data.schema -------------------------------------------------


@dataclass(frozen=True, slots=True)
class InputField:
    """One property of an ``input`` request's schema, as the form shows it."""

    name: str
    """The property name (the form field is ``field.<name>``)."""
    type: str
    title: str
    description: str
    required: bool
    enum: tuple[Any, ...] | None
    default: Any


def input_fields(request: Request) -> list[InputField]:
    """The fields of the form for ``request.data.schema`` (an object schema)."""
    return _fields(accepts(request).schema or {})


def _fields(schema: Mapping[str, Any]) -> list[InputField]:
    props: Any = schema.get("properties")
    required_raw: Any = schema.get("required")
    required: set[str] = (
        {str(r) for r in cast(list[Any], required_raw)} if isinstance(required_raw, list) else set()
    )
    fields: list[InputField] = []
    if not isinstance(props, dict):
        return fields
    for name, spec_raw in cast(dict[str, Any], props).items():
        spec = cast(dict[str, Any], spec_raw) if isinstance(spec_raw, dict) else {}
        kind = spec.get("type")
        enum: Any = spec.get("enum")
        fields.append(
            InputField(
                name=name,
                type=kind if isinstance(kind, str) else "string",
                title=str(spec.get("title") or name),
                description=str(spec.get("description") or ""),
                required=name in required,
                enum=tuple(cast(list[Any], enum)) if isinstance(enum, list) else None,
                default=spec.get("default"),
            )
        )
    return fields


def _coerce(f: InputField, form: Form) -> tuple[bool, Any, str]:
    """``(present, value, error)`` for one field."""
    key = f"field.{f.name}"
    if f.type == "boolean" and f.enum is None:
        return True, _one(form, key) in ("on", "true", "1"), ""
    raw = _one(form, key)
    if f.enum is not None:
        if raw == "":
            return False, None, ""
        for option in f.enum:
            if raw == json.dumps(option):
                return True, option, ""
        return True, raw, "not one of the choices"
    if raw.strip() == "":
        return False, None, ""
    if f.type == "integer":
        try:
            return True, int(raw.strip()), ""
        except ValueError:
            return True, raw, "must be a whole number"
    if f.type == "number":
        try:
            number = float(raw.strip())
        except ValueError:
            return True, raw, "must be a number"
        if not math.isfinite(number):
            return True, raw, "must be a finite number"
        return True, int(number) if number.is_integer() and "." not in raw else number, ""
    return True, raw, ""


def _input(shape: Accepts, form: Form) -> Reply | Parsed:
    """The form's fields as data (typed per the schema); a field that cannot be read is an
    error here, the rest is the intake's to check against the schema."""
    errors: dict[str, str] = {}
    data: dict[str, Any] = {}
    for f in _fields(shape.schema or {}):
        present, value, problem = _coerce(f, form)
        if problem:
            errors[f.name] = problem
        elif present:
            data[f.name] = value
        elif f.default is not None:
            data[f.name] = f.default
    if errors:  # show every field's problem at once: the schema's too
        for where, problem in schema_errors(shape.schema or {}, data).items():
            errors.setdefault(where, problem)
        return _fail(errors)
    return Data(data)


# -- relay tool_call -------------------------------------------------------------------------


def _relay(shape: Accepts, form: Form) -> Reply:
    return Data(
        {
            "results": [
                {
                    "id": call,
                    "output": _one(form, f"output.{call}"),
                    "isError": _one(form, f"is_error.{call}") in ("on", "true", "1"),
                }
                for call in shape.calls
            ]
        }
    )
