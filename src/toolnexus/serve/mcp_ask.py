"""A served tool's `Request` as an MCP elicitation, and the client's reply as our `Answer`.

The inverse of `toolnexus.tools.mcp_elicit` (which turns an *upstream* server's elicitation into
a Request): here *we* are the server and ask *our* caller.

- ``kind="authorization"`` with a ``url`` ⇒ URL mode when the client supports it (the human opens
  the link; nothing comes back but accept / decline / cancel), else a form with no fields whose
  message carries the link;
- ``data.schema`` (an object schema) ⇒ a form with that schema; the accepted content is the
  answer's ``data``;
- ``kind="question"`` with ``data.questions`` (the ``question`` built-in) ⇒ one form field per
  question (``q1``, ``q2``, …; options become an ``enum``, ``multiple`` a string array); the
  content maps back to ``{"answers": [...]}`` in question order, the shape the tool expects;
- a plain ``kind="question"`` ⇒ one text field, ``text`` (an ``enum`` of ``data.options`` when
  it has options and takes no free text);
- anything else (an approval, say) ⇒ a form with no fields: accept is yes.

The reply is mapped to what it says — ``accept`` with the form's content, ``decline``,
``cancel`` — and the answer intake (`toolnexus.intake`) makes the `Answer` of it: ``accept`` ⇒
``ok=True`` with the content the kind takes; ``decline`` ⇒ ``ok=False, reason="declined"``;
``cancel`` ⇒ ``ok=False, reason="cancelled"``. Content that fails the requested schema, or that
the request does not take, is an `InvalidAnswer` (the caller decides: a JSON-RPC error on the
durable path, a decline inline).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from ..errors import InvalidAnswer
from ..intake import Approve, Data, Decline, accepts, intake
from ..suspension import Answer, Request
from ..tools.mcp_elicit import schema_problem

if TYPE_CHECKING:
    from mcp_types import ClientCapabilities, ElicitRequest, ElicitResult

__all__ = ["answer_from_reply", "can_ask", "elicit_request", "requested_schema"]

_EMPTY_FORM: dict[str, Any] = {"type": "object", "properties": {}}


def _questions(request: Request) -> list[dict[str, Any]] | None:
    raw = (request.data or {}).get("questions")
    if request.kind != "question" or not isinstance(raw, list):
        return None
    items = cast(list[Any], raw)
    return [cast(dict[str, Any], q) for q in items if isinstance(q, dict)] or None


def _question_field(q: dict[str, Any]) -> dict[str, Any]:
    text = str(q.get("question", ""))
    field: dict[str, Any] = {"type": "string", "title": str(q.get("header") or text)}
    if text:
        field["description"] = text
    options: Any = q.get("options")
    if isinstance(options, list) and options:
        choices = [str(o) for o in cast(list[Any], options)]
        if q.get("multiple") is True:
            return {"type": "array", "title": field["title"], "items": {"enum": choices}}
        field["enum"] = choices
    return field


def requested_schema(request: Request) -> dict[str, Any]:
    """The form schema asking ``request`` (see the module docstring)."""
    questions = _questions(request)
    if questions is not None:
        props = {f"q{i}": _question_field(q) for i, q in enumerate(questions, 1)}
        return {"type": "object", "properties": props, "required": list(props)}
    if request.kind == "question":
        shown = accepts(request)
        field: dict[str, Any] = {"type": "string", "title": request.prompt or "Answer"}
        if shown.options and not shown.custom:
            field["enum"] = list(shown.options)
        return {"type": "object", "properties": {"text": field}, "required": ["text"]}
    schema: Any = (request.data or {}).get("schema")
    if isinstance(schema, dict) and cast(dict[str, Any], schema).get("type") == "object":
        return cast(dict[str, Any], schema)
    return dict(_EMPTY_FORM)


def _url_mode(request: Request) -> bool:
    return request.kind == "authorization" and bool(request.url)


def can_ask(request: Request, capabilities: ClientCapabilities | None) -> bool:
    """Whether a client with ``capabilities`` can be asked ``request`` at all.

    An elicitation capability naming neither mode means form mode (the spec's default). A URL
    request falls back to a form (the link in the message) for a form-only client.
    """
    elicitation = capabilities.elicitation if capabilities is not None else None
    if elicitation is None:
        return False
    if _url_mode(request) and elicitation.url is not None:
        return True
    return elicitation.form is not None or elicitation.url is None


def _supports_url(capabilities: ClientCapabilities | None) -> bool:
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and elicitation.url is not None


def _message(request: Request) -> str:
    if request.url:
        return f"{request.prompt}\n{request.url}" if request.prompt else request.url
    return request.prompt


def elicit_request(
    request: Request, capabilities: ClientCapabilities | None, *, with_id: bool
) -> ElicitRequest:
    """The ``elicitation/create`` request asking ``request`` of a client with ``capabilities``.

    ``with_id`` adds the ``elicitationId`` URL mode requires on handshake-era connections (the
    2026-07-28 protocol dropped it).
    """
    from mcp_types import ElicitRequest, ElicitRequestFormParams, ElicitRequestURLParams

    if _url_mode(request) and _supports_url(capabilities):
        assert request.url is not None
        return ElicitRequest(
            params=ElicitRequestURLParams(
                message=request.prompt or "Open this link to continue",
                url=request.url,
                elicitation_id=request.id if with_id else None,
            )
        )
    return ElicitRequest(
        params=ElicitRequestFormParams(
            message=_message(request), requested_schema=requested_schema(request)
        )
    )


def answer_from_reply(request: Request, reply: ElicitResult | Mapping[str, Any]) -> Answer:
    """The `Answer` an elicitation reply gives ``request``.

    Raises:
        InvalidAnswer: the reply is not an elicitation result, or accepted content fails the
            requested schema (the message names the field and the rule, never the value).
    """
    action, content = _reply_fields(reply)
    if action == "decline":
        return intake(request, Decline())
    if action == "cancel":
        return intake(request, {"id": request.id, "ok": False, "reason": "cancelled"})
    if action != "accept":
        raise InvalidAnswer(f"the elicitation reply has no valid action (got {action!r})")
    schema = requested_schema(request)
    if _url_mode(request) or (schema == _EMPTY_FORM and request.kind != "input"):
        return intake(request, Approve())  # accept is yes (an authorization: done)
    problem = schema_problem(content, schema)
    if problem is not None:
        raise InvalidAnswer(f"the answer does not fit the requested schema: {problem}")
    questions = _questions(request)
    if questions is not None:
        answers = [content.get(f"q{i}") for i in range(1, len(questions) + 1)]
        return intake(request, Data({"answers": answers}))
    return intake(request, Data(content))


def _reply_fields(reply: Any) -> tuple[object, dict[str, Any]]:
    if isinstance(reply, Mapping):
        wire = cast(Mapping[str, Any], reply)
        action, content = wire.get("action"), wire.get("content")
    else:
        action, content = getattr(reply, "action", None), getattr(reply, "content", None)
    if content is None:
        content = {}
    if not isinstance(content, dict):
        raise InvalidAnswer("the elicitation reply's content must be an object")
    return action, cast(dict[str, Any], content)
