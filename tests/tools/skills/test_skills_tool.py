"""The ``skill`` tool: its declaration and its byte-exact output (CONTRACT §3, S4, S5)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolnexus._types import Tool, ToolResult
from toolnexus.tools.skills import SKILL_TOOL_DESCRIPTION, SkillDef, SkillSource, load_skills

WriteSkill = Callable[..., Path]

RELATIVE = (
    "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory."
)


async def the_tool(**options: Any) -> Tool:
    source: SkillSource = await load_skills(**options)
    assert source.tool is not None
    return source.tool


async def call(tool: Tool, name: object) -> ToolResult:
    result = await tool.execute({"name": name}, None)
    assert isinstance(result, ToolResult)
    return result


def fs_output(name: str, body: str, folder: Path, files: list[Path]) -> str:
    file_lines = "\n".join(f"<file>{f}</file>" for f in files)
    return (
        f'<skill_content name="{name}">\n'
        f"# Skill: {name}\n"
        "\n"
        f"{body}\n"
        "\n"
        f"Base directory for this skill: file://{folder}\n"
        f"{RELATIVE}\n"
        "Note: file list is sampled.\n"
        "\n"
        "<skill_files>\n"
        f"{file_lines}\n"
        "</skill_files>\n"
        "</skill_content>"
    )


# --- declaration ----------------------------------------------------------------------------


async def test_the_tool_is_named_skill_with_source_skill(tmp_path: Path) -> None:
    tool = await the_tool(skills_dir=str(tmp_path))

    assert (tool.name, tool.source) == ("skill", "skill")


async def test_the_description_is_the_three_pinned_paragraphs(tmp_path: Path) -> None:
    tool = await the_tool(skills_dir=str(tmp_path))

    assert tool.description == SKILL_TOOL_DESCRIPTION
    assert SKILL_TOOL_DESCRIPTION == (
        "Load a specialized skill when the task at hand matches one of the skills listed in "
        "the system prompt.\n"
        "\n"
        "Use this tool to inject the skill's instructions and resources into current "
        "conversation. The output may contain detailed workflow guidance as well as references "
        "to scripts, files, etc in the same directory as the skill.\n"
        "\n"
        "The skill name must match one of the skills listed in your system prompt."
    )


async def test_the_input_schema_takes_one_required_name(tmp_path: Path) -> None:
    tool = await the_tool(skills_dir=str(tmp_path))

    assert tool.input_schema == {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "The name of the skill to load"}},
        "required": ["name"],
        "additionalProperties": False,
    }


async def test_each_tool_gets_its_own_schema_object(tmp_path: Path) -> None:
    first = await the_tool(skills_dir=str(tmp_path))
    second = await the_tool(skills_dir=str(tmp_path))

    first.input_schema["properties"]["extra"] = {}

    assert "extra" not in second.input_schema["properties"]


# --- folder skills --------------------------------------------------------------------------


async def test_a_folder_skill_renders_byte_exact(tmp_path: Path, write_skill: WriteSkill) -> None:
    folder = tmp_path / "pdf"
    write_skill(folder, "pdf", "Read PDFs", "\n\n  # PDF\n\nStep one.\n  \n")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "run.sh").write_text("echo\n")
    (folder / "notes.md").write_text("n\n")
    tool = await the_tool(skills_dir=str(tmp_path))

    result = await call(tool, "pdf")

    assert not result.is_error
    assert result.output == fs_output(
        "pdf",
        "# PDF\n\nStep one.",
        folder,
        [folder / "notes.md", folder / "scripts" / "run.sh"],
    )


async def test_a_folder_skill_with_no_other_files_keeps_an_empty_block(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    folder = tmp_path / "solo"
    write_skill(folder, "solo", body="Only me.")
    tool = await the_tool(skills_dir=str(tmp_path))

    result = await call(tool, "solo")

    assert result.output.endswith(
        "Note: file list is sampled.\n\n<skill_files>\n\n</skill_files>\n</skill_content>"
    )
    assert result.output == fs_output("solo", "Only me.", folder, [])


async def test_an_empty_body_leaves_an_empty_line(tmp_path: Path, write_skill: WriteSkill) -> None:
    folder = tmp_path / "empty"
    write_skill(folder, "empty", body="   \n\n")
    tool = await the_tool(skills_dir=str(tmp_path))

    result = await call(tool, "empty")

    assert result.output.startswith(
        '<skill_content name="empty">\n# Skill: empty\n\n\n\nBase directory for this skill: '
    )


async def test_the_metadata_names_the_skill_and_its_folder(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "m", "meta")
    tool = await the_tool(skills_dir=str(tmp_path))

    result = await call(tool, "meta")

    assert result.metadata == {"name": "meta", "dir": str(tmp_path / "m")}


async def test_the_base_is_a_percent_encoded_file_url(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "my skill#1", "spaced")
    tool = await the_tool(skills_dir=str(tmp_path))

    result = await call(tool, "spaced")

    assert f"Base directory for this skill: file://{tmp_path}/my%20skill%231\n" in result.output


async def test_the_sample_is_capped_at_ten_by_default(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    folder = tmp_path / "many"
    write_skill(folder, "many")
    for i in range(12):
        (folder / f"f{i:02}.txt").write_text("x")
    tool = await the_tool(skills_dir=str(tmp_path))

    result = await call(tool, "many")

    listed = [line for line in result.output.split("\n") if line.startswith("<file>")]
    assert listed == [f"<file>{folder / f'f{i:02}.txt'}</file>" for i in range(10)]


async def test_a_positive_sample_limit_caps_the_list(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    folder = tmp_path / "many"
    write_skill(folder, "many")
    for i in range(5):
        (folder / f"f{i}.txt").write_text("x")
    tool = await the_tool(skills_dir=str(tmp_path), sample_limit=2)

    result = await call(tool, "many")

    assert result.output == fs_output(
        "many", "Body.", folder, [folder / "f0.txt", folder / "f1.txt"]
    )


async def test_a_sample_limit_of_minus_one_drops_the_note_and_the_block(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    folder = tmp_path / "quiet"
    write_skill(folder, "quiet")
    (folder / "f.txt").write_text("x")
    tool = await the_tool(skills_dir=str(tmp_path), sample_limit=-1)

    result = await call(tool, "quiet")

    assert result.output == (
        '<skill_content name="quiet">\n# Skill: quiet\n\nBody.\n\n'
        f"Base directory for this skill: file://{folder}\n{RELATIVE}\n</skill_content>"
    )


async def test_the_sample_recurses_sorts_by_relative_path_and_skips_every_skill_md(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    folder = tmp_path / "tree"
    write_skill(folder, "tree")
    write_skill(folder / "nested", "nested")
    for rel in ["z.txt", "a/b.txt", "a.txt", "nested/n.txt"]:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text("x")
    tool = await the_tool(skills_dir=str(tmp_path))

    result = await call(tool, "tree")

    expected = ["a.txt", "a/b.txt", "nested/n.txt", "z.txt"]  # one global code-point sort
    assert result.output == fs_output("tree", "Body.", folder, [folder / p for p in expected])


async def test_the_sample_follows_symlinks_and_survives_a_cycle(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    folder = tmp_path / "skills" / "linky"
    write_skill(folder, "linky")
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "logo.svg").write_text("<svg/>")
    (tmp_path / "data.csv").write_text("a,b")
    (folder / "assets").symlink_to(tmp_path / "assets", target_is_directory=True)
    (folder / "data.csv").symlink_to(tmp_path / "data.csv")
    (folder / "loop").symlink_to(folder, target_is_directory=True)
    (folder / "dangling").symlink_to(tmp_path / "nothing")
    tool = await the_tool(skills_dir=str(tmp_path / "skills"))

    result = await call(tool, "linky")

    expected = [folder / "assets" / "logo.svg", folder / "data.csv"]
    assert result.output == fs_output("linky", "Body.", folder, expected)


async def test_the_sample_is_taken_at_call_time(tmp_path: Path, write_skill: WriteSkill) -> None:
    folder = tmp_path / "live"
    write_skill(folder, "live")
    tool = await the_tool(skills_dir=str(tmp_path))
    (folder / "late.txt").write_text("x")

    result = await call(tool, "live")

    assert f"<file>{folder / 'late.txt'}</file>" in result.output


async def test_a_symlinked_skill_file_uses_the_folder_of_the_link(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    shared = write_skill(tmp_path / "store", "linked", body="Shared body.")
    (tmp_path / "store" / "not-mine.txt").write_text("x")
    folder = tmp_path / "skills" / "linked"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").symlink_to(shared)
    (folder / "mine.txt").write_text("x")
    tool = await the_tool(skills_dir=str(tmp_path / "skills"))

    result = await call(tool, "linked")

    assert result.output == fs_output("linked", "Shared body.", folder, [folder / "mine.txt"])


async def test_an_odd_name_is_rendered_verbatim(tmp_path: Path, write_skill: WriteSkill) -> None:
    folder = tmp_path / "odd"
    write_skill(folder, "'Ünï <c&d>'")
    tool = await the_tool(skills_dir=str(tmp_path))

    result = await call(tool, "Ünï <c&d>")

    assert result.output == fs_output("Ünï <c&d>", "Body.", folder, [])


# --- unknown names --------------------------------------------------------------------------


async def test_an_unknown_name_is_an_error_listing_the_sorted_names(
    tmp_path: Path, write_skill: WriteSkill
) -> None:
    write_skill(tmp_path / "1", "zeta")
    write_skill(tmp_path / "2", "alpha")
    tool = await the_tool(skills_dir=str(tmp_path))

    result = await call(tool, "nope")

    assert result.is_error
    assert result.output == 'Skill "nope" not found. Available skills: alpha, zeta'


async def test_an_unknown_name_with_no_skills_says_none(tmp_path: Path) -> None:
    tool = await the_tool(skills_dir=str(tmp_path))

    result = await call(tool, "x")

    assert (result.output, result.is_error) == (
        'Skill "x" not found. Available skills: none',
        True,
    )


async def test_names_match_exactly(tmp_path: Path, write_skill: WriteSkill) -> None:
    write_skill(tmp_path / "a", "Exact")
    tool = await the_tool(skills_dir=str(tmp_path))

    result = await call(tool, " exact")

    assert result.is_error


async def test_a_non_string_name_is_looked_up_as_text(tmp_path: Path) -> None:
    tool = await the_tool(skills=[SkillDef(name="42", content="c")])

    result = await call(tool, 42)

    assert not result.is_error
    assert result.output.startswith('<skill_content name="42">')


async def test_a_missing_name_argument_is_an_error(tmp_path: Path) -> None:
    tool = await the_tool(skills=[SkillDef(name="a", content="c")])

    result = await tool.execute({}, None)

    assert result.output == 'Skill "" not found. Available skills: a'


# --- data skills (S4) -----------------------------------------------------------------------


async def test_a_data_skill_with_resources_uses_its_logical_base() -> None:
    tool = await the_tool(
        skills=[SkillDef(name="tone", content="\n Write plainly. \n", resources=["a.md", "b/c.md"])]
    )

    result = await call(tool, "tone")

    assert result.output == (
        '<skill_content name="tone">\n'
        "# Skill: tone\n"
        "\n"
        "Write plainly.\n"
        "\n"
        "Base directory for this skill: skill://tone/\n"
        f"{RELATIVE}\n"
        "Note: file list is sampled.\n"
        "\n"
        "<skill_files>\n"
        "<file>a.md</file>\n"
        "<file>b/c.md</file>\n"
        "</skill_files>\n"
        "</skill_content>"
    )


async def test_a_data_skill_without_resources_drops_the_note_and_the_block() -> None:
    tool = await the_tool(skills=[SkillDef(name="bare", content="Do it.")])

    result = await call(tool, "bare")

    assert result.output == (
        '<skill_content name="bare">\n# Skill: bare\n\nDo it.\n\n'
        f"Base directory for this skill: skill://bare/\n{RELATIVE}\n</skill_content>"
    )


async def test_a_data_skill_with_an_empty_resource_list_drops_the_block() -> None:
    tool = await the_tool(skills=[SkillDef(name="bare", content="Do it.", resources=[])])

    result = await call(tool, "bare")

    assert "<skill_files>" not in result.output
    assert "Note: file list is sampled." not in result.output


async def test_a_data_skill_takes_an_explicit_base() -> None:
    tool = await the_tool(
        skills=[SkillDef(name="k", content="c", base="kb://docs/k/", resources=["x"])]
    )

    result = await call(tool, "k")

    assert "Base directory for this skill: kb://docs/k/\n" in result.output
    assert result.metadata == {"name": "k", "dir": "kb://docs/k/"}


async def test_a_data_skill_metadata_dir_is_its_logical_base() -> None:
    tool = await the_tool(skills=[SkillDef(name="t", content="c")])

    result = await call(tool, "t")

    assert result.metadata == {"name": "t", "dir": "skill://t/"}


async def test_the_sample_limit_caps_data_resources() -> None:
    tool = await the_tool(
        skills=[SkillDef(name="r", content="c", resources=["1", "2", "3"])], sample_limit=2
    )

    result = await call(tool, "r")

    assert "<skill_files>\n<file>1</file>\n<file>2</file>\n</skill_files>" in result.output


async def test_data_resources_keep_the_order_given() -> None:
    tool = await the_tool(skills=[SkillDef(name="r", content="c", resources=["z", "a"])])

    result = await call(tool, "r")

    assert "<skill_files>\n<file>z</file>\n<file>a</file>\n</skill_files>" in result.output


async def test_a_sample_limit_of_minus_one_drops_data_resources() -> None:
    tool = await the_tool(
        skills=[SkillDef(name="r", content="c", resources=["1"])], sample_limit=-1
    )

    result = await call(tool, "r")

    assert "<skill_files>" not in result.output
