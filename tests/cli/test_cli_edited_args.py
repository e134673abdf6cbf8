"""``toolnexus answer REQUEST_ID --approve --args JSON`` as a real subprocess (no toolkit there),
over a SQLite file and the real Postgres: the edit is checked against the schema the checkpoint
keeps, recorded once with the digest of what was approved, and the run is finished by a worker
process (a bare client's) or by the tree's worker (an agent tree's) — the edited arguments run
exactly once, the model's never; side effects are counted in a file outside every process."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from test_cli_store_commands import brain, cli, halt

from proc_support import stop
from test_edited_arguments import EDITED, Ledger, call_args, digest, llm_of, tree, tree_brain
from toolnexus import Tool, ToolResult, create_client, pending
from toolnexus.agents import AgentRuntime, Handle
from toolnexus.stores.checks import call_digest
from toolnexus.stores.url import resolve_store
from toolnexus.testing import ScriptedModel, call, tool_calls

HERE = Path(__file__).parent


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    return str(request.getfixturevalue("pg_url"))


async def pending_ids(store_url: str) -> list[str]:
    code, out, err = await cli("pending", "--store", store_url, "--json")
    assert code == 0, err
    return [json.loads(line)["request_id"] for line in out.splitlines()]


async def run_worker_once(model: ScriptedModel, store_url: str, ledger: Path, rid: str) -> None:
    env = {"TN_STORE": store_url, "TN_BASE_URL": model.openai_base_url, "TN_LEDGER": str(ledger)}
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
    _, err = await stop(worker, 30, "the worker")
    assert worker.returncode == 0
    assert "1 resumed, 0 failed" in err.decode()


async def test_an_edit_from_the_command_line_runs_once_on_a_worker_instead_of_the_models(
    store_url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    async with ScriptedModel(default=brain) as model:
        rid = await halt(model, store_url, ledger, "A-1")
        code, out, err = await cli(
            "answer", rid, "--store", store_url, "--approve", "--args", '{"order": "B-7"}',
            "--as", "ana", "--json",
        )  # fmt: skip
        assert code == 0, err
        record = json.loads(out)
        assert record["answer"] == {"id": rid, "ok": True, "data": {"arguments": {"order": "B-7"}}}
        assert record["digest"] == call_digest("refund", '{"order": "B-7"}')
        assert record["digest"] != call_digest("refund", '{"order": "A-1"}')
        assert not ledger.exists()  # answering ran nothing
        await run_worker_once(model, store_url, ledger, rid)
        last = model.requests[-1].body["messages"]
    assert ledger.read_text() == "refunded B-7\n"  # the edit, once; A-1 never
    assert call_args(last, last[-2]["tool_calls"][0]["id"]) == {"order": "B-7"}
    assert last[-1]["content"] == "refunded B-7"
    store: Any = resolve_store(store_url)
    async with store:
        settled = await store.answer_record(rid)
    assert settled is not None
    assert (settled.status, settled.answered_by) == ("done", "ana")
    assert settled.digest == call_digest("refund", '{"order": "B-7"}')


async def test_the_human_output_says_the_arguments_were_edited(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    async with ScriptedModel(default=brain) as model:
        rid = await halt(model, url, tmp_path / "ledger.txt", "A-1")
    code, out, err = await cli("answer", rid, "--store", url, "--approve", "--args", "{}")
    assert code == 0, err
    assert out.strip() == f"{rid}: approved with edited arguments; a worker resumes the run"


@pytest.mark.parametrize(
    ("flags", "code", "says"),
    [
        (["--approve", "--args", '{"order": 5}'], 6, "5 is not of type 'string'"),
        (["--approve", "--args", "[1]"], 2, "--args must be a JSON object"),
        (["--approve", "--args", "{oops"], 2, "--args is not JSON"),
        (["--decline", "--args", "{}"], 2, "--args goes with --approve, not with --decline"),
        (["--data", "{}", "--args", "{}"], 2, "--args goes with --approve, not with --data"),
        (["--text", "t", "--args", "{}"], 2, "--args goes with --approve, not with --text"),
        (["--args", "{}"], 2, "exactly one of"),
        (["--approve", "--decline", "--args", "{}"], 2, "exactly one of"),
    ],
)
async def test_bad_or_conflicting_args_get_a_code_and_leave_the_request_pending(
    store_url: str, tmp_path: Path, flags: list[str], code: int, says: str
) -> None:
    ledger = tmp_path / "ledger.txt"
    async with ScriptedModel(default=brain) as model:
        rid = await halt(model, store_url, ledger, "A-1")
    got, out, err = await cli("answer", rid, "--store", store_url, *flags)
    assert got == code, (out, err)
    assert says in err
    assert "Traceback" not in err
    assert await pending_ids(store_url) == [rid]
    store: Any = resolve_store(store_url)
    async with store:
        assert await store.answer_record(rid) is None
    assert not ledger.exists()


async def test_args_on_a_request_that_is_not_an_approval_are_refused(tmp_path: Path) -> None:
    async def form(args: dict[str, Any], ctx: Any = None) -> ToolResult:
        return pending(kind="input", prompt="which order?")

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store: Any = resolve_store(url)
    async with ScriptedModel([tool_calls(call("form", {}))]) as model:
        async with (
            store,
            create_client(
                base_url=model.openai_base_url, model="m-1", api_key="sk-test", store=store
            ) as client,
        ):
            result = await client.run("go", [Tool("form", "d", {"type": "object"}, "native", form)])
    assert result.pending is not None
    rid = result.pending.id
    code, _, err = await cli("answer", rid, "--store", url, "--approve", "--args", "{}")
    assert code == 6
    assert "only an approval's call can run with edited arguments" in err
    assert await pending_ids(url) == [rid]


async def test_args_for_an_unknown_request_say_it_is_unknown(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    (tmp_path / "runs.db").touch()  # an existing (empty) store: a missing one is refused first
    code, _, err = await cli("answer", "nope", "--store", url, "--approve", "--args", "{}")
    assert code == 3
    assert 'no halted run waits on request "nope"' in err


async def test_args_for_an_answered_request_are_a_conflict(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    async with ScriptedModel(default=brain) as model:
        rid = await halt(model, url, tmp_path / "ledger.txt", "A-1")
    code, _, err = await cli("answer", rid, "--store", url, "--approve", "--as", "ana")
    assert code == 0, err
    code, _, err = await cli("answer", rid, "--store", url, "--approve", "--args", "{}")
    assert code == 4
    assert "ana" in err


async def test_an_edit_for_a_sub_agents_tool_from_the_command_line_runs_it_there(
    store_url: str, tmp_path: Path
) -> None:
    ledger = Ledger(tmp_path / "sent.jsonl")
    store: Any = resolve_store(store_url)
    async with ScriptedModel(default=tree_brain) as model, store:
        rt = AgentRuntime(registry=tree(ledger), llm=llm_of(model), store=store)
        boss = rt.spawn(rt.root, "boss")
        assert isinstance(boss, Handle)
        rt.wake(boss, "go")
        first = await rt.wait(boss)
        assert first.pending is not None
        rid = first.pending.id
        code, _, err = await cli(
            "answer", rid, "--store", store_url, "--approve", "--args", '{"to": "carol"}'
        )
        assert code == 6
        assert "'amount' is a required property" in err
        code, out, err = await cli(
            "answer", rid, "--store", store_url, "--approve", "--args", json.dumps(EDITED),
            "--as", "ana", "--json",
        )  # fmt: skip
        assert code == 0, err
        assert json.loads(out)["digest"] == digest(EDITED)
        assert ledger.sent == []
        assert await rt.worker().drain() == 1
        final = await rt.wait(boss)
        await rt.aclose()
    assert final.text == "parent done: Done: sent 7 to carol."
    assert ledger.sent == [EDITED]
