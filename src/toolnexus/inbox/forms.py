"""From a posted form to the `Answer` it means, per request kind, checked on the server.

Pure functions over data: the form as ``{name: [values]}`` (repeated names kept in order) and
the halted `Request`; each returns the `Answer` or the errors to show beside the fields
(``{field name: message}``, ``""`` for the form as a whole). See docs/inbox.md for the fields
and the Answer each kind records.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import parse_qs

from ..suspension import Answer, Request, is_relay_request, relay_answer, relay_calls_of

__all__ = [
    "Form",
    "Parsed",
    "input_fields",
    "parse_form",
    "question_items",
    "to_answer",
]

Form = Mapping[str, list[str]]


@dataclass(frozen=True, slots=True)
class Parsed:
    """What a posted form became: an answer, or the errors that kept it from being one."""

    answer: Answer | None
    errors: dict[str, str] = field(default_factory=lambda: {})


def parse_form(body: bytes) -> dict[str, list[str]]:
    """An ``application/x-www-form-urlencoded`` body; malformed bytes are replaced."""
    text = body.decode("utf-8", "replace")
    return parse_qs(text, keep_blank_values=True, max_num_fields=2000)


def _one(form: Form, name: str) -> str:
    values = form.get(name) or [""]
    return values[0]


def _fail(errors: dict[str, str]) -> Parsed:
    return Parsed(None, errors)


def to_answer(request: Request, form: Form) -> Parsed:
    """The `Answer` the form posted for ``request`` means (``action`` picks the button).

    ``approve_edited`` carries ``data.arguments``; whether they fit the tool's schema is the
    caller's check (it needs the checkpoint).
    """
    action = _one(form, "action")
    rid = request.id
    if action == "approve":
        return Parsed(Answer(rid, True))
    if action == "decline":
        reason = _one(form, "reason").strip()
        return Parsed(
            Answer(rid, False, data={"note": reason} if reason else None, reason="declined")
        )
    if action == "done" and request.kind == "authorization":
        return Parsed(Answer(rid, True))
    if action == "approve_edited":
        return _edited(rid, _one(form, "arguments"))
    if action == "submit":
        if request.kind == "question":
            return _questions(request, form)
        if request.kind == "input":
            return _input(request, form)
        if is_relay_request(request):
            return _relay(request, form)
    return _fail({"": f"unknown action {action!r} for a {request.kind} request"})


def _edited(rid: str, text: str) -> Parsed:
    try:
        value = json.loads(text)
    except ValueError as exc:
        return _fail({"arguments": f"not JSON: {exc}"})
    if not isinstance(value, dict):
        return _fail({"arguments": "the arguments must be a JSON object"})
    return Parsed(Answer(rid, True, data={"arguments": cast(dict[str, Any], value)}))


# -- question ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QuestionItem:
    """One question of a ``question`` request, as the form shows it."""

    name: str
    text: str
    header: str
    options: tuple[str, ...]
    multiple: bool


def question_items(request: Request) -> list[QuestionItem]:
    """The questions in ``request.data.questions`` (malformed entries skipped)."""
    raw: Any = (request.data or {}).get("questions")
    items: list[QuestionItem] = []
    if not isinstance(raw, list):
        return items
    for entry in cast(list[Any], raw):
        if not isinstance(entry, dict):
            continue
        q = cast(dict[str, Any], entry)
        options: Any = q.get("options")
        opts = tuple(str(o) for o in cast(list[Any], options)) if isinstance(options, list) else ()
        items.append(
            QuestionItem(
                name=f"q{len(items)}",
                text=str(q.get("question", "")),
                header=str(q.get("header", "") or ""),
                options=opts,
                multiple=bool(q.get("multiple")) and bool(opts),
            )
        )
    return items


def _questions(request: Request, form: Form) -> Parsed:
    answers: list[Any] = []
    errors: dict[str, str] = {}
    for item in question_items(request):
        chosen = [v for v in form.get(item.name, []) if v != ""]
        other = _one(form, f"{item.name}_other").strip()
        if item.options:
            bad = [v for v in chosen if v not in item.options]
            if bad:
                errors[item.name] = f"not one of the options: {bad[0]!r}"
                continue
            if other:
                chosen.append(other)
            if not chosen:
                errors[item.name] = "choose an option" + (" or more" if item.multiple else "")
                continue
            if not item.multiple and len(chosen) > 1:
                errors[item.name] = "choose one option"
                continue
            answers.append(chosen if item.multiple else chosen[0])
        else:
            text = chosen[0].strip() if chosen else ""
            if not text:
                errors[item.name] = "an answer is required"
                continue
            answers.append(text)
    if errors:
        return _fail(errors)
    return Parsed(Answer(request.id, True, data={"answers": answers}))


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


def _schema(request: Request) -> dict[str, Any]:
    schema: Any = (request.data or {}).get("schema")
    return cast(dict[str, Any], schema) if isinstance(schema, dict) else {}


def input_fields(request: Request) -> list[InputField]:
    """The fields of the form for ``request.data.schema`` (an object schema)."""
    schema = _schema(request)
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


def _input(request: Request, form: Form) -> Parsed:
    errors: dict[str, str] = {}
    data: dict[str, Any] = {}
    for f in input_fields(request):
        present, value, problem = _coerce(f, form)
        if problem:
            errors[f.name] = problem
        elif present:
            data[f.name] = value
        elif f.default is not None:
            data[f.name] = f.default
        elif f.required:
            errors[f.name] = "required"
    for where, problem in schema_errors(_schema(request), data).items():
        errors.setdefault(where, problem)
    if errors:
        return _fail(errors)
    return Parsed(Answer(request.id, True, data=data))


def schema_errors(schema: Mapping[str, Any], value: Any) -> dict[str, str]:
    """``value`` checked against ``schema``: ``{property: message}`` (``""`` for the whole)."""
    if not schema:
        return {}
    from jsonschema.exceptions import SchemaError, ValidationError
    from jsonschema.validators import validator_for

    try:
        plain = dict(schema)
        validator_cls = validator_for(plain)
        validator_cls.check_schema(plain)
        found: list[ValidationError] = list(validator_cls(plain).iter_errors(value))
    except SchemaError as exc:
        return {"": f"the request's schema is invalid: {exc.message}"}
    except RecursionError:
        return {"": "the value is nested too deeply"}
    errors: dict[str, str] = {}
    for err in found:
        path = list(err.absolute_path)
        where = str(path[0]) if path else ""
        if err.validator == "required" and not path and isinstance(value, dict):
            listed: Any = schema.get("required") or []
            missing = [p for p in cast(list[str], listed) if p not in value]
            where = missing[0] if missing else ""
        errors.setdefault(where, err.message)
    return errors


# -- relay tool_call -------------------------------------------------------------------------


def _relay(request: Request, form: Form) -> Parsed:
    results: list[dict[str, Any]] = []
    for call in relay_calls_of(request):
        results.append(
            {
                "id": call.id,
                "output": _one(form, f"output.{call.id}"),
                "isError": _one(form, f"is_error.{call.id}") in ("on", "true", "1"),
            }
        )
    if not results:
        return _fail({"": "the request names no calls"})
    return Parsed(relay_answer(request.id, results))
