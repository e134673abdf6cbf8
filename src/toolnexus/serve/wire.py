"""The three A2A wires one endpoint speaks, and the conversions between them.

- ``"1.0"``: A2A 1.0 JSON-RPC (``SendMessage``, ``GetTask``…, ProtoJSON shapes:
  ``TASK_STATE_INPUT_REQUIRED``, ``ROLE_AGENT``, parts without ``kind``), chosen by the
  ``A2A-Version: 1.x`` header the a2a-sdk client sends (or a ``ROLE_*`` role);
- ``"0.3"``: the A2A 0.3 method names (``message/send``, ``message/stream``, ``tasks/get``,
  ``tasks/cancel``) with their shapes (``kind`` on parts, lowercase states);
- ``"ref"``: the toolnexus reference wire of the contract: the 1.0 method names with the 0.3
  shapes, no version header, ``configuration.blocking`` (default: return at once).

Tasks are kept in the 0.3 shape (`toolnexus.serve.tasks`), so 0.3 and the reference wire send
them as they are (minus the private key); for 1.0 they are converted with a2a-sdk's own
compatibility layer (``a2a.compat.v0_3.conversions``) and protobuf's JSON mapping, and 1.0
requests are parsed into a2a-sdk's protobuf types — so the 1.0 shapes are the SDK's, not ours.
What is written here is the choice of wire per request and the JSON-RPC envelope: a2a-sdk's
dispatcher serves 1.0 and 0.3 but not the reference wire (1.0 names, 0.3 shapes, no header) on
one endpoint, and its error texts differ from the pinned ones.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, cast

from ..intake import Data, Reply, Text
from .tasks import PRIVATE

__all__ = [
    "ANSWER_REFUSED",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "MAX_DEPTH",
    "METHOD_NOT_FOUND",
    "NOT_CANCELABLE",
    "PARSE_ERROR",
    "TASK_NOT_FOUND",
    "Incoming",
    "RpcError",
    "Wire",
    "method_op",
    "now",
    "parse_body",
    "parse_message",
    "public_task",
    "render_event",
    "render_send_result",
    "render_task",
    "reply_of",
    "wire_of",
]

Wire = Literal["1.0", "0.3", "ref"]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
TASK_NOT_FOUND = -32001
NOT_CANCELABLE = -32002
ANSWER_REFUSED = -32602
"""A follow-up whose answer is refused (conflict, wrong type, fails the schema): invalid
params, with ``data.reason`` saying which."""

_OPS: dict[str, tuple[str, Wire | None]] = {
    "SendMessage": ("send", None),
    "SendStreamingMessage": ("stream", None),
    "GetTask": ("get", None),
    "ListTasks": ("list", None),
    "CancelTask": ("cancel", None),
    "SubscribeToTask": ("subscribe", None),
    "message/send": ("send", "0.3"),
    "message/stream": ("stream", "0.3"),
    "tasks/get": ("get", "0.3"),
    "tasks/list": ("list", "0.3"),
    "tasks/cancel": ("cancel", "0.3"),
    "tasks/resubscribe": ("subscribe", "0.3"),
}


class RpcError(Exception):
    """A JSON-RPC error to send back (code, message, optional data)."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def body(self, id: Any) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return {"jsonrpc": "2.0", "id": id, "error": error}


MAX_DEPTH = 100
"""The deepest nesting of arrays and objects a request body may have (protobuf's own limit
for a message): deeper bodies are a parse error, so nothing after the parser (protobuf,
pydantic, the stores' JSON) meets a depth it cannot take."""


def parse_body(body: bytes) -> Any:
    """A JSON-RPC body → its JSON value.

    Raises:
        RpcError: -32700 ``Parse error`` — not JSON, not UTF-8, or nested deeper than
            `MAX_DEPTH` (100,000 ``[`` included: never a ``RecursionError``).
    """
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise RpcError(PARSE_ERROR, "Parse error") from None
    # Fewer brackets than the limit cannot nest past it (most requests): no walk.
    brackets = body.count(b"[") + body.count(b"{")
    if brackets > MAX_DEPTH and not _shallow(value, MAX_DEPTH):
        raise RpcError(PARSE_ERROR, f"Parse error: nested deeper than {MAX_DEPTH}")
    return value


def _shallow(value: Any, limit: int) -> bool:
    """Whether ``value`` nests at most ``limit`` arrays/objects deep (level by level, no
    recursion)."""
    level: list[Any] = [value] if isinstance(value, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return False
        inner: list[Any] = []
        for container in level:
            items: Any = cast(Any, container).values() if isinstance(container, dict) else container
            for item in items:
                if isinstance(item, dict | list):
                    inner.append(item)
        level = inner
    return True


def now() -> str:
    """An RFC 3339 timestamp for a task status."""
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def method_op(method: str) -> tuple[str, Wire | None] | None:
    """``(operation, wire the name implies)`` for a method name, or ``None``."""
    return _OPS.get(method)


def wire_of(method_wire: Wire | None, version_header: str | None, params: Any) -> Wire:
    """Which wire a request speaks (see the module docs)."""
    if method_wire is not None:
        return method_wire
    if version_header and version_header.strip().split(".")[0] == "1":
        return "1.0"
    message: Any = cast(dict[str, Any], params).get("message") if isinstance(params, dict) else None
    role: Any = cast(dict[str, Any], message).get("role") if isinstance(message, dict) else None
    if isinstance(role, str) and role.startswith("ROLE_"):
        return "1.0"
    return "ref"


@dataclass(slots=True, kw_only=True)
class Incoming:
    """A message sent to the endpoint, in the 0.3 shape, and how the sender wants the reply."""

    message: dict[str, Any]
    blocking: bool
    text: str = ""
    data_parts: list[Any] = field(default_factory=lambda: [])
    message_id: str | None = None
    """The ``messageId`` the sender gave (``None`` when it gave none: the reference wire may
    omit it, and then the server's own id cannot make a resend idempotent)."""

    @property
    def task_id(self) -> str | None:
        value = self.message.get("taskId")
        return value if isinstance(value, str) and value else None

    @property
    def context_id(self) -> str | None:
        value = self.message.get("contextId")
        return value if isinstance(value, str) and value else None


def parse_message(params: Any, wire: Wire, *, stream: bool) -> Incoming:
    """The message of a SendMessage / SendStreamingMessage request.

    Raises:
        RpcError: ``-32602`` for params that are not the method's shape.
    """
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: params must be an object")
    raw = cast(dict[str, Any], params)
    given: Any = raw.get("message")
    named: Any = cast(dict[str, Any], given).get("messageId") if isinstance(given, dict) else None
    if wire == "1.0":
        message, blocking = _parse_v1(raw)
    else:
        message, blocking = _parse_v03(raw, wire)
    blocking = blocking or stream
    texts: list[str] = []
    data_parts: list[Any] = []
    for part in cast(list[Any], message.get("parts") or []):
        if not isinstance(part, dict):
            continue
        p = cast(dict[str, Any], part)
        if p.get("kind") == "text" and isinstance(p.get("text"), str):
            texts.append(p["text"])
        elif p.get("kind") == "data":
            data_parts.append(p.get("data"))
    return Incoming(
        message=message,
        blocking=blocking,
        text="".join(texts),
        data_parts=data_parts,
        message_id=named if isinstance(named, str) and named else None,
    )


def _parse_v1(params: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    from a2a.compat.v0_3 import conversions
    from a2a.types import a2a_pb2
    from google.protobuf.json_format import ParseDict

    try:
        request = ParseDict(params, a2a_pb2.SendMessageRequest(), ignore_unknown_fields=True)
    except Exception as exc:
        raise RpcError(INVALID_PARAMS, f"Invalid params: {exc}") from None
    if not request.HasField("message"):
        raise RpcError(INVALID_PARAMS, "Invalid params: message is required")
    compat = conversions.to_compat_message(request.message)
    message = compat.model_dump(mode="json", by_alias=True, exclude_none=True)
    blocking = not request.configuration.return_immediately
    return message, blocking


def _parse_v03(params: dict[str, Any], wire: Wire) -> tuple[dict[str, Any], bool]:
    from a2a.compat.v0_3 import types as t3
    from pydantic import ValidationError

    body = dict(params)
    message: Any = body.get("message")
    if isinstance(message, dict):
        fixed = dict(cast(dict[str, Any], message))
        fixed.setdefault("messageId", uuid.uuid4().hex)  # the reference wire may omit it
        fixed.setdefault("role", "user")
        body["message"] = fixed
    try:
        parsed = t3.MessageSendParams.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        raise RpcError(INVALID_PARAMS, f"Invalid params: {where}: {first.get('msg')}") from None
    blocking_flag = parsed.configuration.blocking if parsed.configuration else None
    # The reference wire returns at once unless asked to block; 0.3 blocks by default.
    blocking = bool(blocking_flag) if wire == "ref" else blocking_flag is not False
    return parsed.message.model_dump(mode="json", by_alias=True, exclude_none=True), blocking


def public_task(task: dict[str, Any]) -> dict[str, Any]:
    """The task as sent (the private bookkeeping dropped)."""
    return {k: v for k, v in task.items() if k != PRIVATE}


def render_task(task: dict[str, Any], wire: Wire) -> dict[str, Any]:
    """A stored task in ``wire``'s shape."""
    shown = public_task(task)
    if wire != "1.0":
        return shown
    from a2a.compat.v0_3 import conversions
    from a2a.compat.v0_3 import types as t3
    from google.protobuf.json_format import MessageToDict

    core = conversions.to_core_task(t3.Task.model_validate(shown))
    return MessageToDict(core)


def render_send_result(task: dict[str, Any], wire: Wire) -> dict[str, Any]:
    """The result of SendMessage: the task (0.3, reference) or ``{"task": ...}`` (1.0)."""
    shown = render_task(task, wire)
    return {"task": shown} if wire == "1.0" else shown


def render_event(event: dict[str, Any], wire: Wire) -> dict[str, Any]:
    """A stream event (0.3 shape: a task, a ``status-update`` or an ``artifact-update``) in
    ``wire``'s shape (1.0: a ``StreamResponse``)."""
    kind = event.get("kind")
    if kind == "task":
        return render_send_result(event, wire)
    if wire != "1.0":
        return event
    from a2a.compat.v0_3 import conversions
    from a2a.compat.v0_3 import types as t3
    from a2a.types import a2a_pb2
    from google.protobuf.json_format import MessageToDict

    if kind == "status-update":
        status = conversions.to_core_task_status_update_event(
            t3.TaskStatusUpdateEvent.model_validate(event)
        )
        response = a2a_pb2.StreamResponse(status_update=status)
    else:
        artifact = conversions.to_core_task_artifact_update_event(
            t3.TaskArtifactUpdateEvent.model_validate(event)
        )
        response = a2a_pb2.StreamResponse(artifact_update=artifact)
    return MessageToDict(response)


def dumps(value: Any) -> str:
    """Compact JSON for the wire."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def reply_of(incoming: Incoming) -> tuple[Reply, str | None]:
    """The reply a follow-up message carries, and the request id it names (``None``: none).

    The mapping of the wire only — the intake (`toolnexus.intake`) decides what the reply means
    for the request the task shows:

    - a data part with a boolean ``ok`` ⇒ the wire answer ``{ok, data?, reason?}``; its ``id``,
      when given, names the request it answers;
    - another data object ⇒ `Data` (its ``requestId`` key, when given, names the request and is
      not part of the data);
    - else the text parts ⇒ `Text`.

    Raises:
        RpcError: the message carries no answer at all.
    """
    for data in incoming.data_parts:
        if not isinstance(data, dict):
            continue
        d = cast(dict[str, Any], data)
        if isinstance(d.get("ok"), bool):
            named = d.get("id")
            wire = {k: v for k, v in d.items() if k in ("ok", "data", "reason")}
            return wire, named if isinstance(named, str) and named else None
        named = d.get("requestId")
        rest = {k: v for k, v in d.items() if k != "requestId"}
        return Data(rest), named if isinstance(named, str) and named else None
    if incoming.text.strip():
        return Text(incoming.text), None
    raise RpcError(
        ANSWER_REFUSED,
        "Invalid params: the follow-up carries no answer (send a text part, or a data part "
        "{ok, data?, reason?})",
        {"reason": "empty"},
    )
