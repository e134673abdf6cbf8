"""Approve with edited arguments, end to end: the re-executed call runs with the arguments the
human approved — never the model's — on every path (a recorded answer and a worker, a host's
resume, a transcript-only resume, the inline ``wait_for``, a stream, an agent tree), and the
model, the hooks, the trace and the audit digest all see what actually ran.

In one process on the memory store, SQLite and Postgres; the answer given in a process with no
toolkit (``toolnexus answer --args``) lives in tests/cli/test_cli_edited_args.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk import trace as trace_sdk
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolnexus import (
    EXPIRED_BY,
    Answer,
    InMemoryStore,
    InvalidAnswer,
    Request,
    Tool,
    ToolContext,
    ToolResult,
    create_client,
    create_toolkit,
    edited_arguments_problem,
    pending,
)
from toolnexus.agents import AgentDef, AgentRuntime, Handle
from toolnexus.stores.checks import call_digest
from toolnexus.stores.url import resolve_store
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls
from toolnexus.waiting import store_wait_for

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "to": {"type": "string"},
        "amount": {"type": "integer", "maximum": 1000},
    },
    "required": ["to", "amount"],
    "additionalProperties": False,
}
MODELS = {"to": "bob", "amount": 5}
EDITED = {"to": "carol", "amount": 7}


class Ledger:
    """Every execution of the transfer tool: what it was asked with, what it sent."""

    def __init__(self, path: Path | None = None) -> None:
        self.asked: list[dict[str, Any]] = []
        self.path = path
        self._sent: list[dict[str, Any]] = []

    def send(self, args: dict[str, Any]) -> None:
        if self.path is not None:
            with self.path.open("a") as f:
                f.write(json.dumps(args, sort_keys=True) + "\n")
        self._sent.append(dict(args))

    @property
    def sent(self) -> list[dict[str, Any]]:
        if self.path is not None:
            if not self.path.exists():
                return []
            return [json.loads(line) for line in self.path.read_text().splitlines()]
        return self._sent


def transfer_tool(
    ledger: Ledger,
    *,
    kind: str = "approval",
    validate: bool = True,
    maps: bool = False,
    expires: str | None = None,
) -> Tool:
    async def execute(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        answer = ctx.answer if ctx is not None else None
        if answer is None:
            ledger.asked.append(dict(args))
            prompt = f"send {args.get('amount')} to {args.get('to')}?"
            return pending(kind=kind, prompt=prompt, expiresAt=expires)
        if not answer.ok:
            return ToolResult("not sent")
        ledger.send(args)
        return ToolResult(f"sent {args.get('amount')} to {args.get('to')}")

    return Tool(
        "transfer",
        "Send money (needs approval).",
        SCHEMA,
        "native",
        execute,
        validate_args=validate,
        handles_declines=maps,
    )


def brain(request: RecordedRequest) -> Reply:
    seen = [m for m in request.body["messages"] if m.get("role") == "tool"]
    if not seen:
        return tool_calls(call("transfer", MODELS, id="c1"))
    return text(f"Done: {seen[-1]['content']}.")


def call_args(messages: list[dict[str, Any]], call_id: str = "c1") -> dict[str, Any]:
    """The arguments of call ``call_id`` in the transcript's assistant turn."""
    for m in messages:
        for c in m.get("tool_calls") or []:
            if c["id"] == call_id:
                return json.loads(c["function"]["arguments"])
    raise AssertionError(f"no call {call_id}")


_DEFAULT: Any = object()


def edit(rid: str, arguments: Any = _DEFAULT, **more: Any) -> Answer:
    return Answer(rid, True, {"arguments": EDITED if arguments is _DEFAULT else arguments, **more})


def digest(arguments: dict[str, Any]) -> str:
    return call_digest("transfer", json.dumps(arguments))


async def halted(client: Any, tk: Any, conversation: str | None = "conv-1") -> Request:
    result = await client.ask("pay bob", tk, id=conversation)
    assert result.status == "pending"
    assert result.pending is not None
    return result.pending


# -- a recorded answer, finished by a worker ------------------------------------------------


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "memory":
        yield InMemoryStore()
        return
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    if request.param == "postgres":
        url = str(request.getfixturevalue("pg_url"))
    opened: Any = resolve_store(url)
    try:
        yield opened
    finally:
        await opened.aclose()


async def test_a_recorded_edit_runs_instead_of_the_models_arguments(store: Any) -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[transfer_tool(ledger)], builtins=False)
    async with ScriptedModel(default=brain) as model:
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            request = await halted(client, tk)
            stored = await store.load_halt(request.id)
            assert stored.outstanding[0].input_schema == SCHEMA  # kept for toolkit-less checks
            assert edited_arguments_problem(stored, EDITED) is None
            record = await client.answer(request.id, edit(request.id), answered_by="ana")
            assert record.digest == digest(EDITED)
            assert ledger.sent == []  # answering ran nothing
            results: list[Any] = []
            worker = client.worker(tk, on_result=lambda rid, r: results.append(r))
            assert await worker.drain() == 1
            transcript = await client.conversation_store.get("conv-1")
        settled = await store.answer_record(request.id)
    assert ledger.asked == [MODELS]
    assert ledger.sent == [EDITED]  # the edit ran, once; the model's arguments never
    [result] = results
    assert result.text == "Done: sent 7 to carol."
    assert [dict(r) for r in result.tool_calls][-1]["args"] == EDITED
    # the model was told what actually ran
    assert call_args(model.requests[-1].body["messages"]) == EDITED
    assert transcript is not None
    assert call_args(transcript) == EDITED
    assert settled is not None
    assert (settled.status, settled.answered_by, settled.digest) == ("done", "ana", digest(EDITED))


async def test_a_host_resume_with_an_edit_claims_and_records_what_was_approved() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[transfer_tool(ledger)], builtins=False)
    store = InMemoryStore()
    async with ScriptedModel(default=brain) as model:
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            request = await halted(client, tk)
            done = await client.resume(tk, edit(request.id), answered_by="ana")
    assert done.text == "Done: sent 7 to carol."
    assert ledger.sent == [EDITED]
    record = await store.answer_record(request.id)
    assert record is not None
    assert record.digest == digest(EDITED)


async def test_an_edit_that_comes_too_late_runs_nothing_and_records_the_halted_call() -> None:
    ledger = Ledger()
    tk = [transfer_tool(ledger, expires="2000-01-01T00:00:00Z")]
    store = InMemoryStore()
    async with ScriptedModel(default=brain) as model:
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            request = await halted(client, tk)
            done = await client.resume(tk, edit(request.id), answered_by="ana")
    assert done.text.startswith("Done: declined/expired")
    assert ledger.sent == []
    assert call_args(done.messages) == MODELS  # nothing edited was approved
    record = await store.answer_record(request.id)
    assert record is not None
    assert (record.answered_by, record.digest) == (EXPIRED_BY, digest(MODELS))


class WatchedStore(InMemoryStore):
    """The memory store, telling the test when a run has saved its halt."""

    def __init__(self) -> None:
        super().__init__()
        self.halted = asyncio.Event()

    async def save_halt(self, checkpoint: Any) -> None:
        await super().save_halt(checkpoint)
        self.halted.set()


async def test_a_run_parked_on_the_store_resumes_with_the_recorded_edit() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[transfer_tool(ledger)], builtins=False)
    store = WatchedStore()
    async with ScriptedModel(default=brain) as model:
        async with create_client(
            base_url=model.openai_base_url,
            model="m",
            api_key="k",
            store=store,
            wait_for=store_wait_for(store),
        ) as client:
            running = asyncio.ensure_future(client.ask("pay bob", tk, id="conv-1"))
            await asyncio.wait_for(store.halted.wait(), 10)
            [entry] = await store.list_pending()
            with pytest.raises(InvalidAnswer):
                await store.post_answer(entry.request_id, edit(entry.request_id, {"to": "x"}))
            await store.post_answer(entry.request_id, edit(entry.request_id))
            result = await asyncio.wait_for(running, 10)
    assert result.text == "Done: sent 7 to carol."
    assert ledger.sent == [EDITED]
    assert call_args(result.messages) == EDITED


async def test_a_transcript_only_resume_applies_the_edit() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[transfer_tool(ledger)], builtins=False)
    async with ScriptedModel(default=brain) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as a:
            first = await a.run("pay bob", tk)
        assert first.pending is not None
        # another process: its store holds nothing, only the host's transcript
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as b:
            with pytest.raises(InvalidAnswer):
                await b.run_with_answer(
                    tk, first.messages, first.pending, edit(first.pending.id, {"to": "x"})
                )
            assert ledger.sent == []
            done = await b.run_with_answer(
                tk, first.messages, first.pending, edit(first.pending.id)
            )
    assert ledger.sent == [EDITED]
    assert call_args(done.messages) == EDITED


async def test_a_streamed_resume_applies_the_edit() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[transfer_tool(ledger)], builtins=False)
    async with ScriptedModel(default=brain) as model:
        async with create_client(base_url=model.openai_base_url, model="m", api_key="k") as client:
            first = await client.run("pay bob", tk)
            assert first.pending is not None
            events = [
                e
                async for e in client.stream_with_answer(
                    tk, first.messages, first.pending, edit(first.pending.id)
                )
            ]
    results = [e for e in events if e["type"] == "tool_result"]
    assert [r["output"] for r in results] == ["sent 7 to carol"]
    assert call_args(events[-1]["result"].messages) == EDITED
    assert ledger.sent == [EDITED]


# -- the inline wait_for --------------------------------------------------------------------


async def test_an_inline_edit_runs_and_a_before_tool_hook_sees_it() -> None:
    ledger = Ledger()
    hooked: list[tuple[dict[str, Any], bool]] = []

    def before_tool(info: dict[str, Any]) -> None:
        hooked.append((dict(info["args"]), "answer" in info))

    async with ScriptedModel(default=brain) as model:
        async with create_client(
            base_url=model.openai_base_url,
            model="m",
            api_key="k",
            wait_for=lambda req: edit(req.id),
            hooks={"before_tool": before_tool},
        ) as client:
            result = await client.run("pay bob", [transfer_tool(ledger)])
    assert result.text == "Done: sent 7 to carol."
    assert ledger.sent == [EDITED]
    assert hooked == [(MODELS, False), (EDITED, True)]
    assert call_args(result.messages) == EDITED
    assert call_args(model.requests[-1].body["messages"]) == EDITED
    assert result.tool_calls[0]["args"] == EDITED


@pytest.mark.parametrize(
    "arguments",
    [[1], "x", None, {"to": "carol"}, {"to": "c", "amount": 5000}, {**EDITED, "memo": "hi"}],
)
async def test_an_inline_bad_edit_fails_the_run_and_runs_nothing(arguments: Any) -> None:
    ledger = Ledger()
    async with ScriptedModel(default=brain) as model:
        async with create_client(
            base_url=model.openai_base_url,
            model="m",
            api_key="k",
            wait_for=lambda req: edit(req.id, arguments),
        ) as client:
            with pytest.raises(InvalidAnswer, match="with edited arguments"):
                await client.run("pay bob", [transfer_tool(ledger)])
    assert ledger.sent == []
    assert len(model.requests) == 1


async def test_the_trace_span_of_the_re_executed_call_shows_the_edited_arguments() -> None:
    exporter = InMemorySpanExporter()
    provider = trace_sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    ledger = Ledger()
    async with ScriptedModel(default=brain) as model:
        async with create_client(
            base_url=model.openai_base_url,
            model="m",
            api_key="k",
            tracing=provider,
            trace_content=True,
            wait_for=lambda req: edit(req.id),
        ) as client:
            await client.run("pay bob", [transfer_tool(ledger)])
    tools = [s for s in exporter.get_finished_spans() if s.name == "execute_tool transfer"]
    assert [json.loads(str(s.attributes["gen_ai.tool.call.arguments"])) for s in tools] == [
        MODELS,
        EDITED,
    ]


# -- what is left alone ---------------------------------------------------------------------


async def test_arguments_in_the_data_of_another_kind_are_only_data() -> None:
    ledger = Ledger()
    seen: list[Any] = []
    tool = transfer_tool(ledger, kind="input")
    inner = tool.execute

    async def execute(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        if ctx is not None and ctx.answer is not None:
            seen.append(ctx.answer.data)
        return await inner(args, ctx)

    tool.execute = execute
    form = {"arguments": "a form field, not an edit"}
    async with ScriptedModel(default=brain) as model:
        async with create_client(
            base_url=model.openai_base_url,
            model="m",
            api_key="k",
            wait_for=lambda req: Answer(req.id, True, form),
        ) as client:
            result = await client.run("pay bob", [tool])
    assert ledger.sent == [MODELS]
    assert seen == [form]
    assert call_args(result.messages) == MODELS


async def test_a_tool_that_maps_its_answers_itself_keeps_its_arguments() -> None:
    ledger = Ledger()
    async with ScriptedModel(default=brain) as model:
        async with create_client(
            base_url=model.openai_base_url,
            model="m",
            api_key="k",
            wait_for=lambda req: edit(req.id, [1]),  # not even checked: it is the tool's data
        ) as client:
            await client.run("pay bob", [transfer_tool(ledger, maps=True)])
    assert ledger.sent == [MODELS]


async def test_recording_an_edit_of_a_tool_that_maps_its_answers_itself_is_refused() -> None:
    store = InMemoryStore()
    tool = transfer_tool(Ledger(), maps=True)
    async with ScriptedModel(default=brain) as model:
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            request = await halted(client, [tool])
            stored = await store.load_halt(request.id)
            assert stored is not None
            assert stored.outstanding[0].input_schema is False
            with pytest.raises(InvalidAnswer, match='"transfer" takes no edited arguments'):
                await client.answer(request.id, edit(request.id))
            assert await store.answer_record(request.id) is None


async def test_a_tool_that_does_not_validate_takes_any_object() -> None:
    ledger = Ledger()
    store = InMemoryStore()
    loose = {"to": "dave", "amount": "lots", "memo": 1}
    tool = transfer_tool(ledger, validate=False)
    async with ScriptedModel(default=brain) as model:
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            request = await halted(client, [tool])
            stored = await store.load_halt(request.id)
            assert stored is not None
            assert stored.outstanding[0].input_schema is True
            await client.answer(request.id, edit(request.id, loose))
            assert await client.worker([tool]).drain() == 1
    assert ledger.sent == [loose]


# -- bad input leaves the stored state as it was --------------------------------------------

BAD = [[1], "x", None, 3, {"to": "carol"}, {"to": "c", "amount": 5000}, {**EDITED, "memo": "hi"}]


@pytest.mark.parametrize("arguments", BAD)
async def test_a_bad_edit_is_refused_on_answer_and_on_resume_and_nothing_changes(
    arguments: Any,
) -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[transfer_tool(ledger)], builtins=False)
    store = InMemoryStore()
    async with ScriptedModel(default=brain) as model:
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            request = await halted(client, tk)
            before = (await store.load_halt(request.id)).dumps()  # pyright: ignore[reportOptionalMemberAccess]
            for attempt in (
                lambda: client.answer(request.id, edit(request.id, arguments)),
                lambda: store.post_answer(request.id, edit(request.id, arguments)),
                lambda: client.resume(tk, edit(request.id, arguments)),
                lambda: client.ask_with_answer(tk, "conv-1", request, edit(request.id, arguments)),
            ):
                with pytest.raises(InvalidAnswer, match=f'request "{request.id}" with edited'):
                    await attempt()
                assert [e.request_id for e in await store.list_pending()] == [request.id]
                assert await store.answer_record(request.id) is None
                assert (await store.load_halt(request.id)).dumps() == before  # pyright: ignore[reportOptionalMemberAccess]
            assert len(model.requests) == 1
            # still answerable, once, with a good edit
            done = await client.resume(tk, edit(request.id))
    assert done.text == "Done: sent 7 to carol."
    assert ledger.sent == [EDITED]


async def test_an_edit_of_a_checkpoint_without_the_schema_fails_at_the_worker(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[transfer_tool(ledger)], builtins=False)
    store = InMemoryStore()
    async with ScriptedModel(default=brain) as model:
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            request = await halted(client, tk)
            old = await store.load_halt(request.id)
            assert old is not None
            for slot in old.outstanding:
                slot.input_schema = None  # as written before checkpoints kept it
            await store.save_halt(old)
            # the answering side can check the object only ...
            await client.answer(request.id, edit(request.id, {"to": "carol"}))
            # ... the resume checks the schema: nothing runs, the run stays queued
            worker = client.worker(tk, retry_s=60)
            assert await worker.drain() == 1
            assert worker.failed == 1
            assert "'amount' is a required property" in worker.errors[request.id]
            assert await worker.drain() == 0  # held, not retried in a hot loop
    assert ledger.sent == []
    assert len(model.requests) == 1
    record = await store.answer_record(request.id)
    assert record is not None
    assert record.status in ("answered", "claimed")


async def test_an_old_checkpoint_still_loads_and_resumes_with_a_good_edit() -> None:
    ledger = Ledger()
    tk = await create_toolkit(extra_tools=[transfer_tool(ledger)], builtins=False)
    store = InMemoryStore()
    async with ScriptedModel(default=brain) as model:
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", store=store
        ) as client:
            request = await halted(client, tk)
            old = await store.load_halt(request.id)
            assert old is not None
            data = old.to_json()
            for slot in data["outstanding"]:
                slot.pop("input_schema", None)
            assert "input_schema" not in json.dumps(data)
            from toolnexus import Checkpoint

            await store.save_halt(Checkpoint.from_json(data))
            await client.answer(request.id, edit(request.id))
            assert await client.worker(tk).drain() == 1
    assert ledger.sent == [EDITED]


# -- an agent tree --------------------------------------------------------------------------


def tree_brain(request: RecordedRequest) -> Reply:
    if request.body["model"] == "m-leaf":
        return brain(request)
    seen = [m for m in request.body["messages"] if m.get("role") == "tool"]
    if not seen:
        return tool_calls(call("task", {"agent": "payer", "prompt": "pay bob"}, id="t1"))
    return text(f"parent done: {seen[-1]['content']}")


def tree(ledger: Ledger) -> dict[str, AgentDef]:
    return {
        "boss": AgentDef(
            name="boss", description="coordinates", model="m-boss", task_targets=["payer"]
        ),
        "payer": AgentDef(
            name="payer", description="pays", model="m-leaf", tools=[transfer_tool(ledger)]
        ),
    }


def llm_of(model: ScriptedModel) -> dict[str, Any]:
    return {
        "base_url": model.openai_base_url,
        "style": "openai",
        "model": "m-asker",
        "api_key": "k",
        "retry_base_ms": 1,
    }


async def test_an_edit_deep_in_a_sub_agent_runs_the_sub_agents_tool_with_it(
    store: Any, tmp_path: Path
) -> None:
    ledger = Ledger(tmp_path / "sent.jsonl")
    async with ScriptedModel(default=tree_brain) as model:
        rt = AgentRuntime(registry=tree(ledger), llm=llm_of(model), store=store)
        boss = rt.spawn(rt.root, "boss")
        assert isinstance(boss, Handle)
        rt.wake(boss, "go")
        first = await rt.wait(boss)
        assert first.pending is not None
        rid = first.pending.id
        [entry] = await store.list_pending()
        assert (entry.request_id, entry.tool) == (rid, "transfer")
        stored = await store.load_halt(rid)
        assert edited_arguments_problem(stored, {"to": "x"}) is not None
        with pytest.raises(InvalidAnswer):
            await store.post_answer(rid, edit(rid, {"to": "x"}))
        record = await store.post_answer(rid, edit(rid), answered_by="ana")
        assert record.digest == digest(EDITED)
        assert await rt.worker().drain() == 1
        final = await rt.wait(boss)
        await rt.aclose()
    assert final.text == "parent done: Done: sent 7 to carol."
    assert ledger.sent == [EDITED]
    # the leaf's model saw the edited call; the boss's task call kept its arguments
    leaf_calls = [r for r in model.requests if r.body["model"] == "m-leaf"]
    assert call_args(leaf_calls[-1].body["messages"]) == EDITED
    boss_calls = [r for r in model.requests if r.body["model"] == "m-boss"]
    assert call_args(boss_calls[-1].body["messages"], "t1") == {
        "agent": "payer",
        "prompt": "pay bob",
    }


async def test_an_edit_answered_inline_up_the_tree_runs_the_sub_agents_tool_with_it() -> None:
    ledger = Ledger()
    registry = tree(ledger)
    registry["boss"].wait_for = lambda req: edit(req.id)
    async with ScriptedModel(default=tree_brain) as model:
        rt = AgentRuntime(registry=registry, llm=llm_of(model))
        boss = rt.spawn(rt.root, "boss")
        assert isinstance(boss, Handle)
        rt.wake(boss, "go")
        final = await rt.wait(boss)
        await rt.aclose()
    assert final.text == "parent done: Done: sent 7 to carol."
    assert ledger.sent == [EDITED]
    leaf_calls = [r for r in model.requests if r.body["model"] == "m-leaf"]
    assert call_args(leaf_calls[-1].body["messages"]) == EDITED
    boss_calls = [r for r in model.requests if r.body["model"] == "m-boss"]
    assert call_args(boss_calls[-1].body["messages"], "t1") == {
        "agent": "payer",
        "prompt": "pay bob",
    }


async def test_a_bad_edit_given_to_the_runtime_changes_nothing_in_the_tree() -> None:
    ledger = Ledger()
    store = InMemoryStore()
    async with ScriptedModel(default=tree_brain) as model:
        rt = AgentRuntime(registry=tree(ledger), llm=llm_of(model), store=store)
        boss = rt.spawn(rt.root, "boss")
        assert isinstance(boss, Handle)
        rt.wake(boss, "go")
        first = await rt.wait(boss)
        assert first.pending is not None
        rid = first.pending.id
        calls = len(model.requests)
        with pytest.raises(InvalidAnswer, match="'amount' is a required property"):
            await rt.resume(edit(rid, {"to": "carol"}))
        assert [v.state for v in rt.list()] == ["suspended", "suspended"]
        assert [e.request_id for e in await store.list_pending()] == [rid]
        assert await store.answer_record(rid) is None
        assert len(model.requests) == calls
        await rt.resume(edit(rid), answered_by="ana")
        final = await rt.wait(boss)
        await rt.aclose()
    assert final.text == "parent done: Done: sent 7 to carol."
    assert ledger.sent == [EDITED]


async def test_an_edit_of_a_call_to_a_tool_not_in_the_toolkit_is_refused() -> None:
    def guard(info: dict[str, Any]) -> Any:
        if "answer" not in info:  # a guard-raised approval, for a tool nobody has
            return {"result": pending(kind="approval", prompt="run the ghost?")}
        return None

    def ghost_brain(request: RecordedRequest) -> Reply:
        return tool_calls(call("ghost", {"x": 1}, id="c1"))

    async with ScriptedModel(default=ghost_brain) as model:
        async with create_client(
            base_url=model.openai_base_url,
            model="m",
            api_key="k",
            hooks={"before_tool": guard},
            wait_for=lambda req: edit(req.id, {"x": 2}),
        ) as client:
            with pytest.raises(InvalidAnswer, match='tool "ghost" is not in the toolkit'):
                await client.run("go", [transfer_tool(Ledger())])
