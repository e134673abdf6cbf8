"""Metrics: fold the client's ``on_metric`` events into a Prometheus text registry.

The client emits three semantic events (CONTRACT §8 "Observability")::

    {"event": "llm", "model", "status": "ok" | "error", "ms", "prompt_tokens", "completion_tokens"}
    {"event": "tool", "tool", "source", "is_error", "ms", "pending"?}
    {"event": "run", "model", "turns", "tool_calls", "total_tokens", "ms", "error"?}

`Metrics` accumulates them and `Metrics.render` writes the Prometheus text exposition that every
toolnexus port renders byte for byte: a fixed metric order, ``# HELP``/``# TYPE`` lines, series
sorted by their rendered label string, fixed duration buckets and numbers formatted like
JavaScript's ``String(number)`` (`js_number`).

Recording is on the hot path, so it only validates the event and updates a dict; escaping,
sorting and formatting all happen in `render`. Malformed events are ignored, never raised on.

`run_event` builds the ``run`` event for every runner — a client's run/ask/stream and each
engine run of an agent's turn — with its error text masked by the runner's redactor.

`Metrics` is one `MetricSink`. An OpenTelemetry exporter will be another sink fed the same
events, so the client fans each event out to its sinks and nothing here has to change.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, Protocol, TypeAlias, runtime_checkable

__all__ = [
    "DURATION_BUCKETS",
    "MetricEvent",
    "MetricSink",
    "Metrics",
    "OnMetric",
    "RunTally",
    "deliver",
    "emitter",
    "js_number",
    "run_event",
]

log = logging.getLogger("toolnexus")

MetricEvent: TypeAlias = dict[str, Any]
"""One ``on_metric`` event: a plain dict keyed by ``event`` (``llm`` | ``tool`` | ``run``)."""

OnMetric: TypeAlias = Callable[[MetricEvent], object]
"""The host's ``on_metric`` callback."""

DURATION_BUCKETS: Final = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Upper bounds (seconds) of the duration histograms; ``+Inf`` is implied."""

_LE: Final = ("0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60", "+Inf")

_SOURCES: Final = frozenset(
    {"mcp", "skill", "native", "http", "custom", "builtin", "a2a", "agent", "relay"}
)
_LLM_STATUSES: Final = frozenset({"ok", "error"})
_MAX_FLOAT: Final = sys.float_info.max
_NUMBERS: Final = (int, float)
_EXACT_INT: Final = 2**53


@runtime_checkable
class MetricSink(Protocol):
    """Anything that consumes ``on_metric`` events (the Prometheus registry, later OTel)."""

    def record(self, event: MetricEvent) -> None:
        """Take one event; never raise on a malformed one."""
        ...


class RunTally(Protocol):
    """What a ``run`` event counts (a `toolnexus.loop.state.RunState`)."""

    @property
    def turns(self) -> int: ...

    @property
    def records(self) -> Sequence[object]: ...

    @property
    def usage(self) -> Mapping[str, Any]: ...

    @property
    def sent_model(self) -> str: ...


def run_event(
    run: RunTally,
    *,
    model: str,
    started: float,
    error: BaseException | None,
    mask: Callable[[str], str],
) -> MetricEvent:
    """The ``run`` event of one run (CONTRACT §8, COMPAT §7), on every exit path.

    ``model`` is the configured one, used until a model call was sent (then the last sent
    model counts); ``started`` is the run's `time.perf_counter` start; ``error`` the
    exception that ended it, if any, as ``str(error)`` passed through ``mask`` (the runner's
    `toolnexus.redaction.Redactor.text`), so no secret reaches a metric sink.
    """
    event: MetricEvent = {
        "event": "run",
        "model": run.sent_model or model,
        "turns": run.turns,
        "tool_calls": len(run.records),
        "total_tokens": run.usage.get("total_tokens", 0),
        "ms": (time.perf_counter() - started) * 1000,
    }
    if error is not None:
        event["error"] = mask(str(error))
    return event


def deliver(on_metric: OnMetric, event: MetricEvent, tasks: set[asyncio.Future[Any]]) -> None:
    """Hand ``event`` to the host's ``on_metric``: an awaitable it returns runs as a task kept
    in ``tasks`` until it is done; whatever it raises is logged, never raised into the run."""
    try:
        value = on_metric(event)
        if value is not None and inspect.isawaitable(value):
            task = asyncio.ensure_future(value)
            tasks.add(task)
            task.add_done_callback(tasks.discard)
    except Exception:
        log.warning("toolnexus: on_metric raised", exc_info=True)


def emitter(
    metrics: Metrics, on_metric: OnMetric | None, tasks: set[asyncio.Future[Any]]
) -> Callable[[MetricEvent], None]:
    """A client's ``emit``: record the event in ``metrics``, then `deliver` it to ``on_metric``.

    A closure over the three, not a bound method of the client: the engine keeps it, and a
    client whose engine held the client itself would be a reference cycle, left for the cyclic
    garbage collector with everything hanging off it (its transport, sockets, store) each time
    a short-lived client is dropped.
    """
    record = metrics.record
    if on_metric is None:
        return record

    def emit(event: MetricEvent) -> None:
        record(event)
        deliver(on_metric, event, tasks)

    return emit


class _Histogram:
    """Per-bucket (non-cumulative) counts, a running sum and a count."""

    __slots__ = ("count", "counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(DURATION_BUCKETS) + 1)
        self.total = 0.0
        self.count = 0


class Metrics:
    """The Prometheus registry behind ``client.metrics()``.

    Example:
        >>> m = Metrics()
        >>> m.record({"event": "run", "model": "m", "turns": 1, "tool_calls": 0,
        ...           "total_tokens": 3, "ms": 5, "error": "boom"})
        >>> m.render().splitlines()[-1]
        'toolnexus_run_errors_total{model="m"} 1'

    The registry is meant to be fed from one event loop; `render` works on a snapshot.
    """

    __slots__ = (
        "_llm_duration",
        "_llm_requests",
        "_run_errors",
        "_tokens",
        "_tool_calls",
        "_tool_duration",
    )

    def __init__(self) -> None:
        self._llm_requests: dict[tuple[str, str], int] = {}
        self._tokens: dict[str, int | float] = {}
        self._llm_duration: dict[str, _Histogram] = {}
        self._tool_calls: dict[tuple[str, str, bool, bool], int] = {}
        self._tool_duration: dict[str, _Histogram] = {}
        self._run_errors: dict[str, int] = {}

    def record(self, event: MetricEvent) -> None:
        """Fold one ``on_metric`` event in; a malformed or unknown event is ignored.

        Args:
            event: an ``llm``, ``tool`` or ``run`` event dict as the client emits it.
        """
        if not isinstance(event, dict):  # pyright: ignore[reportUnnecessaryIsInstance]
            return
        kind = event.get("event")
        if kind == "llm":
            self._record_llm(event)
        elif kind == "tool":
            self._record_tool(event)
        elif kind == "run":
            model = event.get("model")
            error = event.get("error")
            if isinstance(model, str) and isinstance(error, str) and error:
                self._run_errors[model] = self._run_errors.get(model, 0) + 1

    def _record_llm(self, event: MetricEvent) -> None:
        model = event.get("model")
        status = event.get("status")
        seconds = _seconds(event.get("ms"))
        if not isinstance(model, str) or seconds is None:
            return
        if not isinstance(status, str) or status not in _LLM_STATUSES:
            return
        if status == "ok":
            prompt = _amount(event.get("prompt_tokens"))
            completion = _amount(event.get("completion_tokens"))
            if prompt is None or completion is None:
                return
            tokens = self._tokens
            tokens["prompt"] = tokens.get("prompt", 0) + prompt
            tokens["completion"] = tokens.get("completion", 0) + completion
        key = (model, status)
        self._llm_requests[key] = self._llm_requests.get(key, 0) + 1
        _observe(self._llm_duration, model, seconds)

    def _record_tool(self, event: MetricEvent) -> None:
        tool = event.get("tool")
        is_error = event.get("is_error")
        pending = event.get("pending", False)
        seconds = _seconds(event.get("ms"))
        if not isinstance(tool, str) or seconds is None:
            return
        if not isinstance(is_error, bool) or not isinstance(pending, bool):
            return
        source = event.get("source")
        if not isinstance(source, str) or source not in _SOURCES:
            source = "custom"
        key = (tool, source, is_error, pending)
        self._tool_calls[key] = self._tool_calls.get(key, 0) + 1
        _observe(self._tool_duration, tool, seconds)

    def render(self) -> str:
        """The Prometheus text exposition, byte-identical to the other toolnexus ports.

        Returns:
            Every metric's ``# HELP``/``# TYPE`` lines in the fixed order, each followed by its
            series sorted by rendered label string; the text ends with a newline.
        """
        lines: list[str] = []
        _counter(
            lines,
            "toolnexus_llm_requests_total",
            "Total LLM requests.",
            (
                (_labels(("model", model), ("status", status)), v)
                for (model, status), v in list(self._llm_requests.items())
            ),
        )
        _counter(
            lines,
            "toolnexus_llm_tokens_total",
            "Total tokens, by type.",
            ((_labels(("type", t)), v) for t, v in list(self._tokens.items())),
        )
        _histogram(
            lines,
            "toolnexus_llm_request_duration_seconds",
            "LLM request duration in seconds.",
            "model",
            self._llm_duration,
        )
        _counter(
            lines,
            "toolnexus_tool_calls_total",
            "Total tool calls.",
            (
                (
                    _labels(
                        ("tool", tool),
                        ("source", source),
                        ("is_error", _bool(is_error)),
                        ("pending", _bool(pending)),
                    ),
                    v,
                )
                for (tool, source, is_error, pending), v in list(self._tool_calls.items())
            ),
        )
        _histogram(
            lines,
            "toolnexus_tool_duration_seconds",
            "Tool execution duration in seconds.",
            "tool",
            self._tool_duration,
        )
        _counter(
            lines,
            "toolnexus_run_errors_total",
            "Total run errors.",
            ((_labels(("model", m)), v) for m, v in list(self._run_errors.items())),
        )
        return "\n".join(lines) + "\n"


def _observe(table: dict[str, _Histogram], key: str, seconds: float) -> None:
    hist = table.get(key)
    if hist is None:
        hist = table[key] = _Histogram()
    # The first bound >= seconds is the bucket (Prometheus `le` is inclusive); past the last
    # bound lands in the +Inf slot.
    hist.counts[bisect_left(DURATION_BUCKETS, seconds)] += 1
    hist.total += seconds
    hist.count += 1


def _seconds(ms: object) -> float | None:
    """``ms / 1000`` for a finite, non-negative number of milliseconds, else None."""
    if type(ms) is float:  # what the client emits: the general checks below are moot
        seconds = ms / 1000
    elif isinstance(ms, bool) or not isinstance(ms, _NUMBERS):
        return None
    else:
        try:
            seconds = float(ms) / 1000
        except OverflowError:
            return None
    return seconds if 0.0 <= seconds <= _MAX_FLOAT else None


def _amount(value: object) -> int | float | None:
    """A finite, non-negative token count, else None."""
    if type(value) is int:  # what the client emits
        return value if value >= 0 else None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and 0.0 <= value <= _MAX_FLOAT:
        return value
    return None


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(*pairs: tuple[str, str]) -> str:
    return ",".join(f'{name}="{_escape(value)}"' for name, value in pairs)


def _header(lines: list[str], name: str, help_text: str, kind: str) -> None:
    lines.append(f"# HELP {name} {help_text}")
    lines.append(f"# TYPE {name} {kind}")


def _counter(
    lines: list[str], name: str, help_text: str, series: Iterable[tuple[str, int | float]]
) -> None:
    _header(lines, name, help_text, "counter")
    for labels, value in sorted(series, key=lambda item: item[0]):
        lines.append(f"{name}{{{labels}}} {js_number(value)}")


def _histogram(
    lines: list[str], name: str, help_text: str, label: str, table: dict[str, _Histogram]
) -> None:
    _header(lines, name, help_text, "histogram")
    rendered = sorted(
        ((_labels((label, key)), hist) for key, hist in list(table.items())),
        key=lambda item: item[0],
    )
    for labels, hist in rendered:
        cumulative = 0
        for le, count in zip(_LE, hist.counts, strict=True):
            cumulative += count
            lines.append(f'{name}_bucket{{{labels},le="{le}"}} {cumulative}')
        lines.append(f"{name}_sum{{{labels}}} {js_number(hist.total)}")
        lines.append(f"{name}_count{{{labels}}} {hist.count}")


def js_number(value: float) -> str:
    """Format a number exactly as JavaScript's ``String(number)`` does.

    Integers print without a fraction, other values in their shortest round-trip form, and
    exponent notation is used below ``1e-6`` and from ``1e21`` on (ECMA-262 Number::toString).

    Example:
        >>> [js_number(x) for x in (3, 2.0, 0.1 + 0.2, 1e-7, 1e21, float("inf"))]
        ['3', '2', '0.30000000000000004', '1e-7', '1e+21', 'Infinity']
    """
    if isinstance(value, int):
        if -_EXACT_INT <= value <= _EXACT_INT:
            return str(value)
        try:
            value = float(value)
        except OverflowError:
            return "Infinity" if value > 0 else "-Infinity"
    if value != value:
        return "NaN"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    magnitude = -value if value < 0 else value
    if magnitude > _MAX_FLOAT:
        return sign + "Infinity"
    digits, point = _shortest_digits(magnitude)
    return sign + _layout(digits, point)


def _shortest_digits(magnitude: float) -> tuple[str, int]:
    """Shortest round-trip significant digits ``d`` and point ``n``: value = 0.d x 10**n."""
    mantissa, _, exponent = repr(magnitude).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exponent) if exponent else 0)
    significant = digits.lstrip("0")
    point -= len(digits) - len(significant)
    return significant.rstrip("0"), point


def _layout(digits: str, point: int) -> str:
    count = len(digits)
    if count <= point <= 21:
        return digits + "0" * (point - count)
    if 0 < point <= 21:
        return f"{digits[:point]}.{digits[point:]}"
    if -6 < point <= 0:
        return f"0.{'0' * -point}{digits}"
    exponent = point - 1
    mark = "+" if exponent >= 0 else "-"
    head = digits if count == 1 else f"{digits[0]}.{digits[1:]}"
    return f"{head}e{mark}{abs(exponent)}"
