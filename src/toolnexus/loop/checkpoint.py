"""The checkpoint: a halted run as plain, versioned JSON.

A run that halts on a suspension is captured as data — the transcript through the halted
assistant turn, every tool call of that turn with its state (``done`` with its recorded result,
``suspended`` with its Request, or ``not_run``), usage and turn counts, and a fingerprint of the
tool set. Resuming is "load the checkpoint, apply the Answer, continue", in this process or any
other.

Version history:
    1: first format.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from .._types import Message, Tool, ToolCallRecord, ToolResult, Usage, empty_usage
from ..errors import CheckpointError
from ..suspension import Request

__all__ = ["CHECKPOINT_VERSION", "Checkpoint", "Outstanding", "SlotState", "tool_fingerprint"]

CHECKPOINT_VERSION = 1

SlotState = Literal["done", "suspended", "not_run"]


def _json_safe(value: Any) -> Any:
    if isinstance(value, Request):
        return value.to_dict()
    if isinstance(value, dict):
        items = cast(dict[Any, Any], value).items()
        return {str(k): _json_safe(v) for k, v in items}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def result_to_json(result: ToolResult) -> dict[str, Any]:
    """A ToolResult as JSON data (metadata made JSON-safe)."""
    out: dict[str, Any] = {"output": result.output, "is_error": result.is_error}
    if result.metadata:
        out["metadata"] = _json_safe(result.metadata)
    return out


def result_from_json(data: Any) -> ToolResult:
    if not isinstance(data, dict) or not isinstance(data.get("output"), str):  # pyright: ignore[reportUnknownMemberType]
        raise CheckpointError("checkpoint: a recorded tool result is malformed")
    meta = data.get("metadata")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return ToolResult(
        data["output"],  # pyright: ignore[reportUnknownArgumentType]
        bool(data.get("is_error")),  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        meta if isinstance(meta, dict) else None,  # pyright: ignore[reportUnknownArgumentType]
    )


def tool_fingerprint(tools: Iterable[Tool]) -> str:
    """A short digest of the tool set (names, sources and schemas), order-independent."""
    parts = sorted(
        json.dumps([t.name, t.source, t.input_schema], sort_keys=True, default=str) for t in tools
    )
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


@dataclass(slots=True)
class Outstanding:
    """One tool call of the halted turn."""

    call_id: str
    name: str
    arguments: str
    state: SlotState
    result: ToolResult | None = None
    request: Request | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "call_id": self.call_id,
            "name": self.name,
            "arguments": self.arguments,
            "state": self.state,
        }
        if self.result is not None:
            out["result"] = result_to_json(self.result)
        if self.request is not None:
            out["request"] = self.request.to_dict()
        return out

    @classmethod
    def from_json(cls, data: Any) -> Outstanding:
        if not isinstance(data, dict):
            raise CheckpointError("checkpoint: an outstanding call is not an object")
        d: dict[str, Any] = data  # pyright: ignore[reportUnknownVariableType]
        state = d.get("state")
        if state not in ("done", "suspended", "not_run"):
            raise CheckpointError(f"checkpoint: unknown call state {state!r}")
        if not isinstance(d.get("call_id"), str) or not isinstance(d.get("name"), str):
            raise CheckpointError("checkpoint: an outstanding call lacks call_id/name")
        request = None
        if d.get("request") is not None:
            try:
                request = Request.from_dict(d["request"])
            except (TypeError, ValueError) as exc:
                raise CheckpointError(f"checkpoint: malformed request: {exc}") from exc
        return cls(
            call_id=d["call_id"],
            name=d["name"],
            arguments=str(d.get("arguments") or "{}"),
            state=state,
            result=result_from_json(d["result"]) if d.get("result") is not None else None,
            request=request,
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
    version: int = CHECKPOINT_VERSION

    def to_json(self) -> dict[str, Any]:
        """The checkpoint as JSON-safe data."""
        return {
            "version": self.version,
            "model": self.model,
            "style": self.style,
            "messages": _json_safe(self.messages),
            "turn": self.turn,
            "usage": dict(self.usage),
            "tool_calls": [_json_safe(r.to_dict()) for r in self.tool_calls],
            "outstanding": [o.to_json() for o in self.outstanding],
            "pending": self.pending.to_dict(),
            "fingerprint": self.fingerprint,
            "conversation_id": self.conversation_id,
            "created_at": self.created_at,
        }

    def halt_note(self) -> dict[str, Any]:
        """What rides on the halted call's placeholder message: everything but the transcript.

        A host that keeps only ``RunResult.messages`` and ``pending`` still resumes exactly:
        the sibling results recorded here are spliced, never executed again.
        """
        note = self.to_json()
        del note["messages"]
        return note

    @classmethod
    def from_note(cls, note: Any, messages: list[Message]) -> Checkpoint:
        """Rebuild a checkpoint from a `halt_note` and the transcript it rode on."""
        if not isinstance(note, dict):
            raise CheckpointError("the halt note on the placeholder is not an object")
        return cls.from_json({**cast(dict[str, Any], note), "messages": messages})

    def dumps(self) -> str:
        """The checkpoint as a JSON string."""
        return json.dumps(self.to_json(), separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def loads(cls, text: str | bytes) -> Checkpoint:
        """Parse a checkpoint; corrupt JSON or an unknown version is a `CheckpointError`."""
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise CheckpointError(f"checkpoint is not valid JSON: {exc}") from exc
        return cls.from_json(data)

    @classmethod
    def from_json(cls, data: Any) -> Checkpoint:
        """Rebuild a checkpoint from JSON data, validating its shape."""
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
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):  # pyright: ignore[reportUnknownVariableType]
            raise CheckpointError("checkpoint messages must be a list of objects")
        outstanding_raw = d.get("outstanding")
        if not isinstance(outstanding_raw, list) or not outstanding_raw:
            raise CheckpointError("checkpoint has no outstanding tool calls")
        try:
            pending = Request.from_dict(d.get("pending") or {})
        except (TypeError, ValueError) as exc:
            raise CheckpointError(f"checkpoint pending request is malformed: {exc}") from exc
        usage_raw = d.get("usage")
        usage = empty_usage()
        if isinstance(usage_raw, dict):
            for key in usage:
                val = usage_raw.get(key)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
                if isinstance(val, int):
                    usage[key] = val
        records: list[ToolCallRecord] = []
        raw_records: list[Any] = d.get("tool_calls") or []
        for r in raw_records:
            if not isinstance(r, dict):
                raise CheckpointError("checkpoint tool_calls entry is not an object")
            rec: dict[str, Any] = r  # pyright: ignore[reportUnknownVariableType]
            args = rec.get("args")
            meta = rec.get("metadata")
            records.append(
                ToolCallRecord(
                    name=str(rec.get("name", "")),
                    args=args if isinstance(args, dict) else {},  # pyright: ignore[reportUnknownArgumentType]
                    output=str(rec.get("output", "")),
                    is_error=bool(rec.get("is_error")),
                    metadata=meta if isinstance(meta, dict) else None,  # pyright: ignore[reportUnknownArgumentType]
                    id=str(rec.get("id", "")),
                )
            )
        turn = d.get("turn")
        return cls(
            model=str(d.get("model", "")),
            style=str(d.get("style", "openai")),
            messages=list(messages),  # pyright: ignore[reportUnknownArgumentType]
            turn=turn if isinstance(turn, int) else 0,
            usage=usage,
            tool_calls=records,
            outstanding=[Outstanding.from_json(o) for o in outstanding_raw],  # pyright: ignore[reportUnknownVariableType]
            pending=pending,
            fingerprint=str(d.get("fingerprint") or ""),
            conversation_id=d.get("conversation_id")
            if isinstance(d.get("conversation_id"), str)
            else None,
            created_at=float(d.get("created_at") or time.time()),
            version=version,
        )
