"""The answer intake: what answers a `Request`, and the one way a reply becomes an `Answer`.

Every way an answer gets in — ``client.answer`` and ``RunStore.post_answer``, the inline
``wait_for`` result, a host's own ``resume``, ``AgentRuntime.resume``, the approvals inbox (page
and JSON API), the command line, an A2A follow-up, an MCP elicitation result, an ACP permission —
hands its raw reply to `intake`, which returns the `Answer` that reply means for *this* request,
or raises `AnswerRefused` naming the forms the request accepts. No surface builds an Answer
itself: a surface only says which reply its wire carried (`Approve`, `Decline`, `Text`, `Data`,
or a whole wire answer ``{ok, data?, reason?}``).

What answers a request is derived from its kind and data (`accepts`); every surface shows it:

====================  =========================================  ==============================
 request              accepted replies                           the Answer
====================  =========================================  ==============================
 ``approval``         approve; a yes word                        ``ok``
                      approve with edited arguments (checked     ``ok``, ``data.arguments``
                      against the tool's input schema)
                      one of ``data.acp.options`` (ACP)          ``ok``, ``data.optionId``
 ``authorization``    done (approve); a yes word                 ``ok``
 ``question`` with    one answer per question: one of its        ``ok``, ``data.answers``
 ``data.questions``   options (several when ``multiple``), or
                      free text when it has none (or
                      ``custom: true``)
 ``question``         one of ``data.options``, or free text      ``ok``, ``data.text``
                      when it has none (or ``data.custom``)
 ``input``, or any    data valid against ``data.schema``         ``ok``, ``data``
 kind with a
 ``data.schema``
 ``tool_call``        the host's output for every relayed call   ``ok``, ``data.results`` (or
 (relay)                                                         ``data.output`` for one call)
 any other kind       approve, data or text                      ``ok`` (``data.text`` for text)
 every kind           decline, with an optional reason; a no     ``!ok``, ``reason="declined"``,
                      word (approval, authorization)             ``data.note`` = the reason
====================  =========================================  ==============================

A whole wire answer is checked against the same table: ``ok=False`` is a decline (its
``reason`` kept); ``ok=True`` must carry what the kind needs (an approval may add
``data.note``; its other keys are passed to the tool as they are).

Text replies to an approval or an authorization are accepted only as an explicit yes or no
word, compared case-insensitively after trimming spaces and a final ``.`` or ``!``:
`YES_WORDS` and `NO_WORDS`. Anything else ("maybe", "yes but only 50", "n0") is refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from ._types import Tool
from .errors import AnswerMismatch, InvalidAnswer
from .suspension import (
    NOTE_KEY,
    RELAY_OUTPUT_KEY,
    RELAY_RESULTS_KEY,
    Answer,
    Request,
    answer_problem,
    is_relay_request,
    relay_calls_of,
    relay_output_for,
)
from .tools.validation import json_kind, validate_arguments

__all__ = [
    "EDIT_KEY",
    "NEEDS_DATA",
    "NOTE_KEY",
    "NO_WORDS",
    "OPTION_KEY",
    "YES_WORDS",
    "Accepts",
    "AnswerRefused",
    "Approve",
    "Data",
    "Decline",
    "Question",
    "Reply",
    "Text",
    "accepts",
    "intake",
    "schema_errors",
    "schema_problem",
    "yes_or_no",
]

YES_WORDS: frozenset[str] = frozenset(
    {"yes", "y", "approve", "approved", "allow", "accept", "ok", "okay", "confirm", "done"}
)
"""Text replies that approve an approval (or complete an authorization)."""

NO_WORDS: frozenset[str] = frozenset(
    {"no", "n", "decline", "declined", "deny", "denied", "reject", "refuse", "cancel"}
)
"""Text replies that decline an approval or an authorization."""

EDIT_KEY = "arguments"
"""The key of ``Answer.data`` that holds an approval's edited arguments."""
NEEDS_DATA: frozenset[str] = frozenset({"question", "input", "tool_call"})
"""The kinds whose answer may need data: an ``ok`` without any is judged against the request
(a store cannot record it from the kind alone)."""
OPTION_KEY = "optionId"
"""The key of ``Answer.data`` that names the chosen option of an ACP permission."""

Shape = Literal["approval", "authorization", "questions", "question", "input", "relay", "any"]


class AnswerRefused(InvalidAnswer):
    """The reply is not an answer this request accepts; nothing was recorded or run.

    Attributes:
        accepts: what the request accepts (its `Accepts`).
        errors: ``{field: message}`` for a form (``""`` for the reply as a whole).
    """

    def __init__(self, message: str, accepts: Accepts, errors: Mapping[str, str]) -> None:
        super().__init__(message)
        self.accepts = accepts
        self.errors: dict[str, str] = dict(errors)


# -- replies ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Approve:
    """Approve (an authorization: done). ``arguments``: run the call with these instead (an
    approval whose call takes edits); ``option``: the ACP option chosen; ``note``: a comment."""

    arguments: Mapping[str, Any] | None = None
    option: str | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Decline:
    """Decline, with an optional reason (any kind)."""

    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Text:
    """A free-text reply (an A2A text part, ``--text``, a terminal line)."""

    text: str


@dataclass(frozen=True, slots=True)
class Data:
    """A data reply without an explicit decision (an A2A data part, ``--data``, form fields):
    what the request's kind needs (its answers, its form data, its outputs, edited arguments)."""

    data: Mapping[str, Any]


Reply = Approve | Decline | Text | Data | Answer | Mapping[str, Any]
"""What a surface hands to `intake` (a mapping is a wire answer ``{ok, data?, reason?}``)."""


# -- what answers a request --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Question:
    """One question of a ``question`` request."""

    text: str
    header: str = ""
    options: tuple[str, ...] = ()
    multiple: bool = False
    custom: bool = False
    """Free text is accepted besides the options (always when there are no options)."""

    @property
    def free(self) -> bool:
        return self.custom or not self.options


@dataclass(frozen=True, slots=True)
class Accepts:
    """What answers one request (see the module table).

    Attributes:
        shape: which row of the table applies.
        tool: the halted tool's name (for messages), ``""`` when unknown.
        edit_schema: for an approval, what its call's edited arguments are checked against:
            a JSON schema, ``True`` (any object), ``None`` (unknown: any object), ``False``
            (the call takes no edits).
        options: a plain question's options, or an ACP permission's option ids.
        questions: a ``data.questions`` request's questions.
        schema: an ``input`` request's ``data.schema`` (``None``: any data).
        calls: a relay request's call ids, in order.
    """

    shape: Shape
    kind: str
    tool: str = ""
    edit_schema: Any = None
    options: tuple[str, ...] = ()
    custom: bool = False
    questions: tuple[Question, ...] = ()
    schema: Mapping[str, Any] | None = None
    calls: tuple[str, ...] = ()
    option_names: dict[str, str] = field(default_factory=lambda: {})

    @property
    def question(self) -> Question:
        """A plain question's one question (its options, whether it takes free text)."""
        return Question(text="", options=self.options, custom=self.custom)

    @property
    def editable(self) -> bool:
        """Whether an approval's call may be run with edited arguments."""
        return self.shape == "approval" and self.edit_schema is not False and not self.options

    @property
    def forms(self) -> tuple[str, ...]:
        """The accepted replies, in words (what every surface shows)."""
        decline = "decline (with an optional reason)"
        if self.shape == "approval":
            if self.options:
                return (f"one of the options {_listed(self.options)}", "approve", decline)
            if self.editable:
                return ("approve", decline, "approve with edited arguments")
            return ("approve", decline)
        if self.shape == "authorization":
            return ("done (approve)", decline)
        if self.shape == "questions":
            return ("answers to its questions (data.answers, one per question)", decline)
        if self.shape == "question":
            if self.options and not self.custom:
                return (f"one of the options {_listed(self.options)}", decline)
            if self.options:
                return (f"one of the options {_listed(self.options)} or free text", decline)
            return ("free text", decline)
        if self.shape == "input":
            if self.schema is not None:
                return ("data valid against the request's schema", decline)
            return ("data", decline)
        if self.shape == "relay":
            return ("the output of every relayed call (data.results[], or data.output)", decline)
        return ("approve", "data", "text", decline)

    def describe(self) -> str:
        """``approve, decline (with an optional reason) or approve with edited arguments``."""
        forms = self.forms
        return forms[0] if len(forms) == 1 else ", ".join(forms[:-1]) + " or " + forms[-1]

    def to_dict(self) -> dict[str, Any]:
        """The accepted replies as JSON data (what a served request shows its caller)."""
        out: dict[str, Any] = {"kind": self.kind, "replies": list(self.forms)}
        if self.shape in ("approval", "authorization"):
            out["text"] = {"yes": sorted(YES_WORDS), "no": sorted(NO_WORDS)}
        if self.options:
            out["options"] = list(self.options)
        if self.schema is not None:
            out["schema"] = dict(self.schema)
        if self.editable:
            out["edit"] = EDIT_KEY
        return out


def accepts(request: Request, *, tool: str = "", edit_schema: Any = None) -> Accepts:
    """What answers ``request`` (see the module table).

    Args:
        request: the halted request.
        tool: the halted tool's name (for messages).
        edit_schema: for an approval, its call's input schema as the caller knows it (a
            checkpoint keeps it: `toolnexus.loop.checkpoint.Outstanding.input_schema`; the
            resuming process has the tool: `toolnexus.loop.edits.edit_schema`).
    """
    kind = request.kind
    data: Mapping[str, Any] = request.data or {}
    if is_relay_request(request):
        return Accepts("relay", kind, tool, calls=tuple(c.id for c in relay_calls_of(request)))
    schema: Any = data.get("schema")
    if _is_map(schema) and not (kind == "question" and isinstance(data.get("questions"), list)):
        # A form, whatever its kind says (an approval that asks for fields, say): its data.
        return Accepts("input", kind, tool, schema=cast(Mapping[str, Any], schema))
    if kind == "approval":
        acp: Any = data.get("acp")
        raw: Any = cast(Mapping[str, Any], acp).get("options") if isinstance(acp, Mapping) else None
        names: dict[str, str] = {}
        for option in cast(list[Any], raw) if isinstance(raw, list) else []:
            if isinstance(option, Mapping):
                entry = cast(Mapping[str, Any], option)
                oid = entry.get("optionId")
                if isinstance(oid, str) and oid:
                    names[oid] = str(entry.get("name") or "")
        return Accepts(
            "approval",
            kind,
            tool,
            edit_schema=edit_schema,
            options=tuple(names),
            option_names=names,
        )
    if kind == "authorization":
        return Accepts("authorization", kind, tool)
    if kind == "question":
        raw_questions: Any = data.get("questions")
        if isinstance(raw_questions, list):
            questions = tuple(
                _question(cast(Mapping[str, Any], q))
                for q in cast(list[Any], raw_questions)
                if isinstance(q, Mapping)
            )
            if questions:
                return Accepts("questions", kind, tool, questions=questions)
        options = _strings(data.get("options"))
        return Accepts("question", kind, tool, options=options, custom=data.get("custom") is True)
    if kind == "input":
        return Accepts("input", kind, tool)
    return Accepts("any", kind, tool)


def _question(q: Mapping[str, Any]) -> Question:
    options = _strings(q.get("options"))
    return Question(
        text=str(q.get("question", "")),
        header=str(q.get("header") or ""),
        options=options,
        multiple=q.get("multiple") is True and bool(options),
        custom=q.get("custom") is True,
    )


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in cast(list[Any], value) if isinstance(v, str | int | float))


def _is_map(value: Any) -> bool:
    return isinstance(value, Mapping)


def _listed(options: Sequence[str]) -> str:
    return ", ".join(json.dumps(o, ensure_ascii=False) for o in options)


# -- the intake ---------------------------------------------------------------------------------


def yes_or_no(text: str) -> bool | None:
    """``True`` for a yes word, ``False`` for a no word, ``None`` for anything else."""
    word = text.strip().rstrip(".!").strip().casefold()
    if word in YES_WORDS:
        return True
    if word in NO_WORDS:
        return False
    return None


def intake(
    request: Request,
    reply: Reply,
    *,
    tool: str = "",
    edit_schema: Any = None,
    known: Accepts | None = None,
) -> Answer:
    """The `Answer` ``reply`` means for ``request`` — the one way any reply becomes an Answer.

    Args:
        request: the request being answered.
        reply: what the surface's wire carried (see `Reply`).
        tool, edit_schema: see `accepts` (an approval's edit is checked against them).
        known: ``accepts(request, ...)`` when the caller already has it.

    Raises:
        AnswerRefused: the reply is not one the request accepts (an `InvalidAnswer`: a
            `UsageError` and a `ResumeError`); the message names the accepted forms.
        AnswerMismatch: a wire answer whose ``id`` is not the request's.
        InvalidAnswer: a wire answer whose fields have the wrong types.
    """
    acc = known or accepts(request, tool=tool, edit_schema=edit_schema)
    rid = request.id
    if isinstance(reply, Decline):
        return _declined(rid, reply.reason)
    if isinstance(reply, Answer | Mapping):
        return _wire(request, acc, reply)
    if isinstance(reply, Approve):
        return _approve(request, acc, reply)
    if isinstance(reply, Text):
        return _text(request, acc, reply.text)
    if isinstance(reply, Data):  # pyright: ignore[reportUnnecessaryIsInstance]
        return _data(request, acc, reply.data)
    raise TypeError(f"intake takes a reply (Approve, Decline, Text, Data, Answer), got {reply!r}")


def _declined(rid: str, reason: str | None) -> Answer:
    note = reason.strip() if isinstance(reason, str) else ""
    return Answer(id=rid, ok=False, data={NOTE_KEY: note} if note else None, reason="declined")


def _refuse(
    request: Request, acc: Accepts, problem: str, errors: Mapping[str, str] | None = None
) -> Any:
    what = f"an {acc.kind}" if acc.kind[:1] in "aeiou" else f"a {acc.kind}"
    raise AnswerRefused(
        f'toolnexus: request "{request.id}" ({what} request) does not take that answer: '
        f"{problem}. It accepts {acc.describe()}.",
        acc,
        dict(errors or {"": problem}),
    )


def _wire(request: Request, acc: Accepts, value: Answer | Mapping[str, Any]) -> Answer:
    if isinstance(value, Answer):
        answer = value
    else:
        try:
            answer = Answer.from_dict(value)
        except (TypeError, ValueError) as exc:
            raise InvalidAnswer(f"toolnexus: the answer is malformed: {exc}") from exc
    problem = answer_problem(answer)
    if problem:
        raise InvalidAnswer(f"toolnexus: the answer is malformed: {problem}")
    if answer.id != request.id:
        raise AnswerMismatch(
            f'toolnexus: answer id "{answer.id}" does not echo the request id "{request.id}"'
        )
    if not answer.ok:
        return answer
    data: Mapping[str, Any] = answer.data or {}
    if acc.shape == "approval":
        _check_approval_data(request, acc, data)
        return answer
    if acc.shape in ("authorization", "any"):
        return answer
    checked = _checked_data(request, acc, data)
    return answer if checked is data else Answer(id=answer.id, ok=True, data=dict(checked))


def _approve(request: Request, acc: Accepts, reply: Approve) -> Answer:
    rid = request.id
    if reply.arguments is not None and acc.shape != "approval":
        _refuse(request, acc, "only an approval's call can run with edited arguments")
    if acc.shape not in ("approval", "authorization", "any"):
        _refuse(request, acc, "a plain approval carries no answer")
    data: dict[str, Any] = {}
    if reply.arguments is not None:
        data[EDIT_KEY] = reply.arguments
    if reply.option is not None:
        data[OPTION_KEY] = reply.option
    if reply.note:
        data[NOTE_KEY] = reply.note
    if acc.shape == "authorization" and (EDIT_KEY in data or OPTION_KEY in data):
        _refuse(request, acc, "an authorization takes no arguments or options")
    if acc.shape == "approval":
        _check_approval_data(request, acc, data)
    return Answer(id=rid, ok=True, data=data or None)


def _text(request: Request, acc: Accepts, text: object) -> Answer:
    rid = request.id
    if not isinstance(text, str) or not text.strip():
        return _refuse(request, acc, "the reply is empty")
    if acc.shape in ("approval", "authorization"):
        if acc.shape == "approval" and acc.options:
            chosen = _match(text, acc.options, acc.option_names)
            if chosen is not None:
                return Answer(id=rid, ok=True, data={OPTION_KEY: chosen})
        word = yes_or_no(text)
        if word is None:
            return _refuse(
                request,
                acc,
                f"{_quoted(text)} is neither a yes nor a no word "
                f"(yes: {', '.join(sorted(YES_WORDS))}; no: {', '.join(sorted(NO_WORDS))})",
            )
        return Answer(id=rid, ok=True) if word else _declined(rid, None)
    if acc.shape == "question":
        return Answer(id=rid, ok=True, data={"text": _picked(request, acc, acc.question, text, "")})
    if acc.shape == "questions":
        if len(acc.questions) != 1:
            return _refuse(
                request,
                acc,
                f"a text reply answers one question, and it asks {len(acc.questions)}",
            )
        only = acc.questions[0]
        if only.multiple:
            return _refuse(request, acc, "its question takes several options: send data.answers")
        return Answer(id=rid, ok=True, data={"answers": [_picked(request, acc, only, text, "q0")]})
    if acc.shape == "input":
        if acc.schema is not None:
            return _refuse(request, acc, "a text reply is not data for its form")
        return Answer(id=rid, ok=True, data={"text": text})
    if acc.shape == "relay":
        if len(acc.calls) != 1:
            return _refuse(
                request, acc, f"a text reply is one output, and it relays {len(acc.calls)} calls"
            )
        return Answer(id=rid, ok=True, data={RELAY_OUTPUT_KEY: text})
    return Answer(id=rid, ok=True, data={"text": text})


def _data(request: Request, acc: Accepts, data: object) -> Answer:
    rid = request.id
    if not isinstance(data, Mapping):
        return _refuse(request, acc, "the data is not an object")
    given = cast(Mapping[str, Any], data)
    if acc.shape == "approval":
        if EDIT_KEY not in given and OPTION_KEY not in given:
            return _refuse(
                request, acc, "data without a decision does not approve (say ok, or yes/no)"
            )
        _check_approval_data(request, acc, given)
        return Answer(id=rid, ok=True, data=dict(given))
    if acc.shape == "authorization":
        return _refuse(request, acc, "data does not complete an authorization")
    checked = _checked_data(request, acc, given)
    return Answer(id=rid, ok=True, data=dict(checked))


# -- per kind ------------------------------------------------------------------------------------


def _check_approval_data(request: Request, acc: Accepts, data: Mapping[str, Any]) -> None:
    if OPTION_KEY in data:
        chosen = data[OPTION_KEY]
        if not acc.options:
            _refuse(request, acc, "it offers no options to choose from")
        if not isinstance(chosen, str) or chosen not in acc.options:
            _refuse(request, acc, f"{_quoted(chosen)} is not one of its options")
    if EDIT_KEY in data:
        if not acc.editable:
            name = f'tool "{acc.tool}"' if acc.tool else "its tool"
            _refuse(request, acc, f"the call of {name} takes no edited arguments")
        problem = _edit_problem(acc, data[EDIT_KEY])
        if problem is not None:
            raise AnswerRefused(
                f'toolnexus: cannot approve request "{request.id}" with edited arguments: '
                f"{problem}",
                acc,
                {EDIT_KEY: problem},
            )
    note = data.get(NOTE_KEY)
    if note is not None and not isinstance(note, str):
        _refuse(request, acc, "data.note must be text")


def _edit_problem(acc: Accepts, arguments: Any) -> str | None:
    return schema_problem(acc.tool or "the halted tool", acc.edit_schema, arguments)


_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def schema_problem(name: str, schema: Any, arguments: Any) -> str | None:
    """What is wrong with ``arguments`` as the edited arguments of tool ``name``, or ``None``.

    They must be a JSON object; with a ``schema`` (``None``: not known), valid against it (the
    same validation as the model's own arguments, `toolnexus.tools.validation`). A ``False``
    schema marks a call that takes no edits at all.
    """
    if schema is False:
        return f'the call of tool "{name}" takes no edited arguments'
    if not isinstance(arguments, dict):
        value: object = arguments
        got = json_kind(value)
        return f'the edited arguments for tool "{name}" must be a JSON object, got {got}'
    try:
        _ENCODER.encode(arguments)
    except (TypeError, ValueError, RecursionError) as exc:
        return f'the edited arguments for tool "{name}" are not JSON: {exc}'
    if schema is None or schema is True:
        return None
    return validate_arguments(_schema_tool(name, schema), arguments)


def _schema_tool(name: str, schema: Any) -> Tool:
    return Tool(name=name, description="", input_schema=schema, source="native", execute=_never)


def _never(args: dict[str, Any]) -> str:  # pragma: no cover - only its schema is used
    raise AssertionError("a schema-only tool is never executed")


def _checked_data(request: Request, acc: Accepts, data: Mapping[str, Any]) -> Mapping[str, Any]:
    """``data`` as the answer of a question / input / relay request, checked."""
    if acc.shape == "question":
        value = data.get("text")
        if not isinstance(value, str):
            return _refuse(request, acc, "the answer needs data.text")
        picked = _picked(request, acc, acc.question, value, "text")
        return data if picked == value else {**data, "text": picked}
    if acc.shape == "questions":
        return _check_answers(request, acc, data)
    if acc.shape == "input":
        if acc.schema is not None:
            errors = schema_errors(acc.schema, dict(data))
            if errors:
                first = next(iter(errors.items()))
                where = f"{first[0]}: " if first[0] else ""
                return _refuse(
                    request, acc, f"the data does not fit its schema ({where}{first[1]})", errors
                )
        return data
    if acc.shape == "relay":
        answer = Answer(id=request.id, ok=True, data=dict(data))
        for position, call in enumerate(acc.calls):
            if relay_output_for(answer, call, first=position == 0) is None:
                return _refuse(
                    request,
                    acc,
                    f'it carries no result for relayed call "{call}" (data.{RELAY_RESULTS_KEY}[] '
                    f"with its id, or data.{RELAY_OUTPUT_KEY} for a single call)",
                )
        return data
    return data


def _check_answers(request: Request, acc: Accepts, data: Mapping[str, Any]) -> Mapping[str, Any]:
    raw = data.get("answers")
    if not isinstance(raw, list):
        return _refuse(request, acc, "the answer needs data.answers, one per question")
    given = cast(list[Any], raw)
    if len(given) != len(acc.questions):
        return _refuse(
            request,
            acc,
            f"it asks {len(acc.questions)} question(s) and data.answers has {len(given)}",
        )
    errors: dict[str, str] = {}
    out: list[Any] = []
    for i, (question, value) in enumerate(zip(acc.questions, given, strict=True)):
        name = f"q{i}"
        try:
            if question.multiple:
                chosen = [value] if isinstance(value, str) else value
                if not isinstance(chosen, list) or not chosen:
                    raise _Bad("choose one option or more")
                out.append([_pick(question, v) for v in cast(list[Any], chosen)])
            elif isinstance(value, list):
                raise _Bad("choose one option")
            else:
                out.append(_pick(question, value))
        except _Bad as bad:
            errors[name] = str(bad)
    if errors:
        first = next(iter(errors.items()))
        return _refuse(request, acc, f"question {int(first[0][1:]) + 1}: {first[1]}", errors)
    return data if out == given else {**data, "answers": out}


class _Bad(Exception):
    pass


def _pick(question: Question, value: object) -> str:
    """``value`` as an answer of ``question``: one of its options (matched without regard to
    case), or free text where it takes that.

    Raises:
        _Bad: neither.
    """
    if not isinstance(value, str) or not value.strip():
        raise _Bad("an answer is required" if not question.options else "choose an option")
    if question.options:
        chosen = _match(value, question.options, {})
        if chosen is not None:
            return chosen
        if not question.custom:
            raise _Bad(f"{_quoted(value)} is not one of the options {_listed(question.options)}")
    return value.strip()


def _picked(request: Request, acc: Accepts, question: Question, value: object, name: str) -> str:
    """`_pick`, refusing the reply (the problem shown at field ``name``) when it fails."""
    try:
        return _pick(question, value)
    except _Bad as bad:
        return _refuse(request, acc, str(bad), {name: str(bad)})


def _match(text: str, options: Sequence[str], names: Mapping[str, str]) -> str | None:
    wanted = text.strip().casefold()
    for option in options:
        if option.casefold() == wanted or (names.get(option, "").casefold() == wanted != ""):
            return option
    return None


def _quoted(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return json.dumps(text[:80] + ("…" if len(text) > 80 else ""), ensure_ascii=False)


def schema_errors(schema: Mapping[str, Any], value: Any) -> dict[str, str]:
    """``value`` checked against ``schema``: ``{property: message}`` (``""`` for the whole);
    a broken schema is one error saying so."""
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
