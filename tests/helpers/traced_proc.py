"""A traced process: halt a run on a SQLite store, or resume it with an answer.

    python traced_proc.py halt   <base_url> <db> <out.json>
    python traced_proc.py resume <base_url> <db> <out.json>
    python traced_proc.py late   <base_url> <db> <out.json>

``late``: a client on the *global* tracer (the default), made before any provider is set, runs
once; then the global provider is set and the same client runs again.

Each mode exports its finished spans (OpenTelemetry SDK, in-memory exporter) to ``out.json``
with the run's status, so the parent can check that both processes' spans form one trace.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolnexus import Answer, SqliteStore, ToolContext, ToolResult, create_client, define_tool
from toolnexus import pending as suspend


async def ship(target: str, ctx: ToolContext | None = None) -> ToolResult:
    """Ship to a target (needs approval)."""
    if ctx is None or ctx.answer is None:
        return suspend(kind="approval", prompt=f"Ship to {target}?", id="req-ship")
    return ToolResult(f"shipped to {target}")


def _span(span: Any) -> dict[str, Any]:
    return {
        "name": span.name,
        "trace_id": f"{span.context.trace_id:032x}",
        "span_id": f"{span.context.span_id:016x}",
        "parent": f"{span.parent.span_id:016x}" if span.parent is not None else None,
        "links": [f"{link.context.span_id:016x}" for link in span.links],
        "start": span.start_time,
        "attributes": dict(span.attributes),
        "status": span.attributes.get("toolnexus.run.status"),
    }


async def late(base_url: str, out: str) -> None:
    from opentelemetry import trace

    exporter = InMemorySpanExporter()
    async with create_client(base_url=base_url, model="m-1", api_key="sk-test") as client:
        before = await client.run("first")
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        after = await client.run("second")
    report = {
        "status": [before.status, after.status],
        "spans": [_span(s) for s in exporter.get_finished_spans()],
    }
    Path(out).write_text(json.dumps(report))


async def main(mode: str, base_url: str, db: str, out: str) -> None:
    if mode == "late":
        await late(base_url, out)
        return
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    store = SqliteStore(db)
    tool = define_tool(ship)
    async with (
        store,
        create_client(
            base_url=base_url, model="m-1", api_key="sk-test", store=store, tracing=provider
        ) as client,
    ):
        if mode == "halt":
            result = await client.run("ship it", [tool])
        else:
            await client.answer("req-ship", Answer("req-ship", True), answered_by="ana")
            result = await client.resume([tool], "req-ship")
    report = {"status": result.status, "spans": [_span(s) for s in exporter.get_finished_spans()]}
    Path(out).write_text(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
