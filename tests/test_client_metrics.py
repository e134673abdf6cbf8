"""``on_metric`` events and ``client.metrics()`` after real scripted runs (CONTRACT §8)."""

from __future__ import annotations

import asyncio
import re
import weakref
from collections.abc import Callable
from typing import Any

import pytest

from gc_support import collector_off
from toolnexus import Client, ProviderError, define_tool
from toolnexus.testing import ScriptedModel, call, http_error, text, tool_calls

ClientFor = Callable[..., Client]

LE = ("0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60", "+Inf")
LLM_KEYS = {"event", "model", "status", "ms", "prompt_tokens", "completion_tokens"}
TOOL_KEYS = {"event", "tool", "source", "is_error", "ms", "model"}  # COMPAT §7: + model
RUN_KEYS = {"event", "model", "turns", "tool_calls", "total_tokens", "ms"}

HEADERS = [
    ("toolnexus_llm_requests_total", "Total LLM requests.", "counter"),
    ("toolnexus_llm_tokens_total", "Total tokens, by type.", "counter"),
    ("toolnexus_llm_request_duration_seconds", "LLM request duration in seconds.", "histogram"),
    ("toolnexus_tool_calls_total", "Total tool calls.", "counter"),
    ("toolnexus_tool_duration_seconds", "Tool execution duration in seconds.", "histogram"),
    ("toolnexus_run_errors_total", "Total run errors.", "counter"),
]

_BUCKET = re.compile(r'^(?P<name>\w+)_bucket\{(?P<labels>.*),le="(?P<le>[^"]+)"\} (?P<n>\d+)$')
_SUM = re.compile(r"^(?P<name>\w+)_sum\{(?P<labels>.*)\} (?P<value>\d+(\.\d+)?(e-\d+)?)$")
_COUNT = re.compile(r"^(?P<name>\w+)_count\{(?P<labels>.*)\} (?P<n>\d+)$")


@define_tool
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


def header(name: str, help_text: str, kind: str) -> list[str]:
    return [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]


def histogram(name: str, labels: str, count: int) -> list[str]:
    """A histogram series with its timing-dependent numbers masked (see `mask`)."""
    return [f'{name}_bucket{{{labels},le="{le}"}} <n>' for le in LE] + [
        f"{name}_sum{{{labels}}} <sum>",
        f"{name}_count{{{labels}}} {count}",
    ]


def mask(rendered: str) -> str:
    """Mask bucket counts and sums, after checking each histogram is well-formed.

    Buckets must be cumulative (never decreasing) and end at ``+Inf`` with the count.
    """
    lines: list[str] = []
    buckets: list[int] = []
    for line in rendered.split("\n"):
        if bucket := _BUCKET.match(line):
            buckets.append(int(bucket["n"]))
            lines.append(line[: bucket.start("n")] + "<n>")
        elif total := _SUM.match(line):
            lines.append(line[: total.start("value")] + "<sum>")
        elif count := _COUNT.match(line):
            assert buckets == sorted(buckets), f"buckets not cumulative: {buckets}"
            assert buckets[-1] == int(count["n"]), f"+Inf {buckets[-1]} != count {count['n']}"
            assert len(buckets) == len(LE)
            buckets = []
            lines.append(line)
        else:
            lines.append(line)
    return "\n".join(lines)


async def test_metrics_before_any_activity_are_only_help_and_type_lines(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    async with client_for(scripted) as client:
        rendered = client.metrics()
    expected = [line for h in HEADERS for line in header(*h)]
    assert rendered == "\n".join(expected) + "\n"


async def test_metrics_render_byte_exact_for_a_scripted_scenario(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    # Run 1: one turn calls `add` and an unknown tool (7+3 tokens), the next answers (11+2).
    # Run 2: the provider answers 400, a run error.
    scripted.add(
        tool_calls(
            call("add", {"a": 1, "b": 2}, id="c1"),
            call("nope", {}, id="c2"),
            usage={"prompt_tokens": 7, "completion_tokens": 3},
        ),
        text("3", usage={"prompt_tokens": 11, "completion_tokens": 2}),
        http_error(400),
    )
    async with client_for(scripted, style) as client:
        await client.run("1+2", [add])
        with pytest.raises(ProviderError):
            await client.run("again")
        rendered = client.metrics()
    expected = [
        *header(*HEADERS[0]),
        'toolnexus_llm_requests_total{model="m-1",status="error"} 1',
        'toolnexus_llm_requests_total{model="m-1",status="ok"} 2',
        *header(*HEADERS[1]),
        'toolnexus_llm_tokens_total{type="completion"} 5',
        'toolnexus_llm_tokens_total{type="prompt"} 18',
        *header(*HEADERS[2]),
        *histogram("toolnexus_llm_request_duration_seconds", 'model="m-1"', 3),
        *header(*HEADERS[3]),
        'toolnexus_tool_calls_total{tool="add",source="native",is_error="false",pending="false"} 1',
        'toolnexus_tool_calls_total{tool="nope",source="custom",is_error="true",pending="false"} 1',
        *header(*HEADERS[4]),
        *histogram("toolnexus_tool_duration_seconds", 'tool="add"', 1),
        *histogram("toolnexus_tool_duration_seconds", 'tool="nope"', 1),
        *header(*HEADERS[5]),
        'toolnexus_run_errors_total{model="m-1"} 1',
    ]
    assert rendered.endswith("\n")
    assert mask(rendered) == "\n".join(expected) + "\n"


async def test_metric_labels_are_escaped(scripted: ScriptedModel, client_for: ClientFor) -> None:
    scripted.add(text("ok"))
    async with client_for(scripted, model='we"ird\\model\nname') as client:
        await client.run("hi")
        rendered = client.metrics()
    assert 'toolnexus_llm_requests_total{model="we\\"ird\\\\model\\nname",status="ok"} 1' in (
        rendered.split("\n")
    )


async def test_on_metric_gets_llm_tool_and_run_events_with_the_pinned_keys(
    scripted: ScriptedModel, client_for: ClientFor, style: str
) -> None:
    events: list[dict[str, Any]] = []
    scripted.add(
        tool_calls(
            call("add", {"a": 1, "b": 2}), usage={"prompt_tokens": 7, "completion_tokens": 3}
        ),
        text("3", usage={"prompt_tokens": 11, "completion_tokens": 2}),
    )
    async with client_for(scripted, style, on_metric=events.append) as client:
        await client.run("1+2", [add])
    assert [e["event"] for e in events] == ["llm", "tool", "llm", "run"]
    llm, tool, _, run = events
    assert set(llm) == LLM_KEYS
    assert (llm["model"], llm["status"], llm["prompt_tokens"], llm["completion_tokens"]) == (
        "m-1",
        "ok",
        7,
        3,
    )
    assert set(tool) == TOOL_KEYS
    assert (tool["tool"], tool["source"], tool["is_error"]) == ("add", "native", False)
    assert set(run) == RUN_KEYS
    assert (run["model"], run["turns"], run["tool_calls"], run["total_tokens"]) == ("m-1", 2, 1, 23)
    assert all(isinstance(e["ms"], float) and e["ms"] >= 0 for e in events)


async def test_a_failed_run_emits_an_llm_error_and_a_run_event_with_the_error(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    events: list[dict[str, Any]] = []
    scripted.add(http_error(400))
    async with client_for(scripted, on_metric=events.append) as client:
        with pytest.raises(ProviderError):
            await client.run("hi")
    assert [e["event"] for e in events] == ["llm", "run"]
    assert (events[0]["status"], events[0]["prompt_tokens"], events[0]["completion_tokens"]) == (
        "error",
        0,
        0,
    )
    assert set(events[1]) == RUN_KEYS | {"error"}
    assert events[1]["error"].startswith("HTTP 400")  # COMPAT §7: str(e)


async def test_a_retried_call_is_one_llm_event(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    events: list[dict[str, Any]] = []
    scripted.add(http_error(503), text("ok"))
    async with client_for(scripted, retry_base_ms=1, on_metric=events.append) as client:
        await client.run("hi")
    assert [(e["event"], e.get("status")) for e in events] == [("llm", "ok"), ("run", None)]


async def test_ask_and_stream_emit_a_run_event_too(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    events: list[dict[str, Any]] = []
    scripted.add(text("a"), text("b"))
    async with client_for(scripted, on_metric=events.append) as client:
        await client.ask("hi", id="x")
        [e async for e in client.stream("hi")]
    assert [e["event"] for e in events] == ["llm", "run", "llm", "run"]


async def test_an_async_on_metric_receives_the_events(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    received: list[str] = []
    run_seen = asyncio.Event()

    async def on_metric(event: dict[str, Any]) -> None:
        received.append(event["event"])
        if event["event"] == "run":
            run_seen.set()

    scripted.add(text("ok"))
    async with client_for(scripted, on_metric=on_metric) as client:
        await client.run("hi")
        async with asyncio.timeout(5):
            await run_seen.wait()
    assert received == ["llm", "run"]


async def test_a_raising_on_metric_never_breaks_the_run(
    scripted: ScriptedModel, client_for: ClientFor
) -> None:
    def on_metric(event: dict[str, Any]) -> None:
        raise RuntimeError("metrics backend down")

    scripted.add(tool_calls(call("add", {"a": 1, "b": 2})), text("3"))
    async with client_for(scripted, on_metric=on_metric) as client:
        result = await client.run("1+2", [add])
        rendered = client.metrics()
    assert result.text == "3"
    assert 'toolnexus_llm_requests_total{model="m-1",status="ok"} 2' in rendered.split("\n")


@pytest.mark.parametrize("with_sink", [False, True], ids=["no on_metric", "on_metric"])
async def test_a_client_dropped_after_a_run_is_freed_without_the_cycle_collector(
    scripted: ScriptedModel, client_for: ClientFor, with_sink: bool
) -> None:
    # The engine keeps the client's emit: a bound method of the client would make the pair a
    # reference cycle, freed (with the transport, the sockets and the store hanging off it)
    # only when the cyclic collector next runs. With the collector off, reference counting
    # alone must free the client once the last reference goes.
    events: list[str] = []

    def sink(event: dict[str, Any]) -> None:
        events.append(event["event"])

    options: dict[str, Any] = {"on_metric": sink} if with_sink else {}
    scripted.add(tool_calls(call("add", {"a": 1, "b": 2})), text("3"))
    with collector_off():
        client = client_for(scripted, **options)
        async with client:
            result = await client.run("1+2", [add])
        gone = weakref.ref(client)
        engine = weakref.ref(client._engine)  # pyright: ignore[reportPrivateUsage]
        del client
        assert gone() is None
        assert engine() is None
    assert result.text == "3"
    assert events == (["llm", "tool", "llm", "run"] if with_sink else [])
