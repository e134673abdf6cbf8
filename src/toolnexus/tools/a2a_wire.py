"""The outbound A2A wire: JSON-RPC over one HTTP POST (or an SSE stream), three dialects.

- ``"1.0"``: A2A 1.0 (``SendMessage`` / ``SendStreamingMessage`` / ``GetTask`` /
  ``CancelTask``, the ``A2A-Version: 1.0`` header, ProtoJSON shapes), used when the card lists
  a JSON-RPC interface of protocol 1.x;
- ``"ref"``: the toolnexus reference wire of CONTRACT §7A (the same method names, 0.3 shapes:
  ``kind`` on parts, ``configuration.blocking: false``);
- ``"0.3"``: the A2A 0.3 names (``message/send``, ``message/stream``, ``tasks/get``,
  ``tasks/cancel``).

A `Link` tries its dialects in order and keeps the first the server accepts: a server that
answers ``Method not found`` (-32601) or ``version not supported`` (-32009) to a submit moves
it to the next one. Everything it returns is in the 0.3 shape (lowercase, hyphenated states;
``kind`` on every part), whatever the server spoke.

Written by hand on aiohttp (the HTTP client of everything toolnexus sends) rather than with
a2a-sdk's client: calling remote agents needs only the base install, and the reference wire
is not one the SDK's client speaks.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, Mapping
from typing import Any, Literal, cast

from ..tracing import a2a_client_span

__all__ = ["HttpFailure", "Link", "RemoteError", "Wire", "normalize_event", "normalize_task"]

Wire = Literal["1.0", "ref", "0.3"]

_METHODS: dict[Wire, dict[str, str]] = {
    "1.0": {
        "send": "SendMessage",
        "stream": "SendStreamingMessage",
        "get": "GetTask",
        "cancel": "CancelTask",
    },
    "ref": {
        "send": "SendMessage",
        "stream": "SendStreamingMessage",
        "get": "GetTask",
        "cancel": "CancelTask",
    },
    "0.3": {
        "send": "message/send",
        "stream": "message/stream",
        "get": "tasks/get",
        "cancel": "tasks/cancel",
    },
}
_FALLBACK_CODES = frozenset({-32601, -32009})


class RemoteError(Exception):
    """The remote agent answered with a JSON-RPC error."""

    def __init__(self, code: int | None, message: str) -> None:
        super().__init__(message)
        self.code = code


class HttpFailure(Exception):
    """The remote agent answered with a non-2xx status (``HTTP <status>: <body>``)."""


def _state(value: Any) -> str:
    text = str(value or "")
    if text.startswith("TASK_STATE_"):
        return text[len("TASK_STATE_") :].lower().replace("_", "-")
    return text


def _parts(parts: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for raw in cast(list[Any], parts) if isinstance(parts, list) else []:
        if not isinstance(raw, dict):
            continue
        p = dict(cast(dict[str, Any], raw))
        if "kind" not in p:
            if "text" in p:
                p["kind"] = "text"
            elif "data" in p:
                p["kind"] = "data"
            else:
                p["kind"] = "file"
        out.append(p)
    return out


def _message(message: Any) -> dict[str, Any] | None:
    if not isinstance(message, dict):
        return None
    m = dict(cast(dict[str, Any], message))
    m["parts"] = _parts(m.get("parts"))
    role = str(m.get("role") or "")
    m["role"] = role[len("ROLE_") :].lower() if role.startswith("ROLE_") else role
    return m


def normalize_task(raw: Any) -> dict[str, Any]:
    """A task from any dialect in the 0.3 shape.

    Raises:
        RemoteError: ``raw`` is not a task object with an id.
    """
    if not isinstance(raw, dict) or not isinstance(cast(dict[str, Any], raw).get("id"), str):
        raise RemoteError(None, f"the remote agent returned no task: {_clip(raw)}")
    task = dict(cast(dict[str, Any], raw))
    status: Any = task.get("status")
    status = dict(cast(dict[str, Any], status)) if isinstance(status, dict) else {}
    status["state"] = _state(status.get("state"))
    message = _message(status.get("message"))
    if message is not None:
        status["message"] = message
    task["status"] = status
    artifacts: Any = task.get("artifacts")
    if isinstance(artifacts, list):
        task["artifacts"] = [
            {**cast(dict[str, Any], a), "parts": _parts(cast(dict[str, Any], a).get("parts"))}
            for a in cast(list[Any], artifacts)
            if isinstance(a, dict)
        ]
    history: Any = task.get("history")
    if isinstance(history, list):
        task["history"] = [m for m in map(_message, cast(list[Any], history)) if m is not None]
    return task


def _task_of_send(result: Any) -> dict[str, Any]:
    """The task in a SendMessage result (1.0 wraps it; a bare message means done)."""
    if isinstance(result, dict):
        r = cast(dict[str, Any], result)
        if isinstance(r.get("task"), dict):
            return normalize_task(r["task"])
        message = (
            r.get("message") if "message" in r else (r if r.get("kind") == "message" else None)
        )
        if isinstance(message, dict):
            return _message_task(message)
    return normalize_task(result)


def _message_task(message: Any) -> dict[str, Any]:
    m = _message(message) or {"parts": []}
    return {
        "id": str(m.get("taskId") or m.get("messageId") or "message"),
        "contextId": m.get("contextId"),
        "status": {"state": "completed"},
        "history": [m],
    }


def normalize_event(raw: Any) -> tuple[str, dict[str, Any]]:
    """A stream event as ``(kind, payload)``: ``task`` (a whole task, 0.3 shape),
    ``status-update`` or ``artifact-update``."""
    if not isinstance(raw, dict):
        raise RemoteError(None, f"the remote agent streamed garbage: {_clip(raw)}")
    r = cast(dict[str, Any], raw)
    kind = r.get("kind")
    if "statusUpdate" in r or kind == "status-update":
        event = dict(cast(dict[str, Any], r.get("statusUpdate", r)))
        status = dict(cast(dict[str, Any], event.get("status") or {}))
        status["state"] = _state(status.get("state"))
        message = _message(status.get("message"))
        if message is not None:
            status["message"] = message
        event["status"] = status
        return "status-update", event
    if "artifactUpdate" in r or kind == "artifact-update":
        event = dict(cast(dict[str, Any], r.get("artifactUpdate", r)))
        artifact = dict(cast(dict[str, Any], event.get("artifact") or {}))
        artifact["parts"] = _parts(artifact.get("parts"))
        event["artifact"] = artifact
        return "artifact-update", event
    if "task" in r and isinstance(r["task"], dict):
        return "task", normalize_task(r["task"])
    if "message" in r or kind == "message":
        return "task", _message_task(r.get("message", r))
    return "task", normalize_task(r)


def _clip(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 200 else text[:200] + "…"


class Link:
    """One remote JSON-RPC endpoint and the dialect it speaks.

    Args:
        url: the endpoint (the card's interface URL, or its origin).
        wires: dialects to try, best first.
        headers: sent with every request (already expanded).
        agent: the agent's name (for error texts).
    """

    def __init__(self, url: str, wires: list[Wire], headers: Mapping[str, str], agent: str) -> None:
        self.url = url
        self.wires = list(wires)
        self.headers = dict(headers)
        self.agent = agent

    @property
    def wire(self) -> Wire:
        return self.wires[0]

    def _headers(self, wire: Wire, stream: bool) -> dict[str, str]:
        headers = {"Content-Type": "application/json", **self.headers}
        if wire == "1.0":
            headers["A2A-Version"] = "1.0"
        if stream:
            headers["Accept"] = "text/event-stream"
        return headers

    def message(
        self,
        parts: list[dict[str, Any]],
        *,
        task_id: str | None = None,
        context_id: str | None = None,
        wire: Wire | None = None,
    ) -> dict[str, Any]:
        """A user message in ``wire``'s shape; ``parts`` are given in the 0.3 shape."""
        w = wire or self.wire
        message: dict[str, Any] = {"messageId": uuid.uuid4().hex}
        if w == "1.0":
            message["role"] = "ROLE_USER"
            message["parts"] = [{k: v for k, v in p.items() if k != "kind"} for p in parts]
        else:
            message["role"] = "user"
            message["parts"] = parts
            if w == "0.3":
                message["kind"] = "message"
        if task_id:
            message["taskId"] = task_id
        if context_id:
            message["contextId"] = context_id
        return message

    def _params(
        self,
        parts: list[dict[str, Any]],
        task_id: str | None,
        context_id: str | None,
        wire: Wire,
        stream: bool,
    ) -> dict[str, Any]:
        message = self.message(parts, task_id=task_id, context_id=context_id, wire=wire)
        if stream:
            return {"message": message}
        config = {"returnImmediately": True} if wire == "1.0" else {"blocking": False}
        return {"message": message, "configuration": config}

    async def send(
        self,
        parts: list[dict[str, Any]],
        *,
        task_id: str | None = None,
        context_id: str | None = None,
        timeout: float | None,
    ) -> dict[str, Any]:
        """Submit a message (non-blocking) → the task, in the 0.3 shape."""
        while True:
            wire = self.wire
            params = self._params(parts, task_id, context_id, wire, False)
            try:
                result = await self._call(_METHODS[wire]["send"], params, wire, timeout)
            except RemoteError as exc:
                if exc.code in _FALLBACK_CODES and len(self.wires) > 1:
                    self.wires.pop(0)
                    continue
                raise
            return _task_of_send(result)

    async def get(self, task_id: str, *, timeout: float | None) -> dict[str, Any]:
        """GetTask → the task, in the 0.3 shape."""
        wire = self.wire
        return normalize_task(
            await self._call(_METHODS[wire]["get"], {"id": task_id}, wire, timeout)
        )

    async def cancel(self, task_id: str, *, timeout: float | None) -> dict[str, Any]:
        """CancelTask → the task (``canceled`` when the remote agreed), in the 0.3 shape."""
        wire = self.wire
        return normalize_task(
            await self._call(_METHODS[wire]["cancel"], {"id": task_id}, wire, timeout)
        )

    async def stream(
        self,
        parts: list[dict[str, Any]],
        *,
        task_id: str | None = None,
        context_id: str | None = None,
        timeout: float | None,
    ) -> AsyncGenerator[tuple[str, dict[str, Any]]]:
        """SendStreamingMessage → its events, normalized (see `normalize_event`)."""
        from .http import _pooled_session  # pyright: ignore[reportPrivateUsage]

        wire = self.wire
        method = _METHODS[wire]["stream"]
        body = {
            "jsonrpc": "2.0",
            "id": uuid.uuid4().hex,
            "method": method,
            "params": self._params(parts, task_id, context_id, wire, True),
        }
        headers = self._headers(wire, True)
        session = await _pooled_session()
        with a2a_client_span(method, self.url, headers, rpc_id=body["id"]):
            async for event in self._streamed(session, body, headers, timeout):
                yield event

    async def _streamed(
        self, session: Any, body: dict[str, Any], headers: dict[str, str], timeout: float | None
    ) -> AsyncGenerator[tuple[str, dict[str, Any]]]:
        import aiohttp

        async with session.post(
            self.url,
            data=json.dumps(body),
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=timeout),
        ) as response:
            if not 200 <= response.status < 300:
                raise HttpFailure(f"HTTP {response.status}: {await response.text()}")
            if not response.headers.get("Content-Type", "").startswith("text/event-stream"):
                yield "task", _task_of_send(_result(await _json(response)))
                return
            data: list[str] = []
            async for raw_line in response.content:
                line = raw_line.decode("utf-8", errors="replace").rstrip("\r\n")
                if line.startswith("data:"):
                    data.append(line[5:].lstrip())
                elif not line and data:
                    payload = "\n".join(data)
                    data = []
                    try:
                        envelope = json.loads(payload)
                    except ValueError:
                        raise RemoteError(
                            None, f"the remote agent streamed garbage: {_clip(payload)}"
                        ) from None
                    yield normalize_event(_result(envelope))

    async def _call(
        self, method: str, params: dict[str, Any], wire: Wire, timeout: float | None
    ) -> Any:
        import aiohttp

        from .http import _pooled_session  # pyright: ignore[reportPrivateUsage]

        body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
        headers = self._headers(wire, False)
        session = await _pooled_session()
        with a2a_client_span(method, self.url, headers, rpc_id=body["id"]) as span:
            async with session.post(
                self.url,
                data=json.dumps(body),
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as response:
                if not 200 <= response.status < 300:
                    if span is not None:
                        span.set_attribute("http.response.status_code", response.status)
                    raise HttpFailure(f"HTTP {response.status}: {await response.text()}")
                return _result(await _json(response))


async def _json(response: Any) -> Any:
    text = await response.text()
    try:
        return json.loads(text)
    except ValueError:
        raise RemoteError(None, f"the remote agent returned garbage: {_clip(text)}") from None


def _result(envelope: Any) -> Any:
    if not isinstance(envelope, dict):
        raise RemoteError(None, f"the remote agent returned garbage: {_clip(envelope)}")
    e = cast(dict[str, Any], envelope)
    error = e.get("error")
    if error is not None:
        err = cast(dict[str, Any], error) if isinstance(error, dict) else {}
        code = err.get("code")
        message = err.get("message")
        code_int = code if isinstance(code, int) else None
        raise RemoteError(code_int, str(message) if message else f"JSON-RPC error {code}")
    if "result" not in e:
        raise RemoteError(None, f"the remote agent returned garbage: {_clip(e)}")
    return e["result"]
