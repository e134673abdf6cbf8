"""``bash`` in a real bubblewrap sandbox (issue 10, item 3).

Without bubblewrap these tests skip, except under CI (``CI`` set), where they fail:
``scripts/test.sh`` installs it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from builtin_support import Builtin, Fifo, process_gone
from net_support import HitCounter

from toolnexus._types import Tool, ToolContext, ToolResult
from toolnexus.errors import UsageError
from toolnexus.tools.builtins import create_builtin_tools

if shutil.which("bwrap") is None:  # pragma: no cover - depends on the machine
    if os.environ.get("CI"):
        raise RuntimeError("CI must have bubblewrap (scripts/test.sh installs it)")
    pytest.skip("bubblewrap (bwrap) is not installed", allow_module_level=True)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def sandboxed(builtin: Builtin, ws: Path) -> Tool:
    return builtin("bash", workspace=str(ws), bash={"sandbox": True})


async def test_the_workspace_is_readable_and_writable(sandboxed: Tool, ws: Path) -> None:
    (ws / "in.txt").write_text("from the host\n")

    result = await sandboxed.execute({"command": "cat in.txt && echo made > out.txt && pwd"})

    assert not result.is_error, result.output
    assert result.output == f"from the host\n{ws}\n"
    assert (ws / "out.txt").read_text() == "made\n"


async def test_writing_outside_the_workspace_fails(
    sandboxed: Tool, tmp_path: Path, ws: Path
) -> None:
    outside = tmp_path / "outside.txt"
    command = (
        f"touch {outside}; echo x > /usr/escape; echo x > /etc/escape; "
        "mount -o remount,rw /usr; mount -o remount,rw,bind /usr; echo x > /usr/escape2"
    )

    result = await sandboxed.execute({"command": command})

    assert result.is_error
    assert not outside.exists()
    assert not Path("/usr/escape").exists()
    assert not Path("/usr/escape2").exists()
    assert not Path("/etc/escape").exists()
    assert "Read-only file system" in result.output


async def test_the_rest_of_the_host_is_not_visible(
    sandboxed: Tool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "beside.txt").write_text("host file beside the workspace\n")
    monkeypatch.setenv("TOOLNEXUS_TEST_SECRET", "s3cr3t-value")

    result = await sandboxed.execute(
        {"command": f"cat {tmp_path}/beside.txt; ls /root /home /work /srv; env"}
    )

    assert "host file beside" not in result.output
    assert "s3cr3t-value" not in result.output
    assert "No such file or directory" in result.output
    assert "HOME=/tmp" in result.output


async def test_the_network_is_absent_unless_allowed(builtin: Builtin, ws: Path) -> None:
    fetch = (
        "python3 -c 'import sys, urllib.request; "
        'urllib.request.urlopen(sys.argv[1], timeout=5).read(); print("reached")\' {url}'
    )
    async with HitCounter() as server:
        closed = builtin("bash", workspace=str(ws), bash={"sandbox": True})
        opened = builtin("bash", workspace=str(ws), bash={"sandbox": {"network": True}})

        refused = await closed.execute({"command": fetch.format(url=server.url)})
        assert server.hits == 0
        reached = await opened.execute({"command": fetch.format(url=server.url)})

    assert refused.is_error
    assert "reached" not in refused.output
    assert not reached.is_error, reached.output
    assert server.hits == 1


async def test_ps_sees_only_the_sandboxs_processes(sandboxed: Tool) -> None:
    result = await sandboxed.execute({"command": "ps -e -o pid=,comm="})

    assert not result.is_error, result.output
    listed = [line.split() for line in result.output.splitlines()]
    # The sandbox's init (bwrap), maybe the shell, and ps itself: none of the host's processes.
    assert {command for _, command in listed} <= {"bwrap", "bash", "ps"}
    assert {command for _, command in listed} >= {"bwrap", "ps"}
    assert [pid for pid, command in listed if command == "bwrap"] == ["1"]


def sandbox_pids(needle: str) -> list[int]:
    """Every host pid in the one PID namespace (not ours) where a command line holds
    ``needle``."""
    ours = os.readlink("/proc/self/ns/pid")
    by_ns: dict[str, list[int]] = {}
    marked: set[str] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ns = os.readlink(f"/proc/{entry}/ns/pid")
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if ns == ours:
            continue
        by_ns.setdefault(ns, []).append(int(entry))
        if needle.encode() in cmdline:
            marked.add(ns)
    assert len(marked) == 1, marked
    return by_ns[marked.pop()]


SPAWNER = (
    "for i in $(seq 50); do sleep 4321.5 & done; setsid sleep 4321.5 & "
    "(trap '' TERM HUP; exec sleep 4321.5) & echo ready > ready.fifo; wait"
)


async def started(
    tool: Tool, ws: Path, args: dict[str, Any], ctx: ToolContext
) -> tuple[asyncio.Future[ToolResult], list[int]]:
    """Start ``args``; once it said ``ready``, the host pids of everything in its sandbox."""
    signal = Fifo(ws / "ready.fifo")
    call = asyncio.ensure_future(tool.execute(args, ctx))
    try:
        assert await signal.wait(30) == b"ready\n"
        return call, sandbox_pids("4321.5")
    except BaseException:
        assert ctx.signal is not None
        ctx.signal.set()
        await call
        raise
    finally:
        signal.close()


async def test_a_fork_storm_is_killed_whole_when_the_run_is_cancelled(
    sandboxed: Tool, ws: Path
) -> None:
    stop = asyncio.Event()
    args = {"command": SPAWNER, "timeout": 600_000}
    call, pids = await started(sandboxed, ws, args, ToolContext(signal=stop))

    stop.set()
    result = await call

    assert len(pids) >= 52  # 50 children, one in its own session, one ignoring signals
    assert result.is_error
    assert "cancelled" in result.output
    assert all([await process_gone(pid) for pid in pids])


async def test_a_timeout_kills_processes_that_left_the_process_group(
    sandboxed: Tool, ws: Path
) -> None:
    command = "setsid sleep 4321.5 & echo ready > ready.fifo; sleep 4321.5"
    args = {"command": command, "timeout": 3000}
    call, pids = await started(sandboxed, ws, args, ToolContext(signal=asyncio.Event()))

    result = await call

    assert len(pids) >= 3  # the sandbox's init, bash or its sleep, the setsid sleep
    assert result.is_error
    assert "timed out after 3000ms" in result.output
    assert all([await process_gone(pid) for pid in pids])


async def test_the_sandbox_timeout_caps_the_models_timeout(builtin: Builtin, ws: Path) -> None:
    tool = builtin("bash", workspace=str(ws), bash={"sandbox": {"timeout": 0.5}})

    result = await tool.execute({"command": "sleep 30", "timeout": 600_000})

    assert result.is_error
    assert "timed out after 500ms" in result.output


async def test_memory_is_limited(builtin: Builtin, ws: Path) -> None:
    tool = builtin("bash", workspace=str(ws), bash={"sandbox": {"memory_mb": 200}})
    grab = "python3 -c 'x = bytearray(400 * 1024 * 1024); print(\"got it\")'"

    limited = await tool.execute({"command": grab})
    small = await tool.execute({"command": "python3 -c 'x = bytearray(20 * 1024 * 1024)'"})

    assert limited.is_error
    assert "MemoryError" in limited.output
    assert "got it" not in limited.output
    assert not small.is_error, small.output


async def test_output_is_capped_as_for_every_built_in(builtin: Builtin, ws: Path) -> None:
    tool = builtin("bash", workspace=str(ws), bash={"sandbox": True}, max_output_bytes=100)

    result = await tool.execute({"command": "yes | head -c 100000"})

    assert result.output.endswith("[truncated: output exceeded 100 bytes]")
    assert result.metadata is not None
    assert result.metadata["truncated"] is True


async def test_an_allowlist_applies_inside_the_sandbox(builtin: Builtin, ws: Path) -> None:
    tool = builtin("bash", workspace=str(ws), bash={"allow": ["git"], "sandbox": True})

    made = await tool.execute({"command": "git init -q"})
    refused = await tool.execute({"command": "git -c alias.x=!id x"})
    shelled = await tool.execute({"command": "ls; id"})

    assert not made.is_error, made.output
    assert (ws / ".git" / "HEAD").exists()
    assert "not allowed" in refused.output
    assert "not allowed" in shelled.output


async def test_a_hostile_filter_driver_runs_confined_to_the_sandbox(
    builtin: Builtin, ws: Path, tmp_path: Path
) -> None:
    """What no git rule covers (a repository config the host did not write, with a driver of
    any name) is contained by the sandbox: the driver runs, but cannot leave the workspace."""
    tool = builtin("bash", workspace=str(ws), bash={"allow": ["git"], "sandbox": True})
    outside, inside = tmp_path / "OUTSIDE_MARKER", ws / "INSIDE_MARKER"
    await tool.execute({"command": "git init -q"})
    with (ws / ".git" / "config").open("a") as config:
        config.write(f'[filter "evil"]\n\tclean = touch {outside} {inside}; cat\n')
    (ws / ".gitattributes").write_text("*.txt filter=evil\n")
    (ws / "a.txt").write_text("a\n")

    await tool.execute({"command": "git add a.txt"})

    assert inside.exists()  # the driver did run
    assert not outside.exists()


def test_a_sandbox_without_a_workspace_is_refused() -> None:
    with pytest.raises(UsageError, match="needs a workspace"):
        create_builtin_tools({"bash": {"sandbox": True}})


@pytest.mark.parametrize(
    "sandbox",
    [{"netwrok": False}, {"memory_mb": 0}, {"timeout": "1m"}, {"ro_paths": "/opt"}, "yes"],
)
def test_a_bad_sandbox_setting_is_refused(ws: Path, sandbox: object) -> None:
    with pytest.raises(UsageError, match=r"bash\.sandbox"):
        create_builtin_tools({"workspace": str(ws), "bash": {"sandbox": sandbox}})


def test_a_missing_bwrap_is_an_error_at_creation(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))

    with pytest.raises(UsageError, match="needs bubblewrap"):
        create_builtin_tools({"workspace": str(ws), "bash": {"sandbox": True}})


def test_a_bwrap_that_cannot_make_namespaces_is_an_error_at_creation(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``bwrap`` that fails the way a kernel without user namespaces makes it fail."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "bwrap"
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")

    with pytest.raises(UsageError, match="No permissions to creating new namespace"):
        create_builtin_tools({"workspace": str(ws), "bash": {"sandbox": True}})
