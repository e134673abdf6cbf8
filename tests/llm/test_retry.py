"""Retry policy: Retry-After parsing, bounded retries, backoff with jitter, on_error."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest

from toolnexus.errors import (
    BadResponse,
    CallbackError,
    ProviderError,
    RunCancelled,
    RunTimeout,
    TransportError,
    UsageError,
)
from toolnexus.llm.retry import (
    ErrorInfo,
    ErrorTier,
    RetryPolicy,
    backoff_delay,
    call_with_retries,
    is_retryable,
    parse_retry_after,
)

# --- parse_retry_after ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("0", 0.0),
        ("1", 1.0),
        ("120", 120.0),
        ("2147483647", 2147483647.0),
        ("007", 7.0),
        (" 5 ", 5.0),
        ("\t9\t", 9.0),
    ],
)
def test_parse_retry_after_reads_delay_seconds_exactly(header: str, seconds: float) -> None:
    assert parse_retry_after(header) == seconds


def test_parse_retry_after_keeps_zero_as_a_real_delay() -> None:
    assert parse_retry_after("0") is not None


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "   ",
        "2147483648",
        "99999999999999999999999999",
        "1.5",
        "1.0",
        "-1",
        "+1",
        "Wed, 21 Oct 2015 07:28:00 GMT",
        "1e3",
        "0x10",
        "1 2",
        "5\n",
        "\u00a05",
        "５",
        "٣",
        "²",
        "5s",
    ],
)
def test_parse_retry_after_rejects_everything_else(header: str | None) -> None:
    assert parse_retry_after(header) is None


# --- helpers ----------------------------------------------------------------------------------


class Script:
    """An attempt function failing with the scripted errors, then returning ``"ok"``."""

    def __init__(self, *outcomes: BaseException | str) -> None:
        self.outcomes = list(outcomes)
        self.calls = 0

    async def __call__(self) -> str:
        outcome = self.outcomes[min(self.calls, len(self.outcomes) - 1)]
        self.calls += 1
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


class Sleeps:
    """A recording sleep that returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def policy(
    sleeps: Sleeps,
    *,
    retries: int = 2,
    base_ms: float = 500,
    on_error: Callable[[ErrorInfo], ErrorTier | Awaitable[ErrorTier]] | None = None,
    rand: Callable[[], float] = lambda: 0.5,
) -> RetryPolicy:
    return RetryPolicy(retries=retries, base_ms=base_ms, on_error=on_error, sleep=sleeps, rand=rand)


def http(status: int, retry_after: float | None = None) -> ProviderError:
    return ProviderError(f"HTTP {status}: x", status=status, body="x", retry_after=retry_after)


def cycle(values: Sequence[float]) -> Callable[[], float]:
    state = {"i": 0}

    def rand() -> float:
        value = values[state["i"] % len(values)]
        state["i"] += 1
        return value

    return rand


# --- retrying ---------------------------------------------------------------------------------


async def test_a_5xx_then_success_returns_the_success() -> None:
    sleeps = Sleeps()
    attempt = Script(http(503), "ok")
    assert await call_with_retries(attempt, policy(sleeps)) == "ok"
    assert attempt.calls == 2
    assert len(sleeps.delays) == 1


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
async def test_every_retryable_status_is_retried(status: int) -> None:
    attempt = Script(http(status), "ok")
    assert await call_with_retries(attempt, policy(Sleeps())) == "ok"
    assert attempt.calls == 2


async def test_a_transport_error_is_retried() -> None:
    attempt = Script(TransportError("reset"), "ok")
    assert await call_with_retries(attempt, policy(Sleeps())) == "ok"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422, 501, 505])
async def test_a_non_retryable_status_is_raised_at_once(status: int) -> None:
    sleeps = Sleeps()
    error = http(status)
    attempt = Script(error, "ok")
    with pytest.raises(ProviderError) as caught:
        await call_with_retries(attempt, policy(sleeps))
    assert caught.value is error
    assert attempt.calls == 1
    assert sleeps.delays == []


async def test_a_bad_response_is_not_retried_even_with_a_retryable_status() -> None:
    attempt = Script(BadResponse("garbage", status=503), "ok")
    with pytest.raises(BadResponse):
        await call_with_retries(attempt, policy(Sleeps()))
    assert attempt.calls == 1


async def test_exhausted_retries_raise_the_last_error_unchanged() -> None:
    errors = [http(500), http(502), http(503)]
    attempt = Script(*errors)
    with pytest.raises(ProviderError) as caught:
        await call_with_retries(attempt, policy(Sleeps(), retries=2))
    assert caught.value is errors[-1]
    assert attempt.calls == 3


async def test_zero_retries_make_exactly_one_attempt() -> None:
    attempt = Script(http(503), "ok")
    with pytest.raises(ProviderError):
        await call_with_retries(attempt, policy(Sleeps(), retries=0))
    assert attempt.calls == 1


# --- delays -----------------------------------------------------------------------------------


async def test_retry_after_is_waited_exactly() -> None:
    sleeps = Sleeps()
    await call_with_retries(Script(http(429, retry_after=7.0), "ok"), policy(sleeps))
    assert sleeps.delays == [7.0]


async def test_retry_after_zero_retries_immediately() -> None:
    sleeps = Sleeps()
    await call_with_retries(Script(http(429, retry_after=0.0), "ok"), policy(sleeps))
    assert sleeps.delays == [0.0]


async def test_a_negative_retry_after_from_a_custom_transport_falls_back_to_backoff() -> None:
    sleeps = Sleeps()
    await call_with_retries(Script(http(503, retry_after=-3.0), "ok"), policy(sleeps))
    assert sleeps.delays[0] > 0


async def test_backoff_doubles_with_each_attempt() -> None:
    sleeps = Sleeps()
    attempt = Script(http(500), http(500), http(500), "ok")
    await call_with_retries(attempt, policy(sleeps, retries=3, rand=lambda: 0.5))
    first, second, third = sleeps.delays
    assert math.isclose(second, 2 * first)
    assert math.isclose(third, 2 * second)


async def test_backoff_has_jitter() -> None:
    sleeps = Sleeps()
    attempt = Script(http(500), http(500), "ok")
    await call_with_retries(attempt, policy(sleeps, retries=2, rand=cycle([0.0, 0.999])))
    # Same attempt index, different draws ⇒ different delays; both within [½, 1] × base.
    low = backoff_delay(0, 500, 0.0, 60_000)
    high = backoff_delay(0, 500, 0.999, 60_000)
    assert low != high
    assert 0.25 <= low < high <= 0.5
    assert sleeps.delays[0] == low


async def test_backoff_is_never_zero_without_a_retry_after() -> None:
    sleeps = Sleeps()
    attempt = Script(http(500), http(500), "ok")
    await call_with_retries(attempt, policy(sleeps, base_ms=0, rand=lambda: 0.0))
    assert all(delay > 0 for delay in sleeps.delays)


@pytest.mark.parametrize("draw", [-5.0, 7.0, math.nan, math.inf])
def test_a_hostile_jitter_source_still_gives_a_bounded_positive_delay(draw: float) -> None:
    delay = backoff_delay(1, 500, draw, 60_000)
    assert 0.5 <= delay <= 1.0


def test_backoff_is_capped_and_never_overflows() -> None:
    assert backoff_delay(10_000, 500, 0.99, 60_000) <= 60.0


# --- on_error ---------------------------------------------------------------------------------


async def test_on_error_fail_surfaces_a_retryable_error_immediately() -> None:
    sleeps = Sleeps()
    attempt = Script(http(503), "ok")
    with pytest.raises(ProviderError):
        await call_with_retries(attempt, policy(sleeps, on_error=lambda info: "fail"))
    assert attempt.calls == 1
    assert sleeps.delays == []


async def test_on_error_retry_makes_a_400_retryable_but_stays_bounded() -> None:
    attempt = Script(http(400))
    with pytest.raises(ProviderError):
        await call_with_retries(attempt, policy(Sleeps(), retries=2, on_error=lambda i: "retry"))
    assert attempt.calls == 3


async def test_an_async_on_error_is_awaited() -> None:
    async def on_error(info: ErrorInfo) -> ErrorTier:
        return "fail"

    attempt = Script(http(503), "ok")
    with pytest.raises(ProviderError):
        await call_with_retries(attempt, policy(Sleeps(), on_error=on_error))
    assert attempt.calls == 1


async def test_on_error_sees_status_attempt_and_retryable() -> None:
    seen: list[ErrorInfo] = []

    def on_error(info: ErrorInfo) -> ErrorTier:
        seen.append(info)
        return "retry"

    first, second = http(503), http(404)
    await call_with_retries(Script(first, second, "ok"), policy(Sleeps(), on_error=on_error))
    assert seen == [
        {"error": first, "status": 503, "attempt": 0, "retryable": True},
        {"error": second, "status": 404, "attempt": 1, "retryable": False},
    ]


async def test_on_error_gets_no_status_for_a_network_failure() -> None:
    seen: list[ErrorInfo] = []

    def on_error(info: ErrorInfo) -> ErrorTier:
        seen.append(info)
        return "fail"

    with pytest.raises(TransportError):
        await call_with_retries(
            Script(TransportError("refused")), policy(Sleeps(), on_error=on_error)
        )
    assert "status" not in seen[0]
    assert seen[0]["retryable"] is True


@pytest.mark.parametrize("verdict", ["RETRY", "suspend", "", None, 1, True])
async def test_an_invalid_on_error_verdict_is_a_usage_error(verdict: Any) -> None:
    attempt = Script(http(503), "ok")
    with pytest.raises(UsageError, match="on_error"):
        await call_with_retries(attempt, policy(Sleeps(), on_error=lambda info: verdict))
    assert attempt.calls == 1


async def test_a_raising_on_error_becomes_a_callback_error() -> None:
    boom = RuntimeError("host bug")

    def on_error(info: ErrorInfo) -> ErrorTier:
        raise boom

    with pytest.raises(CallbackError) as caught:
        await call_with_retries(Script(http(503), "ok"), policy(Sleeps(), on_error=on_error))
    assert caught.value.__cause__ is boom


@pytest.mark.parametrize(
    "abort", [RunCancelled("stop"), RunTimeout("late"), asyncio.CancelledError()]
)
async def test_aborts_are_never_retried_and_bypass_on_error(abort: BaseException) -> None:
    consulted: list[ErrorInfo] = []

    def on_error(info: ErrorInfo) -> ErrorTier:
        consulted.append(info)
        return "retry"

    attempt = Script(abort, "ok")
    with pytest.raises(type(abort)):
        await call_with_retries(attempt, policy(Sleeps(), on_error=on_error))
    assert attempt.calls == 1
    assert consulted == []


async def test_an_unrelated_exception_propagates_unchanged() -> None:
    bug = KeyError("choices")
    attempt = Script(bug, "ok")
    with pytest.raises(KeyError) as caught:
        await call_with_retries(attempt, policy(Sleeps()))
    assert caught.value is bug
    assert attempt.calls == 1


async def test_a_cancel_during_backoff_stops_the_retries() -> None:
    async def cancelled_sleep(delay: float) -> None:
        raise asyncio.CancelledError

    attempt = Script(http(503), "ok")
    with pytest.raises(asyncio.CancelledError):
        await call_with_retries(attempt, RetryPolicy(sleep=cancelled_sleep))
    assert attempt.calls == 1


# --- classification and validation ------------------------------------------------------------


def test_is_retryable_follows_the_contract() -> None:
    assert is_retryable(http(429))
    assert is_retryable(TransportError("reset"))
    assert not is_retryable(http(418))
    assert not is_retryable(BadResponse("garbage"))
    assert not is_retryable(RunTimeout("late"))


@pytest.mark.parametrize(
    "options",
    [
        {"retries": -1},
        {"retries": True},
        {"retries": 1.5},
        {"retries": "2"},
        {"base_ms": -1},
        {"base_ms": math.nan},
        {"base_ms": math.inf},
        {"base_ms": "500"},
        {"max_ms": -5},
        {"on_error": "retry"},
    ],
)
def test_a_bad_policy_is_a_usage_error(options: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        RetryPolicy(**options)


def test_the_default_policy_matches_the_contract() -> None:
    default = RetryPolicy()
    assert (default.retries, default.base_ms, default.on_error) == (2, 500, None)
