"""examples/untrusted_model.py runs as a user would run it and every escape it tries is refused."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "untrusted_model.py"


@pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("CI"), reason="needs bubblewrap"
)
def test_the_untrusted_model_example_stays_inside() -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_BASE_URL")}
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )

    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("write     ok")
    assert lines[1] == "bash      ok       hello from the sandbox"
    assert [line.split()[1] for line in lines[2:7]] == ["refused"] * 5
    assert "outside the workspace" in lines[2]
    assert "inside .git" in lines[3]
    assert "not a public address" in lines[6]
    assert "escaped file exists: False" in lines
    assert lines[-1] == "I stayed inside."
