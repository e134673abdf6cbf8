"""Sub-agents 4 — fan out: a coordinator delegates two subtasks in parallel and combines them.

``lead`` is a level-1 `agent` with a ``team``: that gives it a ``task`` tool whose only targets
are its teammates. In one turn it calls ``task`` twice; the runtime spawns one child per call
(``root/lead.1/researcher.1`` and ``root/lead.1/reviewer.2``: deterministic ids with a
per-parent counter), runs them concurrently on fresh transcripts, hands each result back as
exactly one tool message and closes the children. Their usage rolls up into the coordinator's.

    python examples/agents_fan_out.py
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from _model import llm, tool_outputs

from toolnexus.agents import AgentRuntime, Handle, agent
from toolnexus.testing import RecordedRequest, Reply, call, delayed, text, tool_calls

LEAD_SOUL = (
    "You coordinate. Split the question in two and delegate both halves in ONE turn with the "
    "task tool: the facts to researcher, the risks to reviewer. Then combine their answers."
)
RESEARCHER_SOUL = "You are the researcher. Answer in one short sentence."
REVIEWER_SOUL = "You are the reviewer. Name the main risk in one short sentence."

CHILD_LATENCY_S = 0.2  # the scripted children "think" this long, so the overlap is visible


def brain(request: RecordedRequest) -> Reply:
    """The scripted model; who is asking shows in the system prompt."""
    messages = request.body["messages"]
    soul = str(messages[0].get("content")) if messages[0].get("role") == "system" else ""
    if soul == RESEARCHER_SOUL:
        return delayed(text("Postgres 17 adds incremental backups."), CHILD_LATENCY_S)
    if soul == REVIEWER_SOUL:
        return delayed(text("Risk: restores need every increment."), CHILD_LATENCY_S)
    seen = tool_outputs(request)
    if not seen:
        return tool_calls(
            call("task", {"agent": "researcher", "prompt": "What is new in backups?"}, id="t1"),
            call("task", {"agent": "reviewer", "prompt": "What is the risk?"}, id="t2"),
        )
    return text("Combined: " + " ".join(seen))


def runtime_llm(endpoint: dict[str, Any]) -> dict[str, Any]:
    """The runtime's ``llm=`` option from `_model.llm`'s client keyword arguments."""
    env_key = "OPENAI_API_KEY" if endpoint["style"] == "openai" else "ANTHROPIC_API_KEY"
    return {
        "base_url": endpoint["base_url"],
        "style": endpoint["style"],
        "model": endpoint["model"],
        "api_key": endpoint.get("api_key") or os.environ.get(env_key),
    }


async def main() -> None:
    t0 = 0.0  # set when the coordinator wakes; the callbacks read it then
    spans: dict[str, list[float]] = {}

    def on_spawn(h: Handle) -> None:
        spans[h.id] = [time.perf_counter() - t0]

    def on_close(h: Handle, reason: str) -> None:
        spans[h.id].append(time.perf_counter() - t0)

    researcher = agent(
        "researcher",
        does="finds facts",
        soul=RESEARCHER_SOUL,
        on_spawn=on_spawn,
        on_close=on_close,
    )
    reviewer = agent(
        "reviewer", does="names risks", soul=REVIEWER_SOUL, on_spawn=on_spawn, on_close=on_close
    )
    lead = agent("lead", does="answers questions", soul=LEAD_SOUL, team=[researcher, reviewer])

    async with (
        llm(brain) as endpoint,
        AgentRuntime(registry=lead.registry(), llm=runtime_llm(endpoint)) as rt,
    ):
        h = rt.spawn(rt.root, "lead")
        assert isinstance(h, Handle), h
        t0 = time.perf_counter()
        result = await rt.run_turn(h, "Should we move to Postgres 17 for the backups?")
        elapsed = time.perf_counter() - t0

        print(f"result: status={result.status} turns={result.turns}: {result.text}")
        print(f"wall time {elapsed:.2f} s")
        print("handles:")
        for view in rt.list():
            print(f"  {view.id:28} state={view.state:6} turns={view.turns} tokens={view.tokens}")
        print("children (seconds since the coordinator woke):")
        for hid, span in sorted(spans.items()):
            closed = f"{span[1]:.2f}" if len(span) > 1 else "?"
            print(f"  {hid:28} spawned {span[0]:.2f}  closed {closed}")
        ends = [s for s in spans.values() if len(s) == 2]
        overlap = len(ends) == 2 and max(s[0] for s in ends) < min(s[1] for s in ends)
        print(f"children overlapped: {overlap}")
        print(f"max_observed_concurrent_turns={rt.max_observed_concurrent_turns}")


if __name__ == "__main__":
    asyncio.run(main())
