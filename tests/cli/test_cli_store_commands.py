"""``toolnexus pending / answer / cancel / purge / worker`` as real subprocesses over a SQLite
file and the real Postgres: an answer given on the command line (no toolkit there) is recorded
once, and ``toolnexus worker`` finishes the run — the approved refund happens exactly once."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_app import refund_tool

from proc_support import stop
from toolnexus import create_client
from toolnexus.stores.url import resolve_store
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls

HERE = Path(__file__).parent


def brain(request: RecordedRequest) -> Reply:
    messages = request.body["messages"]
    done = [m for m in messages if m.get("role") == "tool"]
    if not done:
        order = str(messages[-1]["content"]).split()[-1]
        return tool_calls(call("refund", {"order": order}))
    return text(f"Done: {done[-1]['content']}.")


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    return str(request.getfixturevalue("pg_url"))


async def cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "toolnexus",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
        cwd=HERE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 50)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def halt(model: ScriptedModel, store_url: str, ledger: Path, order: str) -> str:
    store: Any = resolve_store(store_url)
    async with (
        store,
        create_client(
            base_url=model.openai_base_url, model="m-1", api_key="sk-test", store=store
        ) as client,
    ):
        result = await client.run(f"refund order {order}", [refund_tool(ledger)])
    assert result.status == "pending"
    assert result.pending is not None
    return result.pending.id


async def test_an_answer_from_the_command_line_is_finished_by_a_worker_exactly_once(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    async with ScriptedModel(default=brain) as model:
        rid = await halt(model, store_url, ledger, "A-1")
        code, out, _ = await cli("pending", "--store", store_url, "--json")
        assert code == 0
        [listed] = [json.loads(line) for line in out.splitlines()]
        assert (listed["request_id"], listed["kind"], listed["tool"]) == (rid, "approval", "refund")

        code, out, err = await cli(
            "answer", rid, "--store", store_url, "--approve", "--as", "ana", "--json"
        )
        assert code == 0, err
        record = json.loads(out)
        assert (record["status"], record["answered_by"], record["answer"]["ok"]) == (
            "answered",
            "ana",
            True,
        )
        code, _, err = await cli("answer", rid, "--store", store_url, "--decline", "--as", "bob")
        assert code == 4
        assert "ana" in err  # the conflict names who answered first
        assert not ledger.exists()  # answering ran nothing

        env = {
            "TN_STORE": store_url,
            "TN_BASE_URL": model.openai_base_url,
            "TN_LEDGER": str(ledger),
        }
        worker = await asyncio.create_subprocess_exec(
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
        assert worker.stdout is not None
        line = await asyncio.wait_for(worker.stdout.readline(), 50)
        assert line.decode().strip() == f"{rid}: done"
        _, err_bytes = await stop(worker, 30, "the worker")
        assert worker.returncode == 0
        assert "1 resumed, 0 failed" in err_bytes.decode()
    assert ledger.read_text() == "refunded A-1\n"
    code, out, _ = await cli("pending", "--store", store_url, "--json")
    assert (code, out) == (0, "")
    code, out, _ = await cli("purge", "--store", store_url, "--older-than", "0s", "--json")
    assert (code, json.loads(out)) == (0, {"purged": 1})


async def test_a_cancel_ends_the_run_and_a_later_answer_is_refused(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    async with ScriptedModel(default=brain) as model:
        rid = await halt(model, store_url, ledger, "B-2")
    code, out, err = await cli(
        "cancel", rid, "--store", store_url, "--reason", "dup", "--as", "ops"
    )
    assert (code, out.strip()) == (0, f"{rid}: cancelled"), err
    code, _, err = await cli("answer", rid, "--store", store_url, "--approve")
    assert code == 4
    assert "cancel" in err
    code, out, _ = await cli("pending", "--store", store_url)
    assert "no pending requests" in out
    assert not ledger.exists()


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["answer", "nope", "--approve"], 3, 'no halted run waits on request "nope"'),
        (["answer", "x", "--approve", "--decline"], 2, "exactly one of"),
        (["answer", "x"], 2, "exactly one of"),
        (["answer", "x", "--approve", "--reason", "r"], 2, "--reason goes with --decline"),
        (["answer", "x", "--data", "{not json"], 2, "--data is not JSON"),
        (["answer", "x", "--data", "[1]"], 2, "--data must be a JSON object"),
        (["purge", "--older-than", "tomorrow"], 2, "--older-than takes an age"),
    ],
)
async def test_bad_flags_get_a_message_and_a_code_not_a_traceback(
    tmp_path: Path, args: list[str], code: int, says: str
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    (tmp_path / "runs.db").touch()  # an existing (empty) store: a missing one is refused first
    got, out, err = await cli(*args, "--store", url)
    assert got == code, (out, err)
    assert says in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("store", "says"),
    [
        ("sqlte:///x.db", "store must be one of"),
        ("memory", "--store needs a durable store"),
    ],
)
async def test_a_store_url_that_is_not_one_is_a_usage_error(store: str, says: str) -> None:
    code, _, err = await cli("pending", "--store", store)
    assert code == 2
    assert says in err


async def test_an_answer_to_an_expired_request_says_so(tmp_path: Path) -> None:
    from toolnexus import Tool, ToolResult, pending

    async def late(args: dict[str, Any], ctx: Any = None) -> ToolResult:
        return pending(kind="approval", prompt="late?", id="late", expiresAt="2000-01-01T00:00:00Z")

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store: Any = resolve_store(url)
    async with ScriptedModel([tool_calls(call("late", {}))]) as model:
        async with (
            store,
            create_client(
                base_url=model.openai_base_url, model="m-1", api_key="sk-test", store=store
            ) as client,
        ):
            result = await client.run("go", [Tool("late", "d", {"type": "object"}, "native", late)])
    assert result.status == "pending"
    code, _, err = await cli("answer", "late", "--store", url, "--approve")
    assert code == 5
    assert "expired" in err


async def test_help_lists_every_command_and_a_missing_extra_is_named() -> None:
    code, out, _ = await cli("--help")
    assert code == 0
    for name in ("pending", "answer", "cancel", "purge", "tools", "worker", "run"):
        assert name in out
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import sys; sys.modules['typer'] = None\n"
        "from toolnexus.cli import main; raise SystemExit(main(['--help']))",
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await proc.communicate()
    assert proc.returncode == 2
    assert "pip install 'toolnexus-sdk[cli]'" in err.decode()
