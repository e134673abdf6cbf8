"""The ``builtins`` option: toggles, per-tool map and the confinement options (CONTRACT §4,
§4A; DESIGN §7), down to `create_toolkit`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolnexus import create_toolkit
from toolnexus.errors import UsageError
from toolnexus.tools.builtins import (
    DEFAULT_MAX_OUTPUT_BYTES,
    BuiltinOptions,
    create_builtin_tools,
    parse_builtin_options,
    select_builtins,
)

ALL = [
    "bash",
    "read",
    "write",
    "edit",
    "grep",
    "glob",
    "webfetch",
    "question",
    "apply_patch",
    "todowrite",
]


EDIT_REQUIRED = ["path", "oldString", "newString"]


def names(cfg: Any) -> list[str]:
    return [t.name for t in select_builtins(cfg)]


def test_all_ten_come_in_the_canonical_order() -> None:
    tools = create_builtin_tools()

    assert [t.name for t in tools] == ALL
    assert {t.source for t in tools} == {"builtin"}


@pytest.mark.parametrize(
    ("name", "required", "properties"),
    [
        ("bash", ["command"], ["command", "workdir", "timeout", "description"]),
        ("read", ["path"], ["path", "offset", "limit"]),
        ("write", ["path", "content"], ["path", "content"]),
        (
            "edit",
            ["path", "oldString", "newString"],
            ["path", "oldString", "newString", "replaceAll"],
        ),
        ("grep", ["pattern"], ["pattern", "path", "include", "limit"]),
        ("glob", ["pattern"], ["pattern", "path", "limit"]),
        ("webfetch", ["url"], ["url", "format", "timeout"]),
        ("apply_patch", ["patchText"], ["patchText"]),
        ("todowrite", ["todos"], ["todos"]),
    ],
)
def test_the_schemas_are_the_pinned_ones(
    name: str, required: list[str], properties: list[str]
) -> None:
    (tool,) = [t for t in create_builtin_tools() if t.name == name]

    assert tool.input_schema["type"] == "object"
    assert tool.input_schema["required"] == required
    assert list(tool.input_schema["properties"]) == properties


@pytest.mark.parametrize("cfg", [None, True, {}, {"enabled": True}])
def test_builtins_are_on_by_default(cfg: Any) -> None:
    assert names(cfg) == ALL


@pytest.mark.parametrize(
    "cfg", [False, {"disabled": True}, {"enabled": False}, {"enabled": True, "disabled": True}]
)
def test_the_global_toggle_turns_them_all_off(cfg: Any) -> None:
    assert names(cfg) == []


def test_global_off_short_circuits_everything_else() -> None:
    assert names({"enabled": False, "tools": {"bash": True}, "bogus": 1}) == []


def test_the_per_tool_map_drops_tools_and_ignores_unknown_names() -> None:
    cfg = {"tools": {"bash": False, "webfetch": False, "read": True, "nope": False}}

    assert names(cfg) == [n for n in ALL if n not in ("bash", "webfetch")]


def test_bash_false_removes_the_tool() -> None:
    assert names({"bash": False}) == ALL[1:]


def test_each_selection_gets_fresh_tools() -> None:
    first = select_builtins(None)
    second = select_builtins(None)

    assert all(a is not b for a, b in zip(first, second, strict=True))


def test_the_options_default_to_the_contract_behaviour() -> None:
    assert parse_builtin_options(None) == BuiltinOptions()
    assert BuiltinOptions().max_output_bytes == DEFAULT_MAX_OUTPUT_BYTES == 51_200


def test_the_options_are_parsed(tmp_path: Path) -> None:
    options = parse_builtin_options(
        {
            "workspace": str(tmp_path),
            "bash": {"allow": ["git", "pytest"]},
            "private_network": False,
            "max_output_bytes": 1000,
        }
    )

    assert options.workspace == tmp_path.resolve()
    assert options.bash.allow == ("git", "pytest")
    assert options.private_network is False
    assert options.max_output_bytes == 1000


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"worksapce": "/tmp"}, "unknown option(s) worksapce"),
        ({"workspace": "/definitely/not/here"}, "is not a directory"),
        ({"workspace": 42}, "workspace must be a directory path"),
        ({"bash": "git"}, "bash must be true, false or"),
        ({"bash": {"allow": "git"}}, "bash.allow must be a list"),
        ({"bash": {"allow": ["git status"]}}, "is not a command name"),
        ({"bash": {"deny": ["rm"]}}, "unknown bash option(s) deny"),
        ({"private_network": "no"}, "private_network must be true or false"),
        ({"max_output_bytes": 0}, "max_output_bytes must be a positive whole number"),
        ({"max_output_bytes": True}, "max_output_bytes must be a positive whole number"),
    ],
)
def test_invalid_options_are_usage_errors(cfg: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        select_builtins(cfg)


async def test_create_toolkit_passes_the_options_through(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "secret.txt").write_text("s")
    tk = await create_toolkit(builtins={"workspace": str(tmp_path / "ws"), "bash": False})
    try:
        names = [t.name for t in tk.tools()]
        escaped = await tk.execute("read", {"path": "../secret.txt"})
        written = await tk.execute("write", {"path": "a.txt", "content": "hi"})
    finally:
        await tk.close()

    assert "bash" not in names
    assert escaped.is_error
    assert "outside the workspace" in escaped.output
    assert not written.is_error
    assert (tmp_path / "ws" / "a.txt").read_text() == "hi"


async def test_each_toolkit_gets_its_own_todowrite_tool() -> None:
    first = await create_toolkit()
    second = await create_toolkit()
    try:
        distinct = first.get("todowrite") is not second.get("todowrite")
    finally:
        await first.close()
        await second.close()

    assert distinct
