"""The answer intake: each kind's accepted replies, the Answer each becomes, and the refusals."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus.errors import AnswerMismatch, InvalidAnswer, ResumeError, UsageError
from toolnexus.intake import (
    NO_WORDS,
    YES_WORDS,
    AnswerRefused,
    Approve,
    Data,
    Decline,
    Text,
    accepts,
    intake,
    yes_or_no,
)
from toolnexus.suspension import Answer, Request

SCHEMA = {
    "type": "object",
    "properties": {"order": {"type": "string"}, "amount": {"type": "integer"}},
    "required": ["order", "amount"],
}

APPROVAL = Request(id="a-1", kind="approval", prompt="Refund 5000 on A-7?")
AUTH = Request(id="z-1", kind="authorization", prompt="Log in", url="https://idp.test/login")
PLAIN = Request(id="p-1", kind="question", prompt="Which env?")
CHOICE = Request(
    id="c-1", kind="question", prompt="Which env?", data={"options": ["staging", "prod"]}
)
QUESTIONS = Request(
    id="q-1",
    kind="question",
    prompt="...",
    data={
        "questions": [
            {"question": "Region?", "options": ["eu", "us"]},
            {"question": "Checks?", "options": ["lint", "tests"], "multiple": True},
            {"question": "Anything else?"},
        ]
    },
)
FORM = Request(id="f-1", kind="input", prompt="Details", data={"schema": SCHEMA})
RELAY = Request(
    id="r-1",
    kind="tool_call",
    prompt="relay",
    data={
        "calls": [
            {"id": "c1", "name": "look", "input": {}, "arguments": "{}"},
            {"id": "c2", "name": "look", "input": {}, "arguments": "{}"},
        ]
    },
)
ACP = Request(
    id="acp-1",
    kind="approval",
    prompt="Write notes.txt",
    data={
        "acp": {
            "options": [
                {"optionId": "yes-once", "name": "Allow once", "kind": "allow_once"},
                {"optionId": "no-once", "name": "Reject", "kind": "reject_once"},
            ]
        }
    },
)


def refused(request: Request, reply: Any, **options: Any) -> AnswerRefused:
    with pytest.raises(AnswerRefused) as caught:
        intake(request, reply, **options)
    return caught.value


# -- approvals -----------------------------------------------------------------------------------


@pytest.mark.parametrize("word", ["yes", "YES", " Yes. ", "approve", "ok!", "y"])
def test_a_yes_word_approves_an_approval(word: str) -> None:
    assert intake(APPROVAL, Text(word)) == Answer(id="a-1", ok=True)


@pytest.mark.parametrize("word", ["no", "No", "NO!", "decline", "deny", "n"])
def test_a_no_word_declines_an_approval(word: str) -> None:
    assert intake(APPROVAL, Text(word)) == Answer(id="a-1", ok=False, reason="declined")


@pytest.mark.parametrize("text", ["maybe", "yes but only 50", "n0", "sure thing", "👍"])
def test_any_other_text_to_an_approval_is_refused_naming_the_accepted_forms(text: str) -> None:
    error = refused(APPROVAL, Text(text))
    assert "neither a yes nor a no word" in str(error)
    assert "It accepts approve, decline (with an optional reason)" in str(error)
    assert isinstance(error, InvalidAnswer)
    assert isinstance(error, UsageError)
    assert isinstance(error, ResumeError)


def test_the_word_lists_do_not_overlap_and_are_documented_case_insensitively() -> None:
    assert not YES_WORDS & NO_WORDS
    assert all(w == w.casefold() for w in YES_WORDS | NO_WORDS)
    assert yes_or_no("Deny.") is False
    assert yes_or_no("Confirm") is True
    assert yes_or_no("yes please") is None


def test_a_decline_keeps_its_reason_as_a_note() -> None:
    assert intake(APPROVAL, Decline("too much")) == Answer(
        id="a-1", ok=False, data={"note": "too much"}, reason="declined"
    )
    assert intake(APPROVAL, Decline("  ")) == Answer(id="a-1", ok=False, reason="declined")


def test_approve_with_edited_arguments_is_checked_against_the_tools_schema() -> None:
    good = intake(APPROVAL, Approve(arguments={"order": "A-7", "amount": 50}), edit_schema=SCHEMA)
    assert good == Answer(id="a-1", ok=True, data={"arguments": {"order": "A-7", "amount": 50}})
    bad = refused(APPROVAL, Approve(arguments={"order": "A-7"}), tool="refund", edit_schema=SCHEMA)
    assert "'amount' is a required property" in str(bad)
    assert list(bad.errors) == ["arguments"]
    assert "'amount' is a required property" in bad.errors["arguments"]


def test_edited_arguments_are_refused_for_a_call_that_takes_none() -> None:
    error = refused(APPROVAL, Approve(arguments={"x": 1}), tool="task", edit_schema=False)
    assert 'the call of tool "task" takes no edited arguments' in str(error)
    assert accepts(APPROVAL, edit_schema=False).forms == (
        "approve",
        "decline (with an optional reason)",
    )


def test_a_wire_answer_to_an_approval_is_checked_like_any_other_reply() -> None:
    assert intake(APPROVAL, {"id": "a-1", "ok": True}) == Answer(id="a-1", ok=True)
    kept = intake(APPROVAL, Answer(id="a-1", ok=True, data={"by": "ann"}))
    assert kept.data == {"by": "ann"}  # an approval's annotations pass to the tool
    with pytest.raises(AnswerRefused):
        intake(APPROVAL, {"id": "a-1", "ok": True, "data": {"arguments": []}})
    with pytest.raises(AnswerMismatch):
        intake(APPROVAL, {"id": "other", "ok": True})
    with pytest.raises(InvalidAnswer, match=r"Answer\.ok must be a boolean"):
        intake(APPROVAL, {"id": "a-1", "ok": "false"})


def test_data_without_a_decision_does_not_approve() -> None:
    error = refused(APPROVAL, Data({"approved": False}))
    assert "data without a decision does not approve" in str(error)
    edited = intake(APPROVAL, Data({"arguments": {"order": "A", "amount": 1}}), edit_schema=SCHEMA)
    assert edited.ok


def test_an_acp_permission_takes_one_of_its_options() -> None:
    assert accepts(ACP).options == ("yes-once", "no-once")
    assert intake(ACP, Approve(option="yes-once")).data == {"optionId": "yes-once"}
    assert intake(ACP, Text("reject")).data == {"optionId": "no-once"}  # by its name
    assert intake(ACP, Text("yes")) == Answer(id="acp-1", ok=True)
    error = refused(ACP, {"id": "acp-1", "ok": True, "data": {"optionId": "made-up"}})
    assert '"made-up" is not one of its options' in str(error)


# -- authorization ------------------------------------------------------------------------------


def test_an_authorization_takes_done_or_decline_only() -> None:
    assert intake(AUTH, Approve()) == Answer(id="z-1", ok=True)
    assert intake(AUTH, Text("done")) == Answer(id="z-1", ok=True)
    assert not intake(AUTH, Text("no")).ok
    assert "does not complete an authorization" in str(refused(AUTH, Data({"token": "x"})))
    refused(AUTH, Approve(arguments={"a": 1}))


# -- questions ----------------------------------------------------------------------------------


def test_a_plain_question_takes_free_text_and_refuses_a_bare_approval() -> None:
    assert intake(PLAIN, Text(" prod ")) == Answer(id="p-1", ok=True, data={"text": "prod"})
    error = refused(PLAIN, Approve())
    assert "a plain approval carries no answer" in str(error)
    assert "It accepts free text or decline" in str(error)
    assert "needs data.text" in str(refused(PLAIN, {"id": "p-1", "ok": True}))
    assert "the reply is empty" in str(refused(PLAIN, Text("   ")))


def test_a_question_with_options_takes_one_of_them() -> None:
    assert intake(CHOICE, Text("PROD")).data == {"text": "prod"}
    error = refused(CHOICE, Text("qa"))
    assert '"qa" is not one of the options "staging", "prod"' in str(error)
    custom = Request(id="c-2", kind="question", prompt="?", data={"options": ["a"], "custom": True})
    assert intake(custom, Text("b")).data == {"text": "b"}


def test_the_question_builtin_takes_one_answer_per_question() -> None:
    answer = intake(QUESTIONS, Data({"answers": ["EU", ["lint", "tests"], "no"]}))
    assert answer == Answer(id="q-1", ok=True, data={"answers": ["eu", ["lint", "tests"], "no"]})
    error = refused(QUESTIONS, Data({"answers": ["mars", [], ""]}))
    assert error.errors == {
        "q0": '"mars" is not one of the options "eu", "us"',
        "q1": "choose one option or more",
        "q2": "an answer is required",
    }
    assert "it asks 3 question(s) and data.answers has 1" in str(
        refused(QUESTIONS, Data({"answers": ["eu"]}))
    )
    assert "a text reply answers one question, and it asks 3" in str(refused(QUESTIONS, Text("eu")))
    assert "a plain approval carries no answer" in str(refused(QUESTIONS, Approve()))


def test_a_one_question_request_takes_a_text_reply() -> None:
    one = Request(
        id="q-2", kind="question", prompt="?", data={"questions": [{"question": "Name?"}]}
    )
    assert intake(one, Text("Ada")).data == {"answers": ["Ada"]}


# -- input -----------------------------------------------------------------------------------------


def test_a_form_takes_data_valid_against_its_schema() -> None:
    assert intake(FORM, Data({"order": "A-7", "amount": 5})).data == {"order": "A-7", "amount": 5}
    error = refused(FORM, Data({"order": "A-7", "amount": "five"}))
    assert error.errors == {"amount": "'five' is not of type 'integer'"}
    missing = refused(FORM, {"id": "f-1", "ok": True})  # ok with no data skips nothing
    assert missing.errors == {"order": "'order' is a required property"}
    assert "a plain approval carries no answer" in str(refused(FORM, Approve()))
    assert "a text reply is not data for its form" in str(refused(FORM, Text("A-7")))


def test_an_input_without_a_schema_takes_any_data_or_text() -> None:
    free = Request(id="i-2", kind="input", prompt="Anything?")
    assert intake(free, Data({"x": [1]})).data == {"x": [1]}
    assert intake(free, Text("hi")).data == {"text": "hi"}


def test_a_broken_schema_is_reported_not_raised() -> None:
    broken = Request(id="i-3", kind="input", prompt="?", data={"schema": {"type": 12}})
    assert "the request's schema is invalid" in str(refused(broken, Data({})))


# -- relay ----------------------------------------------------------------------------------------


def test_a_relay_call_takes_the_output_of_every_call() -> None:
    results = {"results": [{"id": "c1", "output": "a"}, {"id": "c2", "output": "b"}]}
    assert intake(RELAY, Data(results)).data == results
    error = refused(RELAY, Data({"results": [{"id": "c1", "output": "a"}]}))
    assert 'no result for relayed call "c2"' in str(error)
    assert "a plain approval carries no answer" in str(refused(RELAY, Approve()))
    assert not intake(RELAY, Decline()).ok
    one = Request(
        id="r-2",
        kind="tool_call",
        prompt="relay",
        data={"calls": [{"id": "c1", "name": "look", "input": {}, "arguments": "{}"}]},
    )
    assert intake(one, Text("42")).data == {"output": "42"}


# -- other kinds ----------------------------------------------------------------------------------


def test_an_unknown_kind_takes_approve_data_text_or_decline() -> None:
    other = Request(id="o-1", kind="deploy", prompt="Ship?")
    assert intake(other, Approve()) == Answer(id="o-1", ok=True)
    assert intake(other, Text("fine")).data == {"text": "fine"}
    assert intake(other, Data({"when": "now"})).data == {"when": "now"}
    assert intake(other, {"id": "o-1", "ok": True, "data": {"any": 1}}).data == {"any": 1}


def test_every_kind_takes_a_decline_and_a_wire_decline_keeps_its_reason() -> None:
    for request in (APPROVAL, AUTH, PLAIN, CHOICE, QUESTIONS, FORM, RELAY, ACP):
        assert intake(request, Decline("no")).reason == "declined"
        wire = intake(request, {"id": request.id, "ok": False, "reason": "cancelled"})
        assert wire.reason == "cancelled"


def test_accepts_describes_each_kind_for_the_surfaces() -> None:
    assert accepts(APPROVAL, edit_schema=SCHEMA).describe() == (
        "approve, decline (with an optional reason) or approve with edited arguments"
    )
    shown = accepts(APPROVAL).to_dict()
    assert shown["replies"][0] == "approve"
    assert "no" in shown["text"]["no"]
    assert accepts(FORM).to_dict()["schema"] == SCHEMA
    assert accepts(CHOICE).to_dict()["options"] == ["staging", "prod"]
