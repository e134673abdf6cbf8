"""A2A trace spans: a CLIENT span per outbound A2A call, a SERVER span per inbound request, the
trace context carried over HTTP (``traceparent``) so a remote call is one trace — real uvicorn,
the a2a-sdk client, the OpenTelemetry SDK's in-memory exporter."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb
from a2a_support import ref_message, rpc, send, user_message
from opentelemetry.sdk import trace as trace_sdk
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from toolnexus import create_client, create_toolkit
from toolnexus.agents import agent as team_agent
from toolnexus.testing import RecordedRequest, Reply, ScriptedModel, call, text, tool_calls
from toolnexus.tools.a2a import agent as remote_agent

PARENT_TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT_SPAN = "b7ad6b7169203331"


@pytest.fixture
def spans() -> tuple[Any, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = trace_sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@asynccontextmanager
async def sdk_client_with(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        config = ClientConfig(streaming=False, httpx_client=http)
        client = await ClientFactory(config).create_from_url(url)
        try:
            yield client
        finally:
            await client.close()


@asynccontextmanager
async def card_of(url: str, streaming: bool) -> AsyncIterator[str]:
    """The served card, re-hosted with ``capabilities.streaming`` as given (without it the
    caller submits, then polls GetTask)."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from toolnexus.serve.server import start

    async with httpx.AsyncClient() as http:
        card = (await http.get(url + "/.well-known/agent-card.json")).json()
    card["capabilities"]["streaming"] = streaming

    async def serve_card(request: Any) -> Any:
        return JSONResponse(card)

    handle = await start(Starlette(routes=[Route("/card.json", serve_card)]), "127.0.0.1:0")
    try:
        yield handle.url + "/card.json"
    finally:
        await handle.stop()


def of_kind(exporter: InMemorySpanExporter, kind: SpanKind) -> list[Any]:
    return [s for s in exporter.get_finished_spans() if s.kind == kind]


def caller_brain(request: RecordedRequest) -> Reply:
    messages = request.body["messages"]
    if messages[-1].get("role") == "tool":
        return text(f"they said: {messages[-1]['content']}")
    return tool_calls(call("helper_helper", {"task": "say hi"}, id="c1"))


@pytest.mark.parametrize("streaming", [True, False])
async def test_a_remote_call_is_one_trace_from_the_caller_to_the_served_run(
    spans: Any, streaming: bool
) -> None:
    provider, exporter = spans
    helper = team_agent("helper", does="says hello")
    async with (
        ScriptedModel(default=caller_brain) as caller_model,
        ScriptedModel(default=text("hi there")) as served_model,
    ):
        llm = {
            "base_url": served_model.openai_base_url,
            "model": "m",
            "api_key": "k",
            "tracing": provider,
        }
        async with await helper.serve("127.0.0.1:0", llm=llm) as served:
            async with card_of(served.url, streaming) as card_url:
                remote = remote_agent(card_url, poll_every=5)
                toolkit = await create_toolkit(agents=[remote], builtins=False)
            client = create_client(
                base_url=caller_model.openai_base_url, model="m", api_key="k", tracing=provider
            )
            async with client:
                result = await client.run("ask the helper", toolkit)
    assert result.text == "they said: hi there"
    finished = exporter.get_finished_spans()
    by_id = {s.context.span_id: s for s in finished}
    [tool] = [s for s in finished if s.name == "execute_tool helper_helper"]
    outbound = of_kind(exporter, SpanKind.CLIENT)
    outbound = [s for s in outbound if s.name.startswith("a2a ")]
    inbound = of_kind(exporter, SpanKind.SERVER)
    assert outbound, [s.name for s in finished]
    assert len(inbound) == len(outbound)  # every call was traced at both ends
    trace_id = tool.context.trace_id
    for span in outbound:
        assert span.parent.span_id == tool.context.span_id
        assert span.attributes["rpc.system"] == "jsonrpc"
        assert span.attributes["server.address"] == "127.0.0.1"
    for span in inbound:
        assert span.context.trace_id == trace_id  # one trace across the wire
        assert by_id[span.parent.span_id].kind == SpanKind.CLIENT
        assert span.name == f"a2a {span.attributes['rpc.method']}"
    [served_run] = [s for s in finished if s.name.startswith("invoke_agent helper")]
    assert served_run.context.trace_id == trace_id
    assert by_id[served_run.parent.span_id].kind == SpanKind.SERVER
    methods = {s.attributes["rpc.method"] for s in inbound}
    assert methods == ({"SendStreamingMessage"} if streaming else {"SendMessage", "GetTask"})


async def test_the_a2a_sdk_clients_traceparent_parents_the_server_span(spans: Any) -> None:
    provider, exporter = spans
    async with ScriptedModel(default=text("hello")) as model:
        tk = await create_toolkit(builtins=False)
        client = create_client(base_url=model.openai_base_url, model="m", api_key="k")
        served = await tk.serve("127.0.0.1:0", client=client, a2a=True, tracing=provider)
        async with client, served:
            header = {"traceparent": f"00-{PARENT_TRACE}-{PARENT_SPAN}-01"}
            async with sdk_client_with(served.url, header) as a2a:
                task = await send(a2a, user_message("hi"))
    assert task.status.state == pb.TASK_STATE_COMPLETED
    [span] = of_kind(exporter, SpanKind.SERVER)
    assert span.name == "a2a SendMessage"
    assert span.context.trace_id == int(PARENT_TRACE, 16)
    assert span.parent.span_id == int(PARENT_SPAN, 16)
    assert span.parent.is_remote
    assert span.status.status_code == StatusCode.UNSET


async def test_a_client_that_traces_gives_its_tracer_to_the_server_spans(spans: Any) -> None:
    provider, exporter = spans
    async with ScriptedModel(default=text("hello")) as model:
        tk = await create_toolkit(builtins=False)
        client = create_client(
            base_url=model.openai_base_url, model="m", api_key="k", tracing=provider
        )
        async with client, await tk.serve("127.0.0.1:0", client=client, a2a=True) as served:
            async with httpx.AsyncClient(timeout=30) as http:
                done = await rpc(http, served.url, "SendMessage", ref_message("hi"))
    assert done["result"]["status"]["state"] == "completed"
    [server] = of_kind(exporter, SpanKind.SERVER)
    [run] = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
    assert server.parent is None  # no traceparent sent: the request starts the trace
    assert run.parent.span_id == server.context.span_id


async def test_bad_trace_headers_and_rpc_errors(spans: Any) -> None:
    provider, exporter = spans
    async with ScriptedModel(default=text("hello")) as model:
        tk = await create_toolkit(builtins=False)
        client = create_client(base_url=model.openai_base_url, model="m", api_key="k")
        served = await tk.serve("127.0.0.1:0", client=client, a2a=True, tracing=provider)
        async with client, served, httpx.AsyncClient(timeout=30) as http:
            for bad in ("garbage", f"00-{'0' * 32}-{PARENT_SPAN}-01", "00-xyz-abc-01", "x" * 4000):
                done = await rpc(
                    http, served.url, "SendMessage", ref_message("hi"), headers={"traceparent": bad}
                )
                assert done["result"]["status"]["state"] == "completed", bad
            missing = await rpc(http, served.url, "NoSuchMethod", {})
            unknown = await rpc(http, served.url, "GetTask", {"id": "nope"})
            parse = await http.post(
                served.url + "/", content=b"{not json", headers={"content-type": "application/json"}
            )
    assert missing["error"]["code"] == -32601
    assert unknown["error"]["code"] == -32001
    assert parse.json()["error"]["code"] == -32700
    server = of_kind(exporter, SpanKind.SERVER)
    assert len(server) == 7
    for span in server[:4]:
        assert span.parent is None  # a malformed header starts a new trace
        assert span.context.trace_id != int(PARENT_TRACE, 16)
    failed = {s.name: s for s in server[4:]}
    assert failed["a2a NoSuchMethod"].attributes["rpc.jsonrpc.error_code"] == -32601
    assert failed["a2a GetTask"].attributes["rpc.jsonrpc.error_code"] == -32001
    assert failed["a2a"].attributes["rpc.jsonrpc.error_code"] == -32700
    for span in server[4:]:
        assert span.status.status_code == StatusCode.ERROR


async def test_tracing_false_serves_without_spans(spans: Any) -> None:
    provider, exporter = spans
    async with ScriptedModel(default=text("hello")) as model:
        tk = await create_toolkit(builtins=False)
        client = create_client(
            base_url=model.openai_base_url, model="m", api_key="k", tracing=False
        )
        async with client, await tk.serve("127.0.0.1:0", client=client, a2a=True) as served:
            async with httpx.AsyncClient(timeout=30) as http:
                done = await rpc(http, served.url, "SendMessage", ref_message("hi"))
    assert done["result"]["status"]["state"] == "completed"
    assert exporter.get_finished_spans() == ()
    del provider


def painter_brain(request: RecordedRequest) -> Reply:
    messages = request.body["messages"]
    if messages[-1].get("role") == "tool":
        return text(f"painter: {messages[-1]['content']}")
    return tool_calls(call("painter_paint", {"task": "a fence"}, id="p1"))


@pytest.mark.parametrize("streaming", [False, True])
async def test_the_a2a_sdk_server_receives_the_calls_traceparent(
    spans: Any, streaming: bool
) -> None:
    """Outbound to a real a2a-sdk server: each request carries the CLIENT span's context."""
    import socket
    import sys
    from pathlib import Path

    from toolnexus.serve.server import start

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "helpers"))
    import a2a_peer

    provider, exporter = spans
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    inner = a2a_peer.app(url, streaming=streaming)
    seen: list[str | None] = []

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            found = dict(scope["headers"]).get(b"traceparent")
            seen.append(found.decode() if found else None)
        await inner(scope, receive, send)

    served = await start(recording, f"127.0.0.1:{port}")
    async with served, ScriptedModel(default=painter_brain) as model:
        toolkit = await create_toolkit(agents=[remote_agent(url, poll_every=5)], builtins=False)
        client = create_client(
            base_url=model.openai_base_url, model="m", api_key="k", tracing=provider
        )
        async with client:
            result = await client.run("paint", toolkit)
    assert result.text == "painter: echo: a fence"
    outbound = [s for s in of_kind(exporter, SpanKind.CLIENT) if s.name.startswith("a2a ")]
    assert len(seen) == len(outbound) >= 1
    sent = {header.rsplit("-", 1)[0] for header in seen if header is not None}
    assert sent == {f"00-{s.context.trace_id:032x}-{s.context.span_id:016x}" for s in outbound}
    assert None not in seen
