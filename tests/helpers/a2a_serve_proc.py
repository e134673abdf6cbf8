"""A serving process for the A2A restart tests.

    python a2a_serve_proc.py client|agent <model base url> <store url> <ledger>

Serves the refund toolkit (``client``) or a one-agent tree using it (``agent``) over A2A on
127.0.0.1:0, prints ``URL <url>`` and serves until it is killed.

Environment: ``A2A_TEST_LEASE_S`` — the server's ``lease_s`` (``recover_every`` a fifth of it);
``A2A_TEST_DIE_ONCE`` — a marker path: the first approved refund dies mid-resume (see
`a2a_support.refund_tool`); ``A2A_TEST_DIE_BEFORE_QUESTION`` — a marker path: the first save of
a task waiting for input kills the process first (``client`` mode), so the run's halt is saved
but the task never shows the question.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))

from typing import Any

from a2a_support import refund_tool

from toolnexus import create_client, create_toolkit
from toolnexus.agents import agent
from toolnexus.serve import TaskStore, serve_agent
from toolnexus.serve.tasks import WAITING, task_state
from toolnexus.serve.tasks_sql import sql_task_store


class DiesBeforeQuestion(TaskStore):
    """The served client's task store, but the first save of a waiting task kills the
    process before it is written."""

    def __init__(self, inner: TaskStore, marker: Path) -> None:
        self.inner = inner
        self.marker = marker

    async def get(self, id: str) -> dict[str, Any] | None:
        return await self.inner.get(id)

    async def save(self, task: dict[str, Any]) -> None:
        if task_state(task) in WAITING and not self.marker.exists():
            self.marker.write_text("died")
            os._exit(3)  # the run's halt is saved; the task still says working
        await self.inner.save(task)

    async def list(
        self, *, context_id: str | None = None, state: str | None = None, limit: int = 100
    ) -> list[dict[str, Any]]:
        return await self.inner.list(context_id=context_id, state=state, limit=limit)


async def main(mode: str, base_url: str, store: str, ledger: Path) -> None:
    tool = refund_tool(ledger)
    lease = float(os.environ.get("A2A_TEST_LEASE_S", "300"))
    timing = {"lease_s": lease, "recover_every": min(30.0, lease / 5)}
    if mode == "agent":
        clerk = agent("clerk", does="refunds orders", uses={"tools": [tool]})
        llm = {"base_url": base_url, "model": "m", "api_key": "k"}
        served = await serve_agent(clerk, "127.0.0.1:0", llm=llm, store=store, **timing)
    else:
        tk = await create_toolkit(extra_tools=[tool], builtins=False)
        client = create_client(base_url=base_url, model="m", api_key="k", store=store)
        profile: dict[str, Any] = {"name": "refunds"}
        marker = os.environ.get("A2A_TEST_DIE_BEFORE_QUESTION")
        if marker:
            tasks = sql_task_store(client.run_store)
            assert tasks is not None
            profile["store"] = DiesBeforeQuestion(tasks, Path(marker))
        served = await tk.serve("127.0.0.1:0", client=client, a2a=profile, **timing)
    print(f"URL {served.url}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])))
