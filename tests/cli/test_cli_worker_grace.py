"""``toolnexus worker --grace``: a stop that cannot finish (a tool that swallows every
cancel) ends after the grace period and as long again for the cancel, with exit code 1 and the
stuck tasks' stacks on stderr; the run stays claimed, for another worker once its lease runs
out."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from stubborn_app import TOOL

from proc_support import stop
from toolnexus import Answer, create_client
from toolnexus.stores.url import resolve_store
from toolnexus.testing import ScriptedModel, call, tool_calls

HERE = Path(__file__).parent


async def test_a_stop_that_cannot_finish_ends_after_the_grace_period(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    store: Any = resolve_store(url)
    async with ScriptedModel(default=lambda _r: tool_calls(call("stubborn", {}))) as model:
        async with (
            store,
            create_client(
                base_url=model.openai_base_url, model="m-1", api_key="sk-test", store=store
            ) as client,
        ):
            halted = await client.run("go", [TOOL])
            assert halted.pending is not None
            rid = halted.pending.id
            await store.post_answer(rid, Answer(rid, True), answered_by="ana")
        env = {"TN_STORE": url, "TN_BASE_URL": model.openai_base_url}
        worker = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "toolnexus",
            "worker",
            "--app",
            "stubborn_app:make",
            "--grace",
            "1",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **env},
            cwd=HERE,
        )
        assert worker.stderr is not None
        seen: list[str] = []
        while "stubborn: started" not in seen:
            line = await asyncio.wait_for(worker.stderr.readline(), 50)
            assert line, seen  # the worker died before the tool started
            seen.append(line.decode().strip())
        _, err = await stop(worker, 30, "the worker")
    assert worker.returncode == 1
    text = err.decode()
    # --grace 1: a second for the run to finish, then it is cancelled, and a second more
    assert "worker: 1s passed: abandoning the runs still in flight" in text
    assert "worker: the runs in flight did not end 1s after being cancelled; exiting now" in text
    assert f"still held: {rid}" in text
    assert "in _resume" in text  # the stuck task's stack: the resume in flight
    reopened: Any = resolve_store(url)
    async with reopened:
        record = await reopened.answer_record(rid)
    assert record is not None
    assert record.status == "claimed"  # held until its lease runs out, then another worker's
