"""Requests raised by real runs, answered through the inbox and finished by a worker in this
process: the ``question`` built-in (its options on the page, its answers back to the model) and
a sub-agent of an agent tree (its path on the page, the runtime's worker resuming the tree)."""

from __future__ import annotations

import json
from typing import Any

from inbox_support import make_app, visitor

from toolnexus import ToolContext, ToolResult, create_client, create_toolkit, define_tool, pending
from toolnexus.agents import AgentDef, AgentRuntime, Handle
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls
from toolnexus.tools.builtins.question import question_tool

QUESTIONS = [
    {"question": "Which environment?", "header": "Env", "options": ["staging", "prod"]},
    {"question": "Which checks?", "options": ["lint", "tests"], "multiple": True},
    {"question": "Why now?"},
]


def tool_results(request: RecordedRequest) -> list[str]:
    return [str(m["content"]) for m in request.body["messages"] if m.get("role") == "tool"]


def asks(request: RecordedRequest) -> Reply:
    seen = tool_results(request)
    if not seen:
        return tool_calls(call("question", {"questions": QUESTIONS}, id="q1"))
    return text(f"The user said: {seen[-1]}")


async def test_a_question_from_the_builtin_is_answered_on_the_page_and_the_run_goes_on(
    store: Any,
) -> None:
    toolkit = await create_toolkit(extra_tools=[question_tool()], builtins=False)
    async with ScriptedModel(default=asks) as model:
        client = create_client(
            base_url=model.openai_base_url, model="m-1", api_key="k", store=store
        )
        async with client:
            halted = await client.run("deploy please", toolkit)
            assert halted.pending is not None
            rid = halted.pending.id
            app = make_app(store)
            async with visitor(app) as v:
                page = await v.get(f"/requests/{rid}")
                assert "<legend>Env: Which environment?</legend>" in page.text
                assert 'type="radio" name="q0" id="q0-1" value="prod"' in page.text
                done = await v.client.post(
                    f"/requests/{rid}/answer",
                    data={
                        "csrf": v.csrf,
                        "action": "submit",
                        "q0": "prod",
                        "q1": ["lint", "tests"],
                        "q2": "release day",
                    },
                )
                assert done.status_code == 303
                assert await client.worker(toolkit).drain() == 1
                status = (await v.get(f"/requests/{rid}/status")).json()
            await app.aclose()
    answers = {"answers": ["prod", ["lint", "tests"], "release day"]}
    assert status["status"] == "done"
    assert status["outcome"]["text"] == f"The user said: {json.dumps(answers)}"


@define_tool
def check_secret(ctx: ToolContext | None = None) -> str | ToolResult:
    """Read the deployment secret (needs a human's approval)."""
    if ctx is not None and ctx.answer is not None and ctx.answer.ok:
        return "secret-token"
    return pending(kind="approval", prompt="approve secret access?")


def reads(request: RecordedRequest) -> Reply:
    if not tool_results(request):
        return tool_calls(call("check_secret", {}, id="c1"))
    return text("approved and done")


async def test_a_sub_agents_request_shows_its_path_and_the_runtime_worker_resumes_the_tree(
    store: Any,
) -> None:
    registry = {
        "asker": AgentDef(
            name="asker", description="needs approvals", system_prompt="x", tools=[check_secret]
        )
    }
    async with ScriptedModel(default=reads) as model:
        llm = {"base_url": model.openai_base_url, "style": "openai", "model": "m", "api_key": "k"}
        async with AgentRuntime(registry=registry, llm=llm, store=store) as rt:
            h = rt.spawn(rt.root, "asker")
            assert isinstance(h, Handle)
            rt.wake(h, "get the secret")
            halted = await rt.wait(h)
            assert halted.pending is not None
            rid = halted.pending.id
            path = " / ".join(halted.pending.data["path"])  # type: ignore[index]
            app = make_app(store)
            async with visitor(app) as v:
                listed = await v.get("/")
                assert f'<td class="agent-path">{path}</td>' in listed.text
                page = await v.get(f"/requests/{rid}")
                assert f'<span id="agent-path">{path}</span>' in page.text
                assert (await v.answer(rid, action="approve")).status_code == 303
                assert await rt.worker().drain() == 1
                final = await rt.wait(h)
                status = (await v.get(f"/requests/{rid}/status")).json()
            await app.aclose()
    assert final.text == "approved and done"
    assert (status["status"], status["answered_by"]) == ("done", "ana")
