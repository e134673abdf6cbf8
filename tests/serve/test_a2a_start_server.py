"""``start_a2a_server`` (COMPAT §11): A2A over a host's own ``run_task``, with MCP co-mounted,
against the a2a-sdk client and the mcp SDK client; and the §1/§11 names at their module paths."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types import a2a_pb2 as pb
from a2a_support import ref_message, rpc, sdk_client, send, user_message
from serve_support import client as mcp_client

from toolnexus import Request, UsageError, create_client, define_tool
from toolnexus.serve import start_a2a_server
from toolnexus.testing import ScriptedModel, text


@dataclass
class Skill:
    name: str
    description: str


@dataclass
class Ran:
    status: str
    text: str
    pending: Request | None = None


@define_tool
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return str(a + b)


async def test_run_task_with_a_real_client_serves_the_a2a_sdk_client() -> None:
    async with ScriptedModel(default=lambda r: text(f"heard {len(r.body['messages'])}")) as m:
        client = create_client(base_url=m.openai_base_url, model="m", api_key="k")
        seen: list[tuple[str, str]] = []

        async def run_task(task: str, context_id: str) -> Any:
            seen.append((task, context_id))
            return await client.ask(task, None, id=context_id)

        ended: list[dict[str, Any]] = []
        served = await start_a2a_server(
            "127.0.0.1:0",
            {"name": "helper", "skills": ["greet"]},
            [Skill("greet", "says hello"), Skill("hidden", "not listed")],
            run_task,
            on_task=ended.append,
        )
        async with served, client:
            assert served.url.startswith("http://127.0.0.1:")
            async with httpx.AsyncClient() as http:
                card = (await http.get(served.url + "/.well-known/agent-card.json")).json()
            assert card["name"] == "helper"
            assert [s["id"] for s in card["skills"]] == ["greet"]
            async with sdk_client(served.url) as a2a:
                first = await send(a2a, user_message("hello"))
                second = await send(a2a, user_message("again", context_id=first.context_id))
    assert first.status.state == pb.TASK_STATE_COMPLETED
    assert first.artifacts[0].parts[0].text == "heard 1"
    assert second.artifacts[0].parts[0].text == "heard 3"  # the context's transcript went on
    assert seen == [("hello", first.context_id), ("again", first.context_id)]
    assert [e["state"] for e in ended] == ["completed", "completed"]


async def test_a_pending_run_task_asks_and_the_follow_up_is_its_next_turn_once() -> None:
    calls: list[tuple[str, str]] = []
    gate = asyncio.Event()

    async def run_task(task: str, context_id: str) -> Ran:
        calls.append((task, context_id))
        if task == "refund":
            request = Request(id="req-1", kind="approval", prompt="Refund #42?")
            return Ran("pending", "", request)
        await gate.wait()
        return Ran("done", f"got {task}")

    async with await start_a2a_server("127.0.0.1:0", True, [], run_task) as served:
        async with httpx.AsyncClient(timeout=30) as http:
            asked = (await rpc(http, served.url, "SendMessage", ref_message("refund")))["result"]
            assert asked["status"]["state"] == "input-required"
            assert asked["status"]["message"]["parts"][0]["text"] == "Refund #42?"
            follow = ref_message("yes", task_id=asked["id"], blocking=False)
            first = await rpc(http, served.url, "SendMessage", follow)
            racing = await rpc(http, served.url, "SendMessage", follow)
            gate.set()
            body = {"jsonrpc": "2.0", "id": 3, "method": "tasks/resubscribe"}
            body["params"] = {"id": asked["id"]}
            async with http.stream("POST", served.url + "/", json=body) as r:
                _ = [line async for line in r.aiter_lines()]  # ends when the task settles
            done = (await rpc(http, served.url, "GetTask", {"id": asked["id"]}))["result"]
    assert first["result"]["id"] == asked["id"]
    assert racing["error"]["code"] == -32602
    assert done["status"]["state"] == "completed"
    assert done["artifacts"][0]["parts"][0]["text"] == "got yes"
    assert calls == [("refund", asked["contextId"]), ("yes", asked["contextId"])]


async def test_a_sync_run_task_that_raises_fails_its_task_and_the_server_goes_on() -> None:
    def run_task(task: str, context_id: str) -> Ran:
        if task == "boom":
            raise RuntimeError("kaboom")
        return Ran("done", task.upper())

    async with await start_a2a_server("127.0.0.1:0", {}, [], run_task) as served:
        async with httpx.AsyncClient(timeout=30) as http:
            failed = (await rpc(http, served.url, "SendMessage", ref_message("boom")))["result"]
            fine = (await rpc(http, served.url, "SendMessage", ref_message("ok")))["result"]
    assert failed["status"]["state"] == "failed"
    assert failed["status"]["message"]["parts"][0]["text"] == "kaboom"
    assert fine["artifacts"][0]["parts"][0]["text"] == "OK"


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
async def test_mcp_tools_are_co_mounted_at_slash_mcp(era: str) -> None:
    calls: list[dict[str, Any]] = []
    served = await start_a2a_server(
        "127.0.0.1:0",
        {"name": "both"},
        [],
        lambda task, ctx: Ran("done", task),
        mcp={"name": "calc"},
        mcp_tools=[add],
        on_call=calls.append,
    )
    async with served:
        async with mcp_client(served.url, era) as c:
            listed = [t.name for t in (await c.list_tools()).tools]
            added = await c.call_tool("add", {"a": 2, "b": 3})
        async with httpx.AsyncClient() as http:
            card = await http.get(served.url + "/.well-known/agent-card.json")
    assert listed == ["add"]
    assert added.content[0].text == "5.0"  # pyright: ignore[reportAttributeAccessIssue]
    assert [(c["name"], c["is_error"]) for c in calls] == [("add", False)]
    assert card.json()["name"] == "both"


async def test_without_the_a2a_profile_only_mcp_is_served() -> None:
    served = await start_a2a_server(
        "127.0.0.1:0", None, [], lambda t, c: Ran("done", t), mcp=True, mcp_tools=[add]
    )
    async with served, httpx.AsyncClient() as http:
        card = await http.get(served.url + "/.well-known/agent-card.json")
        post = await http.post(served.url + "/", json={"jsonrpc": "2.0", "id": 1, "method": "x"})
    assert (card.status_code, post.status_code) == (404, 404)


async def test_run_task_runs_on_the_loop_given() -> None:
    import threading

    other = asyncio.new_event_loop()
    thread = threading.Thread(target=other.run_forever, daemon=True)
    thread.start()
    ran_on: list[asyncio.AbstractEventLoop] = []

    async def run_task(task: str, context_id: str) -> Ran:
        ran_on.append(asyncio.get_running_loop())
        return Ran("done", f"on the other loop: {task}")

    try:
        async with await start_a2a_server("127.0.0.1:0", True, [], run_task, loop=other) as s:
            async with httpx.AsyncClient(timeout=30) as http:
                done = (await rpc(http, s.url, "SendMessage", ref_message("hi")))["result"]
    finally:
        other.call_soon_threadsafe(other.stop)
        thread.join(10)
        other.close()
    assert done["artifacts"][0]["parts"][0]["text"] == "on the other loop: hi"
    assert ran_on == [other]


def test_serve_mcp_http_request_serves_one_stateless_request() -> None:
    from toolnexus.mcp_serve import build_mcp_server, serve_mcp_http_request

    headers = [(b"Content-Type", b"application/json"), (b"Accept", b"application/json")]
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "host", "version": "1"},
        },
    }
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
    call["params"] = {"name": "add", "arguments": {"a": 1, "b": 2}}
    versioned = [*headers, (b"mcp-protocol-version", b"2025-06-18")]

    async def go() -> list[tuple[int, list[tuple[bytes, bytes]], bytes]]:
        server = build_mcp_server([add], {"name": "calc"})
        return [
            await serve_mcp_http_request(
                server, "POST", "/mcp", headers, json.dumps(init).encode()
            ),
            await serve_mcp_http_request(
                server, "POST", "/mcp?x=1", versioned, json.dumps(call).encode()
            ),
            await serve_mcp_http_request(server, "POST", "/mcp", headers, b"{not json"),
        ]

    (s1, h1, b1), (s2, _, b2), (s3, _, b3) = asyncio.run(go())
    assert (s1, dict(h1)[b"content-type"]) == (200, b"application/json")  # JSON, not SSE
    assert json.loads(b1)["result"]["serverInfo"]["name"] == "calc"
    assert (s2, json.loads(b2)["result"]["content"][0]["text"]) == (200, "3.0")
    assert s3 == 400
    assert json.loads(b3)["error"]["code"] == -32700


async def test_bad_arguments_are_usage_errors() -> None:
    other = asyncio.new_event_loop()
    try:
        with pytest.raises(UsageError, match="running event loop"):
            await start_a2a_server("127.0.0.1:0", True, [], lambda t, c: None, loop=other)
    finally:
        other.close()
    with pytest.raises(UsageError, match="run_task must be callable"):
        await start_a2a_server("127.0.0.1:0", True, [], "nope")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="addr"):
        await start_a2a_server("nowhere", True, [], lambda t, c: None)


async def test_a_run_task_result_that_is_garbage_fails_the_task() -> None:
    results: dict[str, Any] = {
        "a": Ran("pending", "", None),
        "b": {"status": "pending", "pending": "x"},
        "c": None,
        "d": {"status": "done", "text": "fine as a dict"},
        "e": {"status": "pending", "pending": {"id": "r1", "kind": "input", "prompt": "Name?"}},
    }

    async def run_task(task: str, context_id: str) -> Any:
        return results[task]

    async with await start_a2a_server("127.0.0.1:0", True, [], run_task) as served:
        async with httpx.AsyncClient(timeout=30) as http:
            got = {
                k: (await rpc(http, served.url, "SendMessage", ref_message(k)))["result"]
                for k in results
            }
    shown = {
        k: t["status"].get("message", {}).get("parts", [{}])[0].get("text") for k, t in got.items()
    }
    assert {k: t["status"]["state"] for k, t in got.items()} == {
        "a": "failed",
        "b": "failed",
        "c": "failed",
        "d": "completed",
        "e": "input-required",
    }
    assert shown["a"] == "run_task returned pending without a Request"
    assert shown["b"] == "run_task returned a pending that is not a Request"
    assert shown["c"] == "run_task returned None"
    assert shown["e"] == "Name?"
    assert got["d"]["artifacts"][0]["parts"][0]["text"] == "fine as a dict"


# -- the names ---------------------------------------------------------------------------------


def test_the_reference_names_are_at_their_module_paths(tmp_path: Path) -> None:
    import toolnexus
    import toolnexus.a2a as ref_a2a
    import toolnexus.serve as serve
    from toolnexus.tools import a2a as ours

    for name in ("Agent", "agent", "agent_tools", "parse_agents_config", "is_enabled"):
        assert getattr(ref_a2a, name) is getattr(ours, name)
    assert (ref_a2a.DEFAULT_TIMEOUT, ref_a2a.DEFAULT_POLL_EVERY) == (300000, 1000)
    assert {"completed", "failed", "canceled"} <= ref_a2a.TERMINAL
    assert (serve.CARD_PATH, serve.PROTOCOL_VERSION, serve.DEFAULT_VERSION) == (
        "/.well-known/agent-card.json",
        "0.3.0",
        "0.1.0",
    )
    for name in ("A2AConfig", "OnTask", "resolve_store", "start_a2a_server", "build_agent_card"):
        assert getattr(toolnexus, name) is getattr(serve, name)
    for name in ("MCPServeConfig", "OnCall", "build_mcp_server", "exposed_mcp_tools"):
        assert getattr(toolnexus, name) is getattr(serve, name)
    assert toolnexus.AgentConfig is ours.AgentConfig
    card = serve.build_agent_card({}, [], "http://x")
    assert (card["version"], card["protocolVersion"]) == ("0.1.0", "0.3.0")
    with pytest.raises(ValueError, match='Unknown A2A store: "s3:x"'):
        serve.resolve_store("s3:x")
    stored = serve.resolve_store(f"file:{tmp_path / 'tasks'}")
    assert isinstance(stored, serve.FileTaskStore)


def test_is_enabled_and_the_agents_block() -> None:
    from toolnexus.a2a import is_enabled, parse_agents_config

    assert is_enabled({"card": "x"})
    assert not is_enabled({"card": "x", "enabled": False})
    assert not is_enabled({"card": "x", "disabled": True, "enabled": True})
    block = {"a": {"card": "http://a", "pollEvery": 5}, "b": {"card": "http://b", "disabled": True}}
    assert [(a.card, a.poll_every) for a in parse_agents_config(block)] == [("http://a", 5)]
    assert json.dumps(block)  # the block is plain JSON data
