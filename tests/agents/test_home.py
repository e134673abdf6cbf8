"""agent_from_dir and the heartbeat on the virtual clock."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent_support import llm_of

from toolnexus.agents import (
    HEARTBEAT_OK,
    HEARTBEAT_PROMPT,
    VirtualClock,
    agent_from_dir,
    start_agent,
)
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, garbage, text


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

    reports: list[str] = []
    reported = asyncio.Event()

    def on_report(report: str) -> None:
        reports.append(report)
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
    assert reports == ["deploy 42 is failing"]
    assert prompts[0].startswith(HEARTBEAT_PROMPT)
    assert "[from=clock channel=timer] tick (x1 coalesced)" in prompts[0]


class HeldBeat:
    """A model whose first heartbeat turn is held until the test releases it."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self.prompts: list[str] = []

    async def brain(self, request: RecordedRequest) -> Reply:
        self.prompts.append(str(request.body["messages"][-1]["content"]))
        if len(self.prompts) == 1:
            self.entered.set()
            await self.release.wait()
            return text("first beat")
        return text(f"beat {len(self.prompts)}")


async def test_the_beat_goes_on_while_a_turn_runs_and_its_ticks_coalesce_into_one_turn(
    tmp_path: Path,
) -> None:
    held = HeldBeat()
    reports: list[str] = []
    reported = [asyncio.Event(), asyncio.Event()]

    def on_report(report: str) -> None:
        reports.append(report)
        reported[len(reports) - 1].set()

    clock = VirtualClock()
    bot = agent_from_dir(home(tmp_path), does="watches deploys", memory=False)
    async with ScriptedModel(default=held.brain) as model:
        started = start_agent(
            bot, every_ms=60_000, on_report=on_report, llm=llm_of(model), clock=clock
        )
        await clock.advance(60)
        await asyncio.wait_for(held.entered.wait(), 5)  # the first beat's turn is in flight
        for _ in range(3):
            await clock.advance(60)  # the beat does not wait for it: three more ticks
        assert started.beats == 4
        assert len(started.handle.inbox) == 3
        held.release.set()
        await asyncio.wait_for(reported[0].wait(), 5)
        await clock.advance(60)  # idle again: one wake drains the whole backlog
        await asyncio.wait_for(reported[1].wait(), 5)
        await started.stop()
    assert reports == ["first beat", "beat 2"]
    assert len(held.prompts) == 2
    assert "[from=clock channel=timer] tick (x4 coalesced)" in held.prompts[1]


async def test_a_failing_beat_reports_its_error_text(tmp_path: Path) -> None:
    reports: list[str] = []
    reported = asyncio.Event()

    def on_report(report: str) -> None:
        reports.append(report)
        reported.set()

    clock = VirtualClock()
    bot = agent_from_dir(home(tmp_path), does="watches deploys", memory=False)
    async with ScriptedModel(default=garbage("not json")) as model:
        started = start_agent(
            bot, every_ms=60_000, on_report=on_report, llm=llm_of(model, retries=0), clock=clock
        )
        await clock.advance(60)
        await asyncio.wait_for(reported.wait(), 5)
        await started.stop()
    assert len(reports) == 1
    assert isinstance(reports[0], str)
    assert reports[0].startswith("BadResponse")
