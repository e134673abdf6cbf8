"""The checkpoint: a halted run as plain, versioned JSON.

A run that halts on a suspension is captured as data — the transcript through the halted
assistant turn, every tool call of that turn with its state (``done`` with its recorded result,
``suspended`` with its Request, or ``not_run``), usage and turn counts, and a fingerprint of the
tool set. Resuming is "load the checkpoint, apply the Answer, continue", in this process or any
other.

Version history:
    1: first format.
    2: content parts: a recorded tool result may carry ``parts``, and the transcript may hold
       part dicts (COMPAT §6). A checkpoint holding no part is still written as version 1, so
       a reader that knows only version 1 keeps reading it; one holding parts is refused by
       such a reader instead of losing them.
    3: a halt at the model call (`toolnexus.llm.model_halt`): ``outstanding`` is empty, since
       the halted turn has no tool call yet. Only such a checkpoint is written as version 3.

Optional fields added since, without a version bump (a reader ignores keys it does not know,
and each has a default when absent): ``queue``, ``trace``, and ``input_schema`` on an
outstanding call suspended on an ``approval`` — the halted tool's input schema (``true``: any
object, ``false``: no edits), so that edited arguments can be checked where no toolkit is loaded
(`toolnexus.loop.edits`). A checkpoint without it still loads; its edits are then checked
when the run resumes.

Reading is strict: a checkpoint comes back from a store or a transcript that people and other
programs can edit, so `Checkpoint.loads` / `Checkpoint.from_json` turn anything malformed —
invalid JSON, absurd nesting, a wrong type or impossible value in any field — into a
`CheckpointError`, never a bare ``TypeError`` or ``RecursionError``.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from .._types import Message, Tool, ToolCallRecord, ToolResult, Usage, empty_usage
from ..errors import CheckpointError
from ..llm.parts_wire import has_parts
from ..parts import ContentPartError, is_part_dict, normalize_parts
from ..suspension import Request

__all__ = ["CHECKPOINT_VERSION", "Checkpoint", "Outstanding", "SlotState", "tool_fingerprint"]

CHECKPOINT_VERSION = 3
"""The newest version this toolnexus reads and writes."""
_PARTS_VERSION = 2
_MODEL_HALT_VERSION = 3

SlotState = Literal["done", "suspended", "not_run"]


def _json_default(value: Any) -> Any:
    """What JSON cannot take as it is: a Request becomes its wire dict, anything else its str.

    The encoder's ``default`` in `Checkpoint.dumps`, and the leaf rule of `_json_safe`.
    """
    if isinstance(value, Request):
        return value.to_dict()
    return str(value)


def _json_safe(value: Any) -> Any:
    if isinstance(value, dict):
        items = cast(dict[Any, Any], value).items()
        return {str(k): _json_safe(v) for k, v in items}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return _json_default(value)


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=_json_default)


def result_to_json(result: ToolResult, *, safe: bool = True) -> dict[str, Any]:
    """A ToolResult as JSON data (metadata made JSON-safe; parts as their canonical dicts).

    ``safe=False`` leaves metadata and parts as they are, for an encoder whose ``default``
    makes the odd value JSON-safe on the way out (`Checkpoint.dumps`)."""
    out: dict[str, Any] = {"output": result.output, "is_error": result.is_error}
    if result.metadata:
        out["metadata"] = _json_safe(result.metadata) if safe else result.metadata
    if result.parts:
        out["parts"] = _json_safe(result.parts) if safe else result.parts
    return out


def result_from_json(data: Any) -> ToolResult:
    if not isinstance(data, dict) or not isinstance(data.get("output"), str):  # pyright: ignore[reportUnknownMemberType]
        raise CheckpointError("checkpoint: a recorded tool result is malformed")
    d: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
    is_error = d.get("is_error", False)
    meta = d.get("metadata")
    if not isinstance(is_error, bool) or not (meta is None or isinstance(meta, dict)):
        raise CheckpointError("checkpoint: a recorded tool result is malformed")
    parts = d.get("parts")
    if parts is not None:
        parts = _parts(parts, "a recorded tool result")
    return ToolResult(d["output"], is_error, cast("dict[str, Any] | None", meta), parts or None)


def _parts(value: Any, where: str) -> list[dict[str, Any]]:
    """Stored content parts, each one checked (its base64 included)."""
    if not isinstance(value, list):
        raise CheckpointError(f"checkpoint: the parts of {where} are not a list")
    try:
        return normalize_parts(cast(list[Any], value), check_size=False)
    except ContentPartError as exc:
        raise CheckpointError(f"checkpoint: {where} holds a bad content part: {exc}") from None


def _check_message_parts(messages: list[Any]) -> None:
    """Every message an object, and every content part in it well-formed."""
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise CheckpointError("checkpoint messages must be a list of objects")
        m = cast(dict[str, Any], message)
        if "parts" in m:
            _parts(m["parts"], f"messages[{i}]")
        content = m.get("content")
        if isinstance(content, list):
            media = [p for p in cast(list[Any], content) if is_part_dict(p)]
            if media:
                _parts(media, f"messages[{i}]")


def _holds_parts(messages: list[Message], outstanding: list[Outstanding]) -> bool:
    return any(o.result is not None and o.result.parts for o in outstanding) or any(
        has_parts(m) for m in messages
    )


# Recent tool sets and their digests, keyed by the tools' identities (the tools themselves are
# kept in the entry, so an id is never reused while its entry lives). Every run of a halting
# workload fingerprints the same few tool sets; hashing their schemas each time is waste.
_FINGERPRINTS: dict[tuple[int, ...], tuple[tuple[Tool, ...], str]] = {}
_FINGERPRINTS_MAX = 64


def tool_fingerprint(tools: Iterable[Tool]) -> str:
    """A short digest of the tool set (names, sources and schemas), order-independent.

    Cached by the identity of the tool objects: a tool's schema is treated as fixed once the
    tool is built (rebuild the tool to change it).
    """
    held = tuple(tools)
    key = tuple(map(id, held))
    found = _FINGERPRINTS.get(key)
    if found is not None:
        return found[1]
    parts = sorted(
        json.dumps([t.name, t.source, t.input_schema], sort_keys=True, default=str) for t in held
    )
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    if len(_FINGERPRINTS) >= _FINGERPRINTS_MAX:
        _FINGERPRINTS.clear()
    _FINGERPRINTS[key] = (held, digest)
    return digest


@dataclass(slots=True)
class Outstanding:
    """One tool call of the halted turn."""

    call_id: str
    name: str
    arguments: str
    state: SlotState
    result: ToolResult | None = None
    request: Request | None = None
    input_schema: dict[str, Any] | bool | None = None
    """The tool's input schema, kept for a call suspended on an approval so that edited
    arguments can be checked without the toolkit (``True``: any object; ``False``: the call
    takes no edits; ``None``: unknown — a checkpoint written before it was kept)."""

    def to_json(self, *, safe: bool = True) -> dict[str, Any]:
        """The call as JSON data; ``safe=False`` as for `result_to_json`."""
        out: dict[str, Any] = {
            "call_id": self.call_id,
            "name": self.name,
            "arguments": self.arguments,
            "state": self.state,
        }
        if self.result is not None:
            out["result"] = result_to_json(self.result, safe=safe)
        if self.request is not None:
            out["request"] = self.request.to_dict()
        if self.input_schema is not None:
            schema = self.input_schema
            out["input_schema"] = _json_safe(schema) if safe else schema
        return out

    @classmethod
    def from_json(
        cls, data: Any, pending_raw: Any = None, pending: Request | None = None
    ) -> Outstanding:
        """Rebuild one outstanding call; ``pending`` (parsed from ``pending_raw``) is reused
        for a call whose request is the same wire dict, as the halted call's is."""
        if not isinstance(data, dict):
            raise CheckpointError("checkpoint: an outstanding call is not an object")
        d: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
        state = d.get("state")
        if state not in ("done", "suspended", "not_run"):
            raise CheckpointError(f"checkpoint: unknown call state {state!r}")
        if not isinstance(d.get("call_id"), str) or not isinstance(d.get("name"), str):
            raise CheckpointError("checkpoint: an outstanding call lacks call_id/name")
        arguments = d.get("arguments")
        if not (arguments is None or isinstance(arguments, str)):
            raise CheckpointError("checkpoint: an outstanding call's arguments are not a string")
        schema = d.get("input_schema")
        if not (schema is None or isinstance(schema, dict | bool)):
            raise CheckpointError("checkpoint: an outstanding call's input_schema is malformed")
        request = None
        raw = d.get("request")
        if raw is not None:
            if pending is not None and raw == pending_raw:
                request = pending
            else:
                request = _request(raw, "checkpoint: malformed request")
        return cls(
            call_id=d["call_id"],
            name=d["name"],
            arguments=arguments or "{}",
            state=state,
            result=result_from_json(d["result"]) if d.get("result") is not None else None,
            request=request,
            input_schema=cast("dict[str, Any] | bool | None", schema),
        )


@dataclass(slots=True)
class Checkpoint:
    """A halted run. ``messages`` end with the halted assistant turn (no tool results)."""

    model: str
    style: str
    messages: list[Message]
    turn: int
    usage: Usage
    tool_calls: list[ToolCallRecord]
    outstanding: list[Outstanding]
    pending: Request
    fingerprint: str = ""
    conversation_id: str | None = None
    created_at: float = field(default_factory=time.time)
    queue: str = ""
    """Which resumers may take this run once answered: ``""`` for a client's workers,
    ``agents/<runtime id>`` for an agent tree's (see `RunStore.take`)."""
    trace: str = ""
    """The W3C ``traceparent`` of the run that halted (``""`` untraced): the resumed run's
    spans are parented under it, in whichever process resumes (see `toolnexus.tracing`)."""
    version: int = 1
    """The version read; the version written is the lowest that holds this checkpoint."""

    def to_json(self) -> dict[str, Any]:
        """The checkpoint as JSON-safe data."""
        return self._data(safe=True)

    def _data(self, *, safe: bool, messages: bool = True) -> dict[str, Any]:
        # ``safe=False`` leaves the transcript and the records as they are, for `dumps`,
        # whose encoder makes the odd value JSON-safe on the way out.
        version = self.version
        if version < _PARTS_VERSION and _holds_parts(self.messages, self.outstanding):
            version = _PARTS_VERSION
        if not self.outstanding:
            version = _MODEL_HALT_VERSION
        data: dict[str, Any] = {
            "version": version,
            "model": self.model,
            "style": self.style,
        }
        if messages:
            data["messages"] = _json_safe(self.messages) if safe else self.messages
        data |= {
            "turn": self.turn,
            "usage": dict(self.usage),
            "tool_calls": [
                _json_safe(r.to_dict()) if safe else r.to_dict() for r in self.tool_calls
            ],
            "outstanding": [o.to_json(safe=safe) for o in self.outstanding],
            "pending": self.pending.to_dict(),
            "fingerprint": self.fingerprint,
            "conversation_id": self.conversation_id,
            "created_at": self.created_at,
        }
        if self.queue:
            data["queue"] = self.queue
        if self.trace:
            data["trace"] = self.trace
        return data

    def halt_note(self) -> dict[str, Any]:
        """What rides on the halted call's placeholder message: everything but the transcript.

        A host that keeps only ``RunResult.messages`` and ``pending`` still resumes exactly:
        the sibling results recorded here are spliced, never executed again.
        """
        return self._data(safe=True, messages=False)

    @classmethod
    def from_note(cls, note: Any, messages: list[Message]) -> Checkpoint:
        """Rebuild a checkpoint from a `halt_note` and the transcript it rode on."""
        if not isinstance(note, dict):
            raise CheckpointError("the halt note on the placeholder is not an object")
        return cls.from_json({**cast(dict[str, Any], note), "messages": messages})

    def dumps(self) -> str:
        """The checkpoint as a JSON string.

        The text of ``json.dumps(to_json())`` without its deep copy of the transcript: values
        JSON cannot take become their ``str`` as there. (A mapping key ``True``, ``False`` or
        ``None`` is spelled the JSON way here, ``"true"``; no transcript has one.)
        """
        try:
            return _ENCODER.encode(self._data(safe=False))
        except TypeError:  # a key JSON cannot take as it is: the slow, converting walk
            return json.dumps(self.to_json(), separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def loads(cls, text: str | bytes) -> Checkpoint:
        """Parse a checkpoint's JSON text.

        Raises:
            CheckpointError: for anything that is not a checkpoint this toolnexus can read —
                invalid or absurdly nested JSON, an unknown version, a field of the wrong type
                or value anywhere (see `from_json`).
        """
        try:
            data = json.loads(text)
        except (TypeError, ValueError, RecursionError) as exc:
            raise CheckpointError(f"checkpoint is not valid JSON: {exc}") from exc
        return cls.from_json(data)

    @classmethod
    def from_json(cls, data: Any) -> Checkpoint:
        """Rebuild a checkpoint from JSON data, validating its shape.

        Checkpoints come back from stores and transcripts that humans and other programs can
        edit, so every field is checked: a missing optional field takes its default, a field
        of the wrong type or an impossible value is refused.

        Raises:
            CheckpointError: the data is not a checkpoint this toolnexus can read; it names
                the first problem found.
        """
        try:
            return cls._from_json(data)
        except CheckpointError:
            raise
        except _MALFORMED as exc:
            raise CheckpointError(f"checkpoint is malformed: {type(exc).__name__}: {exc}") from exc

    @classmethod
    def _from_json(cls, data: Any) -> Checkpoint:
        if not isinstance(data, dict):
            raise CheckpointError("checkpoint is not a JSON object")
        d: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
        version = d.get("version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise CheckpointError("checkpoint has no integer version")
        if version > CHECKPOINT_VERSION or version < 1:
            raise CheckpointError(
                f"checkpoint version {version} is not supported by this toolnexus "
                f"(supported: 1..{CHECKPOINT_VERSION}); upgrade toolnexus to read it"
            )
        messages = d.get("messages")
        if not isinstance(messages, list):
            raise CheckpointError("checkpoint messages must be a list of objects")
        _check_message_parts(cast(list[Any], messages))
        outstanding_raw = d.get("outstanding")
        if not isinstance(outstanding_raw, list) or (
            not outstanding_raw and version < _MODEL_HALT_VERSION
        ):
            raise CheckpointError("checkpoint has no outstanding tool calls")
        pending_raw = d.get("pending")
        pending = _request(pending_raw, "checkpoint pending request is malformed")
        conversation_id = d.get("conversation_id")
        if not (conversation_id is None or isinstance(conversation_id, str)):
            raise CheckpointError("checkpoint conversation_id must be a string or null")
        queue = d.get("queue", "")
        if not isinstance(queue, str):
            raise CheckpointError("checkpoint queue must be a string")
        trace = d.get("trace", "")
        if not isinstance(trace, str):
            raise CheckpointError("checkpoint trace must be a string")
        return cls(
            model=_text(d, "model", ""),
            style=_text(d, "style", "openai"),
            messages=list(messages),  # pyright: ignore[reportUnknownArgumentType]
            turn=_count(d.get("turn"), "checkpoint turn"),
            usage=_usage(d.get("usage")),
            tool_calls=_records(d.get("tool_calls")),
            outstanding=[Outstanding.from_json(o, pending_raw, pending) for o in outstanding_raw],  # pyright: ignore[reportUnknownVariableType]
            pending=pending,
            fingerprint=_text(d, "fingerprint", ""),
            conversation_id=conversation_id,
            created_at=_moment(d.get("created_at")),
            queue=queue,
            trace=trace,
            version=version,
        )


_MALFORMED = (TypeError, ValueError, KeyError, AttributeError, RecursionError, OverflowError)
"""What a hostile checkpoint can make Python raise; each becomes a `CheckpointError`."""


def _text(d: dict[str, Any], key: str, default: str) -> str:
    value = d.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise CheckpointError(f"checkpoint {key} must be a string, got {type(value).__name__}")
    return value


def _count(value: Any, what: str) -> int:
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise CheckpointError(f"{what} must be an integer >= 0, got {value!r}")
    return value


def _moment(value: Any) -> float:
    if value is None:
        return time.time()
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise CheckpointError(f"checkpoint created_at must be a number, got {value!r}")
    moment = float(value)
    if not math.isfinite(moment):
        raise CheckpointError(f"checkpoint created_at must be finite, got {value!r}")
    return moment


def _usage(value: Any) -> Usage:
    usage = empty_usage()
    if value is None:
        return usage
    if not isinstance(value, dict):
        raise CheckpointError("checkpoint usage must be an object")
    raw: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
    for key in usage:
        count = raw.get(key)
        if count is None:
            continue
        if type(count) is not int or count < 0:  # a bool, a float, a string, a negative
            count = _count(count, f"checkpoint usage.{key}")
        usage[key] = count
    return usage


def _records(value: Any) -> list[ToolCallRecord]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise CheckpointError("checkpoint tool_calls must be a list")
    records: list[ToolCallRecord] = []
    for r in cast(list[Any], value):
        if not isinstance(r, dict):
            raise CheckpointError("checkpoint tool_calls entry is not an object")
        rec: dict[str, Any] = r  # pyright: ignore[reportUnknownVariableType]
        args = rec.get("args")
        meta = rec.get("metadata")
        is_error = rec.get("is_error", False)
        if (
            not (args is None or isinstance(args, dict))
            or not (meta is None or isinstance(meta, dict))
            or not isinstance(is_error, bool)
        ):
            raise CheckpointError("checkpoint tool_calls entry has a field of the wrong type")
        records.append(
            ToolCallRecord(
                name=_text(rec, "name", ""),
                args=cast("dict[str, Any]", args or {}),
                output=_text(rec, "output", ""),
                is_error=is_error,
                metadata=cast("dict[str, Any] | None", meta),
                id=_text(rec, "id", ""),
            )
        )
    return records


def _request(value: Any, problem: str) -> Request:
    """A Request from its wire dict, every field of the right type."""
    try:
        request = Request.from_dict(value)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{problem}: {exc}") from exc
    if not isinstance(request.kind, str) or not isinstance(request.prompt, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise CheckpointError(f"{problem}: kind and prompt must be strings")
    if not all(v is None or isinstance(v, str) for v in (request.url, request.expiresAt)):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise CheckpointError(f"{problem}: url and expiresAt must be strings")
    return request
