"""The list and history pages (the detail page is `toolnexus.inbox.detail`, the sign-in page
`toolnexus.inbox.signin`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

from .._edit_diff import change_text, path_text
from .._visible import visible
from ..stores.checks import is_past
from ..stores.inbox_index import HISTORY_STATUSES, HistoryEntry
from ..stores.requests import PendingEntry
from .detail import decision_of, note_of
from .exports import history_edits, record_of
from .html import (
    Markup,
    age_text,
    attrs,
    el,
    esc,
    expiry_markup,
    href,
    iso,
    quote_id,
    truncate,
    void,
)

__all__ = ["ListRow", "history_body", "list_body", "unreadable_body"]

PROMPT_LIMIT = 200
ARGS_LIMIT = 160
UNREADABLE_NOTE = "Its stored state cannot be read: open it to cancel its run."


@dataclass(frozen=True, slots=True)
class ListRow:
    """One pending request as the list shows it."""

    entry: PendingEntry
    arguments: str = ""
    path: tuple[str, ...] = ()
    unreadable: bool = False
    """Its stored checkpoint cannot be read (it can only be cancelled)."""
    quick: bool = False
    """Its answer needs no form: it may be approved (or declined) from the list."""


def history_decision(h: HistoryEntry) -> str:
    """The decision of a history row (see `toolnexus.inbox.detail.decision_of`)."""
    return decision_of(record_of(h))


def history_reason(h: HistoryEntry) -> str:
    """The reason given with a history row's decline or cancel."""
    return note_of(record_of(h))


def _edits_cell(h: HistoryEntry) -> Markup:
    """An edited approval's changes, one per line with both values (``amount: 300 → 45``)."""
    found = history_edits(h)
    if not found:
        return el("td", "", class_="edits")
    items = [
        el("li", change_text(c), data_path=visible(path_text(c.path)), data_change=c.kind)
        for c in found
    ]
    return el("td", el("ul", Markup("".join(items))), class_="edits")


def _labelled(label: str, target: str, control: Markup) -> str:
    return el("label", label, for_=target) + control


def _text_input(name: str, fid: str, value: str, kind: str = "text", hint: str = "") -> Markup:
    return void("input", type=kind, name=name, id=fid, value=value, placeholder=hint or None)


def _filters(params: Mapping[str, str], base: str, kinds: Sequence[str]) -> Markup:
    options = ['<option value="">any</option>'] + [
        el("option", k, value=k, selected=params.get("kind") == k) for k in kinds
    ]
    controls = [
        _labelled(
            "Search", "filter-q", _text_input("q", "filter-q", params.get("q", ""), "search")
        ),
        _labelled(
            "Kind",
            "filter-kind",
            el("select", Markup("".join(options)), name="kind", id="filter-kind"),
        ),
        _labelled(
            "Tool", "filter-tool", _text_input("tool", "filter-tool", params.get("tool", ""))
        ),
        _labelled(
            "Conversation",
            "filter-conversation",
            _text_input("conversation", "filter-conversation", params.get("conversation", "")),
        ),
        _labelled(
            "Older than",
            "filter-age",
            _text_input("age", "filter-age", params.get("age", ""), hint="15m"),
        ),
        '<button type="submit">Filter</button>',
    ]
    return el("form", Markup("".join(controls)), id="filters", method="get", action=href(base))


def _paging(base: str, path: str, params: Mapping[str, str], page: int, more: bool) -> Markup:
    links: list[str] = []
    if page > 1:
        back = href(base, path, **{**params, "page": page - 1})
        links.append(el("a", "Previous", rel="prev", href=back))
    links.append(f'<span id="page">page {page}</span>')
    if more:
        ahead = href(base, path, **{**params, "page": page + 1})
        links.append(el("a", "Next", rel="next", href=ahead))
    return Markup(f'<nav class="paging">{" ".join(links)}</nav>')


def _kind_tabs(base: str, counts: Mapping[str, int], params: Mapping[str, str]) -> Markup:
    rest = {k: v for k, v in params.items() if k not in ("kind", "page")}
    every = el("span", sum(counts.values()), class_="count")
    tabs = [el("a", "all ", every, href=href(base, **rest), data_kind="")]
    for k in sorted(counts):
        current = params.get("kind") == k
        tabs.append(
            el(
                "a",
                f"{k} ",
                el("span", counts[k], class_="count"),
                href=href(base, **{**rest, "kind": k}),
                data_kind=k,
                aria_current="page" if current else None,
            )
        )
    return el("nav", Markup(" ".join(tabs)), id="kinds")


@dataclass(frozen=True, slots=True)
class _Answering:
    """What the list's answer forms need: where they post, the CSRF token, the list's own
    query (to come back to), and which kinds the person may answer."""

    action: str
    csrf: str
    back: str
    may_answer: Callable[[str], bool]

    def hidden(self) -> Markup:
        return Markup(
            void("input", type="hidden", name="csrf", value=self.csrf)
            + void("input", type="hidden", name="back", value=self.back)
        )


def _quick(row: ListRow, answering: _Answering, now: float) -> bool:
    """Whether ``row`` is answered from the list: its answer needs no form, it waits for a
    person (not flagged, not expired, readable), and this person may answer its kind."""
    e = row.entry
    return (
        row.quick
        and not row.unreadable
        and not e.problem
        and e.status == "pending"
        and answering.may_answer(e.kind)
        and not is_past(e.expires_at, now)
    )


def _row_answer(row: ListRow, answering: _Answering, now: float) -> Markup:
    """The one-click answer of a row whose answer needs no form (its page does the rest)."""
    if not _quick(row, answering, now):
        return el("td", "", class_="answer")
    e = row.entry
    # (the words of the request's own page: a sign-in is done, or cancelled)
    yes, no = ("Done", "Cancel sign-in") if e.kind == "authorization" else ("Approve", "Decline")
    return el(
        "td",
        el(
            "form",
            answering.hidden(),
            void("input", type="hidden", name="id", value=e.request_id),
            _submit(yes, "approve", "approve"),
            _submit(no, "decline", "decline"),
            method="post",
            action=answering.action,
            class_="row-answer",
        ),
        class_="answer",
    )


def _submit(label: str, action: str, cls: str) -> Markup:
    return el("button", label, type="submit", name="action", value=action, class_=cls)


def _list_row(row: ListRow, base: str, now: float, answering: _Answering | None) -> str:
    e = row.entry
    prompt, _ = truncate(e.prompt, PROMPT_LIMIT)
    args, cut = truncate(row.arguments, ARGS_LIMIT)
    link = href(base, f"requests/{quote_id(e.request_id)}")
    flag = el("p", "Needs an operator: ", e.problem, class_="problem") if e.problem else Markup("")
    if row.unreadable:
        flag = Markup(flag + el("p", UNREADABLE_NOTE, class_="problem unreadable"))
    cells: list[str] = []
    if answering is not None:
        # (read out as text: its invisible characters marked, as on the page)
        label = visible(truncate(e.prompt or e.request_id, 60)[0])
        box = void(
            "input",
            type="checkbox",
            name="id",
            value=e.request_id,
            form="bulk",
            class_="select",
            aria_label=f"Select: {label}",
        )
        cells.append(el("td", box, class_="select"))
    cells += [
        el("td", e.kind, class_="kind"),
        el(
            "td",
            el("a", prompt or e.request_id, class_="request-link", href=link),
            flag,
            class_="prompt",
        ),
        el("td", e.tool, class_="tool"),
        el(
            "td",
            el("code", args, class_="arguments truncated" if cut else "arguments"),
            class_="args",
        ),
        el("td", e.conversation_id or "–", class_="conversation"),
        el("td", " / ".join(row.path) or "–", class_="agent-path"),
        el(
            "td",
            el("time", age_text(now - e.created_at), datetime=iso(e.created_at)),
            class_="age",
        ),
        el("td", expiry_markup(e.expires_at, now), class_="expiry"),
    ]
    if answering is not None:
        cells.append(_row_answer(row, answering, now))
    return el(
        "tr",
        Markup("".join(cells)),
        data_request_id=e.request_id,
        data_kind=e.kind,
        data_status=e.status,
        data_quick="true" if answering is not None and _quick(row, answering, now) else None,
        data_unreadable="true" if row.unreadable else None,
        class_="flagged" if e.problem or row.unreadable else None,
    )


def _bulk_form(answering: _Answering) -> Markup:
    """The selection's actions (the rows' checkboxes belong to this form: ``form="bulk"``)."""
    return el(
        "form",
        answering.hidden(),
        el("span", "", id="selected", aria_live="polite"),
        _submit("Approve selected", "approve", "approve"),
        el("label", "Reason", for_="bulk-reason", class_="reason-label"),
        void(
            "input",
            type="text",
            name="reason",
            id="bulk-reason",
            placeholder="why (optional, for a decline)",
        ),
        _submit("Decline selected", "decline", "decline"),
        id="bulk",
        method="post",
        action=answering.action,
        class_="bulk",
    )


_HEAD = (
    "<th>Kind</th><th>Prompt</th><th>Tool</th><th>Arguments</th><th>Conversation</th>"
    "<th>Agent</th><th>Age</th><th>Expires</th>"
)


def list_body(
    rows: Sequence[ListRow],
    *,
    base: str,
    counts: Mapping[str, int],
    params: Mapping[str, str],
    page: int,
    more: bool,
    total: int,
    csrf: str = "",
    may_answer: Callable[[str], bool] | None = None,
    notice: Markup | None = None,
) -> Markup:
    """The list page's ``<main>``: the kinds with their counts, the filters, the table — and,
    for a person (``may_answer``), the forms that answer from it (one row, or a selection)."""
    now = time.time()
    query = urlencode({k: v for k, v in params.items() if v})
    answering = None
    if may_answer is not None:
        answering = _Answering(href(base, "bulk"), csrf, query, may_answer)
    body: list[str] = [
        # (the live script reads the counts of the list's own filters: ``data-query``)
        f"<main{attrs(id='pending', data_query=query)}>",
        notice or "",
        _kind_tabs(base, counts, params),
        _filters(params, base, sorted(counts)),
        f'<p class="waiting">Waiting: <span id="total">{total}</span></p>',
        '<p id="live" hidden>New requests arrived: <a href="">reload</a></p>',
    ]
    if answering is not None and rows:
        body.append(_bulk_form(answering))
    if not rows:
        body.append('<p id="empty">Nothing is waiting.</p>')
    head = _HEAD
    if answering is not None:
        select_all = void(
            "input", type="checkbox", id="select-all", aria_label="Select every row", hidden=True
        )
        head = f'<th class="select">{select_all}</th>{head}<th>Answer</th>'
    body.append(f'<table id="requests"><thead><tr>{head}</tr></thead><tbody>')
    body += [_list_row(row, base, now, answering) for row in rows]
    body.append("</tbody></table>")
    body.append(_paging(base, "", params, page, more))
    body.append("</main>")
    return Markup("".join(body))


def _history_filters(params: Mapping[str, str], base: str) -> Markup:
    statuses = ['<option value="">any</option>'] + [
        el("option", s, value=s, selected=params.get("status") == s)
        for s in sorted(HISTORY_STATUSES)
    ]
    status = el("select", Markup("".join(statuses)), name="status", id="filter-status")
    controls = [
        _labelled("Person", "filter-by", _text_input("by", "filter-by", params.get("by", ""))),
        _labelled("Status", "filter-status", status),
        _labelled(
            "Kind", "filter-hkind", _text_input("kind", "filter-hkind", params.get("kind", ""))
        ),
        _labelled(
            "Search", "filter-hq", _text_input("q", "filter-hq", params.get("q", ""), "search")
        ),
        '<button type="submit">Filter</button>',
    ]
    form = el(
        "form",
        Markup("".join(controls)),
        id="history-filters",
        method="get",
        action=href(base, "history"),
    )
    exports = {k: v for k, v in params.items() if k != "page"}
    links = el(
        "p",
        "Export: ",
        el("a", "JSON lines", id="export-jsonl", href=href(base, "history.jsonl", **exports)),
        " ",
        el("a", "CSV", id="export-csv", href=href(base, "history.csv", **exports)),
        class_="export",
    )
    return Markup(form + links)


def _history_row(h: HistoryEntry, base: str) -> str:
    prompt, _ = truncate(h.prompt, PROMPT_LIMIT)
    link = href(base, f"requests/{quote_id(h.request_id)}")
    cells = [
        el("td", el("time", iso(h.answered_at), datetime=iso(h.answered_at))),
        el("td", h.answered_by or "–", class_="answered-by"),
        el("td", history_decision(h), class_="decision"),
        el("td", history_reason(h), class_="reason"),
        _edits_cell(h),
        el("td", h.kind, class_="kind"),
        el("td", h.tool, class_="tool"),
        el("td", el("a", prompt or h.request_id, href=link), class_="prompt"),
        el("td", h.status, class_="status"),
        el("td", el("code", h.digest[:12], class_="digest", title=h.digest)),
    ]
    return el("tr", Markup("".join(cells)), data_request_id=h.request_id, data_status=h.status)


def history_body(
    entries: Sequence[HistoryEntry],
    *,
    base: str,
    params: Mapping[str, str],
    page: int,
    more: bool,
) -> Markup:
    """The history page's ``<main>``: filters, the export links, the table."""
    body: list[str] = [
        '<main id="audit">',
        _history_filters(params, base),
        '<table id="history"><thead><tr><th>When</th><th>Who</th><th>Decision</th>'
        "<th>Reason</th><th>Edits</th><th>Kind</th><th>Tool</th><th>Prompt</th><th>Status</th>"
        "<th>Digest</th>"
        "</tr></thead><tbody>",
    ]
    body += [_history_row(h, base) for h in entries]
    body.append("</tbody></table>")
    body.append(_paging(base, "history", params, page, more))
    body.append("</main>")
    return Markup("".join(body))


def unreadable_body(rid: str, message: str, *, base: str, csrf: str, allowed: bool) -> Markup:
    """The page of a waiting request whose checkpoint cannot be read: why, and the form that
    cancels its run (the one thing left to do with it) when ``allowed``."""
    action = href(base, f"requests/{quote_id(rid)}/cancel")
    if allowed:
        form = (
            f'<form method="post" id="cancel-form"{attrs(action=action)}>'
            f'<input type="hidden" name="csrf"{attrs(value=csrf)}>'
            '<label for="cancel-reason">Reason (optional)</label>'
            '<input type="text" name="reason" id="cancel-reason">'
            '<button type="submit" name="action" value="cancel" class="danger">Cancel run'
            "</button></form>"
        )
    else:
        form = (
            '<p class="notice" id="not-allowed">Only a user who may answer every kind may '
            "cancel a request whose kind cannot be read.</p>"
        )
    return Markup(
        f'<main id="request"{attrs(data_request_id=rid, data_status="unreadable")}>'
        f'<p class="error" id="error">{esc(message)}</p>{form}</main>'
    )
