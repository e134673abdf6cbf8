"""The detail page of one request: what is asked, why, and the form that answers it.

Built from a `RequestView` (the halted checkpoint's request, call and context, or — once the
checkpoint is gone — what the store recorded). The form depends on the kind (see
docs/inbox.md); after an answer, the page follows the run from the store's record.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._edit_diff import Change, changes_of, path_text, value_text
from .._visible import visible
from ..intake import EDIT_KEY, Accepts
from ..stores.lookup import decision_of, note_of, run_text
from ..stores.requests import AnswerRecord
from ..suspension import Answer, Request, relay_calls_of
from .forms import InputField, answer_shape, input_fields, question_items
from .html import (
    Markup,
    age_text,
    attrs,
    el,
    esc,
    expiry_markup,
    href,
    iso,
    json_text,
    pretty_json,
    quote_id,
    void,
)

__all__ = ["RequestView", "decision_of", "detail_body", "edit_diff", "note_of", "resolved_text"]


@dataclass(frozen=True, slots=True)
class RequestView:
    """One request as the detail page shows it."""

    request: Request
    tool: str = ""
    arguments: str = "{}"
    digest: str = ""
    conversation_id: str | None = None
    created_at: float | None = None
    path: tuple[str, ...] = ()
    user_text: str = ""
    assistant_text: str = ""
    context_cut: bool = False
    """The context texts were cut when the store kept them (`toolnexus.stores.asked`)."""
    record: AnswerRecord | None = None
    expired: bool = False
    kept: bool = True
    """The call's arguments are known (a finished request saved before the store kept what
    it asked has none to show)."""
    schema: Mapping[str, Any] | None = None
    """The halted tool's input schema, when the checkpoint keeps it (for edited arguments)."""
    edit_schema: Any = None
    """What the checkpoint keeps to check edited arguments (a schema, ``True``, ``False``:
    none taken, ``None``: unknown) — see `toolnexus.intake.accepts`."""
    extra: Mapping[str, Any] = field(default_factory=lambda: {})

    @property
    def accepts(self) -> Accepts:
        """What answers the request: the page offers exactly that."""
        return answer_shape(self.request, tool=self.tool, edit_schema=self.edit_schema)


def resolved_text(record: AnswerRecord) -> str:
    """ "answered by ana at 2026-…" (or cancelled / expired)."""
    who = f" by {record.answered_by}" if record.answered_by else ""
    when = iso(record.answered_at)
    decision = decision_of(record)
    if decision == "expired":
        return f"expired at {when}"
    if decision == "cancelled":
        return f"cancelled{who} at {when}"
    return f"answered{who} at {when} ({decision})"


def _run_status(record: AnswerRecord) -> Markup:
    outcome = record.outcome or {}
    status = record.status
    text = run_text(record)
    final = ""
    if status in ("done", "expired") and isinstance(outcome.get("status"), str):
        body = outcome.get("text")
        if isinstance(body, str) and body:
            final = f'<pre id="final-text">{esc(body)}</pre>'
    refresh = status in ("answered", "claimed")
    return Markup(
        f'<section id="run-status"{attrs(data_status=status, data_follow=refresh or None)}>'
        f'<h2>Run</h2><p class="run-state">{esc(text)}</p>{final}</section>'
    )


def _csrf(csrf: str) -> Markup:
    return Markup(f'<input type="hidden" name="csrf"{attrs(value=csrf)}>')


def _err(errors: Mapping[str, str], name: str) -> Markup:
    if name not in errors:
        return Markup("")
    return Markup(
        f'<span class="field-error"{attrs(id=f"error-{name}")}>{esc(errors[name])}</span>'
    )


def _button(action: str, label: str, *, disabled: bool, cls: str = "") -> Markup:
    return Markup(
        f'<button type="submit" name="action"'
        f"{attrs(value=action, class_=cls or None, disabled=disabled)}>{esc(label)}</button>"
    )


def _value(values: Mapping[str, list[str]], name: str, default: str = "") -> str:
    got = values.get(name)
    return got[0] if got else default


def _approval_form(
    view: RequestView, values: Mapping[str, list[str]], errors: Mapping[str, str], off: bool
) -> Markup:
    edited = _value(values, "arguments", pretty_json(view.arguments))
    edit = Markup("")
    schema = Markup("")
    if view.schema:
        shown = json.dumps(view.schema, indent=2, ensure_ascii=False, sort_keys=True)
        schema = el(
            "details",
            el("summary", "The tool's input schema"),
            el("pre", shown, id="input-schema"),
        )
    if view.tool and view.accepts.editable:
        edit = Markup(
            '<fieldset id="edit"><legend>Approve with edited arguments</legend>'
            f'<textarea name="arguments" id="edit-arguments" rows="8"{attrs(disabled=off)}>'
            f"{json_text(edited)}</textarea>{_err(errors, 'arguments')}{schema}"
            f"{_button('approve_edited', 'Approve with edits', disabled=off)}</fieldset>"
        )
    return Markup(
        f"{_button('approve', 'Approve', disabled=off, cls='approve')}"
        '<fieldset id="decline"><legend>Decline</legend>'
        '<label for="decline-reason">Reason (optional)</label>'
        f'<input type="text" name="reason" id="decline-reason"'
        f"{attrs(value=_value(values, 'reason'), disabled=off)}>"
        f"{_button('decline', 'Decline', disabled=off, cls='decline')}</fieldset>{edit}"
    )


def _question_form(
    view: RequestView, values: Mapping[str, list[str]], errors: Mapping[str, str], off: bool
) -> Markup:
    parts: list[str] = []
    for item in question_items(view.request):
        chosen = values.get(item.name, [])
        legend = f"{item.header}: {item.text}" if item.header else item.text
        parts.append(f'<fieldset class="question"{attrs(id=f"question-{item.name}")}>')
        parts.append(f"<legend>{esc(legend)}</legend>")
        if item.options:
            kind = "checkbox" if item.multiple else "radio"
            for i, option in enumerate(item.options):
                box_id = f"{item.name}-{i}"
                parts.append(
                    el(
                        "label",
                        void(
                            "input",
                            type=kind,
                            name=item.name,
                            id=box_id,
                            value=option,
                            checked=option in chosen,
                            disabled=off,
                        ),
                        " ",
                        option,
                        for_=box_id,
                    )
                )
            if item.custom:
                parts.append(
                    f"<label{attrs(for_=f'{item.name}_other')}>Other</label>"
                    + void(
                        "input",
                        type="text",
                        name=f"{item.name}_other",
                        id=f"{item.name}_other",
                        value=_value(values, f"{item.name}_other"),
                        disabled=off,
                    )
                )
        else:
            parts.append(
                void(
                    "input",
                    type="text",
                    name=item.name,
                    id=item.name,
                    value=chosen[0] if chosen else "",
                    disabled=off,
                )
            )
        parts.append(f"{_err(errors, item.name)}</fieldset>")
    parts.append(_button("submit", "Submit answers", disabled=off, cls="approve"))
    parts.append(_button("decline", "Decline", disabled=off, cls="decline"))
    return Markup("".join(parts))


def _text_question_form(
    view: RequestView, values: Mapping[str, list[str]], errors: Mapping[str, str], off: bool
) -> Markup:
    """A plain question: one of its options, or free text (what its `Accepts` says)."""
    shape = view.accepts
    chosen = _value(values, "text")
    parts: list[str] = ['<fieldset class="question" id="question-text">']
    parts.append(f"<legend>{esc(view.request.prompt)}</legend>")
    for i, option in enumerate(shape.options):
        box_id = f"text-{i}"
        box = void(
            "input",
            type="radio",
            name="text",
            id=box_id,
            value=option,
            checked=option == chosen,
            disabled=off,
        )
        parts.append(el("label", box, " ", option, for_=box_id))
    if shape.custom or not shape.options:
        label = "Other" if shape.options else "Answer"
        parts.append(
            f"<label{attrs(for_='text-free')}>{label}</label>"
            + void(
                "input",
                type="text",
                name="text" if not shape.options else "text_other",
                id="text-free",
                value=chosen if not shape.options else _value(values, "text_other"),
                disabled=off,
            )
        )
    parts.append(f"{_err(errors, 'text')}{_err(errors, '')}</fieldset>")
    parts.append(_button("submit", "Submit answer", disabled=off, cls="approve"))
    parts.append(_button("decline", "Decline", disabled=off, cls="decline"))
    return Markup("".join(parts))


def _field_input(f: InputField, values: Mapping[str, list[str]], off: bool) -> Markup:
    name = f"field.{f.name}"
    fid = f"field-{f.name}"
    given = values.get(name)
    if f.enum is not None:
        current = given[0] if given else (json.dumps(f.default) if f.default is not None else "")
        options = ['<option value="">–</option>'] + [
            el("option", o, value=json.dumps(o), selected=json.dumps(o) == current) for o in f.enum
        ]
        return Markup(
            f"<select{attrs(name=name, id=fid, required=f.required, disabled=off)}>"
            f"{''.join(options)}</select>"
        )
    if f.type == "boolean":
        on = bool(given and given[0] in ("on", "true", "1")) if values else f.default is True
        return Markup(
            f"<input{attrs(type='checkbox', name=name, id=fid, checked=on, disabled=off)}>"
        )
    default = "" if f.default is None else str(f.default)
    current = given[0] if given else default
    kind = {"integer": "number", "number": "number"}.get(f.type, "text")
    step = "1" if f.type == "integer" else ("any" if f.type == "number" else None)
    return Markup(
        void(
            "input",
            type=kind,
            step=step,
            name=name,
            id=fid,
            value=current,
            required=f.required,
            disabled=off,
        )
    )


def _input_form(
    view: RequestView, values: Mapping[str, list[str]], errors: Mapping[str, str], off: bool
) -> Markup:
    parts: list[str] = []
    for f in input_fields(view.request):
        star = " *" if f.required else ""
        hint = f'<small class="hint">{esc(f.description)}</small>' if f.description else ""
        parts.append(
            f'<div class="field"><label{attrs(for_=f"field-{f.name}")}>{esc(f.title)}{star}</label>'
            f"{_field_input(f, values, off)}{hint}{_err(errors, f.name)}</div>"
        )
    parts.append(_button("submit", "Submit", disabled=off, cls="approve"))
    parts.append(_button("decline", "Decline", disabled=off, cls="decline"))
    return Markup("".join(parts))


def _auth_form(off: bool) -> Markup:
    return Markup(
        "<p>Open the link, finish signing in there, then come back.</p>"
        f"{_button('done', 'Done', disabled=off, cls='approve')}"
        f"{_button('decline', 'Cancel sign-in', disabled=off, cls='decline')}"
    )


def _relay_form(view: RequestView, values: Mapping[str, list[str]], off: bool) -> Markup:
    parts: list[str] = []
    for call in relay_calls_of(view.request):
        parts.append(
            f'<fieldset class="relay-call"{attrs(data_call_id=call.id)}>'
            f"<legend>{esc(call.name)} <code>{esc(call.id)}</code></legend>"
            f"<pre>{esc(pretty_json(call.arguments))}</pre>"
            f"<label{attrs(for_=f'output-{call.id}')}>Output</label>"
            + el(
                "textarea",
                _value(values, f"output.{call.id}"),
                name=f"output.{call.id}",
                id=f"output-{call.id}",
                rows=4,
                disabled=off,
            )
            + el(
                "label",
                void("input", type="checkbox", name=f"is_error.{call.id}", disabled=off),
                " is an error",
            )
            + "</fieldset>"
        )
    parts.append(_button("submit", "Submit outputs", disabled=off, cls="approve"))
    parts.append(_button("decline", "Decline", disabled=off, cls="decline"))
    return Markup("".join(parts))


def _answer_form(
    view: RequestView,
    base: str,
    csrf: str,
    values: Mapping[str, list[str]],
    errors: Mapping[str, str],
    allowed: bool,
) -> Markup:
    off = view.expired or not allowed
    kind = view.request.kind
    shape = view.accepts.shape  # the form offers exactly what the request accepts
    if shape == "questions":
        inner = _question_form(view, values, errors, off)
    elif shape == "question":
        inner = _text_question_form(view, values, errors, off)
    elif shape == "input":
        inner = _input_form(view, values, errors, off)
    elif shape == "authorization":
        inner = _auth_form(off)
    elif shape == "relay":
        inner = _relay_form(view, values, off)
    else:
        inner = _approval_form(view, values, errors, off)
    rid = quote_id(view.request.id)
    note = ""
    if view.expired:
        note = el(
            "p",
            "This request has expired: it can no longer be answered.",
            class_="notice",
            id="expired-notice",
        )
    elif not allowed:
        note = f'<p class="notice" id="not-allowed">You may not answer {esc(kind)} requests.</p>'
    return Markup(
        f'{note}<form method="post" id="answer-form"'
        f"{attrs(action=href(base, f'requests/{rid}/answer'))}>"
        f"{_csrf(csrf)}{_err(errors, '')}{inner}</form>{_cancel_form(view, base, csrf, off)}"
    )


def _cancel_form(view: RequestView, base: str, csrf: str, off: bool) -> Markup:
    rid = quote_id(view.request.id)
    return Markup(
        f'<form method="post" id="cancel-form"{attrs(action=href(base, f"requests/{rid}/cancel"))}>'
        f'{_csrf(csrf)}<label for="cancel-reason">Reason (optional)</label>'
        f'<input type="text" name="reason" id="cancel-reason"{attrs(disabled=off)}>'
        f"{_button('cancel', 'Cancel run', disabled=off, cls='danger')}</form>"
    )


def edit_diff(original: Mapping[str, Any], answer: Answer) -> list[Change]:
    """What the approved arguments changed in the model's (`toolnexus._edit_diff`)."""
    edited = (answer.data or {}).get(EDIT_KEY)
    return changes_of(str(original.get("arguments", "")), edited)


def _diff_table(found: Sequence[Change]) -> Markup:
    rows: list[str] = []
    for change in found:
        where = path_text(change.path)
        before = value_text(change.before)
        after = value_text(change.after)
        rows.append(
            el(
                "tr",
                el("th", where, scope="row"),
                el("td", el("del", before) if before else "–", class_="before"),
                el("td", el("ins", after) if after else "–", class_="after"),
                data_path=visible(where),  # (an attribute is not marked: it is shown nowhere)
                data_change=change.kind,
            )
        )
    if not rows:
        rows.append('<tr><td colspan="3">No value changed (the same call).</td></tr>')
    return Markup(
        '<table id="edit-diff" class="diff"><thead><tr><th scope="col">Argument</th>'
        '<th scope="col">The model\'s</th><th scope="col">Approved</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _edit_audit(record: AnswerRecord) -> Markup:
    """What an edited approval replaced: each changed value beside the model's, both calls
    whole, and their digests."""
    original = record.original or {}
    edited = (record.answer.data or {}).get(EDIT_KEY)
    approved = json.dumps(edited, indent=2, ensure_ascii=False, sort_keys=True)
    return Markup(
        '<section id="edit-audit"><h2>Approved with edited arguments</h2>'
        f"{_diff_table(edit_diff(original, record.answer))}"
        "<details><summary>Both calls, whole</summary>"
        "<p>The model's arguments, as it asked for the call:</p>"
        f'<pre id="original-arguments">{esc(pretty_json(str(original.get("arguments", ""))))}</pre>'
        f'<p>The approved arguments:</p><pre id="approved-arguments">{esc(approved)}</pre>'
        "</details>"
        f'<p>Digests: the model\'s call <code id="original-digest">'
        f"{esc(original.get('digest', ''))}</code>; "
        f'the approved call <code id="approved-digest">{esc(record.digest)}</code></p></section>'
    )


def _context(view: RequestView) -> Markup:
    if not (view.user_text or view.assistant_text):
        return Markup("")
    parts = ['<details id="context"><summary>Conversation context</summary>']
    if view.user_text:
        parts.append(f'<h3>User</h3><pre class="user-message">{esc(view.user_text)}</pre>')
    if view.assistant_text:
        parts.append(
            f'<h3>Assistant</h3><pre class="assistant-message">{esc(view.assistant_text)}</pre>'
        )
    if view.context_cut:
        parts.append('<p class="hint" id="context-cut">Long messages were kept cut.</p>')
    parts.append("</details>")
    return Markup("".join(parts))


def detail_body(
    view: RequestView,
    *,
    base: str,
    csrf: str,
    allowed: bool,
    values: Mapping[str, list[str]] | None = None,
    errors: Mapping[str, str] | None = None,
    message: str = "",
) -> Markup:
    """The detail page's ``<main>``."""
    req = view.request
    record = view.record
    status = record.status if record is not None else ("expired" if view.expired else "pending")
    rows: list[str] = [
        f'<dt>Kind</dt><dd class="kind">{esc(req.kind)}</dd>',
        f'<dt>Tool</dt><dd id="tool">{esc(view.tool or "–")}</dd>',
        f'<dt>Conversation</dt><dd id="conversation">{esc(view.conversation_id or "–")}</dd>',
    ]
    if view.path:
        rows.append(
            f'<dt>Agent</dt><dd><span id="agent-path">{esc(" / ".join(view.path))}</span></dd>'
        )
    if view.created_at is not None:
        rows.append(
            f"<dt>Asked</dt><dd><time{attrs(datetime=iso(view.created_at))}>"
            f"{esc(age_text(time.time() - view.created_at))} ago</time></dd>"
        )
    rows.append(f"<dt>Expires</dt><dd>{expiry_markup(req.expiresAt)}</dd>")
    parts: list[str] = [
        f"<main{attrs(id='request', data_request_id=req.id, data_kind=req.kind)}"
        f"{attrs(data_status=status)}>",
        f'<dl class="facts">{"".join(rows)}</dl>',
        f'<section id="prompt"><h2>Prompt</h2><p class="prompt">{esc(req.prompt)}</p></section>',
    ]
    if req.url:
        parts.append(
            el(
                "p",
                el(
                    "a",
                    req.url,
                    id="auth-url",
                    rel="noopener noreferrer",
                    target="_blank",
                    href=_safe_url(req.url),
                ),
            )
        )
    if view.tool and not view.kept:
        parts.append(
            '<section id="call"><h2>Arguments</h2><p class="notice" id="arguments-not-kept">'
            "The arguments of this call were not kept: it was saved by an older toolnexus "
            "and its run has finished. The digest of what was approved: "
            f'<code id="digest">{esc(view.digest)}</code></p></section>'
        )
    elif view.tool:
        parts.append(
            '<section id="call"><h2>Arguments</h2>'
            f'<pre id="arguments">{esc(pretty_json(view.arguments))}</pre>'
            f'<p>Digest (what the audit records): <code id="digest">{esc(view.digest)}</code></p>'
            "</section>"
        )
    parts.append(_context(view))
    if message:
        parts.append(f'<p class="error" id="error" role="alert">{esc(message)}</p>')
    if record is not None:
        parts.append(f'<p id="resolved">{esc(resolved_text(record))}</p>')
        note = note_of(record)
        if note:
            parts.append(f'<p id="resolved-reason">Reason: {esc(note)}</p>')
        if record.original is not None:
            parts.append(_edit_audit(record))
        parts.append(_run_status(record))
        if record.problem:
            parts.append(
                el("p", "Needs an operator: ", record.problem, id="problem", class_="notice")
            )
            if record.status not in ("done", "expired", "cancelled") and allowed:
                parts.append(_cancel_form(view, base, csrf, off=False))
    else:
        parts.append(_answer_form(view, base, csrf, values or {}, errors or {}, allowed))
    parts.append("</main>")
    return Markup("".join(parts))


def _safe_url(url: str) -> str:
    """Only http(s) links are made clickable (no ``javascript:``)."""
    lowered = url.strip().lower()
    return url if lowered.startswith(("https://", "http://")) else "#"
