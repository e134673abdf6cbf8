"""The Prometheus registry: byte-exact rendering, and events that must never break it."""

from __future__ import annotations

from typing import Any

import pytest

from toolnexus.observability import DURATION_BUCKETS, Metrics, MetricSink, js_number

EMPTY = (
    "# HELP toolnexus_llm_requests_total Total LLM requests.\n"
    "# TYPE toolnexus_llm_requests_total counter\n"
    "# HELP toolnexus_llm_tokens_total Total tokens, by type.\n"
    "# TYPE toolnexus_llm_tokens_total counter\n"
    "# HELP toolnexus_llm_request_duration_seconds LLM request duration in seconds.\n"
    "# TYPE toolnexus_llm_request_duration_seconds histogram\n"
    "# HELP toolnexus_tool_calls_total Total tool calls.\n"
    "# TYPE toolnexus_tool_calls_total counter\n"
    "# HELP toolnexus_tool_duration_seconds Tool execution duration in seconds.\n"
    "# TYPE toolnexus_tool_duration_seconds histogram\n"
    "# HELP toolnexus_run_errors_total Total run errors.\n"
    "# TYPE toolnexus_run_errors_total counter\n"
)

SCENARIO: list[dict[str, Any]] = [
    {
        "event": "llm",
        "model": "gpt-4o",
        "status": "ok",
        "ms": 120,
        "prompt_tokens": 30,
        "completion_tokens": 12,
    },
    {"event": "tool", "tool": "weather", "source": "http", "is_error": False, "ms": 40},
    {"event": "tool", "tool": "weather", "source": "http", "is_error": True, "ms": 260},
    {
        "event": "llm",
        "model": "gpt-4o",
        "status": "ok",
        "ms": 850,
        "prompt_tokens": 45,
        "completion_tokens": 7,
    },
    {
        "event": "tool",
        "tool": "approve",
        "source": "native",
        "is_error": False,
        "ms": 2,
        "pending": True,
    },
    {
        "event": "llm",
        "model": "gpt-4o",
        "status": "error",
        "ms": 3000,
        "prompt_tokens": 0,
        "completion_tokens": 0,
    },
    {
        "event": "run",
        "model": "gpt-4o",
        "turns": 3,
        "tool_calls": 3,
        "total_tokens": 94,
        "ms": 4300,
        "error": "ProviderError: HTTP 503",
    },
    {
        "event": "llm",
        "model": "claude-3-haiku",
        "status": "ok",
        "ms": 50,
        "prompt_tokens": 10,
        "completion_tokens": 5,
    },
    {"event": "tool", "tool": "fs_read", "source": "mystery", "is_error": False, "ms": 0.5},
    {
        "event": "run",
        "model": "claude-3-haiku",
        "turns": 1,
        "tool_calls": 1,
        "total_tokens": 15,
        "ms": 60,
    },
]

SCENARIO_TEXT = """\
# HELP toolnexus_llm_requests_total Total LLM requests.
# TYPE toolnexus_llm_requests_total counter
toolnexus_llm_requests_total{model="claude-3-haiku",status="ok"} 1
toolnexus_llm_requests_total{model="gpt-4o",status="error"} 1
toolnexus_llm_requests_total{model="gpt-4o",status="ok"} 2
# HELP toolnexus_llm_tokens_total Total tokens, by type.
# TYPE toolnexus_llm_tokens_total counter
toolnexus_llm_tokens_total{type="completion"} 24
toolnexus_llm_tokens_total{type="prompt"} 85
# HELP toolnexus_llm_request_duration_seconds LLM request duration in seconds.
# TYPE toolnexus_llm_request_duration_seconds histogram
toolnexus_llm_request_duration_seconds_bucket{model="claude-3-haiku",le="0.05"} 1
toolnexus_llm_request_duration_seconds_bucket{model="claude-3-haiku",le="0.1"} 1
toolnexus_llm_request_duration_seconds_bucket{model="claude-3-haiku",le="0.25"} 1
toolnexus_llm_request_duration_seconds_bucket{model="claude-3-haiku",le="0.5"} 1
toolnexus_llm_request_duration_seconds_bucket{model="claude-3-haiku",le="1"} 1
toolnexus_llm_request_duration_seconds_bucket{model="claude-3-haiku",le="2.5"} 1
toolnexus_llm_request_duration_seconds_bucket{model="claude-3-haiku",le="5"} 1
toolnexus_llm_request_duration_seconds_bucket{model="claude-3-haiku",le="10"} 1
toolnexus_llm_request_duration_seconds_bucket{model="claude-3-haiku",le="30"} 1
toolnexus_llm_request_duration_seconds_bucket{model="claude-3-haiku",le="60"} 1
toolnexus_llm_request_duration_seconds_bucket{model="claude-3-haiku",le="+Inf"} 1
toolnexus_llm_request_duration_seconds_sum{model="claude-3-haiku"} 0.05
toolnexus_llm_request_duration_seconds_count{model="claude-3-haiku"} 1
toolnexus_llm_request_duration_seconds_bucket{model="gpt-4o",le="0.05"} 0
toolnexus_llm_request_duration_seconds_bucket{model="gpt-4o",le="0.1"} 0
toolnexus_llm_request_duration_seconds_bucket{model="gpt-4o",le="0.25"} 1
toolnexus_llm_request_duration_seconds_bucket{model="gpt-4o",le="0.5"} 1
toolnexus_llm_request_duration_seconds_bucket{model="gpt-4o",le="1"} 2
toolnexus_llm_request_duration_seconds_bucket{model="gpt-4o",le="2.5"} 2
toolnexus_llm_request_duration_seconds_bucket{model="gpt-4o",le="5"} 3
toolnexus_llm_request_duration_seconds_bucket{model="gpt-4o",le="10"} 3
toolnexus_llm_request_duration_seconds_bucket{model="gpt-4o",le="30"} 3
toolnexus_llm_request_duration_seconds_bucket{model="gpt-4o",le="60"} 3
toolnexus_llm_request_duration_seconds_bucket{model="gpt-4o",le="+Inf"} 3
toolnexus_llm_request_duration_seconds_sum{model="gpt-4o"} 3.9699999999999998
toolnexus_llm_request_duration_seconds_count{model="gpt-4o"} 3
# HELP toolnexus_tool_calls_total Total tool calls.
# TYPE toolnexus_tool_calls_total counter
toolnexus_tool_calls_total{tool="approve",source="native",is_error="false",pending="true"} 1
toolnexus_tool_calls_total{tool="fs_read",source="custom",is_error="false",pending="false"} 1
toolnexus_tool_calls_total{tool="weather",source="http",is_error="false",pending="false"} 1
toolnexus_tool_calls_total{tool="weather",source="http",is_error="true",pending="false"} 1
# HELP toolnexus_tool_duration_seconds Tool execution duration in seconds.
# TYPE toolnexus_tool_duration_seconds histogram
toolnexus_tool_duration_seconds_bucket{tool="approve",le="0.05"} 1
toolnexus_tool_duration_seconds_bucket{tool="approve",le="0.1"} 1
toolnexus_tool_duration_seconds_bucket{tool="approve",le="0.25"} 1
toolnexus_tool_duration_seconds_bucket{tool="approve",le="0.5"} 1
toolnexus_tool_duration_seconds_bucket{tool="approve",le="1"} 1
toolnexus_tool_duration_seconds_bucket{tool="approve",le="2.5"} 1
toolnexus_tool_duration_seconds_bucket{tool="approve",le="5"} 1
toolnexus_tool_duration_seconds_bucket{tool="approve",le="10"} 1
toolnexus_tool_duration_seconds_bucket{tool="approve",le="30"} 1
toolnexus_tool_duration_seconds_bucket{tool="approve",le="60"} 1
toolnexus_tool_duration_seconds_bucket{tool="approve",le="+Inf"} 1
toolnexus_tool_duration_seconds_sum{tool="approve"} 0.002
toolnexus_tool_duration_seconds_count{tool="approve"} 1
toolnexus_tool_duration_seconds_bucket{tool="fs_read",le="0.05"} 1
toolnexus_tool_duration_seconds_bucket{tool="fs_read",le="0.1"} 1
toolnexus_tool_duration_seconds_bucket{tool="fs_read",le="0.25"} 1
toolnexus_tool_duration_seconds_bucket{tool="fs_read",le="0.5"} 1
toolnexus_tool_duration_seconds_bucket{tool="fs_read",le="1"} 1
toolnexus_tool_duration_seconds_bucket{tool="fs_read",le="2.5"} 1
toolnexus_tool_duration_seconds_bucket{tool="fs_read",le="5"} 1
toolnexus_tool_duration_seconds_bucket{tool="fs_read",le="10"} 1
toolnexus_tool_duration_seconds_bucket{tool="fs_read",le="30"} 1
toolnexus_tool_duration_seconds_bucket{tool="fs_read",le="60"} 1
toolnexus_tool_duration_seconds_bucket{tool="fs_read",le="+Inf"} 1
toolnexus_tool_duration_seconds_sum{tool="fs_read"} 0.0005
toolnexus_tool_duration_seconds_count{tool="fs_read"} 1
toolnexus_tool_duration_seconds_bucket{tool="weather",le="0.05"} 1
toolnexus_tool_duration_seconds_bucket{tool="weather",le="0.1"} 1
toolnexus_tool_duration_seconds_bucket{tool="weather",le="0.25"} 1
toolnexus_tool_duration_seconds_bucket{tool="weather",le="0.5"} 2
toolnexus_tool_duration_seconds_bucket{tool="weather",le="1"} 2
toolnexus_tool_duration_seconds_bucket{tool="weather",le="2.5"} 2
toolnexus_tool_duration_seconds_bucket{tool="weather",le="5"} 2
toolnexus_tool_duration_seconds_bucket{tool="weather",le="10"} 2
toolnexus_tool_duration_seconds_bucket{tool="weather",le="30"} 2
toolnexus_tool_duration_seconds_bucket{tool="weather",le="60"} 2
toolnexus_tool_duration_seconds_bucket{tool="weather",le="+Inf"} 2
toolnexus_tool_duration_seconds_sum{tool="weather"} 0.3
toolnexus_tool_duration_seconds_count{tool="weather"} 2
# HELP toolnexus_run_errors_total Total run errors.
# TYPE toolnexus_run_errors_total counter
toolnexus_run_errors_total{model="gpt-4o"} 1
"""


def _rendered(*events: dict[str, Any]) -> str:
    metrics = Metrics()
    for event in events:
        metrics.record(event)
    return metrics.render()


def _samples(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("#")]


def _tool(**overrides: Any) -> dict[str, Any]:
    return {"event": "tool", "tool": "t", "source": "native", "is_error": False, "ms": 1} | (
        overrides
    )


def _llm(**overrides: Any) -> dict[str, Any]:
    base = {
        "event": "llm",
        "model": "m",
        "status": "ok",
        "ms": 1,
        "prompt_tokens": 1,
        "completion_tokens": 1,
    }
    return base | overrides


def test_a_realistic_session_renders_byte_for_byte() -> None:
    assert _rendered(*SCENARIO) == SCENARIO_TEXT


def test_an_empty_registry_renders_only_help_and_type_lines() -> None:
    assert Metrics().render() == EMPTY


def test_render_twice_gives_the_same_text() -> None:
    metrics = Metrics()
    for event in SCENARIO:
        metrics.record(event)
    assert metrics.render() == metrics.render()


def test_label_values_escape_backslash_quote_and_newline() -> None:
    text = _rendered(_tool(tool='a\\b"c\nd'))
    assert 'toolnexus_tool_calls_total{tool="a\\\\b\\"c\\nd",' in text
    assert 'toolnexus_tool_duration_seconds_sum{tool="a\\\\b\\"c\\nd"} 0.001' in text


def test_series_are_sorted_by_their_rendered_label_string() -> None:
    # Raw, `b"` would sort before `b-`; escaped to `b\"`, its `\` (0x5c) sorts after `-`.
    names = ['b"', "b-", "B", "a", "ab"]
    text = _rendered(*(_tool(tool=name) for name in names))
    series = [line for line in _samples(text) if line.startswith("toolnexus_tool_calls_total")]
    assert [line.split(",")[0] for line in series] == [
        'toolnexus_tool_calls_total{tool="B"',
        'toolnexus_tool_calls_total{tool="a"',
        'toolnexus_tool_calls_total{tool="ab"',
        'toolnexus_tool_calls_total{tool="b-"',
        'toolnexus_tool_calls_total{tool="b\\""',
    ]


def test_recording_order_does_not_change_the_text() -> None:
    first = _rendered(_tool(tool="x"), _tool(tool="y"), _llm(model="b"), _llm(model="a"))
    second = _rendered(_llm(model="a"), _tool(tool="y"), _llm(model="b"), _tool(tool="x"))
    assert first == second


@pytest.mark.parametrize(
    ("ms", "first_bucket"),
    [
        (0, "0.05"),
        (50, "0.05"),
        (50.001, "0.1"),
        (100, "0.1"),
        (1000, "1"),
        (2500, "2.5"),
        (60_000, "60"),
        (60_001, "+Inf"),
        (10**12, "+Inf"),
    ],
)
def test_a_duration_lands_in_the_first_bucket_whose_bound_it_does_not_exceed(
    ms: float, first_bucket: str
) -> None:
    lines = _samples(_rendered(_tool(ms=ms)))
    buckets = [line for line in lines if "_bucket{" in line]
    les = [line.split('le="')[1].split('"')[0] for line in buckets]
    counts = [line.rsplit(" ", 1)[1] for line in buckets]
    start = les.index(first_bucket)
    assert counts == ["0"] * start + ["1"] * (len(les) - start)


def test_buckets_are_cumulative_and_inf_equals_the_count() -> None:
    text = _rendered(*(_tool(ms=ms) for ms in (10, 70, 70, 400, 90_000)))
    counts = [
        int(line.rsplit(" ", 1)[1])
        for line in _samples(text)
        if "tool_duration_seconds_bucket" in line
    ]
    assert counts == [1, 3, 3, 4, 4, 4, 4, 4, 4, 4, 5]
    assert 'toolnexus_tool_duration_seconds_count{tool="t"} 5' in text


def test_le_labels_are_the_pinned_literals() -> None:
    text = _rendered(_tool())
    les = [line.split('le="')[1].split('"')[0] for line in _samples(text) if 'le="' in line]
    assert les == ["0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60", "+Inf"]
    assert [js_number(bound) for bound in DURATION_BUCKETS] == les[:-1]


def test_the_duration_sum_is_a_float_sum_of_ms_over_1000() -> None:
    text = _rendered(_tool(ms=100), _tool(ms=200))
    assert 'toolnexus_tool_duration_seconds_sum{tool="t"} 0.30000000000000004' in text


def test_tokens_count_only_on_ok_llm_events() -> None:
    text = _rendered(_llm(status="error", prompt_tokens=1000, completion_tokens=1000))
    assert "toolnexus_llm_tokens_total{" not in text
    assert 'toolnexus_llm_requests_total{model="m",status="error"} 1' in text


def test_an_error_llm_event_without_token_fields_still_counts() -> None:
    event = {"event": "llm", "model": "m", "status": "error", "ms": 5}
    assert 'toolnexus_llm_requests_total{model="m",status="error"} 1' in _rendered(event)


def test_an_ok_llm_event_with_zero_tokens_renders_both_token_series() -> None:
    text = _rendered(_llm(prompt_tokens=0, completion_tokens=0))
    assert 'toolnexus_llm_tokens_total{type="completion"} 0\n' in text
    assert 'toolnexus_llm_tokens_total{type="prompt"} 0\n' in text


def test_a_run_counts_as_an_error_only_with_a_non_empty_error_string() -> None:
    run = {"event": "run", "model": "m", "turns": 1, "tool_calls": 0, "total_tokens": 0, "ms": 1}
    text = _rendered(run, run | {"error": ""}, run | {"error": None}, run | {"error": "x"})
    assert _samples(text) == ['toolnexus_run_errors_total{model="m"} 1']


def test_pending_defaults_to_false_and_renders_as_true_when_set() -> None:
    text = _rendered(_tool(), _tool(pending=True))
    assert 'tool="t",source="native",is_error="false",pending="false"} 1' in text
    assert 'tool="t",source="native",is_error="false",pending="true"} 1' in text


@pytest.mark.parametrize("source", ["mystery", "", "MCP", None, 7])
def test_an_unknown_tool_source_is_labelled_custom(source: object) -> None:
    text = _rendered(_tool(source=source))
    assert 'source="custom"' in text


def test_an_event_without_a_source_is_labelled_custom() -> None:
    event = _tool()
    del event["source"]
    assert 'source="custom"' in _rendered(event)


@pytest.mark.parametrize(
    "source", ["mcp", "skill", "native", "http", "custom", "builtin", "a2a", "agent", "relay"]
)
def test_every_known_source_keeps_its_label(source: str) -> None:
    assert f'source="{source}"' in _rendered(_tool(source=source))


HOSTILE: list[object] = [
    None,
    "llm",
    42,
    ["event", "llm"],
    {},
    {"event": "metric"},
    {"event": ["llm"]},
    {"event": "llm"},
    _llm(model=None),
    _llm(model=3),
    _llm(status="timeout"),
    _llm(status=["ok"]),
    _llm(ms="12"),
    _llm(ms=None),
    _llm(ms=True),
    _llm(ms=float("nan")),
    _llm(ms=float("inf")),
    _llm(ms=-1),
    _llm(ms=10**400),
    _llm(prompt_tokens="3"),
    _llm(prompt_tokens=-3),
    _llm(completion_tokens=float("nan")),
    _llm(completion_tokens=True),
    {"event": "llm", "model": "m", "status": "ok", "ms": 3},
    _tool(tool=None),
    _tool(tool=b"bytes"),
    _tool(is_error="false"),
    _tool(is_error=0),
    _tool(pending="yes"),
    _tool(pending=None),
    _tool(ms=[1]),
    {"event": "tool", "tool": "t", "source": "native", "ms": 1},
    {"event": "run", "model": 5, "error": "boom"},
    {"event": "run", "error": "boom"},
    {"event": "run", "model": "m", "error": {"message": "boom"}},
]


@pytest.mark.parametrize("event", HOSTILE)
def test_a_malformed_event_is_ignored_without_raising(event: Any) -> None:
    metrics = Metrics()
    metrics.record(event)
    assert metrics.render() == EMPTY


def test_a_malformed_event_leaves_earlier_series_intact() -> None:
    metrics = Metrics()
    for event in SCENARIO:
        metrics.record(event)
    for event in HOSTILE:
        metrics.record(event)  # pyright: ignore[reportArgumentType]
    assert metrics.render() == SCENARIO_TEXT


def test_the_registry_is_a_metric_sink() -> None:
    assert isinstance(Metrics(), MetricSink)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (-0.0, "0"),
        (7, "7"),
        (2.0, "2"),
        (-2.5, "-2.5"),
        (0.1, "0.1"),
        (0.1 + 0.2, "0.30000000000000004"),
        (91.20500000000001, "91.20500000000001"),
        (0.000001, "0.000001"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (-1e-7, "-1e-7"),
        (123e-20, "1.23e-18"),
        (5e-324, "5e-324"),
        (1e20, "100000000000000000000"),
        (1.2345678901234568e20, "123456789012345680000"),
        (1e21, "1e+21"),
        (1.5e300, "1.5e+300"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (2**53, "9007199254740992"),
        (2**53 + 1, "9007199254740992"),
        (10**21, "1e+21"),
        (10**400, "Infinity"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
        (float("nan"), "NaN"),
    ],
)
def test_js_number_matches_javascript_string(value: float, text: str) -> None:
    assert js_number(value) == text
