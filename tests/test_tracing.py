"""OpenTelemetry traces: the GenAI spans of a run, the human wait, and a wait that crosses
processes (halted in one, resumed in another, one trace)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk import trace as trace_sdk
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from toolnexus import Answer, Client, ToolContext, ToolResult, define_tool, pending
from toolnexus.errors import ProviderError, UsageError
from toolnexus.testing import ScriptedModel, call, http_error, text, tool_calls

ClientFor = Callable[..., Client]
HELPER = Path(__file__).parent / "helpers" / "traced_proc.py"
SECRET_ARG = "s3cr3t-argument"


@pytest.fixture
def spans() -> tuple[Any, InMemorySpanExporter]:
    """A private SDK provider (the global one can be set only once) and its exporter."""
    exporter = InMemorySpanExporter()
    provider = trace_sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@define_tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


def approval_tool(seen: list[Answer | None]) -> Any:
    async def ship(target: str, ctx: ToolContext | None = None) -> ToolResult:
        """Ship to a target (needs approval)."""
        answer = ctx.answer if ctx is not None else None
        seen.append(answer)
        if answer is None:
            return pending(kind="approval", prompt=f"Ship to {target}?", id="req-ship")
        return ToolResult(f"shipped to {target}")

    return define_tool(ship)


def by_name(exporter: InMemorySpanExporter) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for span in exporter.get_finished_spans():
        found.setdefault(span.name, []).append(span)
    return found


async def test_a_run_has_an_agent_span_with_chat_and_tool_spans_under_it(
    scripted: ScriptedModel, client_for: ClientFor, style: str, spans: Any
) -> None:
    provider, exporter = spans
    scripted.add(tool_calls(call("add", {"a": 2, "b": 3}, id="c1")), text("5"))
    async with client_for(scripted, style, tracing=provider) as client:
        result = await client.run("2+3?", [add])
    assert result.text == "5"
    found = by_name(exporter)
    [run] = found["invoke_agent"]
    chats = found["chat m-1"]
    [tool] = found["execute_tool add"]
    assert len(chats) == 2
    for child in [*chats, tool]:
        assert child.parent.span_id == run.context.span_id
        assert child.context.trace_id == run.context.trace_id
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.provider.name"] == style
    assert run.attributes["toolnexus.run.status"] == "done"
    first = chats[0]
    assert first.kind == SpanKind.CLIENT
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.request.model"] == "m-1"
    assert first.attributes["server.address"] == "127.0.0.1"
    assert isinstance(first.attributes["server.port"], int)
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert first.attributes["gen_ai.usage.input_tokens"] >= 0
    assert "gen_ai.input.messages" not in first.attributes  # content only when opted in
    assert tool.attributes["gen_ai.tool.name"] == "add"
    assert tool.attributes["gen_ai.tool.call.id"] == "c1"
    assert tool.attributes["toolnexus.tool.source"] == "native"
    assert "gen_ai.tool.call.arguments" not in tool.attributes
    assert all(s.status.status_code != StatusCode.ERROR for s in exporter.get_finished_spans())


async def test_message_content_is_recorded_only_when_the_host_opts_in(
    scripted: ScriptedModel, client_for: ClientFor, spans: Any
) -> None:
    provider, exporter = spans
    scripted.add(tool_calls(call("echo", {"word": SECRET_ARG}, id="c1")), text("ok"))

    @define_tool
    def echo(word: str) -> str:
        """Echo a word."""
        return word

    async with client_for(scripted, tracing=provider) as client:
        await client.run("say it")
    assert SECRET_ARG not in json.dumps([dict(s.attributes) for s in exporter.get_finished_spans()])
    exporter.clear()
    scripted.add(tool_calls(call("echo", {"word": SECRET_ARG}, id="c1")), text("ok"))
    async with client_for(scripted, tracing=provider, trace_content=True) as client:
        await client.run("say it", [echo])
    found = by_name(exporter)
    [tool] = found["execute_tool echo"]
    assert SECRET_ARG in tool.attributes["gen_ai.tool.call.arguments"]
    assert SECRET_ARG in tool.attributes["gen_ai.tool.call.result"]
    assert "say it" in found["chat m-1"][0].attributes["gen_ai.input.messages"]


async def test_an_inline_wait_is_an_ok_span_even_when_the_human_declines(
    scripted: ScriptedModel, client_for: ClientFor, spans: Any
) -> None:
    provider, exporter = spans
    seen: list[Answer | None] = []
    scripted.add(tool_calls(call("ship", {"target": "prod"}, id="c1")), text("fine"))

    def decline(request: Any) -> Answer:
        return Answer(request.id, False, reason="not today")

    async with client_for(scripted, tracing=provider, wait_for=decline) as client:
        result = await client.run("ship it", [approval_tool(seen)])
    assert result.status == "done"
    found = by_name(exporter)
    [wait] = found["await_human approval"]
    [run] = found["invoke_agent"]
    assert wait.parent.span_id == run.context.span_id
    assert wait.attributes["toolnexus.request.id"] == "req-ship"
    assert wait.attributes["toolnexus.answer.ok"] is False
    assert wait.attributes["toolnexus.answer.reason"] == "not today"
    assert wait.status.status_code != StatusCode.ERROR
    [tool] = found["execute_tool ship"]
    assert tool.attributes["toolnexus.request.kind"] == "approval"


async def test_a_failed_model_call_marks_its_chat_span_and_the_run(
    scripted: ScriptedModel, client_for: ClientFor, spans: Any
) -> None:
    provider, exporter = spans
    scripted.add(http_error(500, {"error": {"message": "boom"}}))
    async with client_for(scripted, tracing=provider, retries=0) as client:
        with pytest.raises(ProviderError):
            await client.run("hi")
    found = by_name(exporter)
    [chat] = found["chat m-1"]
    [run] = found["invoke_agent"]
    assert chat.status.status_code == StatusCode.ERROR
    assert chat.attributes["error.type"] == "ProviderError"
    assert run.status.status_code == StatusCode.ERROR


async def test_a_streamed_run_has_the_same_spans(
    scripted: ScriptedModel, client_for: ClientFor, style: str, spans: Any
) -> None:
    provider, exporter = spans
    scripted.add(tool_calls(call("add", {"a": 1, "b": 1}, id="c1")), text("2"))
    async with client_for(scripted, style, tracing=provider) as client:
        events = [e async for e in client.stream("1+1", [add])]
    assert events[-1]["result"].text == "2"
    found = by_name(exporter)
    [run] = found["invoke_agent"]
    assert len(found["chat m-1"]) == 2
    assert found["execute_tool add"][0].parent.span_id == run.context.span_id
    assert found["chat m-1"][1].attributes["gen_ai.response.finish_reasons"] == ("stop",)


async def test_tracing_false_records_nothing_and_a_bad_option_is_a_usage_error(
    scripted: ScriptedModel, client_for: ClientFor, spans: Any
) -> None:
    _, exporter = spans
    scripted.add(text("hi"))
    async with client_for(scripted, tracing=False) as client:
        await client.run("hi")
    assert exporter.get_finished_spans() == ()
    with pytest.raises(UsageError, match="tracing must be"):
        client_for(scripted, tracing="yes")


def test_tracing_true_without_opentelemetry_names_the_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None\n"
        "from toolnexus import create_client\n"
        "try:\n"
        "    create_client(base_url='http://127.0.0.1:9', model='m', api_key='k', tracing=True)\n"
        "except ImportError as e:\n"
        "    print('ImportError:', e)\n"
        "c = create_client(base_url='http://127.0.0.1:9', model='m', api_key='k')\n"
        "print('default:', c.engine_config.tracing)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    hint = "ImportError: tracing=True needs OpenTelemetry's API: pip install 'toolnexus-sdk[otel]'"
    assert hint in done.stdout
    assert "default: None" in done.stdout


async def test_a_wait_across_processes_is_one_trace(
    scripted: ScriptedModel, tmp_path: Path
) -> None:
    # Process A halts and exits; process B resumes with the answer. B's spans are parented
    # under A's run span (and link to it), with the wait in between: one trace.
    db = tmp_path / "runs.db"
    scripted.add(tool_calls(call("ship", {"target": "prod"}, id="c1")), text("shipped"))
    halted = await _traced(scripted, "halt", db, tmp_path / "a.json")
    assert halted["status"] == "pending"
    resumed = await _traced(scripted, "resume", db, tmp_path / "b.json")
    assert resumed["status"] == "done"
    a = {s["name"]: s for s in halted["spans"]}
    b = {s["name"]: s for s in resumed["spans"]}
    run_a, run_b = a["invoke_agent"], b["invoke_agent"]
    assert run_a["status"] == "pending"
    assert run_b["trace_id"] == run_a["trace_id"]
    assert run_b["parent"] == run_a["span_id"]
    assert run_b["links"] == [run_a["span_id"]]
    wait = b["await_human approval"]
    assert (wait["trace_id"], wait["parent"]) == (run_a["trace_id"], run_a["span_id"])
    assert wait["attributes"]["toolnexus.answer.by"] == "ana"
    assert wait["start"] <= run_b["start"]
    # The re-executed call (with the answer) and the next model call sit in the resumed run.
    assert b["execute_tool ship"]["parent"] == run_b["span_id"]
    assert b["chat m-1"]["parent"] == run_b["span_id"]
    assert a["execute_tool ship"]["parent"] == run_a["span_id"]


async def test_a_provider_set_after_the_client_is_made_gets_the_next_runs_spans(
    scripted: ScriptedModel, tmp_path: Path
) -> None:
    # The default tracer is OpenTelemetry's global one. Before a provider is set, a run makes
    # no spans (it skips building them); once one is set, the same client's next run has
    # its spans there.
    scripted.add(text("one"), text("two"))
    report = await _traced(scripted, "late", tmp_path / "unused.db", tmp_path / "late.json")
    assert report["status"] == ["done", "done"]
    names = [s["name"] for s in report["spans"]]
    assert sorted(names) == ["chat m-1", "invoke_agent"]
    [run] = [s for s in report["spans"] if s["name"] == "invoke_agent"]
    assert run["status"] == "done"
    assert len(scripted.requests) == 2


async def _traced(scripted: ScriptedModel, mode: str, db: Path, out: Path) -> dict[str, Any]:
    # Not subprocess.run: the scripted model answers from this event loop.
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(HELPER),
        mode,
        scripted.openai_base_url,
        str(db),
        str(out),
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), 50)
    assert proc.returncode == 0, err.decode()
    return json.loads(out.read_text())


async def test_each_agent_of_a_tree_gets_its_own_invoke_agent_span(spans: Any) -> None:
    from toolnexus.agents import AgentDef, AgentRuntime, Handle

    provider, exporter = spans
    async with ScriptedModel(default=lambda r: text("done")) as model:
        rt = AgentRuntime(
            registry={"scout": AgentDef(name="scout", description="d", model="m-s")},
            llm={"base_url": model.openai_base_url, "api_key": "k", "tracing": provider},
        )
        h = rt.spawn(rt.root, "scout")
        assert isinstance(h, Handle)
        result = await rt.run_turn(h, "look")
        await rt.aclose()
    assert result.status == "done"
    found = by_name(exporter)
    [run] = found["invoke_agent scout"]
    assert run.attributes["gen_ai.agent.name"] == "scout"
    [chat] = found["chat m-s"]
    assert chat.parent.span_id == run.context.span_id
