"""The ``bash`` built-in with real subprocesses (CONTRACT §4A, DESIGN §7)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from builtin_support import Builtin, Fifo, process_gone

from toolnexus._types import ToolContext

# --- the contract's behaviour --------------------------------------------------------------


async def test_output_combines_stdout_and_stderr(builtin: Builtin) -> None:
    result = await builtin("bash").execute({"command": "echo out; echo err >&2"})

    assert not result.is_error
    assert result.output == "out\nerr\n"


async def test_a_non_zero_exit_is_an_error_naming_the_code(builtin: Builtin) -> None:
    result = await builtin("bash").execute({"command": "echo partial; exit 3"})

    assert result.is_error
    assert result.output == "partial\n\nbash: command exited with code 3"  # always a newline
    assert result.metadata is not None
    assert result.metadata["exitCode"] == 3


async def test_the_command_runs_in_workdir(builtin: Builtin, real_tmp: str) -> None:
    result = await builtin("bash").execute({"command": "pwd", "workdir": real_tmp})

    assert result.output == real_tmp + "\n"


async def test_a_missing_workdir_is_an_error(builtin: Builtin, tmp_path: Path) -> None:
    result = await builtin("bash").execute({"command": "pwd", "workdir": str(tmp_path / "no")})

    assert result.is_error
    assert "workdir is not a directory" in result.output


async def test_stdin_is_empty_so_a_reader_does_not_hang(builtin: Builtin) -> None:
    result = await builtin("bash").execute({"command": "cat; echo done"})

    assert result.output == "done\n"


async def test_a_background_job_does_not_hold_the_call(builtin: Builtin, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    command = f"sleep 30 & echo $! > {pidfile}; echo started"

    try:
        result = await builtin("bash").execute({"command": command, "timeout": 20_000})
    finally:
        os.kill(int(pidfile.read_text()), 9)

    assert result.output == "started\n"


async def test_a_timeout_kills_the_whole_process_tree(builtin: Builtin, tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    # The outer shell runs a second bash, whose background `sleep` is our grandchild.
    command = f"bash -c 'sleep 30 & echo $! > {pidfile}; wait'; echo never"

    result = await builtin("bash").execute({"command": command, "timeout": 1500})

    assert result.is_error
    assert result.output.startswith("bash: command timed out after 1500ms")
    assert "never" not in result.output
    assert await process_gone(int(pidfile.read_text()))


async def test_a_cancel_signal_kills_the_grandchildren(
    builtin: Builtin, tmp_path: Path, fifo: Fifo
) -> None:
    pidfile = tmp_path / "grandchild.pid"
    inner = f"sleep 30 & echo $! > {pidfile}; echo ready > {fifo.path}; wait"
    signal = asyncio.Event()
    call = asyncio.ensure_future(
        builtin("bash").execute(
            {"command": f"bash -c '{inner}'; echo never"}, ToolContext(signal=signal)
        )
    )
    assert await fifo.wait() == b"ready\n"

    signal.set()
    result = await call

    assert result.output.startswith("bash: command cancelled")
    assert "never" not in result.output
    assert await process_gone(int(pidfile.read_text()))


async def test_a_cancelled_task_kills_the_command(
    builtin: Builtin, tmp_path: Path, fifo: Fifo
) -> None:
    pidfile = tmp_path / "pid"
    command = f"echo $$ > {pidfile}; echo ready > {fifo.path}; exec sleep 30"
    call = asyncio.ensure_future(builtin("bash").execute({"command": command}))
    await fifo.wait()

    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call

    assert await process_gone(int(pidfile.read_text()))


async def test_a_set_signal_means_the_command_never_starts(
    builtin: Builtin, tmp_path: Path
) -> None:
    signal = asyncio.Event()
    signal.set()

    result = await builtin("bash").execute(
        {"command": f"touch {tmp_path / 'ran'}"}, ToolContext(signal=signal)
    )

    assert result.is_error
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("timeout", [0, -5, "soon", True])
async def test_an_invalid_timeout_is_an_error(builtin: Builtin, timeout: object) -> None:
    result = await builtin("bash").execute({"command": "true", "timeout": timeout})

    assert result.is_error
    assert "timeout" in result.output


async def test_a_missing_command_is_an_error_not_an_exception(builtin: Builtin) -> None:
    result = await builtin("bash").execute({})

    assert result.is_error
    assert "command is required" in result.output


# --- output cap ----------------------------------------------------------------------------


async def test_huge_output_is_truncated_with_a_notice(builtin: Builtin) -> None:
    bash = builtin("bash", max_output_bytes=1000)

    result = await bash.execute({"command": "head -c 5000000 /dev/zero | tr '\\0' x"})

    assert not result.is_error
    assert result.output == "x" * 1000 + "\n[truncated: output exceeded 1000 bytes]"
    assert result.metadata is not None
    assert result.metadata["truncated"] is True


async def test_the_exit_code_survives_truncation(builtin: Builtin) -> None:
    bash = builtin("bash", max_output_bytes=10)

    result = await bash.execute({"command": "seq 1 1000; exit 2"})

    assert result.is_error
    assert result.output.endswith(
        "[truncated: output exceeded 10 bytes]\nbash: command exited with code 2"
    )


async def test_truncation_never_splits_a_character(builtin: Builtin) -> None:
    bash = builtin("bash", max_output_bytes=5)

    result = await bash.execute({"command": "printf 'ééééé'"})

    assert result.output.startswith("éé\n[truncated")


async def test_the_default_cap_applies_without_the_option(builtin: Builtin) -> None:
    result = await builtin("bash").execute({"command": "head -c 200000 /dev/zero | tr '\\0' y"})

    assert result.output.endswith("\n[truncated: output exceeded 51200 bytes]")


# --- the allowlist -------------------------------------------------------------------------


async def test_an_allowed_program_runs(builtin: Builtin) -> None:
    bash = builtin("bash", bash={"allow": ["echo"]})

    result = await bash.execute({"command": "echo 'two words' plain"})

    assert not result.is_error
    assert result.output == "two words plain\n"


async def test_a_program_not_on_the_allowlist_is_refused(builtin: Builtin, tmp_path: Path) -> None:
    bash = builtin("bash", bash={"allow": ["git", "pytest"]})

    result = await bash.execute({"command": f"touch {tmp_path / 'x'}"})

    assert result.is_error
    assert "command not allowed: 'touch' (allowed: git, pytest)" in result.output
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    "command",
    [
        "echo a; touch {x}",
        "echo a && touch {x}",
        "echo a || touch {x}",
        "echo a | touch {x}",
        "echo `touch {x}`",
        "echo $(touch {x})",
        "echo a > {x}",
        "echo a < {x}",
        "echo a &",
        "echo a\ntouch {x}",
        "echo '; touch {x}'",
        "echo $HOME",
    ],
)
async def test_shell_metacharacters_are_refused_with_an_allowlist(
    builtin: Builtin, tmp_path: Path, command: str
) -> None:
    bash = builtin("bash", bash={"allow": ["echo"]})

    result = await bash.execute({"command": command.format(x=tmp_path / "x")})

    assert result.is_error
    assert "shell metacharacters are not allowed" in result.output
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("command", ["/bin/echo hi", "X=1 echo hi", "ECHO hi"])
async def test_the_first_word_must_match_exactly(builtin: Builtin, command: str) -> None:
    bash = builtin("bash", bash={"allow": ["echo"]})

    result = await bash.execute({"command": command})

    assert result.is_error
    assert "command not allowed" in result.output


async def test_allowlisted_commands_get_no_shell_expansion(builtin: Builtin, in_tmp: Path) -> None:
    (in_tmp / "a.txt").write_text("")
    bash = builtin("bash", bash={"allow": ["echo"]})

    result = await bash.execute({"command": "echo *.txt ~"})

    assert result.output == "*.txt ~\n"


async def test_an_unclosed_quote_is_refused(builtin: Builtin) -> None:
    bash = builtin("bash", bash={"allow": ["echo"]})

    result = await bash.execute({"command": "echo 'open"})

    assert result.is_error
    assert "cannot parse the command" in result.output


async def test_an_allowed_but_missing_program_is_an_error(builtin: Builtin) -> None:
    bash = builtin("bash", bash={"allow": ["no-such-program-xyz"]})

    result = await bash.execute({"command": "no-such-program-xyz"})

    assert result.is_error
    assert "command not found: no-such-program-xyz" in result.output


async def test_the_description_names_the_allowed_programs(builtin: Builtin) -> None:
    bash = builtin("bash", bash={"allow": ["git", "pytest"]})

    assert "git, pytest" in bash.description


# --- the workspace -------------------------------------------------------------------------


async def test_commands_start_in_the_workspace(builtin: Builtin, real_tmp: str) -> None:
    bash = builtin("bash", workspace=real_tmp)

    result = await bash.execute({"command": "pwd"})

    assert result.output == real_tmp + "\n"


@pytest.mark.parametrize("workdir", ["..", "/", "link"])
async def test_a_workdir_outside_the_workspace_is_refused(
    builtin: Builtin, tmp_path: Path, workdir: str
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "link").symlink_to(tmp_path)
    bash = builtin("bash", workspace=str(workspace))

    result = await bash.execute({"command": f"touch {tmp_path / 'ran'}", "workdir": workdir})

    assert result.is_error
    assert "outside the workspace" in result.output
    assert not (tmp_path / "ran").exists()
