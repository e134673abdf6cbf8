"""COMPAT §5 (built-ins) through the public API: the toolnexus package's ``base_dir``,
``confine_to_base_dir`` and ``shell`` options, and the texts and metadata of ``bash``,
``todowrite`` and ``apply_patch``, on real files and real processes."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn

# The package exposes builtin_shell / KILL_GRACE_MS / IGNORE_DIRS as toolnexus.builtin.*; that
# module path is another branch's (COMPAT §1) and re-exports these very objects.
from toolnexus.tools.builtins import IGNORE_DIRS, KILL_GRACE_MS, builtin_shell

PATCH = "*** Begin Patch\n{}\n*** End Patch"


def tools(cfg: Any) -> dict[str, tn.Tool]:
    return {t.name: t for t in tn.select_builtins(cfg)}


async def run(tool: tn.Tool, **args: Any) -> tn.ToolResult:
    result = await tool.execute(args, None)
    assert isinstance(result, tn.ToolResult)
    return result


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (ProcessLookupError, FileNotFoundError):
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] != "Z"


async def gone(pid: int, within: float = 5.0) -> bool:
    """Whether ``pid`` exits within ``within`` seconds (a SIGKILL is delivered asynchronously)."""
    deadline = time.monotonic() + within
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


# --- base_dir -------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["base_dir", "baseDir"])
async def test_base_dir_is_where_relative_paths_start(tmp_path: Path, key: str) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (base / "in.txt").write_text("inside\n")
    t = tools({key: str(base)})

    assert (await run(t["read"], path="in.txt")).output == "inside\n"
    assert not (await run(t["write"], path="sub/new.txt", content="x")).is_error
    assert (base / "sub" / "new.txt").read_text() == "x"
    assert not (
        await run(t["edit"], path="in.txt", oldString="inside", newString="edited")
    ).is_error
    assert (await run(t["grep"], pattern="edited")).output == "in.txt:1:edited"
    assert (await run(t["glob"], pattern="**/*.txt")).output.splitlines() == [
        "in.txt",
        "sub/new.txt",
    ]


async def test_base_dir_applies_to_paths_inside_a_patch(tmp_path: Path) -> None:
    t = tools({"base_dir": str(tmp_path)})

    result = await run(t["apply_patch"], patchText=PATCH.format("*** Add File: p/a.txt\n+hi"))

    assert result.output == "Applied patch: 1 file operation"
    assert (tmp_path / "p" / "a.txt").read_text() == "hi"


async def test_base_dir_is_bashs_default_workdir(tmp_path: Path) -> None:
    t = tools({"base_dir": str(tmp_path)})

    assert (await run(t["bash"], command="pwd")).output.strip() == str(tmp_path)


async def test_base_dir_alone_does_not_confine(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (tmp_path / "outside.txt").write_text("out")
    t = tools({"base_dir": str(base)})

    assert (await run(t["read"], path="../outside.txt")).output == "out"
    assert (await run(t["read"], path=str(tmp_path / "outside.txt"))).output == "out"


@pytest.mark.parametrize("base", ["", None])
async def test_an_empty_base_dir_means_the_process_cwd(tmp_path: Path, base: Any) -> None:
    t = tools({"base_dir": base})

    assert (await run(t["bash"], command="pwd")).output.strip() == os.getcwd()


# --- confine_to_base_dir --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base_key", "confine_key"),
    [("base_dir", "confine_to_base_dir"), ("baseDir", "confineToBaseDir")],
)
async def test_confining_to_base_dir_refuses_escapes(
    tmp_path: Path, base_key: str, confine_key: str
) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (base / "ok.txt").write_text("ok")
    (tmp_path / "secret.txt").write_text("TOPSECRET")
    os.symlink(tmp_path / "secret.txt", base / "link")
    t = tools({base_key: str(base), confine_key: True})

    assert (await run(t["read"], path="ok.txt")).output == "ok"
    for escape in ["../secret.txt", str(tmp_path / "secret.txt"), "link"]:
        result = await run(t["read"], path=escape)
        assert result.is_error
        assert result.output.startswith(f"read: {escape}")
        assert "outside baseDir" in result.output
        assert "TOPSECRET" not in result.output


async def test_a_file_not_yet_created_is_confined_too(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    t = tools({"base_dir": str(base), "confine_to_base_dir": True})

    result = await run(t["write"], path="../new/escape.txt", content="x")

    assert result.is_error
    assert "outside baseDir" in result.output
    assert not (tmp_path / "new").exists()


async def test_confine_with_an_empty_base_fails_every_path_taking_call(tmp_path: Path) -> None:
    t = tools({"confine_to_base_dir": True, "base_dir": ""})

    for name, args in [
        ("read", {"path": "x"}),
        ("write", {"path": "x", "content": "y"}),
        ("edit", {"path": "x", "oldString": "a", "newString": "b"}),
        ("grep", {"pattern": "a"}),
        ("glob", {"pattern": "*"}),
        ("apply_patch", {"patchText": PATCH.format("*** Add File: x\n+y")}),
        ("bash", {"command": "touch should-not-exist"}),
    ]:
        result = await run(t[name], **args)
        assert (result.is_error, result.output) == (
            True,
            f"{name}: confine_to_base_dir is set but base_dir is empty",
        )
    assert not Path("should-not-exist").exists()
    todo = await run(t["todowrite"], todos=[])
    assert todo.output == "(no todos)"


async def test_confine_with_a_workspace_confines_to_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    t = tools({"workspace": str(tmp_path / "w"), "confine_to_base_dir": True})

    assert "outside baseDir" in (await run(t["read"], path="../x")).output


def test_a_workspace_and_a_different_base_dir_are_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()

    with pytest.raises(tn.UsageError, match="differ"):
        tn.select_builtins({"workspace": str(tmp_path / "a"), "base_dir": str(tmp_path / "b")})
    assert tn.select_builtins({"workspace": str(tmp_path / "a"), "base_dir": str(tmp_path / "a")})


@pytest.mark.parametrize(
    "cfg",
    [
        {"base_dir": "/a", "baseDir": "/b"},
        {"base_dir": 3},
        {"confine_to_base_dir": "yes", "base_dir": "/tmp"},
        {"shell": "/bin/sh -c"},
        {"shell": []},
        {"shell": ["/bin/sh", ""]},
    ],
)
def test_bad_package_options_are_usage_errors(cfg: dict[str, Any]) -> None:
    with pytest.raises(tn.UsageError):
        tn.select_builtins(cfg)


async def test_the_options_pass_through_create_toolkit(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("via toolkit")

    async with await tn.create_toolkit(builtins={"baseDir": str(tmp_path)}) as toolkit:
        result = await toolkit.execute("read", {"path": "f.txt"})

    assert result.output == "via toolkit"


# --- shell and bash -------------------------------------------------------------------------


async def test_the_shell_option_is_used_verbatim_with_the_command_last(tmp_path: Path) -> None:
    t = tools({"shell": ["/bin/sh", "-c"]})

    result = await run(t["bash"], command='echo "$0"')

    assert result.output == "/bin/sh\n"
    assert result.metadata == {"shell": "/bin/sh -c", "exitCode": 0, "truncated": False}


async def test_the_detected_shell_is_in_the_metadata() -> None:
    result = await run(tools(None)["bash"], command="true")

    assert result.metadata is not None
    assert result.metadata["shell"] == " ".join(builtin_shell())
    assert builtin_shell()[-1] == "-c"


def test_builtin_shell_returns_the_configured_prefix() -> None:
    assert builtin_shell({"shell": ["/usr/bin/env", "sh", "-c"]}) == ["/usr/bin/env", "sh", "-c"]
    assert os.path.isabs(builtin_shell()[0])


async def test_a_shell_composes_with_an_allowlist() -> None:
    t = tools({"shell": ["/bin/sh", "-c"], "bash": {"allow": ["echo"]}})

    allowed = await run(t["bash"], command="echo $HOME")
    refused = await run(t["bash"], command="ls")

    assert allowed.is_error  # no shell features under an allowlist: "$" is refused
    assert (await run(t["bash"], command="echo plain")).output == "plain\n"
    assert refused.is_error
    assert "not allowed" in refused.output


async def test_a_non_zero_exit_always_has_the_newline_before_the_tail() -> None:
    bash = tools(None)["bash"]

    quiet = await run(bash, command="exit 3")
    loud = await run(bash, command="echo out; exit 4")

    assert (quiet.is_error, quiet.output) == (True, "\nbash: command exited with code 3")
    assert loud.output == "out\n\nbash: command exited with code 4"
    assert quiet.metadata is not None
    assert quiet.metadata["exitCode"] == 3


async def test_an_empty_command_is_required() -> None:
    result = await run(tools(None)["bash"], command="   ")

    assert (result.is_error, result.output) == (True, "bash: command is required")


async def test_a_timeout_stops_the_whole_tree_term_then_kill(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    command = (
        f"(trap '' TERM; sleep 30) & echo $! > {pidfile}; trap '' TERM; echo started; sleep 30"
    )
    started = time.perf_counter()

    result = await run(tools(None)["bash"], command=command, timeout=3000)

    elapsed = time.perf_counter() - started
    assert result.is_error
    assert result.output == "bash: command timed out after 3000ms\nstarted\n"
    assert result.metadata == {
        "shell": " ".join(builtin_shell()),
        "timedOut": True,
        "killedTree": True,
        "truncated": False,
    }
    assert await gone(int(pidfile.read_text()))
    assert elapsed < 3 + KILL_GRACE_MS / 1000 + 5
    assert KILL_GRACE_MS == 2000


async def test_a_command_that_exits_on_term_returns_without_the_grace(tmp_path: Path) -> None:
    started = time.perf_counter()

    result = await run(tools(None)["bash"], command="sleep 30", timeout=300)

    assert result.output.startswith("bash: command timed out after 300ms\n")
    assert time.perf_counter() - started < 0.3 + KILL_GRACE_MS / 1000


# --- todowrite and apply_patch --------------------------------------------------------------


async def test_todowrite_lines_are_unnumbered_and_the_metadata_is_the_input() -> None:
    todos = [
        {"id": 1, "text": "write the parser", "completed": True},
        {"id": "2", "text": "test it", "completed": False},
    ]

    result = await run(tools(None)["todowrite"], todos=todos)

    assert result.output == "[x] write the parser\n[ ] test it"
    assert result.metadata == {"todos": todos}


async def test_apply_patch_output_and_metadata_are_exact(tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_text("a\nb\n")
    (tmp_path / "gone.txt").write_text("x")
    text = PATCH.format(
        "*** Add File: new.txt\n+one\n+two\n"
        "*** Update File: old.txt\n@@\n a\n-b\n+B\n"
        "*** Delete File: gone.txt"
    )

    result = await run(tools({"base_dir": str(tmp_path)})["apply_patch"], patchText=text)

    assert result.output == "Applied patch: 3 file operations"
    assert result.metadata == {"added": 1, "updated": 1, "deleted": 1}
    assert (tmp_path / "new.txt").read_text() == "one\ntwo"  # no newline added
    assert (tmp_path / "old.txt").read_text() == "a\nB\n"
    assert not (tmp_path / "gone.txt").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("*** Add File: a\n+x\n*** End Patch", "apply_patch: missing '*** Begin Patch'"),
        ("*** Begin Patch\n*** Add File: a\n+x", "apply_patch: missing '*** End Patch'"),
        (PATCH.format("garbage"), "apply_patch: unexpected line: garbage"),
        (
            PATCH.format("*** Add File: exists.txt\n+x"),
            "apply_patch: file already exists: exists.txt",
        ),
        (PATCH.format("*** Delete File: nope.txt"), "apply_patch: file not found: nope.txt"),
    ],
)
async def test_apply_patch_errors_use_the_package_texts_and_change_nothing(
    tmp_path: Path, text: str, message: str
) -> None:
    (tmp_path / "exists.txt").write_text("keep")
    before = sorted(p.name for p in tmp_path.iterdir())

    result = await run(tools({"base_dir": str(tmp_path)})["apply_patch"], patchText=text)

    assert (result.is_error, result.output) == (True, message)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (tmp_path / "exists.txt").read_text() == "keep"


async def test_a_hunk_that_does_not_match_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a\n")
    text = PATCH.format("*** Add File: new.txt\n+x\n*** Update File: f.txt\n@@\n-zzz\n+y")

    result = await run(tools({"base_dir": str(tmp_path)})["apply_patch"], patchText=text)

    assert result.output.startswith("apply_patch: hunk does not match file contents")
    assert not (tmp_path / "new.txt").exists()


def test_the_walks_skip_the_package_ignore_dirs() -> None:
    assert set(IGNORE_DIRS) == {".git", "node_modules"}
