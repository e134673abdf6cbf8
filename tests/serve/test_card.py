"""The agent card (pure): the contract's defaults, the skills it is given (SKILL.md skills and,
with their tags, tools or a team), the profile's checks."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from toolnexus.errors import UsageError
from toolnexus.serve import build_agent_card
from toolnexus.serve.card import check_a2a_config


@dataclass
class Skill:
    name: str
    description: str | None


SKILLS = [Skill("tone", "House style"), Skill("notes", None)]


def test_the_defaults_apply_only_for_none() -> None:
    card = build_agent_card({}, SKILLS, "http://h:1")
    assert (card["name"], card["description"], card["version"]) == ("toolnexus-agent", "", "0.1.0")
    assert card["protocolVersion"] == "0.3.0"
    assert card["url"] == "http://h:1/"
    assert card["defaultInputModes"] == card["defaultOutputModes"] == ["text"]
    assert card["skills"] == [
        {"id": "tone", "name": "tone", "description": "House style", "tags": []},
        {"id": "notes", "name": "notes", "description": "", "tags": []},
    ]
    assert "provider" not in card
    empty = build_agent_card({"name": "", "description": "", "version": ""}, [], "http://h:1/")
    assert (empty["name"], empty["version"]) == ("", "")


def test_skills_are_filtered_and_the_provider_shown_when_given() -> None:
    provider = {"organization": "Acme", "url": "https://acme.example"}
    card = build_agent_card({"skills": ["notes"], "provider": provider}, SKILLS, "http://h")
    assert [s["id"] for s in card["skills"]] == ["notes"]
    assert card["provider"] == provider
    assert build_agent_card({"skills": []}, SKILLS, "http://h")["skills"] == []


@pytest.mark.parametrize(
    "bad",
    ["yes", 3, {"nmae": "typo"}, {"name": 5}, {"skills": "tone"}, {"skills": [1]}],
)
def test_a_malformed_a2a_profile_is_a_usage_error(bad: object) -> None:
    with pytest.raises(UsageError):
        check_a2a_config(bad)
    assert check_a2a_config(True) == {"streaming": True}


def test_a_served_card_streams_unless_the_profile_says_it_does_not() -> None:
    served = build_agent_card(check_a2a_config({"name": "x"}), [], "http://h")
    assert served["capabilities"]["streaming"] is True
    # the package's builder on its own: a host's endpoint streams only when it says so
    assert build_agent_card({}, [], "http://h")["capabilities"]["streaming"] is False
    off = build_agent_card(check_a2a_config({"streaming": False}), [], "http://h")
    assert off["capabilities"] == {"streaming": False, "pushNotifications": False}
    with pytest.raises(UsageError, match=r"a2a\.streaming must be true or false"):
        check_a2a_config({"streaming": "no"})
