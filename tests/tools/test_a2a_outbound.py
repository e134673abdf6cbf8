"""Calling remote A2A agents: a real a2a-sdk server (an AgentExecutor that asks back) and our
own served agent as peers, polling and streaming; inline and durable answers; bad peers."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
sys.path.insert(0, str(HELPERS))

import a2a_peer  # noqa: E402

from toolnexus import Answer, Request, create_client, create_toolkit  # noqa: E402
from toolnexus.serve.server import ServeHandle, start  # noqa: E402
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls  # noqa: E402
from toolnexus.tools.a2a import agent, agent_tools, parse_agents_config  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@asynccontextmanager
async def peer(
    *, streaming: bool = False, store: Any = None, work: a2a_peer.Work | None = None
) -> AsyncIterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    served = await start(
        a2a_peer.app(url, store, streaming=streaming, work=work), f"127.0.0.1:{port}"
    )
    try:
        yield url
    finally:
        await served.stop()


@asynccontextmanager
async def peer_process(folder: Path, port: int) -> AsyncIterator[str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        str(HELPERS / "a2a_peer.py"),
        str(folder),
        str(port),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert line.startswith(b"URL "), line
        yield line.decode().split()[1]
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


@pytest.mark.parametrize("streaming", [False, True])
async def test_one_tool_per_skill_and_the_result_mapping(streaming: bool) -> None:
    async with peer(streaming=streaming) as url:
        tools = await agent_tools(agent(url, poll_every=10))
        assert [t.name for t in tools] == ["painter_paint"]
        paint = tools[0]
        assert paint.source == "a2a"
        assert paint.description == "Paint something"
        assert paint.input_schema["required"] == ["task"]
        done = await paint.execute({"task": "a fence"}, None)
        assert (done.output, done.is_error) == ("echo: a fence", False)
        assert set(done.metadata or {}) == {"agent", "taskId", "state", "polls", "ms"}
        assert done.metadata["state"] == "completed"
        assert (done.metadata["polls"] == 0) is streaming
        failed = await paint.execute({"task": "fail please"}, None)
        assert failed.is_error
        tid = failed.metadata["taskId"]
        assert failed.output == f"A2A task {tid} failed: no paint left"


async def test_a_remote_agent_that_never_finishes_times_out() -> None:
    async with peer() as url:
        paint = (await agent_tools(agent(url, timeout=300, poll_every=20)))[0]
        result = await paint.execute({"task": "slow"}, None)
    tid = result.metadata["taskId"]
    assert result.output == f"A2A task {tid} timed out after 300ms (state=working)"
    assert result.metadata["polls"] >= 2


async def test_a_cancelled_run_stops_following_the_task() -> None:
    from toolnexus import ToolContext

    async with peer() as url:
        paint = (await agent_tools(agent(url, poll_every=5000)))[0]
        signal = asyncio.Event()
        signal.set()  # the run was cancelled: no poll pause, no waiting out the budget
        result = await asyncio.wait_for(
            paint.execute({"task": "slow"}, ToolContext(signal=signal)), 10
        )
    tid = result.metadata["taskId"]
    assert result.output == f"A2A task {tid} canceled"
    assert result.is_error
    assert result.metadata["polls"] == 0


async def remote_state(url: str, task_id: str) -> str:
    """The task's state as the remote agent itself reports it (GetTask, A2A 1.0)."""
    import aiohttp

    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
    async with (
        aiohttp.ClientSession() as http,
        http.post(url, json=body, headers={"A2A-Version": "1.0"}) as r,
    ):
        return (await r.json())["result"]["status"]["state"]


@pytest.mark.parametrize("streaming", [False, True], ids=["polling", "streaming"])
async def test_cancelling_the_run_cancels_the_remote_task_and_its_work_stops(
    streaming: bool,
) -> None:
    from toolnexus import ToolContext

    work = a2a_peer.Work()
    async with peer(streaming=streaming, work=work) as url:
        paint = (await agent_tools(agent(url, poll_every=60_000)))[0]
        signal = asyncio.Event()
        call = asyncio.create_task(paint.execute({"task": "slow"}, ToolContext(signal=signal)))
        await asyncio.wait_for(work.started.wait(), 10)
        signal.set()  # the submit, a poll pause or the stream in flight: torn down
        result = await asyncio.wait_for(call, 10)
        tid = result.metadata["taskId"]
        await asyncio.wait_for(work.stopped.wait(), 10)
        assert work.running == set()
        assert await remote_state(url, tid) == "TASK_STATE_CANCELED"
    assert (result.output, result.is_error) == (f"A2A task {tid} canceled", True)
    assert result.metadata["state"] == "canceled"
    assert tid


def slow_painter_brain(request: RecordedRequest) -> Reply:
    return tool_calls(call("painter_paint", {"task": "slow"}))


async def test_an_interrupted_agent_cancels_the_remote_task_of_its_call() -> None:
    from toolnexus.agents import AgentDef, AgentRuntime, Handle

    work = a2a_peer.Work()
    async with peer(work=work) as url, ScriptedModel(default=slow_painter_brain) as model:
        tools = await agent_tools(agent(url, poll_every=60_000))
        registry = {"boss": AgentDef(name="boss", model="m", tools=tools)}
        llm = {"base_url": model.openai_base_url, "api_key": "k"}
        async with AgentRuntime(registry=registry, llm=llm) as rt:
            h = rt.spawn(rt.root, "boss")
            assert isinstance(h, Handle)
            rt.wake(h, "paint slowly")
            await asyncio.wait_for(work.started.wait(), 10)
            (tid,) = work.running
            await asyncio.wait_for(rt.interrupt(h), 10)  # the call's task is cancelled
            await asyncio.wait_for(work.stopped.wait(), 10)
            assert await remote_state(url, tid) == "TASK_STATE_CANCELED"
            assert rt.inspect(h).state == "idle"


def painter_brain(request: RecordedRequest) -> Reply:
    outputs = [m for m in request.body["messages"] if m.get("role") == "tool"]
    if not outputs:
        return tool_calls(call("painter_paint", {"task": "ask me for a color"}))
    return text(f"Done: {outputs[-1]['content']}")


async def test_an_input_required_remote_is_answered_inline_by_wait_for() -> None:
    asked: list[Request] = []

    async def wait_for(request: Request) -> Answer:
        asked.append(request)
        return Answer(id=request.id, ok=True, data={"text": "blue"})

    async with peer() as url, ScriptedModel(default=painter_brain) as model:
        tk = await create_toolkit(agents=[agent(url, poll_every=10)], builtins=False)
        async with create_client(
            base_url=model.openai_base_url, model="m", api_key="k", wait_for=wait_for
        ) as client:
            result = await client.run("paint the fence", tk)
    assert result.status == "done"
    assert result.text == "Done: painted blue"
    assert [(r.kind, r.prompt) for r in asked] == [("input", "Which color?")]
    assert asked[0].data["a2a"]["state"] == "input-required"


async def test_auth_required_becomes_an_authorization_request() -> None:
    async with peer() as url:
        paint = (await agent_tools(agent(url, poll_every=10)))[0]
        result = await paint.execute({"task": "auth me"}, None)
    request = result.metadata["pending"]
    assert (request.kind, request.prompt) == ("authorization", "Log in first")


async def test_the_durable_answer_survives_the_remote_restarting_between_question_and_follow_up(
    tmp_path: Path,
) -> None:
    port = free_port()
    store = f"sqlite:///{tmp_path / 'state.db'}"
    async with ScriptedModel(default=painter_brain) as model:
        async with peer_process(tmp_path / "peer", port) as url:
            tk = await create_toolkit(agents=[agent(url, poll_every=10)], builtins=False)
            async with create_client(
                base_url=model.openai_base_url, model="m", api_key="k", store=store
            ) as client:
                halted = await client.run("paint the fence", tk)
            assert halted.status == "pending"
            assert halted.pending is not None
            remote = halted.pending.data["a2a"]
            assert remote["taskId"]
            assert remote["contextId"]
        # the remote agent's process is gone; a new one serves the same tasks on the same port
        async with peer_process(tmp_path / "peer", port) as url:
            tk = await create_toolkit(agents=[agent(url, poll_every=10)], builtins=False)
            async with create_client(
                base_url=model.openai_base_url, model="m", api_key="k", store=store
            ) as client:
                answer = Answer(id=halted.pending.id, ok=True, data={"text": "green"})
                resumed = await client.resume(tk, answer)
    assert resumed.status == "done"
    assert resumed.text == "Done: painted green"
    assert len(model.requests) == 2  # resumed with the answer, not replayed


async def test_our_served_agent_asks_back_through_another_toolnexus(tmp_path: Path) -> None:
    """toolnexus → toolnexus over A2A 1.0: the served run's approval becomes the caller's
    Request (schema and prompt kept); the caller's answer resumes the served run."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))
    from a2a_support import brain, ledger_lines, refund_tool

    ledger = tmp_path / "ledger.jsonl"
    async with ScriptedModel(default=brain) as inner_model:
        inner_tk = await create_toolkit(
            extra_tools=[refund_tool(ledger, schema=True)], builtins=False
        )
        async with create_client(
            base_url=inner_model.openai_base_url, model="m", api_key="k"
        ) as inner:
            served = await inner_tk.serve(
                "127.0.0.1:0", client=inner, a2a={"name": "refunds", "skills": None}
            )
            async with served:
                card = json.loads(await _get(served.url + "/.well-known/agent-card.json"))
                card["skills"] = [{"id": "refund", "name": "refund", "description": "refunds"}]
                async with _card_host(card) as card_url:
                    tools = await agent_tools(agent(card_url, poll_every=10))
                    assert [t.name for t in tools] == ["refunds_refund"]
                    asked = await tools[0].execute({"task": "refund 42"}, None)
                    request = asked.metadata["pending"]
                    assert request.kind == "input"
                    assert request.prompt == "Refund order #42?"
                    assert request.data["schema"]["required"] == ["approved"]
                    from toolnexus import ToolContext

                    reply = Answer(id=request.id, ok=True, data={"approved": True})
                    done = await tools[0].execute(
                        {"task": "refund 42"}, ToolContext(answer=reply, request=request)
                    )
    assert done.output == "Result: refunded #42"
    assert ledger_lines(ledger) == [{"ok": True, "data": {"approved": True}}]


async def _get(url: str) -> str:
    import aiohttp

    async with aiohttp.ClientSession() as http, http.get(url) as r:
        return await r.text()


@asynccontextmanager
async def _card_host(card: dict[str, Any]) -> AsyncIterator[str]:
    async def serve_card(request: HttpRequest) -> Response:
        return JSONResponse(card)

    app = Starlette(routes=[Route("/.well-known/agent-card.json", serve_card)])
    handle = await start(app, "127.0.0.1:0")
    try:
        yield handle.url + "/.well-known/agent-card.json"
    finally:
        await handle.stop()


async def test_a_legacy_card_uses_the_reference_wire_and_falls_back_to_0_3() -> None:
    async with peer() as url:
        legacy = {
            "name": "painter",
            "url": url,
            "protocolVersion": "0.3.0",
            "capabilities": {"streaming": False},
            "skills": [{"id": "paint", "name": "paint", "description": "Paint"}],
        }
        async with _card_host(legacy) as card_url:
            paint = (await agent_tools(agent(card_url, poll_every=10)))[0]
            result = await paint.execute({"task": "a wall"}, None)
    assert (result.output, result.is_error) == ("echo: a wall", False)


# -- bad peers --------------------------------------------------------------------------------


@asynccontextmanager
async def fake_agent(
    handler: Any, card: dict[str, Any] | str | None = None
) -> AsyncIterator[ServeHandle]:
    async def card_route(request: HttpRequest) -> Response:
        if isinstance(card, str):
            return PlainTextResponse(card)
        body = card or {"name": "fake", "url": str(request.base_url), "skills": [{"id": "go"}]}
        return JSONResponse(body)

    app = Starlette(
        routes=[
            Route("/.well-known/agent-card.json", card_route),
            Route("/", handler, methods=["POST"]),
        ]
    )
    handle = await start(app, "127.0.0.1:0")
    try:
        yield handle
    finally:
        await handle.stop()


async def nothing(request: HttpRequest) -> Response:
    return PlainTextResponse("no")


async def test_a_card_that_is_not_json_or_lacks_skills_is_a_clear_error() -> None:
    async with fake_agent(nothing, card="<html>hi</html>") as h:
        with pytest.raises(RuntimeError, match="is not JSON"):
            await agent_tools(agent(h.url))
    async with fake_agent(nothing, card={"name": "x"}) as h:
        with pytest.raises(RuntimeError, match="lacks a skills list"):
            await agent_tools(agent(h.url))
    async with fake_agent(nothing) as h:
        with pytest.raises(RuntimeError, match=r"^HTTP 404: "):
            await agent_tools(agent(h.url + "/missing.json"))


async def test_a_failing_agent_is_isolated_in_create_toolkit_but_add_agent_raises(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async with fake_agent(nothing, card="garbage") as h, peer() as good:
        tk = await create_toolkit(agents=[h.url, agent(good)], builtins=False)
        assert tk.names() == ["painter_paint"]
        assert f'[toolnexus] A2A agent "{h.url}" failed: ' in capsys.readouterr().err
        with pytest.raises(RuntimeError, match="is not JSON"):
            await tk.add_agent(h.url)
        again = await tk.add_agent(good)  # first wins: nothing new, no error
        assert again.names() == ["painter_paint"]


async def test_a_remote_that_returns_garbage_is_an_error_result() -> None:
    async def garbage(request: HttpRequest) -> Response:
        return PlainTextResponse("}}} not json")

    async with fake_agent(garbage) as h:
        tool = (await agent_tools(agent(h.url)))[0]
        result = await tool.execute({"task": "x"}, None)
    assert result.is_error
    assert result.output.startswith("the remote agent returned garbage")
    assert set(result.metadata or {}) == {"agent", "taskId", "state", "polls", "ms"}


async def test_a_json_rpc_error_gives_its_message_and_a_5xx_its_status() -> None:
    async def refuse(request: HttpRequest) -> Response:
        return JSONResponse(
            {"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": "busy"}}
        )

    async with fake_agent(refuse) as h:
        tool = (await agent_tools(agent(h.url)))[0]
        assert (await tool.execute({"task": "x"}, None)).output == "busy"

    async def down(request: HttpRequest) -> Response:
        return PlainTextResponse("overloaded", status_code=503)

    async with fake_agent(down) as h:
        tool = (await agent_tools(agent(h.url)))[0]
        assert (await tool.execute({"task": "x"}, None)).output == "HTTP 503: overloaded"


async def test_a_stream_dropped_mid_way_is_followed_by_polling() -> None:
    calls: list[str] = []

    async def handler(request: HttpRequest) -> Response:
        body = await request.json()
        calls.append(body["method"])
        if body["method"] == "SendStreamingMessage":

            async def events() -> AsyncIterator[bytes]:
                task = {
                    "id": "t1",
                    "contextId": "c1",
                    "kind": "task",
                    "status": {"state": "working"},
                }
                envelope = {"jsonrpc": "2.0", "id": 1, "result": task}
                yield f"data: {json.dumps(envelope)}\n\n".encode()
                raise ConnectionResetError("dropped")  # the server goes away mid-stream

            return StreamingResponse(events(), media_type="text/event-stream")
        done = {
            "id": "t1",
            "status": {"state": "completed"},
            "artifacts": [
                {"artifactId": "a", "parts": [{"kind": "text", "text": "late but done"}]}
            ],
        }
        return JSONResponse({"jsonrpc": "2.0", "id": 1, "result": done})

    card = {
        "name": "flaky",
        "url": "",
        "capabilities": {"streaming": True},
        "skills": [{"id": "go"}],
    }
    async with fake_agent(handler, card=card) as h:
        tool = (await agent_tools(agent(h.url, poll_every=10)))[0]
        result = await tool.execute({"task": "x"}, None)
    assert (result.output, result.is_error) == ("late but done", False)
    assert calls[0] == "SendStreamingMessage"
    assert "GetTask" in calls


def test_the_agents_config_block() -> None:
    block = {
        "a": {"card": "http://a/card.json", "pollEvery": 50, "timeout": 1000},
        "b": {"card": "http://b/card.json", "disabled": True, "enabled": True},
        "c": {"card": "http://c/card.json", "enabled": False},
        "d": None,
        "e": {"card": 7},
    }
    found = parse_agents_config(block)
    assert [(a.card, a.poll_every, a.timeout) for a in found] == [("http://a/card.json", 50, 1000)]
    assert parse_agents_config("nope") == []


async def test_the_agents_block_of_a_config_file_adds_tools(tmp_path: Path) -> None:
    async with peer() as url:
        config = tmp_path / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {}, "agents": {"p": {"card": url}}}))
        tk = await create_toolkit(str(config), builtins=False)
        assert tk.names() == ["painter_paint"]
