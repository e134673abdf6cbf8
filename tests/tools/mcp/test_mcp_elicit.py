"""The elicitation mapping, as pure functions: elicitation → Request, Answer → ElicitResult."""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as t
import pytest

from toolnexus import Answer, Request
from toolnexus.tools.mcp_elicit import (
    answer_to_elicit_result,
    ask_inline,
    elicitation_to_request,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name"],
}


def form_request() -> Request:
    return elicitation_to_request(
        t.ElicitRequestFormParams(message="Who are you?", requested_schema=SCHEMA)
    )


def test_a_form_elicitation_becomes_an_input_request_with_the_schema() -> None:
    request = form_request()
    assert (request.kind, request.prompt, request.data) == (
        "input",
        "Who are you?",
        {"schema": SCHEMA},
    )
    assert request.id.startswith("elc-")


def test_a_url_elicitation_becomes_an_authorization_request() -> None:
    params = t.ElicitRequestURLParams(message="Log in", url="https://idp/x", elicitation_id="e")
    request = elicitation_to_request(params)
    assert (request.kind, request.url, request.prompt) == (
        "authorization",
        "https://idp/x",
        "Log in",
    )


def test_the_wire_dict_form_is_accepted_and_a_missing_message_is_empty() -> None:
    request = elicitation_to_request({"mode": "form", "requestedSchema": SCHEMA})
    assert (request.kind, request.prompt) == ("input", "")


def test_an_ok_answer_is_accepted_with_its_data() -> None:
    result = answer_to_elicit_result(Answer(id="x", ok=True, data={"name": "Ann"}), form_request())
    assert (result.action, result.content) == ("accept", {"name": "Ann"})


def test_an_answer_that_fails_the_schema_is_declined(caplog: pytest.LogCaptureFixture) -> None:
    answer = Answer(id="x", ok=True, data={"name": "Ann", "age": "very-private-value"})
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        result = answer_to_elicit_result(answer, form_request())
    assert result.action == "decline"
    assert result.content is None
    assert "age: fails 'type'" in caplog.text
    assert "very-private-value" not in caplog.text


def test_an_answer_missing_a_required_field_is_declined() -> None:
    assert answer_to_elicit_result(Answer(id="x", ok=True), form_request()).action == "decline"


def test_a_nested_answer_is_declined_when_no_schema_constrains_it() -> None:
    answer = Answer(id="x", ok=True, data={"deep": {"a": 1}})
    assert answer_to_elicit_result(answer).action == "decline"


def test_an_invalid_schema_does_not_block_the_answer() -> None:
    request = Request(id="r", kind="input", prompt="", data={"schema": {"type": 12}})
    result = answer_to_elicit_result(Answer(id="r", ok=True, data={"a": "b"}), request)
    assert result.action == "accept"


def test_an_accepted_url_elicitation_sends_no_content() -> None:
    request = Request(id="r", kind="authorization", prompt="Log in", url="https://idp/x")
    result = answer_to_elicit_result(Answer(id="r", ok=True, data={"ignored": 1}), request)
    assert (result.action, result.content) == ("accept", None)


@pytest.mark.parametrize(
    ("reason", "action"),
    [("declined", "decline"), ("cancelled", "cancel"), ("expired", "cancel"), (None, "cancel")],
)
def test_a_refusal_declines_only_for_reason_declined(reason: str | None, action: str) -> None:
    result = answer_to_elicit_result(Answer(id="x", ok=False, reason=reason), form_request())
    assert result.action == action


async def test_ask_inline_takes_a_synchronous_wait_for() -> None:
    request = form_request()
    answer = await ask_inline(lambda r: Answer(id=r.id, ok=True, data={"name": "A"}), request)
    assert answer.data == {"name": "A"}


async def test_ask_inline_takes_a_wire_dict_answer() -> None:
    request = form_request()

    async def wait_for(r: Request) -> Any:  # a host may answer with the wire dict
        return {"id": r.id, "ok": False, "reason": "declined"}

    assert await ask_inline(wait_for, request) == Answer(id=request.id, ok=False, reason="declined")


async def test_an_answer_to_another_id_cancels(caplog: pytest.LogCaptureFixture) -> None:
    request = form_request()
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        answer = await ask_inline(lambda r: Answer(id="other", ok=True), request)
    assert (answer.ok, answer.reason) == (False, "cancelled")
    assert "answered id 'other'" in caplog.text


async def test_a_raising_wait_for_cancels_instead_of_hanging_the_server() -> None:
    def wait_for(r: Request) -> Answer:
        raise RuntimeError("ui crashed")

    answer = await ask_inline(wait_for, form_request())
    assert (answer.ok, answer.reason) == (False, "cancelled")


async def test_an_expired_request_is_not_asked() -> None:
    asked: list[Request] = []
    request = Request(id="r", kind="input", prompt="?", expiresAt="2000-01-01T00:00:00Z")
    answer = await ask_inline(lambda r: asked.append(r) or Answer(id=r.id, ok=True), request)
    assert (answer.ok, answer.reason, asked) == (False, "expired", [])
