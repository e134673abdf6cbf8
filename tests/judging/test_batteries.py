"""The seven batteries on their own: the state and the byte-pinned questions each one asks, its
verdict for every kind of answer, and its side when the classifier fails (COMPAT §10)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from judging_support import choice_wire, noul_wire, risk_wire

from toolnexus import (
    AgentRouterClassifier,
    Bands,
    ClassifierError,
    ContentGuardClassifier,
    IsCompleteClassifier,
    ModelRouterClassifier,
    SkillRelevanceClassifier,
    ToolGuardClassifier,
    ToolGuardVerdict,
    ToolRelevanceClassifier,
    ToolResultFilterClassifier,
    create_classifier,
    latest_user_text,
    question_wire,
)
from toolnexus.judge_batteries import ROLE_TOOL_GUARD


class Recording:
    """A custom classifier answering from a table (``answers(state, wire questions)``), or
    failing; it keeps what it was asked."""

    def __init__(self, answers: dict[str, Any] | Callable[..., dict[str, Any]] | None) -> None:
        self.asked: list[tuple[Any, dict[str, Any]]] = []
        self.answers = answers
        self.classifier = create_classifier(style="custom", evaluate=self.evaluate)

    def evaluate(self, state: Any, questions: dict[str, Any]) -> dict[str, Any]:
        wire = {k: question_wire(q) for k, q in questions.items()}
        self.asked.append((state, wire))
        if self.answers is None:
            raise ClassifierError("classifier: down")
        table = self.answers(state, wire) if callable(self.answers) else self.answers
        return {"model": "m", "answers": table}


@pytest.mark.parametrize(
    "build",
    [
        ToolGuardClassifier,
        ToolRelevanceClassifier,
        SkillRelevanceClassifier,
        ToolResultFilterClassifier,
        IsCompleteClassifier,
        ContentGuardClassifier,
    ],
)
@pytest.mark.parametrize("on_error", [None, "maybe"])
def test_a_battery_that_must_pick_a_side_refuses_to_be_built_without_one(
    build: Callable[..., object], on_error: str | None
) -> None:
    with pytest.raises(ValueError, match="on_error") as caught:
        build(Recording({}).classifier, on_error=on_error)
    name = build.__name__  # type: ignore[attr-defined]
    assert str(caught.value) == (
        f'{name}: on_error (onError) is required and must be "open" or "closed"'
    )


def test_the_routers_need_no_side() -> None:
    AgentRouterClassifier(Recording({}).classifier)
    ModelRouterClassifier(Recording({}).classifier, [])


# -- the tool guard ----------------------------------------------------------------------------


async def test_the_tool_guard_asks_the_pinned_question_about_the_call() -> None:
    fake = Recording(risk_wire(0.2))
    guard = ToolGuardClassifier(fake.classifier, on_error="closed")
    await guard.check(
        {"name": "transfer", "arguments": {"to": "v-42"}, "description": "Moves money."}
    )
    state, qs = fake.asked[0]
    assert state == {
        "tool_name": "transfer",
        "arguments": {"to": "v-42"},
        "tool_description": "Moves money.",
        "role": ROLE_TOOL_GUARD,
    }
    assert qs["risk"]["instructions"] == (
        "How risky is it to run the call described by `tool_name` with `arguments` without a "
        "human approving it?"
    )
    assert len(qs["risk"]["criteria"]) == 4
    assert qs["risk"]["criteria"][3].startswith("destructive:")


@pytest.mark.parametrize(
    ("answers", "action", "reason", "sure"),
    [
        (risk_wire(0.2), "allow", "low risk", True),
        (risk_wire(1.5), "ask", "medium risk", True),
        (risk_wire(2.49), "ask", "medium risk", True),
        (risk_wire(2.5), "deny", "high risk", True),
        (risk_wire(0.1, confidence=0.7), "ask", "uncertain", False),
        ({}, "ask", "missing answer", False),
        ({"risk": noul_wire(0.1)}, "ask", "missing answer", False),
    ],
)
async def test_the_tool_guard_reads_the_risk_level(
    answers: dict[str, Any], action: str, reason: str, sure: bool
) -> None:
    verdict = await ToolGuardClassifier(Recording(answers).classifier, on_error="closed").check(
        {"name": "rm", "arguments": {}}
    )
    assert (verdict.action, verdict.reason, verdict.sure, verdict.error) == (
        action,
        reason,
        sure,
        None,
    )


async def test_the_tool_guard_takes_its_own_thresholds_bands_and_role() -> None:
    fake = Recording(risk_wire(1.2, confidence=0.6))
    guard = ToolGuardClassifier(
        fake.classifier,
        on_error="closed",
        ask_at=1.0,
        deny_at=2.0,
        bands=Bands(0.3, 0.5),
        role="CI",
    )
    verdict = await guard.check({"name": "rm", "arguments": {}})
    assert (verdict.action, verdict.reason) == ("ask", "medium risk")
    assert fake.asked[0][0]["role"] == "CI"


@pytest.mark.parametrize(("side", "action"), [("open", "allow"), ("closed", "deny")])
async def test_the_tool_guard_falls_to_its_side_when_the_classifier_fails(
    side: str, action: str
) -> None:
    verdict = await ToolGuardClassifier(Recording(None).classifier, on_error=side).check(
        {"name": "rm", "arguments": {}}
    )
    assert (verdict.action, verdict.reason, verdict.risk, verdict.calibrated) == (
        action,
        "classifier error",
        None,
        False,
    )
    assert verdict.error == "classifier: down"


# -- relevance ---------------------------------------------------------------------------------

TOOLS = [
    {"name": "read_file", "description": "Reads a file."},
    {"name": "send_email", "description": "Sends an email."},
    {"name": "search_web", "description": ""},
]


async def test_tool_relevance_drops_only_a_confident_no() -> None:
    fake = Recording({"read_file": noul_wire(0.5), "send_email": noul_wire(0.04)})
    verdict = await ToolRelevanceClassifier(fake.classifier, on_error="open").select(
        "summarise", TOOLS
    )
    assert (verdict.selected, verdict.dropped) == (["read_file", "search_web"], ["send_email"])
    state, qs = fake.asked[0]
    assert state == {
        "user_request": "summarise",
        "role": "You decide which tools an AI agent needs for the user's request, so the tools "
        "it does not need can be left out.",
    }
    assert qs["read_file"] == {
        "type": "noul",
        "instructions": "Is the tool `read_file` needed for the request in `user_request`? "
        "The tool: Reads a file.",
        "criteria": {
            "true": "the request cannot be done well without this tool",
            "false": "the request can be done without this tool",
        },
    }
    assert qs["search_web"]["instructions"].endswith("in `user_request`?")


async def test_skill_relevance_asks_about_skills() -> None:
    fake = Recording({"pdf": noul_wire(0.9), "release": noul_wire(0.02)})
    skills = [
        {"name": "pdf", "description": "PDF tables."},
        {"name": "release", "description": "Ship."},
    ]
    verdict = await SkillRelevanceClassifier(fake.classifier, on_error="open").select(
        "tables", skills
    )
    assert (verdict.selected, verdict.dropped) == (["pdf"], ["release"])
    assert fake.asked[0][1]["pdf"]["instructions"] == (
        "Is the skill `pdf` relevant to the request in `user_request`? The skill: PDF tables."
    )
    assert fake.asked[0][1]["pdf"]["criteria"]["false"] == "the skill is unrelated to this request"


@pytest.mark.parametrize(("side", "selected"), [("open", 3), ("closed", 0)])
async def test_relevance_keeps_all_or_none_when_the_classifier_fails(
    side: str, selected: int
) -> None:
    verdict = await ToolRelevanceClassifier(Recording(None).classifier, on_error=side).select(
        "x", TOOLS
    )
    assert (len(verdict.selected), len(verdict.dropped), verdict.calibrated) == (
        selected,
        3 - selected,
        False,
    )


async def test_relevance_without_items_asks_nothing() -> None:
    fake = Recording({})
    verdict = await ToolRelevanceClassifier(fake.classifier, on_error="open").select("x", [])
    assert (verdict.selected, verdict.dropped, fake.asked) == ([], [], [])


async def test_the_result_filter_keeps_the_chunks_that_help() -> None:
    fake = Recording({"0": noul_wire(0.95), "1": noul_wire(0.03)})
    verdict = await ToolResultFilterClassifier(fake.classifier, on_error="open").filter(
        {"tool": "changelog"}, ["2.4.0 fixes checkout", "the office moves", "upgrade with npm"]
    )
    assert (verdict.kept, verdict.dropped) == ([0, 2], [1])
    state, qs = fake.asked[0]
    assert state["chunks"] == {
        "0": "2.4.0 fixes checkout",
        "1": "the office moves",
        "2": "upgrade with npm",
    }
    assert qs["1"]["instructions"] == "Is `chunks.1` relevant to `query`?"


@pytest.mark.parametrize(
    ("answers", "complete", "band"),
    [
        ({"complete": noul_wire(0.91)}, True, "yes"),
        ({"complete": noul_wire(0.7)}, False, "uncertain"),
        ({}, False, "uncertain"),
    ],
)
async def test_an_answer_is_complete_only_on_a_confident_yes(
    answers: dict[str, Any], complete: bool, band: str
) -> None:
    verdict = await IsCompleteClassifier(Recording(answers).classifier, on_error="closed").check(
        "t", "a"
    )
    assert (verdict.complete, verdict.band) == (complete, band)


@pytest.mark.parametrize(("side", "complete"), [("open", True), ("closed", False)])
async def test_completion_falls_to_its_side_on_failure(side: str, complete: bool) -> None:
    verdict = await IsCompleteClassifier(Recording(None).classifier, on_error=side).check("t", "a")
    assert (verdict.complete, verdict.p, verdict.error is not None) == (complete, None, True)


# -- routers -----------------------------------------------------------------------------------

TREE: list[dict[str, Any]] = [
    {
        "name": "support",
        "description": "Paying customers.",
        "agents": [
            {"name": "billing", "description": "Refunds."},
            {"name": "tech", "description": "Bugs."},
        ],
    },
    {"name": "growth", "description": "Leads."},
    {"name": "support", "description": "A duplicate that must be ignored.", "agents": []},
]


def by_level(top: dict[str, Any], second: dict[str, Any]) -> Callable[..., dict[str, Any]]:
    def answers(state: Any, qs: dict[str, Any]) -> dict[str, Any]:
        return top if "growth" in qs["agent"]["criteria"] else second

    return answers


async def test_the_agent_router_descends_one_sure_level_at_a_time() -> None:
    fake = Recording(
        by_level(
            {"agent": choice_wire("support", 0.9, {"support": 0.9, "growth": 0.1})},
            {"agent": choice_wire("billing", 0.88, {"billing": 0.88, "tech": 0.12})},
        )
    )
    verdict = await AgentRouterClassifier(fake.classifier).pick("refund me", TREE, "triage")
    assert (verdict.agent, verdict.path, verdict.sure) == ("billing", ["support", "billing"], True)
    assert verdict.probabilities == {"billing": 0.88, "tech": 0.12}
    assert fake.asked[0][1]["agent"]["criteria"] == {
        "support": "Paying customers.",
        "growth": "Leads.",
    }
    assert fake.asked[0][1]["agent"]["instructions"] == "Which agent should handle `task`?"


@pytest.mark.parametrize(
    "second",
    [
        {"agent": choice_wire("billing", 0.55, {"billing": 0.55, "tech": 0.45})},  # unsure
        {"agent": choice_wire("legal", 0.95, {"legal": 0.95, "tech": 0.05})},  # not an option
        {},  # unanswered
    ],
)
async def test_the_agent_router_falls_back_keeping_the_sure_path(second: dict[str, Any]) -> None:
    fake = Recording(
        by_level({"agent": choice_wire("support", 0.9, {"support": 0.9, "growth": 0.1})}, second)
    )
    verdict = await AgentRouterClassifier(fake.classifier).pick("refund me", TREE, "triage")
    assert (verdict.agent, verdict.path, verdict.sure) == ("triage", ["support"], False)


async def test_the_agent_router_falls_back_when_the_classifier_fails() -> None:
    verdict = await AgentRouterClassifier(Recording(None).classifier).pick("x", TREE, "triage")
    assert (verdict.agent, verdict.probabilities, verdict.calibrated) == ("triage", None, False)


MODELS = [{"id": "small", "description": "cheap"}, {"id": "large", "description": "dear"}]


@pytest.mark.parametrize(
    ("answer", "model", "routed"),
    [
        (choice_wire("small", 0.91, {"small": 0.91, "large": 0.09}), "small", True),
        (choice_wire("small", 0.8, {"small": 0.52, "large": 0.48}), "configured", False),
        (choice_wire("small", 0.6, {"small": 0.6, "large": 0.4}), "configured", False),
    ],
)
async def test_the_model_router_routes_only_when_sure(
    answer: dict[str, Any], model: str, routed: bool
) -> None:
    verdict = await ModelRouterClassifier(Recording({"model": answer}).classifier, MODELS).pick(
        "hi", "configured"
    )
    assert (verdict.model, verdict.routed) == (model, routed)


async def test_the_model_router_without_models_asks_nothing() -> None:
    fake = Recording({})
    verdict = await ModelRouterClassifier(fake.classifier).pick("hi", "configured")
    assert (verdict.model, fake.asked) == ("configured", [])


# -- the content guard -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answers", "action", "flagged", "uncertain"),
    [
        ({"harmful": noul_wire(0.02), "prompt_injection": noul_wire(0.05)}, "allow", [], []),
        (
            {"harmful": noul_wire(0.9), "prompt_injection": noul_wire(0.5)},
            "block",
            ["harmful"],
            ["prompt_injection"],
        ),
        (
            {"harmful": noul_wire(0.55), "prompt_injection": noul_wire(0.01)},
            "review",
            [],
            ["harmful"],
        ),
        ({"harmful": noul_wire(0.01)}, "review", [], ["prompt_injection"]),
    ],
)
async def test_the_content_guard_blocks_reviews_or_allows(
    answers: dict[str, Any], action: str, flagged: list[str], uncertain: list[str]
) -> None:
    fake = Recording(answers)
    verdict = await ContentGuardClassifier(fake.classifier, on_error="closed").check("text")
    assert (verdict.action, verdict.flagged, verdict.uncertain) == (action, flagged, uncertain)
    assert list(fake.asked[0][1]) == ["harmful", "prompt_injection"]
    assert "criteria" not in fake.asked[0][1]["harmful"]


async def test_the_content_guard_takes_its_own_dimensions() -> None:
    fake = Recording({"spam": noul_wire(0.88)})
    dims = [{"name": "spam", "instructions": "Is `text` unsolicited advertising?"}]
    verdict = await ContentGuardClassifier(fake.classifier, on_error="open", dimensions=dims).check(
        "buy"
    )
    assert (verdict.action, verdict.scores) == ("block", {"spam": 0.88})


@pytest.mark.parametrize(("side", "action"), [("open", "allow"), ("closed", "block")])
async def test_the_content_guard_falls_to_its_side_on_failure(side: str, action: str) -> None:
    verdict = await ContentGuardClassifier(Recording(None).classifier, on_error=side).check("x")
    assert (verdict.action, verdict.flagged, verdict.scores) == (action, [], {})


def test_a_verdict_is_plain_data() -> None:
    verdict = dataclasses.asdict(ToolGuardVerdict("allow", "low risk", 0.1, True))
    assert verdict == {
        "action": "allow",
        "reason": "low risk",
        "risk": 0.1,
        "sure": True,
        "calibrated": True,
        "error": None,
        "decision": None,
    }


# -- the latest user text ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "want"),
    [
        ([{"role": "system", "content": "s"}, {"role": "user", "content": "hello"}], "hello"),
        ([{"role": "user", "content": "first"}, {"role": "user", "content": "second"}], "second"),
        (
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "a"},
                        {"type": "image_url"},
                        {"type": "text", "text": "b"},
                    ],
                }
            ],
            "a\nb",
        ),
        (
            [
                {"role": "user", "content": "do it"},
                {"role": "user", "content": [{"type": "tool_result", "content": "done"}]},
            ],
            "do it",
        ),
        ([{"role": "user", "content": "go"}, {"role": "tool", "content": "r"}], "go"),
        ([{"role": "system", "content": "s"}], ""),
    ],
)
def test_the_latest_user_text_skips_what_holds_no_text(messages: list[Any], want: str) -> None:
    assert latest_user_text(messages) == want
