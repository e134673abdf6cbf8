"""A halted run resumed by a brand-new process (real subprocesses, real SQLite)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from toolnexus.testing import ScriptedModel, call, text, tool_calls

WORKER = Path(__file__).parent / "helpers" / "resume_proc.py"


async def run_worker(*args: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(WORKER),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert proc.returncode == 0, err.decode()
    return out.decode()


@pytest.mark.parametrize("durable", [True, False], ids=["sqlite-store", "host-held-json"])
async def test_a_new_process_resumes_what_another_process_halted(
    tmp_path: Path, durable: bool
) -> None:
    state, ledger = tmp_path / "state.json", tmp_path / "ledger.txt"
    store = [f"sqlite:///{tmp_path / 'state.db'}"] if durable else []
    script = [tool_calls(call("sibling", {}), call("gate", {})), text("finished elsewhere")]
    async with ScriptedModel(script) as model:
        await run_worker("halt", model.openai_base_url, str(state), str(ledger), *store)
        assert ledger.read_text().splitlines() == ["sibling", "gate answer=None"]
        out = await run_worker("resume", model.openai_base_url, str(state), str(ledger), *store)
    assert json.loads(out) == {"status": "done", "text": "finished elsewhere", "turns": 2}
    assert ledger.read_text().splitlines() == ["sibling", "gate answer=None", "gate answer=True"]
    sent = model.requests[-1].body["messages"]
    assert [(m["role"], m.get("content")) for m in sent[2:]] == [
        ("tool", "sibling ran"),
        ("tool", "approved"),
    ]


async def test_a_second_process_answering_the_same_request_gets_a_conflict(
    tmp_path: Path,
) -> None:
    state, ledger = tmp_path / "state.json", tmp_path / "ledger.txt"
    store = f"sqlite:///{tmp_path / 'state.db'}"
    script = [tool_calls(call("gate", {})), text("once")]
    async with ScriptedModel(script) as model:
        await run_worker("halt", model.openai_base_url, str(state), str(ledger), store)
        await run_worker("resume", model.openai_base_url, str(state), str(ledger), store)
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(WORKER),
            "resume",
            model.openai_base_url,
            str(state),
            str(ledger),
            store,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert proc.returncode != 0
    assert "AnswerConflict" in err.decode()
    assert ledger.read_text().splitlines() == ["gate answer=None", "gate answer=True"]
    assert len(model.requests) == 2
