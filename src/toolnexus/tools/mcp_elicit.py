"""MCP elicitation ↔ our suspension primitive (`Request` / `Answer`).

A server that needs a human mid-call asks in one of two shapes: the legacy back-channel
``elicitation/create`` request, or (protocol 2026-07-28) an input-required result carrying
questions and an opaque state token. Both map onto the same `Request`:

- form mode ⇒ ``kind="input"``, ``prompt`` = the message, ``data.schema`` = the requested schema;
- URL mode ⇒ ``kind="authorization"`` + ``url`` (the human goes there; nothing comes back).

The `Answer` maps back: ``ok`` ⇒ ``accept`` (a form's ``answer.data`` must satisfy the requested
schema, else ``decline``); ``!ok`` ⇒ ``decline`` when ``reason == "declined"``, else ``cancel``.
These are pure functions; only `answer_to_elicit_result` imports the ``mcp`` extra.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from .._extras import extra_hint
from ..suspension import (
    Answer,
    Request,
    WaitFor,
    cancelled_answer,
    expired_decline,
    is_expired,
    new_request_id,
)

if TYPE_CHECKING:
    from mcp_types import ElicitResult

__all__ = ["answer_to_elicit_result", "ask_inline", "elicitation_to_request", "schema_problem"]

log = logging.getLogger("toolnexus")

MCP_EXTRA_HINT = f"the MCP source needs the mcp extra: {extra_hint('mcp')}"


def elicitation_to_request(params: Any, *, id: str | None = None) -> Request:
    """The `Request` for one elicitation.

    ``params`` is read as the toolnexus package does: its attributes first (``mode``,
    ``message``, ``url``, ``requestedSchema``: the SDK's params object, or any object with
    them), then mapping keys (the wire dict). ``kind`` is ``authorization`` iff ``mode ==
    "url"`` (with the ``url``), else ``input`` with ``data={"schema": ...}`` when a schema is
    given.

    Example:
        >>> req = elicitation_to_request({"mode": "url", "message": "Log in",
        ...                               "url": "https://idp.example/x"})
        >>> (req.kind, req.url)
        ('authorization', 'https://idp.example/x')
    """
    message = _field(params, "message")
    prompt = str(message) if message else ""
    request_id = id or new_request_id("elc")
    if _field(params, "mode") == "url":
        url = _field(params, "url")
        return Request(
            id=request_id, kind="authorization", prompt=prompt, url=str(url) if url else None
        )
    schema = _field(params, "requestedSchema")
    if schema is not None and not isinstance(schema, Mapping):
        dump = getattr(schema, "model_dump", None)
        schema = dump(by_alias=True, mode="json", exclude_none=True) if callable(dump) else None
    data: dict[str, Any] | None = (
        {"schema": dict(cast(Mapping[str, Any], schema))} if schema else None
    )
    return Request(id=request_id, kind="input", prompt=prompt, data=data)


_ATTRIBUTE_ALIASES = {"requestedSchema": "requested_schema"}


def _field(params: Any, key: str) -> Any:
    """``params.<key>`` (or its snake_case attribute), else ``params[key]``, else ``None``."""
    for name in (key, _ATTRIBUTE_ALIASES.get(key)):
        if name is not None and not isinstance(params, Mapping):
            value = getattr(params, name, None)
            if value is not None:
                return value
    if isinstance(params, Mapping):
        return cast(Mapping[str, Any], params).get(key)
    return None


def answer_to_elicit_result(answer: Answer, request: Request | None = None) -> ElicitResult:
    """The ``ElicitResult`` for ``answer`` to ``request`` (the Request the elicitation became).

    ``ok`` ⇒ ``accept``: for a form, ``answer.data`` is the content and must satisfy
    ``request.data["schema"]``; a mismatch becomes ``decline`` (the reason is logged, the data
    is not). For a URL elicitation nothing is sent back. ``!ok`` ⇒ ``decline`` when the reason
    is ``declined``, else ``cancel``.
    """
    try:
        from mcp_types import ElicitResult
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(MCP_EXTRA_HINT) from exc
    from pydantic import ValidationError

    if not answer.ok:
        return ElicitResult(action="decline" if answer.reason == "declined" else "cancel")
    if request is not None and request.kind == "authorization":
        return ElicitResult(action="accept")
    content: dict[str, Any] = dict(answer.data or {})
    schema: Any = (request.data or {}).get("schema") if request is not None else None
    problem = (
        schema_problem(content, cast(dict[str, Any], schema)) if isinstance(schema, dict) else None
    )
    if problem is not None:
        log.warning(
            "toolnexus: elicitation %s declined: the answer does not fit the schema (%s)",
            request.id if request is not None else "?",
            problem,
        )
        return ElicitResult(action="decline")
    try:
        return ElicitResult(action="accept", content=cast(Any, content))
    except ValidationError:
        log.warning(
            "toolnexus: elicitation %s declined: answers must be flat strings, numbers, "
            "booleans or string lists",
            request.id if request is not None else "?",
        )
        return ElicitResult(action="decline")


def schema_problem(content: Mapping[str, Any], schema: dict[str, Any]) -> str | None:
    """Why ``content`` fails ``schema`` (paths and rules only, never values), or ``None``.

    An invalid schema cannot be checked and counts as satisfied.
    """
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    cls = validator_for(schema)
    try:
        cls.check_schema(schema)
    except SchemaError:
        log.debug("toolnexus: an elicitation schema is not valid JSON Schema; not checked")
        return None
    errors = sorted(cls(schema).iter_errors(content), key=lambda e: list(e.path))
    if not errors:
        return None
    first = errors[0]
    where = "/".join(str(p) for p in first.path) or "(root)"
    return f"{where}: fails {first.validator!r}"


async def ask_inline(wait_for: WaitFor, request: Request) -> Answer:
    """Ask the host's ``wait_for`` and return its `Answer`, never raising for its mistakes.

    A Request already past ``expiresAt`` is ``expired`` without asking. A ``wait_for`` that
    raises, returns something that is not an Answer, or answers another id is logged and
    treated as ``cancelled``, so the server is never left waiting on a broken host callback.
    """
    if is_expired(request):
        return expired_decline(request.id)
    try:
        value: Any = wait_for(request)
        if inspect.isawaitable(value):
            value = await value
        answer = value if isinstance(value, Answer) else Answer.from_dict(value)
    except Exception as exc:
        log.warning(
            "toolnexus: wait_for failed on elicitation %s (%s); cancelling it",
            request.id,
            type(exc).__name__,
        )
        return cancelled_answer(request.id)
    if answer.id != request.id:
        log.warning(
            "toolnexus: wait_for answered id %r for elicitation %s; cancelling it",
            answer.id,
            request.id,
        )
        return cancelled_answer(request.id)
    return answer
