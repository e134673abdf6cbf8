"""COMPAT §3 (skills) through the public API only: the toolnexus package's call shapes, return
shapes, discovery order, frontmatter rules and sibling sample, on real folders."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn
from toolnexus.testing import ScriptedModel, call, text, tool_calls


def skill(
    folder: Path, name: str | None, description: str | None = None, body: str = "Body.\n"
) -> Path:
    """Write ``folder/SKILL.md`` with a plain header; returns the file."""
    folder.mkdir(parents=True, exist_ok=True)
    header = ""
    if name is not None:
        header += f"name: {name}\n"
    if description is not None:
        header += f"description: {description}\n"
    md = folder / "SKILL.md"
    md.write_text(f"---\n{header}---\n{body}")
    return md


def raw(folder: Path, content: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    md = folder / "SKILL.md"
    md.write_text(content)
    return md


# --- call shapes ----------------------------------------------------------------------------


def test_load_skills_is_sync_and_takes_the_directory_positionally(tmp_path: Path) -> None:
    skill(tmp_path / "a", "alpha", "First")

    source = tn.load_skills(str(tmp_path))

    assert isinstance(source, tn.SkillSource)
    assert list(source.skills) == ["alpha"]
    assert source.skills["alpha"].description == "First"
    assert source.tool.name == "skill"
    assert source.skipped == []


async def test_awaiting_load_skills_still_gives_the_source(tmp_path: Path) -> None:
    skill(tmp_path / "a", "alpha", "First")

    source = await tn.load_skills(str(tmp_path))

    assert list(source.skills) == ["alpha"]


def test_list_skills_is_sync_positional_and_returns_the_inventory(tmp_path: Path) -> None:
    skill(tmp_path / "a", "alpha")
    bad = raw(tmp_path / "b", "---\nname: [oops\n---\n")

    inventory = tn.list_skills(tmp_path)  # a PathLike works too

    assert isinstance(inventory, tn.SkillInventory)
    assert [s.name for s in inventory.skills] == ["alpha"]
    assert [(k.location, k.reason) for k in inventory.skipped] == [
        (str(bad), "malformed-frontmatter")
    ]


async def test_awaiting_list_skills_still_gives_the_inventory(tmp_path: Path) -> None:
    skill(tmp_path / "a", "alpha")

    inventory = await tn.list_skills(str(tmp_path))

    assert [s.name for s in inventory.skills] == ["alpha"]


def test_a_list_of_dirs_is_searched_in_the_order_given(tmp_path: Path) -> None:
    skill(tmp_path / "one" / "s", "same", "from one")
    skill(tmp_path / "two" / "s", "same", "from two")

    source = tn.load_skills([str(tmp_path / "two"), str(tmp_path / "one")])

    assert source.skills["same"].description == "from two"
    assert [k.reason for k in source.skipped] == ["duplicate-name"]


def test_filter_is_the_package_keyword_and_skills_filter_ours(tmp_path: Path) -> None:
    skill(tmp_path / "a", "a", "A")
    skill(tmp_path / "b", "b", "B")

    assert list(tn.load_skills(str(tmp_path), filter={"b": True}).skills) == ["b"]
    assert list(tn.load_skills(skills_dir=str(tmp_path), skills_filter={"b": False}).skills) == [
        "a"
    ]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"skills_dir": "x"},
        {"skills_filter": {"a": True}},
    ],
)
def test_both_spellings_of_one_option_is_a_usage_error(
    tmp_path: Path, kwargs: dict[str, Any]
) -> None:
    both: dict[str, Any] = {"filter": {"a": True}} if "skills_filter" in kwargs else {}
    with pytest.raises(tn.UsageError, match="not both"):
        tn.load_skills(str(tmp_path), **both, **kwargs)


def test_a_sync_provider_contributes_after_folders_and_data(tmp_path: Path) -> None:
    skill(tmp_path / "f", "folder")

    source = tn.load_skills(
        str(tmp_path),
        skills=[tn.SkillDef("data", "data body")],
        skill_provider=lambda: [{"name": "provided", "content": "p"}],
    )

    assert list(source.skills) == ["folder", "data", "provided"]


def test_an_async_provider_is_a_usage_error_pointing_to_create_toolkit() -> None:
    async def provider() -> list[dict[str, str]]:
        return [{"name": "x", "content": "c"}]

    # filterwarnings=error: a coroutine left un-awaited would fail the test here.
    with pytest.raises(tn.UsageError, match=r"create_toolkit\(skill_provider="):
        tn.load_skills(skill_provider=provider)


async def test_create_toolkit_still_awaits_an_async_provider() -> None:
    async def provider() -> list[dict[str, str]]:
        return [{"name": "x", "content": "c", "description": "X"}]

    async with await tn.create_toolkit(skill_provider=provider, builtins=False) as toolkit:
        assert [t.name for t in toolkit.tools()] == ["skill"]
        assert "- **x**: X" in toolkit.skills_prompt()


@pytest.mark.parametrize("bad", [3, {"a": 1}, [3]])
def test_dirs_of_the_wrong_type_are_a_usage_error(bad: Any) -> None:
    with pytest.raises(tn.UsageError, match="skills_dir"):
        tn.load_skills(bad)


# --- return shapes --------------------------------------------------------------------------


async def test_with_no_source_the_tool_exists_and_lists_none() -> None:
    source = tn.load_skills()

    assert source.skills == {}
    assert source.prompt() == "No skills are currently available."
    result = await source.tool.execute({"name": "x"}, None)
    assert (result.is_error, result.output) == (True, 'Skill "x" not found. Available skills: none')


async def test_a_toolkit_without_a_skill_source_has_no_skill_tool_and_no_prompt() -> None:
    async with await tn.create_toolkit(builtins=False) as toolkit:
        assert toolkit.tools() == []
        assert toolkit.skills_prompt() == ""


def test_skill_info_takes_the_package_positional_order() -> None:
    info = tn.SkillInfo("n", "/x/SKILL.md", "body", "desc", "fs", None, None)

    assert (info.name, info.location, info.content, info.description, info.origin) == (
        "n",
        "/x/SKILL.md",
        "body",
        "desc",
        "fs",
    )
    assert tn.SkillInfo(name="n", location="l", content="c") == tn.SkillInfo("n", "l", "c")
    assert tn.SkillInfo("n", "l", "c").description is None


def test_skill_def_skip_and_inventory_take_positional_arguments() -> None:
    d = tn.SkillDef("tone", "Write plainly.", "House style", ["a.md"], None)
    skip = tn.SkillSkip("/x/SKILL.md", "missing-name")
    inventory = tn.SkillInventory([], [skip])

    assert (d.name, d.content, d.description, list(d.resources or ())) == (
        "tone",
        "Write plainly.",
        "House style",
        ["a.md"],
    )
    assert (skip.location, skip.reason, skip.detail) == ("/x/SKILL.md", "missing-name", "")
    assert inventory.skipped == [skip]


def test_a_data_skill_is_logical_at_its_default_base(tmp_path: Path) -> None:
    skill(tmp_path / "f", "folder")

    source = tn.load_skills(str(tmp_path), skills=[tn.SkillDef("tone", "c")])

    assert source.skills["tone"].origin == "logical"
    assert source.skills["tone"].location == "skill://tone/"
    assert source.skills["tone"].base == "skill://tone/"
    assert source.skills["folder"].origin == "fs"


async def test_the_tool_schema_and_metadata_are_the_package_ones(tmp_path: Path) -> None:
    md = skill(tmp_path / "f", "folder")
    source = tn.load_skills(str(tmp_path), skills=[tn.SkillDef("tone", "c", base="kb://t/")])

    assert source.tool.input_schema["additionalProperties"] is False
    on_disk = await source.tool.execute({"name": "folder"}, None)
    logical = await source.tool.execute({"name": "tone"}, None)
    assert on_disk.metadata == {"name": "folder", "dir": str(md.parent)}
    assert logical.metadata == {"name": "tone", "dir": "kb://t/"}


# --- discovery order, duplicates, missing roots ---------------------------------------------


def test_a_shallower_skill_beats_a_nested_copy_whatever_the_names(tmp_path: Path) -> None:
    nested = skill(tmp_path / "a" / "deep", "same", "nested")
    shallow = skill(tmp_path / "z", "same", "shallow")

    source = tn.load_skills(str(tmp_path))

    assert source.skills["same"].location == str(shallow)
    assert [(k.location, k.reason) for k in source.skipped] == [(str(nested), "duplicate-name")]


def test_discovery_is_by_segment_count_then_code_point_path(tmp_path: Path) -> None:
    for folder in ["c", "a/z", "B", "a", "b/inner", "a-b"]:
        skill(tmp_path / folder, folder.replace("/", "."))

    inventory = tn.list_skills(str(tmp_path))

    # "a-b/SKILL.md" < "a/SKILL.md": "-" sorts before "/" in code points.
    assert [s.name for s in inventory.skills] == ["B", "a-b", "a", "c", "a.z", "b.inner"]


def test_a_duplicate_writes_the_package_line_to_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skill(tmp_path / "a", "same")
    second = skill(tmp_path / "b", "same")

    tn.load_skills(str(tmp_path))

    err = capsys.readouterr().err
    assert f'[toolnexus] duplicate skill name "same" ({second}) — keeping first\n' in err


def test_a_missing_root_writes_one_line_and_nothing_else(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope"

    source = tn.load_skills(str(missing))

    assert capsys.readouterr().err == f"[toolnexus] skills dir not found: {missing}\n"
    assert source.skills == {}


def test_list_skills_is_unfiltered_and_load_skills_filtered(tmp_path: Path) -> None:
    skill(tmp_path / "a", "a")
    skill(tmp_path / "b", "b")

    assert [s.name for s in tn.list_skills(str(tmp_path)).skills] == ["a", "b"]
    assert list(tn.load_skills(str(tmp_path), filter={"a": True}).skills) == ["a"]


def test_symlinked_folders_are_followed_and_cycles_cut(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    skill(target / "s", "linked")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(target, root / "link")
    os.symlink(root, root / "link" / "back")  # a cycle through the link

    inventory = tn.list_skills(str(root))

    assert [s.name for s in inventory.skills] == ["linked"]
    assert inventory.skills[0].location == str(root / "link" / "s" / "SKILL.md")


# --- frontmatter ----------------------------------------------------------------------------


def test_an_unquoted_description_holding_a_colon_is_rescued_whole(tmp_path: Path) -> None:
    raw(tmp_path / "s", "---\nname: s\ndescription: Use for: PDFs, forms\n---\nB\n")

    info = tn.list_skills(str(tmp_path)).skills[0]

    assert info.description == "Use for: PDFs, forms"


def test_a_tab_indented_continuation_keeps_the_first_line(tmp_path: Path) -> None:
    raw(tmp_path / "s", "---\nname: s\ndescription: first line\n\tsecond\n---\nB\n")

    info = tn.list_skills(str(tmp_path)).skills[0]

    assert info.description == "first line"


def test_an_unterminated_flow_description_leaves_a_skill_without_one(tmp_path: Path) -> None:
    raw(tmp_path / "s", "---\nname: s\ndescription: [unterminated\n---\nB\n")

    inventory = tn.list_skills(str(tmp_path))

    assert [(s.name, s.description) for s in inventory.skills] == [("s", None)]
    assert inventory.skipped == []


def test_a_fence_that_never_closes_is_missing_name(tmp_path: Path) -> None:
    md = raw(tmp_path / "s", "---\nname: s\nno closing fence\n")

    inventory = tn.list_skills(str(tmp_path))

    assert inventory.skipped == [tn.SkillSkip(str(md), "missing-name", "")]


def test_malformed_only_when_yaml_refused_and_no_name_was_rescued(tmp_path: Path) -> None:
    md = raw(tmp_path / "s", "---\nname: [oops\ndescription: x\n---\nB\n")

    [skip] = tn.list_skills(str(tmp_path)).skipped

    assert (skip.location, skip.reason) == (str(md), "malformed-frontmatter")
    assert skip.detail.startswith("while parsing a flow sequence")
    assert "\n" not in skip.detail


def test_quotes_are_stripped_once_in_the_rescue(tmp_path: Path) -> None:
    raw(tmp_path / "s", "---\nname: 'quoted'\ndescription: \"a: b\"x\n---\nB\n")

    info = tn.list_skills(str(tmp_path)).skills[0]

    assert (info.name, info.description) == ("quoted", '"a: b"x')


def test_an_empty_description_stays_empty_and_is_listed(tmp_path: Path) -> None:
    raw(tmp_path / "e", '---\nname: e\ndescription: ""\n---\nB\n')
    raw(tmp_path / "n", "---\nname: n\ndescription:\n---\nB\n")

    source = tn.load_skills(str(tmp_path))

    assert source.skills["e"].description == ""
    assert source.skills["n"].description is None
    assert source.prompt().endswith("## Available Skills\n- **e**: ")


def test_scalar_values_keep_their_python_text(tmp_path: Path) -> None:
    raw(tmp_path / "s", "---\nname: 42\ndescription: true\n---\nB\n")

    info = tn.list_skills(str(tmp_path)).skills[0]

    assert (info.name, info.description) == ("42", "True")


def test_an_oversized_skill_file_is_unreadable(tmp_path: Path) -> None:
    md = raw(tmp_path / "big", "---\nname: big\n---\n" + "x" * (1 << 20))

    assert tn.list_skills(str(tmp_path)).skipped == [tn.SkillSkip(str(md), "unreadable")]


# --- sibling sample ------------------------------------------------------------------------


async def test_the_sibling_sample_is_one_global_code_point_sort_then_capped(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    skill(folder, "s")
    for rel in ["a/b", "a-c", "z", "a/a/deep", "node_modules/x", ".git/y", "nested/SKILL.md"]:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text("x")
    source = tn.load_skills(str(tmp_path), sample_limit=3)

    result = await source.tool.execute({"name": "s"}, None)

    files = [line[6:-7] for line in result.output.splitlines() if line.startswith("<file>")]
    assert files == [str(folder / "a-c"), str(folder / "a/a/deep"), str(folder / "a/b")]


# --- through the loop -----------------------------------------------------------------------


async def test_a_model_loads_a_skill_through_a_toolkit_and_a_real_client(
    tmp_path: Path, scripted: ScriptedModel, client_for: Any, style: str
) -> None:
    skill(tmp_path / "pdf", "pdf-tools", "Work with PDFs", body="Use pdftotext.\n")
    scripted.add(tool_calls(call("skill", {"name": "pdf-tools"}, id="c1")), text("done"))

    async with await tn.create_toolkit(skills_dir=str(tmp_path), builtins=False) as toolkit:
        async with client_for(scripted, style, system_prompt="Be brief.") as client:
            result = await client.run("read my pdf", toolkit)

    assert result.text == "done"
    assert "Use pdftotext." in result.tool_calls[0].output
    first = scripted.requests[0].body
    system = first["messages"][0]["content"] if style == "openai" else first["system"]
    assert "- **pdf-tools**: Work with PDFs" in str(system)


def test_a_host_without_logging_configured_sees_each_line_once(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    script = f"import toolnexus as tn\ntn.load_skills({str(missing)!r})\n"

    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )

    assert done.stderr == f"[toolnexus] skills dir not found: {missing}\n"
