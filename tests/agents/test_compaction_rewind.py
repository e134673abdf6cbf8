"""The rewind rule: a turn that compacts and then suspends leaves the stored transcript whole."""

from __future__ import annotations

from agent_support import approval_brain, check_secret_tool, llm_of

from toolnexus import Answer
from toolnexus.agents import AgentDef, AgentRuntime, Handle, compactor
from toolnexus.testing import ScriptedModel


async def test_a_turn_that_compacted_and_suspended_keeps_the_full_pre_turn_transcript() -> None:
    history = [{"role": "system", "content": "soul"}]
    for i in range(40):
        history.append({"role": "user", "content": f"question {i} " + "x" * 50})
        history.append({"role": "assistant", "content": f"answer {i} " + "y" * 50})
    summaries: list[int] = []

    def summarize(older: list[dict[str, object]]) -> str:
        summaries.append(len(older))
        return "earlier: 40 questions answered"

    hooks = {"before_llm": compactor(max_tokens=500, summarize=summarize)}
    registry = {"w": AgentDef(name="w", model="m", tools=[check_secret_tool()], hooks=hooks)}
    async with ScriptedModel(default=approval_brain()) as model:
        async with AgentRuntime(registry=registry, llm=llm_of(model)) as rt:
            h = rt.spawn(rt.root, "w")
            assert isinstance(h, Handle)
            await rt.conversation_store.save(h.id, history)
            rt.wake(h, "get the secret")
            halted = await rt.wait(h)
            assert halted.status == "pending"
            assert halted.pending is not None
            stored = await rt.conversation_store.get(h.id)
            assert stored == history  # 81 before, 81 after: the compaction did not persist
            sent = model.requests[0].body["messages"]
            assert len(sent) < len(history)  # the model did see the compacted transcript
            await rt.resume(Answer(id=halted.pending.id, ok=True))
            done = await rt.wait(h)
    assert summaries  # the hook ran
    assert done.status == "done"
