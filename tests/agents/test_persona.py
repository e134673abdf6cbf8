"""Agent homes (CONTRACT §7E): compose_soul, the memory tool and persona_from_dir."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest

from toolnexus._types import Tool, ToolContext, ToolResult
from toolnexus.agents.persona import (
    BOOTSTRAP_CAP_BYTES,
    BOOTSTRAP_ORDER,
    HEARTBEAT_OK,
    HEARTBEAT_PROMPT,
    compose_soul,
    memory_tool,
    persona_from_dir,
)
from toolnexus.errors import UsageError

CAP = 2097152
NOTICE = "\n[truncated: exceeds 2 MB bootstrap cap]"


def _modes_are_enforced() -> bool:
    """False for root (or CAP_DAC_OVERRIDE), which reads a mode-000 file anyway."""
    with tempfile.TemporaryDirectory() as scratch:
        probe = Path(scratch, "probe")
        probe.write_bytes(b"")
        probe.chmod(0)
        try:
            probe.open("rb").close()
        except PermissionError:
            return True
        return False


needs_file_modes = pytest.mark.skipif(
    not _modes_are_enforced(), reason="this user reads and writes files whatever their mode"
)


def write(home: Path, name: str, body: str | bytes) -> Path:
    path = home / name
    if isinstance(body, bytes):
        path.write_bytes(body)
    else:
        path.write_bytes(body.encode("utf-8"))
    return path


def listing(home: Path) -> list[str]:
    return sorted(p.name for p in home.iterdir())


def plain_tool(name: str) -> Tool:
    async def execute(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        return ToolResult("")

    return Tool(name, f"the {name} tool", {"type": "object"}, "native", execute)


async def remember(home: Path, **args: Any) -> ToolResult:
    result = await memory_tool(home).execute(args, None)
    assert isinstance(result, ToolResult)
    return result


# --- constants ----------------------------------------------------------------------------


def test_the_bootstrap_order_is_the_contracts() -> None:
    assert BOOTSTRAP_ORDER == (
        "AGENTS.md",
        "SOUL.md",
        "IDENTITY.md",
        "USER.md",
        "TOOLS.md",
        "HEARTBEAT.md",
        "MEMORY.md",
    )


def test_the_heartbeat_literals_are_byte_exact() -> None:
    assert HEARTBEAT_OK == "HEARTBEAT_OK"
    assert HEARTBEAT_PROMPT == (
        "Heartbeat. Read your HEARTBEAT.md section and follow it. If nothing needs attention, "
        "reply HEARTBEAT_OK."
    )


def test_the_cap_is_two_mebibytes() -> None:
    assert BOOTSTRAP_CAP_BYTES == 2097152


# --- compose_soul -------------------------------------------------------------------------


def test_sections_follow_the_bootstrap_order_whatever_the_creation_order(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "- likes tea\n")
    write(tmp_path, "SOUL.md", "\n  You are Ada.  \n\n")
    write(tmp_path, "AGENTS.md", "Rules.")

    soul, found = compose_soul(tmp_path)

    assert (
        soul
        == "## AGENTS.md\n\nRules.\n\n## SOUL.md\n\nYou are Ada.\n\n## MEMORY.md\n\n- likes tea"
    )
    assert found == ["AGENTS.md", "SOUL.md", "MEMORY.md"]


def test_every_bootstrap_file_becomes_a_section(tmp_path: Path) -> None:
    for name in BOOTSTRAP_ORDER:
        write(tmp_path, name, f"body of {name}")

    soul, found = compose_soul(tmp_path)

    assert found == list(BOOTSTRAP_ORDER)
    assert soul == "\n\n".join(f"## {n}\n\nbody of {n}" for n in BOOTSTRAP_ORDER)


def test_an_empty_home_gives_an_empty_soul(tmp_path: Path) -> None:
    assert compose_soul(tmp_path) == ("", [])


def test_other_files_in_the_home_are_ignored(tmp_path: Path) -> None:
    write(tmp_path, "NOTES.md", "private")
    write(tmp_path, "soul.md", "lowercase is another file")
    write(tmp_path, "IDENTITY.md", "Ada")

    assert compose_soul(tmp_path) == ("## IDENTITY.md\n\nAda", ["IDENTITY.md"])


def test_an_empty_file_still_contributes_its_heading(tmp_path: Path) -> None:
    write(tmp_path, "SOUL.md", "Kind.")
    write(tmp_path, "MEMORY.md", "  \n")

    assert compose_soul(tmp_path) == (
        "## SOUL.md\n\nKind.\n\n## MEMORY.md\n\n",
        ["SOUL.md", "MEMORY.md"],
    )


def test_a_file_over_the_cap_is_truncated_with_the_notice(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "a" * CAP + "TAIL")

    soul, found = compose_soul(tmp_path)

    assert soul == "## MEMORY.md\n\n" + "a" * CAP + NOTICE
    assert found == ["MEMORY.md"]


def test_truncation_leaves_the_file_on_disk_untouched(tmp_path: Path) -> None:
    original = b"x" * (CAP + 1000)
    path = write(tmp_path, "MEMORY.md", original)
    mtime = path.stat().st_mtime_ns

    compose_soul(tmp_path)

    assert path.read_bytes() == original
    assert path.stat().st_mtime_ns == mtime


def test_a_file_of_exactly_the_cap_is_not_truncated(tmp_path: Path) -> None:
    write(tmp_path, "SOUL.md", "b" * CAP)

    soul, _ = compose_soul(tmp_path)

    assert soul == "## SOUL.md\n\n" + "b" * CAP


def test_the_cap_counts_bytes_not_characters(tmp_path: Path) -> None:
    # 'é' is two bytes: CAP/2 of them fill the cap exactly, one more overflows it.
    write(tmp_path, "SOUL.md", "é" * (CAP // 2 + 1))

    soul, _ = compose_soul(tmp_path)

    assert soul == "## SOUL.md\n\n" + "é" * (CAP // 2) + NOTICE


def test_a_character_split_by_the_cap_is_dropped_whole(tmp_path: Path) -> None:
    # One ASCII byte then 3-byte characters: the cap falls inside a character.
    write(tmp_path, "SOUL.md", "a" + "€" * (CAP // 3 + 1))

    soul, _ = compose_soul(tmp_path)

    kept = (CAP - 1) // 3
    assert soul == "## SOUL.md\n\na" + "€" * kept + NOTICE
    assert "\ufffd" not in soul


def test_invalid_utf8_inside_a_file_becomes_the_replacement_character(tmp_path: Path) -> None:
    write(tmp_path, "SOUL.md", b"be \xff kind")

    assert compose_soul(tmp_path)[0] == "## SOUL.md\n\nbe \ufffd kind"


def test_a_leading_byte_order_mark_is_dropped(tmp_path: Path) -> None:
    write(tmp_path, "SOUL.md", b"\xef\xbb\xbfKind.")

    assert compose_soul(tmp_path)[0] == "## SOUL.md\n\nKind."


def test_a_symlinked_file_is_followed(tmp_path: Path) -> None:
    shared = tmp_path / "shared.md"
    shared.write_text("Shared soul.")
    home = tmp_path / "home"
    home.mkdir()
    (home / "SOUL.md").symlink_to(shared)

    assert compose_soul(home) == ("## SOUL.md\n\nShared soul.", ["SOUL.md"])


def test_a_directory_named_like_a_file_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "SOUL.md").mkdir()
    write(tmp_path, "USER.md", "Bob.")

    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        result = compose_soul(tmp_path)

    assert result == ("## USER.md\n\nBob.", ["USER.md"])
    assert any("SOUL.md" in r.getMessage() for r in caplog.records)


def test_a_fifo_named_like_a_file_is_skipped_without_blocking(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    os.mkfifo(tmp_path / "MEMORY.md")

    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        result = compose_soul(tmp_path)

    assert result == ("", [])
    assert any("not a regular file" in r.getMessage() for r in caplog.records)


def test_a_dangling_symlink_counts_as_absent(tmp_path: Path) -> None:
    (tmp_path / "SOUL.md").symlink_to(tmp_path / "nowhere.md")

    assert compose_soul(tmp_path) == ("", [])


@needs_file_modes
def test_an_unreadable_file_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path, "SOUL.md", "secret")
    path.chmod(0)
    write(tmp_path, "TOOLS.md", "Use grep.")

    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        result = compose_soul(tmp_path)

    assert result == ("## TOOLS.md\n\nUse grep.", ["TOOLS.md"])
    assert any("SOUL.md" in r.getMessage() for r in caplog.records)


def test_a_home_that_does_not_exist_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a directory"):
        compose_soul(tmp_path / "missing")


def test_a_home_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        compose_soul(write(tmp_path, "SOUL.md", "x"))


# --- memory tool: shape -------------------------------------------------------------------


def test_the_memory_tool_is_native_with_the_pinned_schema(tmp_path: Path) -> None:
    tool = memory_tool(tmp_path)

    assert (tool.name, tool.source) == ("memory", "native")
    assert tool.input_schema == {
        "type": "object",
        "properties": {
            "action": {"enum": ["add", "replace", "remove"]},
            "target": {"enum": ["self", "user"]},
            "text": {"type": "string"},
            "with": {"type": "string"},
        },
        "required": ["action", "text"],
    }


def test_the_memory_description_says_it_loads_next_session(tmp_path: Path) -> None:
    description = memory_tool(tmp_path).description

    assert "do NOT change your current prompt" in description
    assert "load next session" in description


def test_the_memory_tool_needs_an_existing_home(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        memory_tool(tmp_path / "missing")


# --- memory tool: add ---------------------------------------------------------------------


async def test_add_creates_memory_md_with_one_entry(tmp_path: Path) -> None:
    result = await remember(tmp_path, action="add", text="likes tea")

    assert (result.output, result.is_error) == ("ok (add → MEMORY.md); loads next session", False)
    assert (tmp_path / "MEMORY.md").read_bytes() == b"- likes tea\n"


async def test_add_appends_on_a_new_line(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "# Memory\n- likes tea")

    await remember(tmp_path, action="add", text="born in 1815")

    assert (tmp_path / "MEMORY.md").read_bytes() == b"# Memory\n- likes tea\n- born in 1815\n"


async def test_target_user_writes_user_md(tmp_path: Path) -> None:
    result = await remember(tmp_path, action="add", target="user", text="Bob, a chemist")

    assert result.output == "ok (add → USER.md); loads next session"
    assert (tmp_path / "USER.md").read_bytes() == b"- Bob, a chemist\n"
    assert not (tmp_path / "MEMORY.md").exists()


async def test_target_self_is_memory_md(tmp_path: Path) -> None:
    await remember(tmp_path, action="add", target="self", text="x")

    assert (tmp_path / "MEMORY.md").read_bytes() == b"- x\n"


async def test_add_keeps_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", b"- caf\xe9\n")

    await remember(tmp_path, action="add", text="naïve")

    assert (tmp_path / "MEMORY.md").read_bytes() == b"- caf\xe9\n- na\xc3\xafve\n"


async def test_parallel_adds_lose_no_entry(tmp_path: Path) -> None:
    tool = memory_tool(tmp_path)

    await asyncio.gather(
        *(tool.execute({"action": "add", "text": f"n{i}"}, None) for i in range(50))
    )

    lines = (tmp_path / "MEMORY.md").read_text().splitlines()
    assert sorted(lines) == sorted(f"- n{i}" for i in range(50))


# --- memory tool: replace and remove ------------------------------------------------------


async def test_replace_swaps_only_the_first_occurrence(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "- likes tea\n- tea at five\n")

    result = await remember(tmp_path, action="replace", text="tea", **{"with": "coffee"})

    assert result.output == "ok (replace → MEMORY.md); loads next session"
    assert (tmp_path / "MEMORY.md").read_bytes() == b"- likes coffee\n- tea at five\n"


async def test_replace_with_an_absent_substring_is_a_loud_error(tmp_path: Path) -> None:
    write(tmp_path, "USER.md", "- Bob\n")

    result = await remember(
        tmp_path, action="replace", target="user", text="Alice", **{"with": "Eve"}
    )

    assert (result.output, result.is_error) == ("not found: Alice", True)
    assert (tmp_path / "USER.md").read_bytes() == b"- Bob\n"


async def test_replace_without_with_is_an_error_and_changes_nothing(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "- likes tea\n")

    result = await remember(tmp_path, action="replace", text="tea")

    assert result.is_error
    assert (tmp_path / "MEMORY.md").read_bytes() == b"- likes tea\n"


async def test_remove_drops_the_entry_line_it_empties(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "- likes tea\n- born in 1815\n")

    result = await remember(tmp_path, action="remove", text="likes tea")

    assert result.output == "ok (remove → MEMORY.md); loads next session"
    assert (tmp_path / "MEMORY.md").read_bytes() == b"- born in 1815\n"


async def test_remove_of_part_of_a_line_keeps_the_rest(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "- likes green tea\n")

    await remember(tmp_path, action="remove", text="green ")

    assert (tmp_path / "MEMORY.md").read_bytes() == b"- likes tea\n"


async def test_remove_of_the_last_line_without_newline(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "- a\n- b")

    await remember(tmp_path, action="remove", text="b")

    assert (tmp_path / "MEMORY.md").read_bytes() == b"- a\n"


async def test_remove_with_an_absent_substring_is_a_loud_error(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "- likes tea\n")

    result = await remember(tmp_path, action="remove", text="coffee")

    assert (result.output, result.is_error) == ("not found: coffee", True)
    assert (tmp_path / "MEMORY.md").read_bytes() == b"- likes tea\n"


async def test_remove_from_a_missing_file_is_not_found_and_creates_nothing(tmp_path: Path) -> None:
    result = await remember(tmp_path, action="remove", text="x")

    assert (result.output, result.is_error) == ("not found: x", True)
    assert listing(tmp_path) == []


# --- memory tool: hostile input and failures ----------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        {"action": "delete", "text": "x"},
        {"text": "x"},
        {"action": "add", "target": "world", "text": "x"},
        {"action": "add", "target": ["self"], "text": "x"},
        {"action": "add", "text": ""},
        {"action": "add", "text": "   "},
        {"action": "add", "text": 42},
        {"action": "add"},
        {"action": "replace", "text": "a", "with": 3},
    ],
)
async def test_invalid_arguments_are_an_error_result_and_write_nothing(
    tmp_path: Path, args: dict[str, Any]
) -> None:
    result = await memory_tool(tmp_path).execute(args, None)

    assert isinstance(result, ToolResult)
    assert result.is_error
    assert result.output.startswith("memory: ")
    assert listing(tmp_path) == []


async def test_arguments_that_are_not_an_object_are_an_error_result(tmp_path: Path) -> None:
    result = await memory_tool(tmp_path).execute(["add", "x"], None)

    assert isinstance(result, ToolResult)
    assert (result.output, result.is_error) == ("memory: arguments must be an object", True)


async def test_a_memory_file_that_cannot_be_read_is_an_error_result(tmp_path: Path) -> None:
    (tmp_path / "MEMORY.md").mkdir()

    result = await remember(tmp_path, action="add", text="x")

    assert result.is_error
    assert result.output.startswith("memory: cannot write MEMORY.md: ")


@needs_file_modes
async def test_a_read_only_home_is_an_error_result_and_keeps_the_file(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "- kept\n")
    os.chmod(tmp_path, 0o500)
    try:
        result = await remember(tmp_path, action="add", text="x")
    finally:
        os.chmod(tmp_path, 0o700)

    assert result.is_error
    assert (tmp_path / "MEMORY.md").read_bytes() == b"- kept\n"


# --- memory tool: how it writes -----------------------------------------------------------


async def test_a_write_leaves_no_temporary_file_behind(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "- a\n")

    await remember(tmp_path, action="add", text="b")
    await remember(tmp_path, action="replace", text="a", **{"with": "c"})
    await remember(tmp_path, action="remove", text="b")

    assert listing(tmp_path) == ["MEMORY.md"]
    assert (tmp_path / "MEMORY.md").read_bytes() == b"- c\n"


async def test_a_rewrite_replaces_the_file_rather_than_editing_it_in_place(tmp_path: Path) -> None:
    path = write(tmp_path, "MEMORY.md", "- a\n")
    before = path.stat().st_ino

    await remember(tmp_path, action="add", text="b")

    assert path.stat().st_ino != before


async def test_a_rewrite_keeps_the_files_permissions(tmp_path: Path) -> None:
    path = write(tmp_path, "MEMORY.md", "- a\n")
    path.chmod(0o640)

    await remember(tmp_path, action="add", text="b")

    assert stat.S_IMODE(path.stat().st_mode) == 0o640


async def test_a_symlinked_memory_file_is_written_through(tmp_path: Path) -> None:
    real = tmp_path / "real.md"
    real.write_bytes(b"- a\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / "MEMORY.md").symlink_to(real)

    await remember(home, action="add", text="b")

    assert (home / "MEMORY.md").is_symlink()
    assert real.read_bytes() == b"- a\n- b\n"


# --- persona_from_dir ---------------------------------------------------------------------


def test_a_persona_is_named_after_its_directory(tmp_path: Path) -> None:
    home = tmp_path / "ada"
    home.mkdir()

    assert persona_from_dir(home).name == "ada"


def test_a_relative_path_with_dots_names_the_real_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ada" / "sub").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "ada")

    assert persona_from_dir("sub/..").name == "ada"


def test_an_explicit_name_wins(tmp_path: Path) -> None:
    assert persona_from_dir(tmp_path, name="bob").name == "bob"


def test_a_persona_carries_the_composed_soul_and_files(tmp_path: Path) -> None:
    write(tmp_path, "SOUL.md", "Kind.")
    write(tmp_path, "USER.md", "Bob.")

    persona = persona_from_dir(tmp_path)

    assert (persona.soul, persona.files) == (
        "## SOUL.md\n\nKind.\n\n## USER.md\n\nBob.",
        ("SOUL.md", "USER.md"),
    )


def test_the_memory_tool_comes_after_the_given_tools(tmp_path: Path) -> None:
    search = plain_tool("search")

    persona = persona_from_dir(tmp_path, tools=[search])

    assert [t.name for t in persona.tools] == ["search", "memory"]


def test_memory_false_leaves_the_persona_read_only(tmp_path: Path) -> None:
    search = plain_tool("search")

    assert persona_from_dir(tmp_path, tools=[search], memory=False).tools == (search,)
    assert persona_from_dir(tmp_path, memory=False).tools == ()


def test_a_given_tool_named_memory_clashes_with_the_memory_tool(tmp_path: Path) -> None:
    mine = plain_tool("memory")

    with pytest.raises(UsageError, match="memory=False"):
        persona_from_dir(tmp_path, tools=[mine])
    assert persona_from_dir(tmp_path, tools=[mine], memory=False).tools == (mine,)


def test_a_persona_for_a_missing_home_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        persona_from_dir(tmp_path / "missing")


async def test_the_soul_is_frozen_and_memory_loads_next_session(tmp_path: Path) -> None:
    write(tmp_path, "MEMORY.md", "- likes tea\n")
    persona = persona_from_dir(tmp_path)
    tool = next(t for t in persona.tools if t.name == "memory")

    await tool.execute({"action": "add", "text": "born in 1815"}, None)

    assert persona.soul == "## MEMORY.md\n\n- likes tea"
    assert persona_from_dir(tmp_path).soul == "## MEMORY.md\n\n- likes tea\n- born in 1815"


def test_a_persona_cannot_be_changed_after_it_is_built(tmp_path: Path) -> None:
    persona = persona_from_dir(tmp_path)

    with pytest.raises(dataclasses.FrozenInstanceError):
        persona.soul = "changed"  # pyright: ignore[reportAttributeAccessIssue]
