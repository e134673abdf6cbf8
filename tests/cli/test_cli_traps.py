"""No silent traps on the command line, as real subprocesses: a mistyped SQLite path is refused by
every command that only reads or answers (no file is created), a worker refuses an app whose
client keeps halted runs in memory (instead of idling for ever), and ``--app`` takes a file path
(or explains in one line why it cannot)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from proc_support import stop
from toolnexus.cli import codes

HERE = Path(__file__).parent


async def cli(*args: str, cwd: Path = HERE, env: dict[str, str] | None = None) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
    _, err = await asyncio.wait_for(proc.communicate(), 50)
    assert proc.returncode is not None
    return proc.returncode, err.decode()


@pytest.mark.parametrize(
    "command",
    [
        ["pending"],
        ["pending", "--json"],
        ["answer", "pnd-1", "--approve"],
        ["cancel", "pnd-1"],
        ["purge", "--older-than", "30d"],
    ],
    ids=lambda c: " ".join(c),
)
async def test_a_mistyped_store_is_refused_and_no_file_is_created(
    command: list[str], tmp_path: Path
) -> None:
    typo = tmp_path / "paymnets.db"
    code, err = await cli(*command, "--store", f"sqlite:///{typo}")
    assert code == codes.USAGE
    assert f"the SQLite file {str(typo)!r} does not exist" in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not typo.exists()
    assert list(tmp_path.iterdir()) == []


def write_app(where: Path, store: str) -> Path:
    app = where / "payments.py"
    app.write_text(
        "from toolnexus import create_client, create_toolkit\n"
        "async def make():\n"
        f"    client = create_client(base_url='http://127.0.0.1:9', model='m', api_key='k'"
        f"{', store=' + repr(store) if store else ''})\n"
        "    return client, await create_toolkit(builtins=False)\n"
    )
    return app


async def test_a_worker_refuses_an_app_whose_client_keeps_runs_in_memory(tmp_path: Path) -> None:
    write_app(tmp_path, "")
    code, err = await asyncio.wait_for(
        cli("worker", "--app", "payments:make", cwd=tmp_path), 60
    )  # it ends: no idling for ever
    assert code == codes.USAGE
    assert "keeps halted runs in memory" in err
    assert "store=" in err
    assert len(err.strip().splitlines()) == 1


async def test_app_takes_a_file_path(tmp_path: Path) -> None:
    app = write_app(tmp_path / "", f"sqlite:///{tmp_path / 'state.db'}")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    worker = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus",
        "worker",
        "--app",
        f"{os.path.relpath(app, elsewhere)}:make",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=elsewhere,
    )
    assert worker.stderr is not None
    line = await asyncio.wait_for(worker.stderr.readline(), 50)
    assert line.decode().startswith("worker: ready, holding the runs it takes as ")
    _, err = await stop(worker, 30, "the worker")
    assert worker.returncode == 0, err.decode()
    assert "worker: stopped (0 resumed, 0 failed)" in err.decode()


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        ("./nope.py:make", "--app: no such file './nope.py'"),
        ("payments.py", "--app takes module:factory or path/to/file.py:factory"),
        ("./payments.py:missing", "--app: ./payments.py has no callable 'missing'"),
    ],
)
async def test_a_wrong_app_is_one_line(ref: str, says: str, tmp_path: Path) -> None:
    write_app(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    code, err = await cli("worker", "--app", ref, cwd=tmp_path)
    assert code == codes.USAGE
    assert says in err
    assert len(err.strip().splitlines()) == 1
