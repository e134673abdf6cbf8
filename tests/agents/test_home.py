"""agent_from_dir and the heartbeat on the virtual clock."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent_support import llm_of

from toolnexus.agents import (
    HEARTBEAT_OK,
    HEARTBEAT_PROMPT,
    TaskResult,
    VirtualClock,
    agent_from_dir,
    start_agent,
)
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, text


def home(tmp_path: Path) -> Path:
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "SOUL.md").write_text("Be calm.\n")
    (tmp_path / "ops" / "HEARTBEAT.md").write_text("Check the deploys.\n")
    return tmp_path / "ops"


async def test_an_agent_from_its_home_gets_the_soul_and_the_memory_tool(tmp_path: Path) -> None:
    bot = agent_from_dir(home(tmp_path), does="watches deploys")
    assert bot.name == "ops"
    assert bot.definition.system_prompt == (
        "## SOUL.md\n\nBe calm.\n\n## HEARTBEAT.md\n\nCheck the deploys."
    )
    assert [t.name for t in bot.definition.tools] == ["memory"]


async def test_heartbeats_wake_an_idle_agent_and_only_substantive_replies_are_reported(
    tmp_path: Path,
) -> None:
    replies = iter([HEARTBEAT_OK, "deploy 42 is failing"])
    prompts: list[str] = []

    def brain(request: RecordedRequest) -> Reply:
        prompts.append(str(request.body["messages"][-1]["content"]))
        return text(next(replies))

    reports: list[TaskResult] = []
    reported = asyncio.Event()

    def on_report(result: TaskResult) -> None:
        reports.append(result)
        reported.set()

    clock = VirtualClock()
    bot = agent_from_dir(home(tmp_path), does="watches deploys", memory=False)
    async with ScriptedModel(default=brain) as model:
        started = await start_agent(
            bot, every_ms=60_000, on_report=on_report, llm=llm_of(model), clock=clock
        )
        for _ in range(2):
            beat = asyncio.create_task(started.next_beat())
            await asyncio.sleep(0)
            await clock.advance(60)
            await asyncio.wait_for(beat, 5)
        await asyncio.wait_for(reported.wait(), 5)
        await started.stop()
    assert [r.text for r in reports] == ["deploy 42 is failing"]
    assert prompts[0].startswith(HEARTBEAT_PROMPT)
    assert "[from=clock channel=timer] tick (x1 coalesced)" in prompts[0]
