"""Agents from a home directory, and the heartbeat that wakes them on a clock.

::

    bot = agent_from_dir("homes/ops", does="watches the deploys")
    started = start_agent(bot, every_ms=60_000, on_report=print, llm=llm)
    ...
    await started.stop()
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._types import Tool
from ..errors import UsageError
from .agent import Agent, agent
from .handle import Handle
from .persona import HEARTBEAT_OK, HEARTBEAT_PROMPT, persona_from_dir
from .runtime import AgentRuntime
from .types import InboxItem, TaskResult

__all__ = ["StartedAgent", "agent_from_dir", "start_agent"]


def agent_from_dir(
    home: str | os.PathLike[str],
    *,
    name: str | None = None,
    does: str | None = None,
    memory: bool = True,
    tools: Sequence[Tool] | None = None,
    **opts: Any,
) -> Agent:
    """An agent whose soul is composed from its home (AGENTS.md, SOUL.md, … MEMORY.md).

    With ``memory`` the file-backed ``memory`` tool is added; the soul is frozen at
    construction (memory edits load next session). ``opts`` go to `agent` (team, budget, …).
    """
    persona = persona_from_dir(home, name=name, memory=memory, tools=tools)
    return agent(
        persona.name,
        does=does or f"the agent whose home is {os.fspath(home)}",
        uses={"tools": list(persona.tools)},
        soul=persona.soul,
        **opts,
    )


@dataclass(slots=True)
class StartedAgent:
    """A running agent with its heartbeat. ``stop()`` ends the beat and closes the runtime.

    ``beats`` counts the intervals that have fired.

    It is also awaitable (``await start_agent(...)`` gives the same object), for code written
    when `start_agent` was a coroutine.
    """

    handle: Handle
    rt: AgentRuntime
    beats: int = 0
    _beat: asyncio.Task[None] | None = field(default=None, repr=False)
    _done: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    _collecting: set[asyncio.Task[None]] = field(default_factory=lambda: set(), repr=False)

    def __await__(self) -> Generator[Any, None, StartedAgent]:
        yield from asyncio.sleep(0).__await__()  # let the beat start waiting on the clock
        return self

    async def next_beat(self) -> int:
        """Wait until the next heartbeat has finished — its tick posted and, when it woke the
        agent, that turn's result reported — and return the number of beats so far."""
        self._done.clear()
        await self._done.wait()
        return self.beats

    async def stop(self) -> None:
        """End the beat (a report still being collected is dropped) and close the runtime."""
        pending = [t for t in (self._beat, *self._collecting) if t is not None]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        self._beat = None
        await self.rt.close(self.rt.root)
        await self.rt.aclose()


Report = Callable[[str], Any]
Beat = Callable[[TaskResult], Any]


def silent(result: TaskResult) -> bool:
    """A beat that says nothing: a reply carrying `HEARTBEAT_OK` (an error never is)."""
    return not result.is_error and HEARTBEAT_OK in result.text


def start_agent(
    spec: Agent,
    *,
    every_ms: int | None = None,
    on_report: Report | None = None,
    on_beat: Beat | None = None,
    **rt_opts: Any,
) -> StartedAgent:
    """Spawn ``spec`` on a fresh runtime and, with ``every_ms``, beat it on the runtime clock.

    Synchronous, but it needs a running event loop (the beat is a task on it). Every interval
    a timer tick is posted to the agent's own inbox and, only when the agent is idle, it is
    woken with `HEARTBEAT_PROMPT`. The beat never waits for that turn: ticks that come while it
    runs pile up, and the next idle wake drains them as one coalesced turn. A reply carrying
    ``HEARTBEAT_OK`` is silent; any other result — an error too — reaches ``on_report`` as its
    text and ``on_beat`` as the `TaskResult` (each sync or async). Channels are the host's: use
    ``started.rt.post`` / ``wake`` to talk to it.

    Raises:
        UsageError: ``every_ms`` is not positive, or the spawn was refused.
    """
    if every_ms is not None and every_ms <= 0:
        raise UsageError("every_ms must be positive")
    loop = asyncio.get_running_loop()
    rt = AgentRuntime(
        registry=spec.registry(), **{k: v for k, v in rt_opts.items() if v is not None}
    )
    spawned = rt.spawn(rt.root, spec.name)
    if not isinstance(spawned, Handle):
        raise UsageError(f"cannot start {spec.name}: {spawned.error}")
    h = spawned
    started = StartedAgent(handle=h, rt=rt)
    if every_ms is None:
        return started

    async def collect() -> None:
        """The woken turn's result, reported; then the beat is over."""
        result = await rt.wait(h)
        if not silent(result):
            if on_beat is not None:
                await _settled(on_beat(result))
            if on_report is not None:
                await _settled(on_report(result.text))
        started._done.set()  # pyright: ignore[reportPrivateUsage]

    first_at = rt.clock.now() + every_ms / 1000  # due from now, even before the task starts
    collecting = started._collecting  # pyright: ignore[reportPrivateUsage]

    async def beat() -> None:
        due: float | None = first_at
        while h.state != "closed":
            await rt.clock.sleep(every_ms / 1000 if due is None else due - rt.clock.now())
            due = None
            tick = InboxItem(from_="clock", channel="timer", text="tick")
            if len(h.inbox) < rt.inbox_cap:
                rt.post(h, tick)
            started.beats += 1
            if h.state == "idle" and rt.wake(h, HEARTBEAT_PROMPT).ok:
                task = loop.create_task(collect())  # detached: the next interval comes on time
                collecting.add(task)
                task.add_done_callback(collecting.discard)
            else:
                started._done.set()  # pyright: ignore[reportPrivateUsage]

    started._beat = loop.create_task(beat())  # pyright: ignore[reportPrivateUsage]
    return started


async def _settled(value: Any) -> None:
    """A host callback's return value, awaited when it is awaitable."""
    if inspect.isawaitable(value):
        await value
