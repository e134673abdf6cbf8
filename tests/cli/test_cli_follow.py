"""``toolnexus answer --wait``: the command records the answer, then follows the run while a
``toolnexus worker`` in another process finishes it, and prints the run's final text. A
spinner shows the wait on a terminal (a real pty) and never in piped output."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pexpect
import pytest
from test_cli_store_commands import HERE, brain, cli, halt

from proc_support import stop
from toolnexus.testing import ScriptedModel


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    return str(request.getfixturevalue("pg_url"))


async def start_worker(store_url: str, base_url: str, ledger: Path) -> asyncio.subprocess.Process:
    env = {"TN_STORE": store_url, "TN_BASE_URL": base_url, "TN_LEDGER": str(ledger)}
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus",
        "worker",
        "--app",
        "cli_app:make",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **env},
        cwd=HERE,
    )


async def test_answer_wait_prints_the_final_text_once_a_worker_finished_the_run(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    async with ScriptedModel(default=brain) as model:
        rid = await halt(model, store_url, ledger, "W-1")
        answering = asyncio.create_task(
            cli("answer", rid, "--store", store_url, "--approve", "--as", "ana", "--wait")
        )
        worker = await start_worker(store_url, model.openai_base_url, ledger)
        try:
            code, out, err = await answering
        finally:
            await stop(worker, 30, "the worker")
    assert code == 0, err
    assert out.strip() == "Done: refunded W-1."
    assert f"{rid}: approved as ana" in err
    assert f"{rid}: done\n" in err  # the run's own status only when it adds something
    assert "\x1b" not in err  # no spinner when stderr is not a terminal
    assert ledger.read_text() == "refunded W-1\n"


async def test_answer_wait_json_carries_the_outcome(store_url: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.txt"
    async with ScriptedModel(default=brain) as model:
        rid = await halt(model, store_url, ledger, "W-2")
        worker = await start_worker(store_url, model.openai_base_url, ledger)
        try:
            code, out, err = await cli(
                "answer", rid, "--store", store_url, "--decline", "--reason", "no", "--wait",
                "--json",
            )  # fmt: skip
        finally:
            await stop(worker, 30, "the worker")
    assert code == 0, err
    record = json.loads(out)
    assert record["status"] == "done"
    # --reason is why it was declined: kept as the note of a decline
    assert record["answer"] == {
        "id": rid,
        "ok": False,
        "reason": "declined",
        "data": {"note": "no"},
    }
    assert record["outcome"]["status"] == "done"
    # the tool never ran: the model saw the decline
    assert record["outcome"]["text"] == "Done: declined/expired: Refund order W-2?\nreason: no."
    assert not ledger.exists()


async def test_answer_wait_gives_up_after_its_timeout_and_leaves_the_run_queued(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    ledger = tmp_path / "ledger.txt"
    async with ScriptedModel(default=brain) as model:
        rid = await halt(model, url, ledger, "W-3")
    code, out, err = await cli(
        "answer", rid, "--store", url, "--approve", "--wait", "--timeout", "0.3"
    )
    assert code == 7, err
    assert out == ""
    assert f"{rid}: still queued, waiting for a worker after 0.3s" in err
    code, out, _ = await cli("pending", "--store", url, "--json")
    assert (code, out) == (0, "")  # answered: off the pending list, waiting for a worker
    code, _, err = await cli("answer", rid, "--store", url, "--approve")
    assert code == 4  # the answer was recorded once


async def test_timeout_without_wait_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = await cli(
        "answer", "x", "--store", f"sqlite:///{tmp_path / 'r.db'}", "--approve", "--timeout", "1"
    )
    assert code == 2
    assert "--timeout needs --wait" in err


async def test_a_terminal_sees_a_spinner_while_the_answer_waits_for_a_worker(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    async with ScriptedModel(default=brain) as model:
        rid = await halt(model, url, tmp_path / "ledger.txt", "W-4")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "toolnexus", "answer", rid, "--store", url, "--approve", "--wait", "--timeout", "3"],
        cwd=str(HERE),
        encoding="utf-8",
        timeout=30,
        dimensions=(24, 120),
    )
    try:
        child.expect_exact("queued, waiting for a worker")
        child.expect_exact("0:00:0")  # the elapsed-time column
        child.expect_exact(f"{rid}: still queued, waiting for a worker after 3s")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 7
