"""load_skills / list_skills: sources, data skills, provider, filter, prompt (CONTRACT §3)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from toolnexus._types import ToolResult
from toolnexus.errors import UsageError
from toolnexus.tools.skills import (
    NO_SKILLS_PROMPT,
    SKILLS_PROMPT_PREAMBLE,
    SkillDef,
    SkillInfo,
    SkillSkip,
    SkillSource,
    list_skills,
    load_skill_source,
    load_skills,
)

WriteSkill = Callable[..., Path]


def names(skills: Iterable[SkillInfo] | Mapping[str, SkillInfo]) -> list[str]:
    found = skills.values() if isinstance(skills, Mapping) else skills
    return [s.name for s in found]


async def loaded_names(source: SkillSource) -> list[str]:
    """The names the tool can load, read back from its not-found message."""
    assert source.tool is not None
    result = await source.tool.execute({"name": "\x00"}, None)
    assert isinstance(result, ToolResult)
    listed = result.output.split("Available skills: ", 1)[1]
    return [] if listed == "none" else listed.split(", ")


def defs(*skill_names: str, description: str | None = "d") -> list[SkillDef]:
    return [SkillDef(name=n, content=f"{n} body", description=description) for n in skill_names]


# --- no source, empty source ----------------------------------------------------------------


async def test_no_source_gives_no_source_to_the_toolkit_loader() -> None:
    assert await load_skill_source() is None


async def test_no_source_still_gives_load_skills_a_tool_that_lists_none() -> None:
    source = await load_skills()

    assert (source.tool.name, source.prompt(), source.skills) == ("skill", NO_SKILLS_PROMPT, {})


async def test_no_source_ignores_a_filter_silently(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        source = await load_skill_source(skills_filter={"x": True})

    assert source is None
    assert caplog.records == []


async def test_an_empty_folder_gives_a_tool_and_the_no_skills_prompt(tmp_path: Path) -> None:
    source = await load_skills(skills_dir=str(tmp_path))

    assert source.tool is not None
    assert source.prompt() == "No skills are currently available."
    assert NO_SKILLS_PROMPT == "No skills are currently available."


async def test_an_empty_skills_list_still_counts_as_a_source() -> None:
    source = await load_skills(skills=[])

    assert source.tool is not None
    assert source.prompt() == NO_SKILLS_PROMPT


# --- the prompt -----------------------------------------------------------------------------


async def test_the_prompt_lists_described_skills_sorted_byte_exact(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "1", "zeta", "Last one")
    write_skill(tmp_path / "2", "alpha", "First one")
    write_skill(tmp_path / "3", "Mid", "Capitals sort first")

    source = await load_skills(skills_dir=str(tmp_path))

    assert source.prompt() == (
        "Skills provide specialized instructions and workflows for specific tasks.\n"
        "Use the skill tool to load a skill when a task matches its description.\n"
        "\n"
        "## Available Skills\n"
        "- **Mid**: Capitals sort first\n"
        "- **alpha**: First one\n"
        "- **zeta**: Last one"
    )


async def test_the_preamble_constant_is_pinned() -> None:
    assert SKILLS_PROMPT_PREAMBLE == (
        "Skills provide specialized instructions and workflows for specific tasks.\n"
        "Use the skill tool to load a skill when a task matches its description."
    )


async def test_undescribed_skills_are_loadable_but_not_listed(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "1", "shown", "Listed")
    write_skill(tmp_path / "2", "hidden")

    source = await load_skills(skills_dir=str(tmp_path))

    assert (
        source.prompt() == SKILLS_PROMPT_PREAMBLE + "\n\n## Available Skills\n- **shown**: Listed"
    )
    assert await loaded_names(source) == ["hidden", "shown"]


async def test_skills_but_none_described_give_the_no_skills_prompt(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "1", "hidden")

    source = await load_skills(skills_dir=str(tmp_path))

    assert source.prompt() == NO_SKILLS_PROMPT


async def test_a_multi_line_description_is_kept_as_written(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "1", raw="---\nname: lit\ndescription: |\n  one\n  two\n---\n")

    source = await load_skills(skills_dir=str(tmp_path))

    assert source.prompt().endswith("## Available Skills\n- **lit**: one\ntwo")


# --- data skills and the provider (S1) ------------------------------------------------------


async def test_data_skills_are_loaded_after_folder_skills(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "f", "from-folder", "disk")

    source = await load_skills(skills_dir=str(tmp_path), skills=defs("from-data"))

    assert names(source.skills) == ["from-folder", "from-data"]


async def test_a_folder_skill_wins_over_a_data_skill_of_the_same_name(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    md = write_skill(tmp_path / "f", "same", "disk")

    source = await load_skills(skills_dir=str(tmp_path), skills=defs("same"))

    assert [(s.location, s.description) for s in source.skills.values()] == [(str(md), "disk")]


async def test_a_data_skill_becomes_a_skill_info_at_its_logical_base() -> None:
    source = await load_skills(
        skills=[SkillDef(name=" t ", content="c", description=" d ", resources=["r"])]
    )

    assert source.skills == {
        "t": SkillInfo(
            name="t",
            description="d",
            location="skill://t/",
            content="c",
            origin="logical",
            resources=("r",),
            base="skill://t/",
        )
    }
    assert source.skills["t"].is_data


async def test_a_folder_skill_is_not_data(tmp_path: Path, write_skill: WriteSkill) -> None:
    write_skill(tmp_path / "f", "f")

    source = await load_skills(skills_dir=str(tmp_path))

    assert not source.skills["f"].is_data
    assert source.skills["f"].origin == "fs"


async def test_a_plain_dict_is_accepted_as_a_data_skill() -> None:
    source = await load_skills(
        skills=[{"name": "d", "content": "c", "description": "x", "resources": ["a"]}]
    )

    assert source.skills["d"].resources == ("a",)


async def test_a_data_skill_with_a_blank_name_is_skipped_as_missing_name() -> None:
    inventory = await list_skills(skills=[SkillDef(name="  ", content="c")])

    assert inventory.skipped == [SkillSkip(location="skill://", reason="missing-name")]


async def test_duplicate_data_skills_keep_the_first() -> None:
    inventory = await list_skills(
        skills=[
            SkillDef(name="a", content="first"),
            SkillDef(name="a", content="second", base="b://a/"),
        ]
    )

    assert [s.content for s in inventory.skills] == ["first"]
    assert inventory.skipped == [SkillSkip(location="b://a/", reason="duplicate-name")]


async def test_a_sync_provider_is_called_once() -> None:
    calls: list[int] = []

    def provider() -> list[SkillDef]:
        calls.append(1)
        return defs("p")

    source = await load_skills(skill_provider=provider)

    assert names(source.skills) == ["p"]
    assert calls == [1]


async def test_an_async_provider_is_awaited_by_the_toolkit_loader() -> None:
    async def provider() -> list[dict[str, Any]]:
        return [{"name": "ap", "content": "c"}]

    source = await load_skill_source(skill_provider=provider)

    assert source is not None
    assert names(source.skills) == ["ap"]


async def test_an_async_provider_given_to_sync_load_skills_is_a_usage_error() -> None:
    async def provider() -> list[dict[str, Any]]:
        return [{"name": "ap", "content": "c"}]

    with pytest.raises(UsageError, match="create_toolkit"):
        load_skills(skill_provider=provider)


async def test_provider_skills_come_after_the_skills_list() -> None:
    source = await load_skills(
        skills=defs("listed", "both"), skill_provider=lambda: defs("both", "provided")
    )

    assert names(source.skills) == ["listed", "both", "provided"]
    assert source.skills["both"].description == "d"


async def test_a_failing_provider_is_isolated_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def provider() -> list[SkillDef]:
        raise RuntimeError("catalog down")

    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        source = await load_skills(skills=defs("kept"), skill_provider=provider)

    assert names(source.skills) == ["kept"]
    assert source.tool is not None
    assert "skill provider failed" in caplog.text
    assert "catalog down" in caplog.text


async def test_a_provider_returning_junk_is_isolated(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        source = await load_skills(skill_provider=lambda: "not a list")  # pyright: ignore[reportArgumentType]

    assert source.skills == {}
    assert "skill provider failed" in caplog.text


async def test_a_provider_returning_a_bad_entry_is_isolated(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        source = await load_skills(skill_provider=lambda: [{"name": "x", "contnet": "typo"}])

    assert source.skills == {}
    assert "skill provider failed" in caplog.text


async def test_a_provider_returning_none_contributes_nothing() -> None:
    source = await load_skills(skill_provider=lambda: None)  # pyright: ignore[reportArgumentType]

    assert (source.skills, source.prompt()) == ({}, NO_SKILLS_PROMPT)


async def test_a_provider_that_is_not_callable_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="skill_provider"):
        await load_skills(skill_provider=defs("x"))  # pyright: ignore[reportArgumentType]


# --- argument checks ------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [-2, True, 1.5, "3"])
async def test_a_bad_sample_limit_is_a_usage_error(limit: Any) -> None:
    with pytest.raises(UsageError, match="sample_limit"):
        await load_skills(skills=[], sample_limit=limit)


async def test_a_bare_string_as_skills_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="skills must be a list"):
        await load_skills(skills="tone")  # pyright: ignore[reportArgumentType]


async def test_a_single_skill_def_as_skills_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="skills must be a list"):
        await load_skills(skills=SkillDef(name="a", content="c"))  # pyright: ignore[reportArgumentType]


async def test_an_unknown_key_in_a_dict_skill_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown key"):
        await load_skills(skills=[{"name": "a", "content": "c", "descripton": "typo"}])


async def test_a_non_string_field_in_a_data_skill_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="content must be a string"):
        await load_skills(skills=[{"name": "a", "content": 3}])


async def test_a_string_as_resources_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="resources"):
        await load_skills(skills=[{"name": "a", "content": "c", "resources": "a.md"}])


async def test_a_non_path_skills_dir_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="skills_dir"):
        await load_skills(skills_dir=3)  # pyright: ignore[reportArgumentType]


async def test_a_non_mapping_filter_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="skills_filter"):
        await load_skills(skills=[], skills_filter=["a"])  # pyright: ignore[reportArgumentType]


# --- skills_filter and disable_skills (S2) --------------------------------------------------


async def test_an_empty_filter_keeps_every_skill() -> None:
    source = await load_skills(skills=defs("a", "b"), skills_filter={})

    assert names(source.skills) == ["a", "b"]


async def test_a_true_entry_makes_the_filter_an_allowlist() -> None:
    source = await load_skills(skills=defs("a", "b", "c"), skills_filter={"b": True, "c": False})

    assert names(source.skills) == ["b"]


async def test_only_false_entries_make_the_filter_a_drop_list() -> None:
    source = await load_skills(skills=defs("a", "b", "c"), skills_filter={"b": False})

    assert names(source.skills) == ["a", "c"]


async def test_the_tool_and_the_prompt_agree_with_the_filter() -> None:
    source = await load_skills(skills=defs("a", "b"), skills_filter={"a": True})

    assert await loaded_names(source) == ["a"]
    assert source.prompt() == SKILLS_PROMPT_PREAMBLE + "\n\n## Available Skills\n- **a**: d"


async def test_unknown_filter_names_are_warned_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        source = await load_skills(
            skills=defs("a"), skills_filter={"zz": False, "yy": False, "a": True}
        )

    assert names(source.skills) == ["a"]
    assert len(caplog.records) == 1
    assert caplog.records[0].getMessage().endswith("match no skill: yy, zz")


async def test_disable_skills_drops_names() -> None:
    source = await load_skills(skills=defs("a", "b"), disable_skills=["a"])

    assert names(source.skills) == ["b"]


async def test_disable_skills_accepts_one_bare_name() -> None:
    source = await load_skills(skills=defs("ab", "a", "b"), disable_skills="ab")

    assert names(source.skills) == ["a", "b"]


async def test_an_explicit_filter_entry_wins_over_disable_skills() -> None:
    source = await load_skills(
        skills=defs("a", "b"), skills_filter={"a": True, "b": True}, disable_skills=["a"]
    )

    assert names(source.skills) == ["a", "b"]


async def test_disable_skills_applies_on_top_of_a_drop_list_filter() -> None:
    source = await load_skills(
        skills=defs("a", "b", "c"), skills_filter={"a": False}, disable_skills=["b"]
    )

    assert names(source.skills) == ["c"]


async def test_unknown_disable_skills_names_are_warned(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        await load_skills(skills=defs("a"), disable_skills=["ghost"])

    assert "match no skill: ghost" in caplog.text


async def test_the_filter_applies_after_dedupe(tmp_path: Path, write_skill: WriteSkill) -> None:
    md = write_skill(tmp_path / "f", "same", "disk")

    source = await load_skills(
        skills_dir=str(tmp_path), skills=defs("same"), skills_filter={"same": True}
    )

    assert [s.location for s in source.skills.values()] == [str(md)]


# --- list_skills (S3) -----------------------------------------------------------------------


async def test_list_skills_is_unfiltered_and_takes_no_filter() -> None:
    inventory = await list_skills(skills=defs("a", "b"))

    assert names(inventory.skills) == ["a", "b"]
    with pytest.raises(TypeError):
        await list_skills(skills=defs("a"), skills_filter={"a": True})  # pyright: ignore[reportCallIssue]


async def test_list_skills_reads_the_provider_too() -> None:
    inventory = await list_skills(skill_provider=lambda: defs("p"))

    assert names(inventory.skills) == ["p"]


async def test_list_skills_with_no_source_is_empty() -> None:
    inventory = await list_skills()

    assert (inventory.skills, inventory.skipped) == ([], [])


async def test_list_skills_does_not_log_skips(
    tmp_path: Path, write_skill: WriteSkill, caplog: pytest.LogCaptureFixture
) -> None:
    write_skill(tmp_path / "x", None)

    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        inventory = await list_skills(skills_dir=str(tmp_path))

    assert [s.reason for s in inventory.skipped] == ["missing-name"]
    assert caplog.records == []
