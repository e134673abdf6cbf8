"""Finding skills on disk: recursive, symlinks followed, cycles cut, sorted, hostile-input safe."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from toolnexus.tools.skills import (
    MAX_SKILL_FILE_BYTES,
    SkillInfo,
    SkillSkip,
    list_skills,
    load_skills,
)

WriteSkill = Callable[..., Path]


def names(skills: list[SkillInfo]) -> list[str]:
    return [s.name for s in skills]


# --- what a skill is ------------------------------------------------------------------------


async def test_a_skill_folder_becomes_a_skill_info(tmp_path: Path, write_skill: WriteSkill) -> None:
    md = write_skill(tmp_path / "pdf", "pdf-tools", "Read PDFs", "\n# PDF\nSteps.\n")

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert inventory.skills == [
        SkillInfo(
            name="pdf-tools", description="Read PDFs", location=str(md), content="\n# PDF\nSteps.\n"
        )
    ]
    assert inventory.skipped == []


async def test_a_skill_without_description_has_none(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "a", "plain")

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert inventory.skills[0].description is None


async def test_a_blank_description_stays_empty_text(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "a", "plain", '"   "')

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert inventory.skills[0].description == ""


async def test_skills_are_found_at_any_depth(tmp_path: Path, write_skill: WriteSkill) -> None:
    write_skill(tmp_path / "top", "top")
    write_skill(tmp_path / "x" / "y" / "z" / "deep", "deep")

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert sorted(names(inventory.skills)) == ["deep", "top"]


async def test_the_root_itself_may_be_a_skill_folder(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path, "root-skill")

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert names(inventory.skills) == ["root-skill"]


async def test_only_files_named_exactly_skill_md_count(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "ok", "ok")
    (tmp_path / "lower").mkdir()
    (tmp_path / "lower" / "skill.md").write_text("---\nname: lower\n---\n")
    (tmp_path / "other.md").write_text("---\nname: other\n---\n")

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert names(inventory.skills) == ["ok"]


async def test_a_relative_root_gives_absolute_locations(
    tmp_path: Path, write_skill: WriteSkill, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_skill(tmp_path / "skills" / "a", "a")
    monkeypatch.chdir(tmp_path)

    inventory = await list_skills(skills_dir="skills")

    assert inventory.skills[0].location == str(tmp_path / "skills" / "a" / "SKILL.md")


async def test_a_path_object_is_accepted_as_root(tmp_path: Path, write_skill: WriteSkill) -> None:
    write_skill(tmp_path / "a", "a")

    inventory = await list_skills(skills_dir=tmp_path)

    assert names(inventory.skills) == ["a"]


# --- order and duplicates -------------------------------------------------------------------


async def test_discovery_order_is_by_depth_then_path(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    for folder in ["c", "a", "b/inner", "B", "a/z"]:
        write_skill(tmp_path / folder, folder.replace("/", "-"))

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert names(inventory.skills) == ["B", "a", "c", "a-z", "b-inner"]


async def test_roots_are_searched_in_the_order_given(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "one" / "s", "from-one")
    write_skill(tmp_path / "two" / "s", "from-two")

    inventory = await list_skills(skills_dir=[str(tmp_path / "two"), str(tmp_path / "one")])

    assert names(inventory.skills) == ["from-two", "from-one"]


async def test_a_duplicate_name_keeps_the_first_and_skips_the_rest(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    first = write_skill(tmp_path / "a", "same", "first")
    second = write_skill(tmp_path / "b", "same", "second")

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert [(s.description, s.location) for s in inventory.skills] == [("first", str(first))]
    assert inventory.skipped == [SkillSkip(location=str(second), reason="duplicate-name")]


async def test_a_duplicate_name_is_logged_as_a_warning(
    tmp_path: Path, write_skill: WriteSkill, caplog: pytest.LogCaptureFixture
) -> None:
    write_skill(tmp_path / "a", "same")
    second = write_skill(tmp_path / "b", "same")

    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        await load_skills(skills_dir=str(tmp_path))

    assert [r.levelno for r in caplog.records] == [logging.WARNING]
    assert f'duplicate skill name "same" ({second}) — keeping first' in caplog.text


async def test_overlapping_roots_read_each_skill_once(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "outer" / "inner" / "s", "once")

    inventory = await list_skills(
        skills_dir=[str(tmp_path / "outer"), str(tmp_path / "outer" / "inner")]
    )

    assert names(inventory.skills) == ["once"]
    assert inventory.skipped == []


async def test_a_missing_root_is_logged_and_passed_over(
    tmp_path: Path, write_skill: WriteSkill, caplog: pytest.LogCaptureFixture
) -> None:
    write_skill(tmp_path / "real" / "s", "real")
    missing = tmp_path / "nope"

    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        inventory = await list_skills(skills_dir=[str(missing), str(tmp_path / "real")])

    assert names(inventory.skills) == ["real"]
    assert f"skills dir not found: {missing}" in caplog.text


async def test_an_empty_root_holds_no_skills(tmp_path: Path) -> None:
    inventory = await list_skills(skills_dir=str(tmp_path))

    assert (inventory.skills, inventory.skipped) == ([], [])


async def test_git_and_node_modules_folders_are_not_searched(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / ".git" / "s", "in-git")
    write_skill(tmp_path / "node_modules" / "pkg", "in-node-modules")
    write_skill(tmp_path / ".hidden" / "s", "hidden-is-fine")

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert names(inventory.skills) == ["hidden-is-fine"]


# --- symlinks -------------------------------------------------------------------------------


async def test_a_symlinked_folder_is_followed(tmp_path: Path, write_skill: WriteSkill) -> None:
    write_skill(tmp_path / "elsewhere" / "linked", "linked")
    root = tmp_path / "root"
    root.mkdir()
    (root / "via-link").symlink_to(tmp_path / "elsewhere", target_is_directory=True)

    inventory = await list_skills(skills_dir=str(root))

    assert names(inventory.skills) == ["linked"]
    assert inventory.skills[0].location == str(root / "via-link" / "linked" / "SKILL.md")


async def test_a_symlinked_skill_file_is_followed(tmp_path: Path, write_skill: WriteSkill) -> None:
    shared = write_skill(tmp_path / "store", "shared-file")
    root = tmp_path / "root"
    (root / "s").mkdir(parents=True)
    (root / "s" / "SKILL.md").symlink_to(shared)

    inventory = await list_skills(skills_dir=str(root))

    assert names(inventory.skills) == ["shared-file"]
    assert inventory.skills[0].location == str(root / "s" / "SKILL.md")


async def test_a_symlinked_root_is_followed(tmp_path: Path, write_skill: WriteSkill) -> None:
    write_skill(tmp_path / "real" / "s", "via-root-link")
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)

    inventory = await list_skills(skills_dir=str(tmp_path / "alias"))

    assert inventory.skills[0].location == str(tmp_path / "alias" / "s" / "SKILL.md")


async def test_a_symlink_cycle_ends_the_walk(tmp_path: Path, write_skill: WriteSkill) -> None:
    write_skill(tmp_path / "a", "a")
    (tmp_path / "a" / "back").symlink_to(tmp_path, target_is_directory=True)
    (tmp_path / "a" / "self").symlink_to(tmp_path / "a", target_is_directory=True)

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert names(inventory.skills) == ["a"]
    assert inventory.skipped == []


async def test_two_links_to_one_folder_yield_the_first_path_reached(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "store" / "s", "one")
    root = tmp_path / "root"
    root.mkdir()
    (root / "b-link").symlink_to(tmp_path / "store", target_is_directory=True)
    (root / "a-link").symlink_to(tmp_path / "store", target_is_directory=True)

    inventory = await list_skills(skills_dir=str(root))

    assert [s.location for s in inventory.skills] == [str(root / "a-link" / "s" / "SKILL.md")]
    assert inventory.skipped == []


# --- hostile input --------------------------------------------------------------------------


async def test_broken_yaml_is_skipped_as_malformed(tmp_path: Path, write_skill: WriteSkill) -> None:
    md = write_skill(tmp_path / "bad", raw="---\nname: [oops\n---\nbody\n")
    write_skill(tmp_path / "good", "good")

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert names(inventory.skills) == ["good"]
    [skip] = inventory.skipped
    assert (skip.location, skip.reason) == (str(md), "malformed-frontmatter")
    assert skip.detail.startswith("while parsing a flow sequence")


async def test_no_name_is_skipped_as_missing_name(tmp_path: Path, write_skill: WriteSkill) -> None:
    md = write_skill(tmp_path / "nameless", None, "has only a description")

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert inventory.skipped == [SkillSkip(location=str(md), reason="missing-name")]


async def test_a_file_without_frontmatter_is_skipped_as_missing_name(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    md = write_skill(tmp_path / "plain", raw="# Just a readme\n")

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert inventory.skipped == [SkillSkip(location=str(md), reason="missing-name")]


async def test_a_blank_name_is_skipped_as_missing_name(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "blank", '"   "')

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert [s.reason for s in inventory.skipped] == ["missing-name"]


async def test_a_numeric_name_is_coerced_to_text(tmp_path: Path, write_skill: WriteSkill) -> None:
    write_skill(tmp_path / "n", "007")
    write_skill(tmp_path / "m", "3.0")

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert names(inventory.skills) == ["3.0", "7"]


async def test_a_list_as_name_is_skipped_as_missing_name(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "list", "[a, b]")

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert [s.reason for s in inventory.skipped] == ["missing-name"]


async def test_a_name_with_a_newline_is_skipped_as_missing_name(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "nl", '"two\\nlines"')

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert inventory.skills == []
    assert [s.reason for s in inventory.skipped] == ["missing-name"]


async def test_a_name_with_odd_printable_characters_is_kept_verbatim(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "odd", "'Ünï <c&d> \"q\" / x: y'")

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert names(inventory.skills) == ['Ünï <c&d> "q" / x: y']


async def test_a_dangling_symlink_named_skill_md_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "SKILL.md").symlink_to(tmp_path / "gone.md")

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert inventory.skipped == [
        SkillSkip(location=str(tmp_path / "s" / "SKILL.md"), reason="unreadable")
    ]


async def test_a_fifo_named_skill_md_is_unreadable_and_does_not_block(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    os.mkfifo(tmp_path / "s" / "SKILL.md")

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert [s.reason for s in inventory.skipped] == ["unreadable"]


async def test_an_unlistable_folder_is_passed_over(tmp_path: Path, write_skill: WriteSkill) -> None:
    write_skill(tmp_path / "ok", "ok")
    (tmp_path / "not-a-dir-link").symlink_to(tmp_path / "missing-dir")

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert names(inventory.skills) == ["ok"]
    assert inventory.skipped == []


async def test_binary_junk_is_unreadable(tmp_path: Path, write_skill: WriteSkill) -> None:
    md = write_skill(tmp_path / "junk", raw=b"---\nname: \xff\xfe\x80junk\n---\n\x00\x9f")

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert inventory.skipped == [SkillSkip(location=str(md), reason="unreadable")]


async def test_a_huge_file_is_unreadable(tmp_path: Path, write_skill: WriteSkill) -> None:
    md = write_skill(tmp_path / "huge", "huge", body="x" * MAX_SKILL_FILE_BYTES)

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert inventory.skipped == [SkillSkip(location=str(md), reason="unreadable")]


async def test_a_file_of_exactly_the_cap_is_read(tmp_path: Path, write_skill: WriteSkill) -> None:
    header = "---\nname: at-cap\n---\n"
    write_skill(tmp_path / "cap", raw=header + "x" * (MAX_SKILL_FILE_BYTES - len(header)))

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert names(inventory.skills) == ["at-cap"]


async def test_skipped_files_are_logged_by_load_skills(
    tmp_path: Path, write_skill: WriteSkill, caplog: pytest.LogCaptureFixture
) -> None:
    md = write_skill(tmp_path / "bad", raw="---\nname: [oops\n---\n")

    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        source = await load_skills(skills_dir=str(tmp_path))

    assert source.skills == {}
    assert f"skill skipped (malformed-frontmatter): {md}" in caplog.text


async def test_every_skip_reason_is_reported_in_walk_order(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "a", "dup")
    write_skill(tmp_path / "b", "dup")
    write_skill(tmp_path / "c", raw="---\n: : :\n---\n")
    write_skill(tmp_path / "d", None)
    write_skill(tmp_path / "e", raw=b"\xff")

    inventory = await list_skills(skills_dir=str(tmp_path))

    assert [(Path(s.location).parent.name, s.reason) for s in inventory.skipped] == [
        ("b", "duplicate-name"),
        ("c", "malformed-frontmatter"),
        ("d", "missing-name"),
        ("e", "unreadable"),
    ]


async def test_a_root_starting_with_a_tilde_is_under_home(
    tmp_path: Path, write_skill: WriteSkill, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_skill(tmp_path / "skills" / "a", "homed")
    monkeypatch.setenv("HOME", str(tmp_path))

    inventory = await list_skills(skills_dir="~/skills")

    assert inventory.skills[0].location == str(tmp_path / "skills" / "a" / "SKILL.md")
