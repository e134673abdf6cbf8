"""The ``systemone`` backend: one ``POST {base_url}/systemone`` per evaluation.

The body is ``canonical_json({model, questions, state})``, then ``request_params`` (whose keys
win), then ``body_transform``. The headers are ``Content-Type: application/json``,
``Authorization: Bearer <$api_key_env>`` when that variable is set, and the host's ``headers``
with ``${ENV}`` expanded at call time. Retries follow the client's policy
(`toolnexus.llm.retry`): its retryable statuses plus 408 and the host's ``retryable_statuses``,
``on_error`` has the last word, a ``Retry-After`` in seconds wins, else ``base · 2^attempt``
without jitter.

The request goes over aiohttp (`toolnexus.llm.transport.AiohttpTransport`, one pooled session
per classifier) unless the host gives a `ClassifierTransport`: a synchronous one runs in a
worker thread, an asynchronous one is awaited.

Errors are `ClassifierError` and never carry a secret: a 401/403 body is dropped, any other
body is masked (the key, the expanded headers, the account identifiers) and capped at 200
characters::

    classifier: POST https://api.typesafe.ai/v1/systemone: HTTP 503: busy
    classifier: POST https://api.typesafe.ai/v1/systemone: OSError: connection reset
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast

from .._env import expand_env_headers
from .._error_body import capped_error_body, parse_retry_after, safe_error_body
from ..errors import ClassifierError, ProviderError, ToolnexusError, TransportError
from ..llm.retry import RetryPolicy, call_with_retries
from ..llm.transport import AiohttpTransport, RawReply
from ..redaction import Redactor
from .answers import Decision, decision_from_wire
from .questions import Question, canonical_json, questions_wire

__all__ = [
    "CLASSIFIER_RETRYABLE_STATUSES",
    "BodyTransform",
    "ClassifierResponse",
    "ClassifierTransport",
    "SystemOne",
    "no_jitter",
]

CLASSIFIER_RETRYABLE_STATUSES = frozenset({408})
"""Statuses a classifier retries on top of the client's retryable set."""


@dataclass(frozen=True, slots=True)
class ClassifierResponse:
    """What a `ClassifierTransport` returns: the status, the body's bytes, and the raw
    ``Retry-After`` header (or ``None``)."""

    status: int
    body: bytes
    retry_after: str | None = None


class ClassifierTransport(Protocol):
    """The host's way to send the request (a proxy, a test double, a recorded replay).

    ``post`` is called with the full URL, the headers, the body's bytes and the timeout in
    seconds, and returns a `ClassifierResponse` for *any* status; it raises only when no reply
    came (refused, reset, timed out). A synchronous ``post`` runs in a worker thread.
    """

    def post(
        self, url: str, headers: dict[str, str], body: bytes, timeout: float
    ) -> ClassifierResponse: ...


BodyTransform = Callable[[dict[str, Any]], "dict[str, Any] | None"]
"""Rewrites the body before it is sent; ``None`` keeps it."""


def no_jitter() -> float:
    """The retry policy's jitter draw that makes its backoff exactly ``base · 2^attempt``."""
    return 1.0


def _where(url: str) -> str:
    return url.split("?", 1)[0]


class SystemOne:
    """Sends evaluations to a systemone endpoint (see the module docstring).

    Args:
        base_url: the API base; the endpoint is ``{base_url}/systemone``.
        model: sent as ``model``.
        api_key_env: the variable holding the bearer key (read at call time).
        headers: extra headers, ``${ENV}`` expanded at call time.
        timeout: seconds per attempt.
        policy: retries, backoff and ``on_error``.
        transport: the host's `ClassifierTransport`, or an `AiohttpTransport` to share.
        request_params: merged into the body (their keys win).
        body_transform: the last word on the body.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key_env: str,
        headers: Mapping[str, str] | None,
        timeout: float,
        policy: RetryPolicy,
        transport: object | None,
        request_params: Mapping[str, Any] | None,
        body_transform: BodyTransform | None,
    ) -> None:
        if transport is not None and not callable(getattr(transport, "post", None)):
            raise ClassifierError(
                f"classifier: http_transport {type(transport).__name__} has no post()"
            )
        self.endpoint = base_url.rstrip("/") + "/systemone"
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout
        self._headers = dict(headers or {})
        self._policy = policy
        self._host = transport
        self._own: AiohttpTransport | None = None
        self._params = dict(request_params or {})
        self._transform = body_transform
        self._secrets = Redactor()
        if api_key_env:
            self._secrets.add_env(api_key_env)
        for name, raw in self._headers.items():
            self._secrets.add_setting(name, raw)

    # -- the request -------------------------------------------------------------------------

    def _wire_headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        headers.update(expand_env_headers(self._headers))
        return headers

    async def _body(self, state: object, questions: Mapping[str, Question]) -> bytes:
        body: dict[str, Any] = {
            "model": self.model,
            "questions": questions_wire(questions),
            "state": state,
        }
        body.update(self._params)
        if self._transform is not None:
            changed: object = self._transform(body)
            if inspect.isawaitable(changed):
                changed = await cast("Awaitable[object]", changed)
            if changed is not None:
                if not isinstance(changed, dict):
                    raise ClassifierError(
                        "classifier: body_transform must return a dict or None, "
                        f"got {type(changed).__name__}"
                    )
                body = cast("dict[str, Any]", changed)
        try:
            return canonical_json(body)
        except (TypeError, ValueError) as exc:
            raise ClassifierError(f"classifier: the request is not JSON: {exc}") from None

    # -- one attempt -------------------------------------------------------------------------

    async def _send(self, headers: dict[str, str], data: bytes) -> RawReply:
        host = self._host
        if host is None or isinstance(host, AiohttpTransport):
            if host is None:
                host = self._own = self._own or AiohttpTransport()
            return await host.exchange(self.endpoint, headers, data, timeout=self.timeout)
        post: Callable[..., object] = getattr(host, "post")  # noqa: B009
        try:
            if inspect.iscoroutinefunction(post):
                reply = await post(self.endpoint, headers, data, self.timeout)
            else:
                reply = await asyncio.to_thread(post, self.endpoint, headers, data, self.timeout)
                if inspect.isawaitable(reply):
                    reply = await cast("Awaitable[object]", reply)
        except ToolnexusError:
            raise
        except Exception as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}") from exc
        status, body = getattr(reply, "status", None), getattr(reply, "body", None)
        if isinstance(status, bool) or not isinstance(status, int) or not isinstance(body, bytes):
            raise ClassifierError(
                f"classifier: http_transport returned {type(reply).__name__}, "
                "not a ClassifierResponse(status, body: bytes)"
            )
        retry_after = getattr(reply, "retry_after", None)
        return RawReply(status, body, retry_after if isinstance(retry_after, str) else None)

    async def _attempt(self, data: bytes) -> Decision:
        reply = await self._send(self._wire_headers(), data)
        if not 200 <= reply.status < 300:
            text = self._secrets.text(reply.body.decode("utf-8", errors="replace"))
            raise ProviderError(
                f"HTTP {reply.status}",
                status=reply.status,
                body=safe_error_body(reply.status, text),
                retry_after=parse_retry_after(reply.retry_after),
            )
        try:
            payload: object = json.loads(reply.body)
        except (ValueError, RecursionError):
            shown = capped_error_body(
                None, self._secrets.text(reply.body.decode("utf-8", errors="replace"))
            )
            raise ClassifierError(
                f"classifier: POST {_where(self.endpoint)}: HTTP {reply.status}: "
                f"the reply is not JSON: {shown!r}",
                status=reply.status,
            ) from None
        return decision_from_wire(payload)

    # -- the evaluation ----------------------------------------------------------------------

    async def evaluate(self, state: object, questions: Mapping[str, Question]) -> Decision:
        """POST the evaluation (retrying as the policy says) and decode the reply.

        Raises:
            ClassifierError: the endpoint failed, timed out or answered something malformed.
        """
        data = await self._body(state, questions)
        try:
            return await call_with_retries(lambda: self._attempt(data), self._policy)
        except ProviderError as exc:
            shown = capped_error_body(exc.status, exc.body)
            detail = f"HTTP {exc.status}: {shown}" if shown else f"HTTP {exc.status}"
            raise ClassifierError(
                f"classifier: POST {_where(self.endpoint)}: {detail}", status=exc.status
            ) from exc
        except TransportError as exc:
            raise ClassifierError(
                f"classifier: POST {_where(self.endpoint)}: {self._fault(exc)}"
            ) from exc

    def _fault(self, error: TransportError) -> str:
        """``<ExcType>: <text>`` of what failed underneath, masked."""
        cause = error.__cause__
        ours = self._host is None or isinstance(self._host, AiohttpTransport)
        if cause is None or not ours:
            return self._secrets.text(str(error))
        text = str(cause)
        if not text and isinstance(cause, TimeoutError):
            text = f"timed out after {self.timeout}s"
        return self._secrets.text(f"{type(cause).__name__}: {text}" if text else str(error))

    async def aclose(self) -> None:
        """Close the aiohttp session this backend opened (a shared transport stays open)."""
        own, self._own = self._own, None
        if own is not None:
            await own.aclose()
