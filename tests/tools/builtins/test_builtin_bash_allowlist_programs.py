"""Programs that run code by design, as docs/tools.md lists them: under a bare allowlist they run
whatever the model asks (documented, not refused); inside the sandbox what they run cannot
touch the host outside the workspace (issue 10, item 1, the review of other programs)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from builtin_support import Builtin

# (allowed program, command): each creates {m}, a marker outside the workspace, and {w}, one
# inside it (which shows the code ran, also in the sandbox).
BY_DESIGN = [
    ("find", "find . -maxdepth 0 -exec touch {m} {w} {{}} +"),
    ("xargs", "xargs touch {m} {w}"),
    ("env", "env touch {m} {w}"),
    ("sed", "sed -n '1e touch {m} {w}' a.txt"),
    ("awk", "awk 'BEGIN {{ system(\"touch {m} {w}\") }}'"),
    ("python3", 'python3 -c \'[open(p, "w") for p in ("{w}", "{m}")]\''),
    ("make", "make -s"),
    ("tar", "tar -cf /dev/null --checkpoint=1 '--checkpoint-action=exec=touch {m} {w}' a.txt"),
]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("line\n")
    (ws / "Makefile").write_text(f"all:\n\ttouch {tmp_path / 'MARKER'} {ws / 'RAN'}\n")
    return ws


@pytest.mark.parametrize(("program", "command"), BY_DESIGN)
async def test_an_allowlisted_program_that_runs_code_does_so(
    builtin: Builtin, ws: Path, tmp_path: Path, program: str, command: str
) -> None:
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed")
    marker = tmp_path / "MARKER"
    bash = builtin("bash", workspace=str(ws), bash={"allow": [program]})

    result = await bash.execute({"command": command.format(m=marker, w=ws / "RAN")})

    assert marker.exists(), result.output  # what docs/tools.md warns about


@pytest.mark.parametrize(("program", "command"), BY_DESIGN)
async def test_inside_the_sandbox_what_it_runs_stays_in_the_workspace(
    builtin: Builtin, ws: Path, tmp_path: Path, program: str, command: str
) -> None:
    if shutil.which(program) is None or shutil.which("bwrap") is None:
        pytest.skip(f"{program} or bwrap is not installed")
    marker = tmp_path / "MARKER"
    # The marker's directory is visible in the sandbox, read-only: the write is really tried.
    sandbox = {"ro_paths": [str(tmp_path)]}
    bash = builtin("bash", workspace=str(ws), bash={"allow": [program], "sandbox": sandbox})

    result = await bash.execute({"command": command.format(m=marker, w=ws / "RAN")})

    assert (ws / "RAN").exists(), result.output  # it ran ...
    assert not marker.exists(), result.output  # ... and the host outside the workspace is intact
    assert "Read-only file system" in result.output
