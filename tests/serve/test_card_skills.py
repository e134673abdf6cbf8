"""The card tells the truth: a served toolkit's card lists its SKILL.md skills and its tools
(name and description, nothing else), read through the a2a-sdk's own card resolver; the
profile's ``tools: false`` and ``skills`` filter; nothing secret of a tool reaches the card."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver

from toolnexus import create_client, create_toolkit, define_tool, http_tool
from toolnexus.errors import UsageError
from toolnexus.serve.card import check_a2a_config
from toolnexus.testing import ScriptedModel, text

SECRET = "tok-3c1d2e9f8a7b6c5d4e3f"


@define_tool
def lookup(order: str) -> str:
    """Look up an order's status."""
    return f"order {order}: shipped"


async def card_of(tmp_path: Path, a2a: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, str]:
    """The card of a served toolkit (a SKILL.md skill, a native tool, an HTTP tool whose header
    names a secret from the environment; the built-ins on), as the a2a-sdk resolves it and as raw
    JSON text."""
    monkeypatch.setenv("ORDERS_TOKEN", SECRET)
    skill = tmp_path / "skills" / "tone"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: tone\ndescription: House style.\n---\nBe kind.\n")
    orders = http_tool(
        "orders",
        "Fetch an order from the shop.",
        "GET",
        "http://127.0.0.1:9/internal/orders/{id}",
        headers={"Authorization": "Bearer ${ORDERS_TOKEN}"},
        input_schema={"type": "object", "properties": {"id": {"type": "string"}}},
    )
    tk = await create_toolkit(extra_tools=[lookup, orders], skills_dir=str(tmp_path / "skills"))
    async with ScriptedModel(default=text("ok")) as model:
        client = create_client(base_url=model.openai_base_url, model="m", api_key="k")
        async with client, await tk.serve("127.0.0.1:0", client=client, a2a=a2a) as served:
            async with httpx.AsyncClient() as http:
                card = await A2ACardResolver(http, served.url).get_agent_card()
                raw = (await http.get(served.url + "/.well-known/agent-card.json")).text
    return card, raw


async def test_a_served_toolkit_lists_its_skills_and_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    card, raw = await card_of(tmp_path, {"name": "shop"}, monkeypatch)
    listed = [(s.id, s.name, s.description, list(s.tags)) for s in card.skills]
    assert listed == [
        ("tone", "tone", "House style.", []),
        ("lookup", "lookup", "Look up an order's status.", ["tool"]),
        ("orders", "orders", "Fetch an order from the shop.", ["tool"]),
    ]
    for hidden in (SECRET, "ORDERS_TOKEN", "/internal/orders", "127.0.0.1:9", "properties"):
        assert hidden not in raw  # no header, URL or schema of a tool


async def test_the_profile_can_keep_tools_off_the_card_or_filter_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    card, _ = await card_of(tmp_path, {"tools": False}, monkeypatch)
    assert [s.id for s in card.skills] == ["tone"]  # the 0.21 card: SKILL.md skills only
    card, _ = await card_of(tmp_path / "2", {"skills": ["lookup"]}, monkeypatch)
    assert [s.id for s in card.skills] == ["lookup"]


@pytest.mark.parametrize("bad", [{"tools": "yes"}, {"tools": 1}])
def test_a_tools_switch_that_is_not_a_boolean_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(UsageError, match=r"a2a\.tools must be true or false"):
        check_a2a_config(bad)
