"""The harness gates on a plain client: run_gated, all_todos_done, guardrails."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus import RunResult, ToolCallRecord, ToolResult, create_client, define_tool
from toolnexus.agents import (
    Completion,
    GuardrailTypeError,
    Verdict,
    agent,
    all_todos_done,
    guarded_hooks,
    harness,
    loop_unsupported,
    run_gated,
)
from toolnexus.agents.harness import GateProgress, gate
from toolnexus.errors import CallbackError
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls

ran: list[str] = []


@define_tool
def note(what: str) -> str:
    """Write a note."""
    ran.append(what)
    return f"noted {what}"


def noting_brain(request: RecordedRequest) -> Reply:
    """A tool call for every user message, then a text answer naming the last user message."""
    messages = request.body["messages"]
    if messages[-1]["role"] == "user":
        return tool_calls(call("note", {"what": f"n{len(messages)}"}))
    users = [m["content"] for m in messages if m["role"] == "user"]
    return text(f"answer to: {users[-1]}")


def client_of(model: ScriptedModel, **opts: Any) -> Any:
    return create_client(base_url=model.openai_base_url, model="m", api_key="k", **opts)


async def test_a_failed_check_sends_the_reason_back_and_the_verifier_sees_all_calls() -> None:
    seen: list[int] = []

    def verify(result: Any) -> Verdict:
        seen.append(len(result.tool_calls))
        return Verdict(len(seen) >= 2, "tests are red")

    async with ScriptedModel(default=noting_brain) as model, client_of(model) as client:
        history: list[Any] = []

        async def ask(prompt: str) -> Any:
            nonlocal history
            result = await client.run(prompt, [note], history=history)
            history = result.messages
            return result

        result = await run_gated(ask, "fix it", Completion(verify, max_attempts=3))
    assert result.status == "done"
    assert seen == [1, 2]  # the second verdict saw both attempts' calls
    assert [r.name for r in result.tool_calls] == ["note", "note"]
    assert result.text == "answer to: Your work did not verify: tests are red. Fix it and finish."
    sent = [
        r.body["messages"][-1]["content"]
        for r in model.requests
        if r.body["messages"][-1]["role"] == "user"
    ]
    assert sent == ["fix it", "Your work did not verify: tests are red. Fix it and finish."]


async def test_the_last_failed_attempt_is_incomplete_at_the_completion_limit() -> None:
    async with ScriptedModel(default=noting_brain) as model, client_of(model) as client:
        result = await run_gated(
            lambda p: client.run(p, [note]),
            "go",
            Completion(lambda r: Verdict(False), max_attempts=2),
        )
    assert (result.status, result.limit) == ("incomplete", "completion")
    assert result.text == "completion.verify failed 2x: unspecified"
    assert len(result.tool_calls) == 2


async def test_a_retry_that_hits_a_limit_says_what_it_was_verifying() -> None:
    async with (
        ScriptedModel(default=noting_brain) as model,
        client_of(model, max_turns=1) as client,
    ):
        first = True

        async def ask(prompt: str) -> Any:
            nonlocal first
            if first:  # the first attempt answers within its turn; the retry runs out
                first = False
                async with client_of(model) as roomy:
                    return await roomy.run(prompt, [note])
            return await client.run(prompt, [note])

        result = await run_gated(ask, "go", Completion(lambda r: Verdict(False, "red"), 3))
    assert result.status == "incomplete"
    assert result.text.endswith(" [while verifying: attempt 2 last failed: red]")


async def test_without_a_completion_run_gated_is_one_ask() -> None:
    asked: list[str] = []

    async def ask(prompt: str) -> str:
        asked.append(prompt)
        return "plain"

    assert await run_gated(ask, "p", None) == "plain"
    assert asked == ["p"]


@pytest.mark.parametrize(
    ("completion", "message"),
    [
        (Completion(lambda r: Verdict(True), max_attempts=-1), "max_attempts must be an integer"),
        (Completion(lambda r: Verdict(True), max_attempts=1.5), "max_attempts must be an integer"),  # type: ignore[arg-type]
        (Completion(lambda r: Verdict(True), max_attempts=True), "max_attempts must be an integer"),
        (Completion(None, max_attempts=1), "Completion.verify is required"),
    ],
)
async def test_a_bad_completion_is_a_value_error_before_anything_runs(
    completion: Completion, message: str
) -> None:
    asked: list[str] = []

    async def ask(prompt: str) -> Any:
        asked.append(prompt)

    with pytest.raises(ValueError, match=message):
        await run_gated(ask, "p", completion)
    assert asked == []


async def test_a_verifier_that_returns_garbage_is_refused() -> None:
    async with ScriptedModel(default=noting_brain) as model, client_of(model) as client:
        with pytest.raises(ValueError, match="must return a Verdict, got str"):
            await run_gated(lambda p: client.run(p, [note]), "go", Completion(lambda r: "yes"))


async def test_the_gate_resumes_at_a_kept_attempt_and_reports_each_retry_before_it_runs() -> None:
    """The durable side of the one gate: the runtime hands it the progress a suspended turn
    kept, and keeps the progress it reports before each retry."""
    asked: list[str | None] = []
    seen: list[list[str]] = []
    retries: list[tuple[int, str, int]] = []

    async def ask(retry: str | None) -> RunResult:
        asked.append(retry)
        return RunResult(text="ok", messages=[], tool_calls=[ToolCallRecord("note", {}, "", False)])

    def verify(result: Any) -> Verdict:
        seen.append([c.output or "new" for c in result.tool_calls])
        return Verdict(False, f"red {len(seen)}")

    kept = GateProgress(
        attempt=2, reason="red 0", calls=(ToolCallRecord("note", {}, "old", False),)
    )
    end = await gate(
        ask,
        Completion(verify, max_attempts=3),
        kept,
        on_retry=lambda at, attempts: retries.append((at.attempt, at.reason, attempts)),
    )
    assert asked == [None, "Your work did not verify: red 1. Fix it and finish."]
    assert seen == [["old", "new"], ["old", "new", "new"]]
    assert retries == [(3, "red 1", 3)]
    assert (end.failed, end.progress.attempt, end.attempts) == ("red 2", 3, 3)
    assert end.result.status == "done"  # the caller words the failure: run_gated, the runtime


def todo_call(todos: Any, as_record: bool = False) -> Any:
    if as_record:
        return ToolCallRecord("todowrite", {}, "", False, {"todos": todos})
    return {
        "name": "todowrite",
        "args": {},
        "output": "",
        "is_error": False,
        "metadata": {"todos": todos},
    }


def test_all_todos_done_reads_only_the_last_todowrite_call() -> None:
    open_list = [
        {"id": "1", "text": "write", "completed": True},
        {"id": "2", "text": "test", "completed": False},
        {"id": "3", "text": "ship", "completed": False},
    ]
    done_list = [{"id": "1", "text": "write", "completed": True}]
    result = {
        "tool_calls": [
            todo_call(done_list),
            {"name": "read", "metadata": None},
            todo_call(open_list, True),
        ]
    }
    assert all_todos_done(result) == Verdict(False, "2 item(s) still open: test; ship")
    result = {"tool_calls": [todo_call(open_list), todo_call(done_list, True)]}
    assert all_todos_done(result) == Verdict(True)


@pytest.mark.parametrize(
    "calls",
    [[], [{"name": "read"}], [todo_call("not a list")], [{"name": "todowrite", "metadata": None}]],
)
def test_all_todos_done_passes_without_a_readable_list(calls: list[Any]) -> None:
    assert all_todos_done({"tool_calls": calls}) == Verdict(True)


async def test_all_todos_done_over_the_real_todowrite_builtin() -> None:
    from toolnexus import create_toolkit

    toolkit = await create_toolkit(builtins={"enabled": ["todowrite"]})
    todos = [{"id": "a", "text": "migrate", "completed": False}]
    script = [tool_calls(call("todowrite", {"todos": todos})), text("done?")]
    async with ScriptedModel(script) as model, client_of(model) as client:
        result = await client.run("plan", toolkit)
    assert all_todos_done(result) == Verdict(False, "1 item(s) still open: migrate")


async def test_the_first_denying_guardrail_wins_and_the_tool_never_runs() -> None:
    ran.clear()
    order: list[str] = []

    def allow(event: dict[str, Any]) -> str:
        order.append("allow")
        return "allow"

    def deny(event: dict[str, Any]) -> str | None:
        order.append("deny")
        return "no notes today" if event["name"] == "note" else None

    def never(event: dict[str, Any]) -> str:
        order.append("never")
        return "x"

    prior: list[str] = []
    hooks = guarded_hooks([allow, deny, never], {"before_tool": lambda e: prior.append(e["name"])})
    script = [tool_calls(call("note", {"what": "a"})), text("ok")]
    async with ScriptedModel(script) as model, client_of(model, hooks=hooks) as client:
        result = await client.run("go", [note])
    assert ran == []
    assert order == ["allow", "deny"]
    assert prior == []
    assert (result.tool_calls[0].output, result.tool_calls[0].is_error) == (
        "denied: no notes today",
        True,
    )


async def test_when_every_guardrail_permits_the_earlier_before_tool_decides() -> None:
    ran.clear()

    class Hooks:
        def __init__(self) -> None:
            self.before_tool = self.swap

        async def swap(self, event: dict[str, Any]) -> dict[str, Any]:
            return {"result": ToolResult("from the hook")}

    hooks = guarded_hooks([lambda e: "", lambda e: None], Hooks())
    assert set(hooks) == {"before_tool"}
    script = [tool_calls(call("note", {"what": "a"})), text("ok")]
    async with ScriptedModel(script) as model, client_of(model, hooks=hooks) as client:
        result = await client.run("go", [note])
    assert ran == []
    assert result.tool_calls[0].output == "from the hook"


def test_no_guardrails_leave_the_hooks_as_they_are() -> None:
    hooks = object()
    assert guarded_hooks([], hooks) is hooks
    assert guarded_hooks(None, None) is None


@pytest.mark.parametrize(
    ("returned", "named"),
    [(lambda: 1, "int"), (lambda: b"deny", "bytes"), ("coroutine", "a coroutine")],
)
async def test_a_guardrail_returning_a_non_string_is_a_type_error_that_passes_the_hook_wrapper(
    returned: Any, named: str
) -> None:
    async def late() -> str:
        return "deny"

    def rail(event: dict[str, Any]) -> Any:
        return late() if returned == "coroutine" else returned()

    hooks = guarded_hooks([rail], None)
    script = [tool_calls(call("note", {"what": "a"})), text("ok")]
    async with ScriptedModel(script) as model, client_of(model, hooks=hooks) as client:
        with pytest.raises(GuardrailTypeError) as caught:
            await client.run("go", [note])
    assert isinstance(caught.value, TypeError)
    assert isinstance(caught.value, CallbackError)
    assert str(caught.value).startswith(
        f"guardrail returned {named}: a guardrail must return a str"
    )


def test_loop_unsupported_names_the_canonical_fields_in_order() -> None:
    full = agent(
        "a",
        does="x",
        uses={"tools": [note]},
        team=[agent("b", does="y")],
        wait_for=lambda r: None,
        on_metric=lambda e: None,
    )
    assert loop_unsupported(full) == ["tools", "team", "waitFor", "onMetric"]
    assert loop_unsupported(agent("c", does="z", uses={"tools": []})) == []
    assert loop_unsupported({"team": [], "wait_for": print}) == ["waitFor"]


def test_harness_returns_its_spec_unchanged() -> None:
    assert harness(model="m", max_turns=3) == {"model": "m", "max_turns": 3}
