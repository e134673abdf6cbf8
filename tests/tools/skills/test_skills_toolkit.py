"""The skill source inside a `Toolkit`: routed by name, arguments checked by its schema."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from toolnexus.toolkit import Toolkit
from toolnexus.tools.skills import load_skills

WriteSkill = Callable[..., Path]


async def toolkit_over(tmp_path: Path) -> Toolkit:
    source = await load_skills(skills_dir=str(tmp_path))
    assert source.tool is not None
    return Toolkit([source.tool], skills_prompt=source.prompt())


async def test_the_toolkit_routes_skill_calls_to_the_source(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "s", "demo", "A demo")
    toolkit = await toolkit_over(tmp_path)

    result = await toolkit.execute("skill", {"name": "demo"})

    assert not result.is_error
    assert result.output.startswith('<skill_content name="demo">\n# Skill: demo\n\nBody.\n\n')


async def test_the_toolkit_declares_the_skill_tool_for_openai(tmp_path: Path) -> None:
    toolkit = await toolkit_over(tmp_path)

    (declaration,) = toolkit.to_openai()

    assert declaration["function"]["name"] == "skill"
    assert declaration["function"]["parameters"]["required"] == ["name"]


async def test_the_toolkit_rejects_extra_arguments_by_schema(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "s", "demo", "A demo")
    toolkit = await toolkit_over(tmp_path)

    result = await toolkit.execute("skill", {"name": "demo", "extra": 1})

    assert result.is_error
    assert "<skill_content" not in result.output


async def test_the_toolkit_rejects_a_non_string_name_by_schema(tmp_path: Path) -> None:
    toolkit = await toolkit_over(tmp_path)

    result = await toolkit.execute("skill", {"name": 7})

    assert result.is_error
    assert "not found" not in result.output


async def test_the_toolkit_hands_out_the_source_prompt(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "s", "demo", "A demo")
    toolkit = await toolkit_over(tmp_path)

    assert toolkit.skills_prompt().endswith("## Available Skills\n- **demo**: A demo")
