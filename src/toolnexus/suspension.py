"""The suspension primitive's data: `Request`, `Answer`, their checks and the relay helpers.

Any tool can pause a run by returning ``pending(Request)`` (`toolnexus.suspend`): an ordinary
`ToolResult` whose ``metadata["pending"]`` carries the `Request`. The host resolves it to an
`Answer`, inline through ``wait_for`` or later through ``run_with_answer`` / ``ask_with_answer``.
This module holds the data and what reads or builds it, below the tool types
(`toolnexus._types`), which carry a `Request` and an `Answer`.

Both types are plain data. ``Request(**wire)`` / ``Answer(**wire)`` rebuild them from their
wire dicts and ``.to_dict()`` gives the wire dict back, so they round-trip through JSON::

    req = Request(**json.loads(blob))
    json.dumps(req.to_dict())
"""

from __future__ import annotations

import itertools
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeAlias

from ._compat import UsageTypeError
from .errors import AnswerMismatch, InvalidAnswer, UsageError

__all__ = [
    "NOTE_KEY",
    "RELAY_CALLS_KEY",
    "RELAY_IS_ERROR_KEY",
    "RELAY_KIND",
    "RELAY_OUTPUT_KEY",
    "RELAY_RESULTS_KEY",
    "Answer",
    "RelayCall",
    "RelayResult",
    "Request",
    "WaitFor",
    "answer_declined",
    "answer_note",
    "answer_output",
    "answer_problem",
    "cancelled_answer",
    "check_answer",
    "is_expired",
    "is_relay_request",
    "new_request_id",
    "relay_answer",
    "relay_calls_of",
    "with_note",
]

RELAY_KIND = "tool_call"
RELAY_CALLS_KEY = "calls"
RELAY_RESULTS_KEY = "results"
RELAY_OUTPUT_KEY = "output"
RELAY_IS_ERROR_KEY = "isError"

_seq = itertools.count(1)


def new_request_id(prefix: str = "pnd") -> str:
    """A globally unique request id, ``<prefix>-<ms hex>-<seq>-<random hex>``.

    Ids key the shared run store, so two processes halting in the same millisecond must never
    collide: the random part makes that vanishingly unlikely.
    """
    return f"{prefix}-{int(time.time() * 1000):x}-{next(_seq)}-{secrets.token_hex(4)}"


@dataclass(frozen=True, slots=True)
class Request:
    """What a suspended tool needs from a human (or another system).

    The field names are the wire keys, ``expiresAt`` included (camelCase on purpose).
    ``kind`` is open: ``approval``, ``authorization``, ``input``, ``question``,
    ``tool_call``, … ``expiresAt`` is an RFC 3339 timestamp after which the request is stale.
    """

    id: str
    kind: str
    prompt: str
    url: str | None = None
    data: dict[str, Any] | None = None
    expiresAt: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The wire dict, with ``None`` fields omitted."""
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "prompt": self.prompt}
        if self.url is not None:
            out["url"] = self.url
        if self.data is not None:
            out["data"] = self.data
        if self.expiresAt is not None:
            out["expiresAt"] = self.expiresAt
        return out

    @classmethod
    def from_dict(cls, wire: Mapping[str, Any]) -> Request:
        """Rebuild a Request from its wire dict; unknown keys are a `ValueError`."""
        return cls(**_checked(wire, _REQUEST_KEYS, _REQUEST_REQUIRED, "Request"))

    @property
    def expires_at(self) -> datetime | None:
        """``expiresAt`` parsed to an aware datetime (``None`` when absent)."""
        return parse_timestamp(self.expiresAt) if self.expiresAt else None


@dataclass(frozen=True, slots=True)
class Answer:
    """The resolution of a `Request`: ``ok`` decides, ``reason`` is advisory.

    ``id`` must echo the Request's id. ``reason`` is meaningful only when ``ok`` is false:
    ``declined`` | ``cancelled`` | ``expired``.
    """

    id: str
    ok: bool
    data: dict[str, Any] | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The wire dict, with ``None`` fields omitted."""
        out: dict[str, Any] = {"id": self.id, "ok": self.ok}
        if self.data is not None:
            out["data"] = self.data
        if self.reason is not None:
            out["reason"] = self.reason
        return out

    @classmethod
    def from_dict(cls, wire: Mapping[str, Any]) -> Answer:
        """Rebuild an Answer from its wire dict; unknown keys are a `ValueError`."""
        fields = _checked(wire, _ANSWER_KEYS, _ANSWER_REQUIRED, "Answer")
        if not isinstance(fields["ok"], bool):
            raise ValueError("Answer.ok must be a boolean")
        return cls(**fields)


def expired_decline(request_id: str) -> Answer:
    """The answer a request past its ``expiresAt`` is resolved with — the one builder of it.

    ``Answer(id=request_id, ok=False, reason="expired")``: the tool sees a decline, the store
    records it (answered by ``"toolnexus:expired"``).
    """
    return Answer(id=request_id, ok=False, reason="expired")


def cancelled_answer(request_id: str, note: str | None = None) -> Answer:
    """The answer a request is withdrawn with — nobody will answer it: an operator cancelled
    it, the asker went away, a host callback failed — the one builder of it.

    ``Answer(id=request_id, ok=False, reason="cancelled")``, ``data.note`` saying why when
    given: the tool sees a decline (a store records it with the cancel, T11).
    """
    return Answer(
        id=request_id, ok=False, reason="cancelled", data={"note": note} if note else None
    )


NOTE_KEY = "note"
"""The key of ``Answer.data`` that holds why a request was declined (or an approver's note)."""


def answer_note(answer: Answer) -> str | None:
    """The human's words in ``answer`` (``data.note``: why they declined, or a note with an
    approval), stripped, or ``None`` when there are none."""
    note = answer.data.get(NOTE_KEY) if answer.data else None
    return note.strip() or None if isinstance(note, str) else None


def with_note(text: str, answer: Answer) -> str:
    """A tool result's text with the human's words after it, so the model hears them.

    The documented shape (docs/suspension.md, "What the model hears"): a decline reads
    ``declined/expired: <prompt>`` and then ``\nreason: <note>``; an approved call's result
    reads as the tool returned it and then ``\napprover's note: <note>``. Without a note the
    text is unchanged (the CONTRACT's byte-exact strings)."""
    note = answer_note(answer)
    if note is None:
        return text
    label = "approver's note" if answer.ok else "reason"
    return f"{text}\n{label}: {note}"


def answer_problem(answer: Answer) -> str:
    """What is wrong with an `Answer`'s field types, or ``""`` when nothing is.

    The one rule for an `Answer` object and its wire dict alike: ``id`` a non-empty string,
    ``ok`` a real ``bool`` (not ``"false"``, not ``1``), ``data`` an object or ``None``,
    ``reason`` a string or ``None``.
    """
    fields: Any = answer
    if not isinstance(fields.id, str) or not fields.id:
        return f"Answer.id must be a non-empty string, got {fields.id!r}"
    if not isinstance(fields.ok, bool):
        return f"Answer.ok must be a boolean (True or False), got {fields.ok!r}"
    if fields.data is not None and not isinstance(fields.data, dict):
        return f"Answer.data must be an object (dict) or None, got {type(fields.data).__name__}"
    if fields.reason is not None and not isinstance(fields.reason, str):
        return f"Answer.reason must be a string or None, got {type(fields.reason).__name__}"
    return ""


def check_answer(value: object, request_id: str | None = None) -> Answer:
    """``value`` as a well-typed `Answer`: an `Answer` or its wire dict, checked alike.

    ``id`` a non-empty string (echoing ``request_id`` when given), ``ok`` a real ``bool``,
    ``data`` an object or ``None``, ``reason`` a string or ``None``.

    Raises:
        InvalidAnswer: a field has the wrong type (``ok="false"``, ``ok=1``, ``data="x"``)
            or the dict has unknown or missing keys (a `UsageError` and a `ResumeError`).
        AnswerMismatch: the id does not echo ``request_id``.
    """
    if isinstance(value, Answer):
        answer = value
    elif isinstance(value, Mapping):
        try:
            answer = Answer.from_dict(value)  # pyright: ignore[reportUnknownArgumentType]
        except (TypeError, ValueError) as exc:
            raise InvalidAnswer(f"toolnexus: the answer is malformed: {exc}") from exc
    else:
        raise InvalidAnswer(
            f"toolnexus: the answer must be an Answer or its wire dict, got {type(value).__name__}"
        )
    problem = answer_problem(answer)
    if problem:
        raise InvalidAnswer(f"toolnexus: the answer is malformed: {problem}")
    if request_id is not None and answer.id != request_id:
        raise AnswerMismatch(
            f'toolnexus: answer id "{answer.id}" does not echo the request id "{request_id}"'
        )
    return answer


_REQUEST_KEYS = frozenset({"id", "kind", "prompt", "url", "data", "expiresAt"})
_ANSWER_KEYS = frozenset({"id", "ok", "data", "reason"})
_REQUEST_REQUIRED = frozenset({"id", "kind", "prompt"})
_ANSWER_REQUIRED = frozenset({"id", "ok"})


def _checked(
    wire: Mapping[str, Any], allowed: frozenset[str], required: frozenset[str], what: str
) -> dict[str, Any]:
    if not isinstance(wire, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"{what} must be a JSON object, got {type(wire).__name__}")
    # (Set comparisons on the key view first: the names are sorted only to report a fault.)
    if not wire.keys() <= allowed:
        unknown = sorted(set(wire) - allowed)
        raise ValueError(f"{what} has unknown keys: {', '.join(unknown)}")
    if not wire.keys() >= required:
        missing = [k for k in sorted(required) if k not in wire]
        raise ValueError(f"{what} is missing required keys: {', '.join(missing)}")
    if not isinstance(wire["id"], str) or not wire["id"]:
        raise ValueError(f"{what}.id must be a non-empty string")
    data = wire.get("data")
    if data is not None and not isinstance(data, dict):
        raise ValueError(f"{what}.data must be an object")
    return dict(wire)


WaitFor: TypeAlias = Callable[[Request], Awaitable[Answer] | Answer]
"""The host's slot that resolves a Request inline (sync or async)."""


def parse_timestamp(value: str) -> datetime:
    """Parse an RFC 3339 timestamp (``Z`` accepted) to an aware datetime."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def format_timestamp(moment: datetime) -> str:
    """Render an aware datetime as RFC 3339 in UTC with millisecond precision."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def is_expired(request: Request, now: datetime | None = None) -> bool:
    """True when the request carries an ``expiresAt`` that lies in the past.

    An unparseable ``expiresAt`` counts as expired: a stale request must never be honoured
    because its deadline could not be read.
    """
    if not request.expiresAt:
        return False
    try:
        deadline = parse_timestamp(request.expiresAt)
    except ValueError:
        return True
    return (now or datetime.now(UTC)) >= deadline


# --- relay calls and their answers ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RelayCall:
    """One tool call the host must execute: ``input`` parsed, ``arguments`` raw JSON."""

    id: str
    name: str
    input: dict[str, Any]
    arguments: str


@dataclass(frozen=True, slots=True)
class RelayResult:
    """The host's output for one relayed call."""

    id: str
    output: str
    is_error: bool = False


def relay_output_for(
    answer: Answer, call_id: str | None, *, first: bool
) -> tuple[str, bool] | None:
    """Find the host's ``(output, isError)`` for ``call_id`` in ``answer.data``.

    ``results[]`` entries match by id; the single-call ``output`` shorthand applies only when
    ``first`` is true (the first slot of the halted turn).
    """
    data = answer.data or {}
    results = data.get(RELAY_RESULTS_KEY)
    if isinstance(results, list):
        for entry in results:  # pyright: ignore[reportUnknownVariableType]
            if isinstance(entry, dict) and entry.get("id") == call_id:  # pyright: ignore[reportUnknownMemberType]
                return _stringify(entry.get("output")), bool(entry.get("isError"))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    if first and RELAY_OUTPUT_KEY in data:
        return _stringify(data[RELAY_OUTPUT_KEY]), bool(data.get(RELAY_IS_ERROR_KEY))
    return None


def _stringify(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value)


def is_relay_request(request: Request | None) -> bool:
    """True for a ``kind="tool_call"`` Request carrying ``data.calls``."""
    return (
        request is not None
        and request.kind == RELAY_KIND
        and isinstance((request.data or {}).get(RELAY_CALLS_KEY), list)
    )


def relay_calls_of(request: Request) -> list[RelayCall]:
    """The calls a relay Request asks the host to execute, in tool-call order."""
    calls: list[RelayCall] = []
    raw_calls: list[Any] = (request.data or {}).get(RELAY_CALLS_KEY) or []
    for raw in raw_calls:
        if not isinstance(raw, dict):
            continue
        entry: dict[str, Any] = raw  # pyright: ignore[reportUnknownVariableType]
        inp = entry.get("input")
        calls.append(
            RelayCall(
                id=str(entry.get("id") or ""),
                name=str(entry.get("name") or ""),
                input=inp if isinstance(inp, dict) else {},  # pyright: ignore[reportUnknownArgumentType]
                arguments=str(entry.get("arguments") or "{}"),
            )
        )
    return calls


def relay_answer(request_id: str, results: Sequence[RelayResult | Mapping[str, Any]]) -> Answer:
    """An Answer carrying the host's output for every relayed call (``data.results``)."""
    rendered: list[dict[str, Any]] = []
    for r in results:
        if isinstance(r, RelayResult):
            rendered.append({"id": r.id, "output": r.output, "isError": r.is_error})
        else:
            rendered.append(
                {
                    "id": r["id"],
                    "output": r.get("output", ""),
                    "isError": bool(r.get("isError", r.get("is_error", False))),
                }
            )
    return Answer(id=request_id, ok=True, data={RELAY_RESULTS_KEY: rendered})


def answer_output(id: str, output: str, is_error: bool = False) -> Answer:
    """An Answer carrying one output: the single-call shorthand.

    Its data is ``{"output": output}``, plus ``"isError": True`` only for an error output
    (absent means False, as the existing package's relay result reads it).

    Raises:
        UsageError: ``output`` is not a str (also a `TypeError`, with the existing package's
            message).
    """
    if not isinstance(output, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UsageTypeError(f"toolnexus: Answer output must be a str, got {type(output).__name__}")
    data: dict[str, Any] = {RELAY_OUTPUT_KEY: output}
    if is_error:
        data[RELAY_IS_ERROR_KEY] = True
    return Answer(id=id, ok=True, data=data)


_DECLINE_REASONS = ("declined", "cancelled", "expired")


def answer_declined(id: str, reason: str = "declined") -> Answer:
    """The human said no: ``ok=False`` with a reason. A resolution, not an error.

    Raises:
        UsageError: ``reason`` is not ``"declined"``, ``"cancelled"`` or ``"expired"``.
    """
    if reason not in _DECLINE_REASONS:
        raise UsageError(
            f'toolnexus: Answer reason must be "declined", "cancelled" or "expired", got {reason!r}'
        )
    return Answer(id=id, ok=False, reason=reason)
