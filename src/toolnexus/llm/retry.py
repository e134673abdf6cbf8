"""Bounded retries for one model call, honouring ``Retry-After`` exactly as the contract pins it.

A failed attempt is *retryable* when it is a `ProviderError` with status 429, 500, 502, 503,
504 or 529 (plus the client's ``retryable_statuses``), or a `TransportError` (connection
refused, reset, cut mid-body). `BadResponse` and other 4xx statuses are not. The host's
``on_error`` callback has the last word on every failed attempt, but a ``"retry"`` never
exceeds ``retries`` (at most ``retries + 1`` attempts in all).

Aborts are never failures: `asyncio.CancelledError`, `RunCancelled` and `RunTimeout` propagate at
once, untouched, without consulting ``on_error``. Any other exception (a bug, a `UsageError`, a
`CallbackError` from a hook) is not an attempt failure either and propagates unchanged.

The delay before the next attempt is the server's ``Retry-After`` (delay-seconds form only,
including ``0``) when present, else exponential backoff with jitter, which is never zero.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict, TypeVar, cast

from .._error_body import parse_retry_after
from ..errors import BadResponse, CallbackError, ProviderError, TransportError, UsageError

__all__ = [
    "RETRYABLE_STATUSES",
    "ErrorClassifier",
    "ErrorInfo",
    "ErrorTier",
    "OnError",
    "RetryPolicy",
    "backoff_delay",
    "call_with_retries",
    "is_retryable",
    "parse_retry_after",
    "retry_after",
]

T = TypeVar("T")

ErrorTier: TypeAlias = Literal["retry", "fail"]
"""What ``on_error`` decides for a failed attempt."""

RETRYABLE_STATUSES: frozenset[int] = frozenset({429, 500, 502, 503, 504, 529})
"""HTTP statuses worth another attempt by default."""

# The smallest backoff we ever wait, so that ``retry_base_ms=0`` still never retries at once.
_MIN_BACKOFF_S = 0.001


class ErrorInfo(TypedDict):
    """What ``on_error`` receives for one failed attempt.

    Attributes:
        error: the exception the attempt raised (`ProviderError` or `TransportError`).
        status: the HTTP status; present only when the endpoint answered with one.
        attempt: the zero-based index of the attempt that failed.
        retryable: whether the default policy would retry this failure.
    """

    error: Exception
    status: NotRequired[int]
    attempt: int
    retryable: bool


OnError: TypeAlias = Callable[[ErrorInfo], "ErrorTier | Awaitable[ErrorTier]"]
"""``on_error(info) -> "retry" | "fail"``, synchronous or asynchronous."""

ErrorClassifier: TypeAlias = OnError
"""The existing package's name for `OnError`."""


def is_retryable(error: BaseException, statuses: frozenset[int] = RETRYABLE_STATUSES) -> bool:
    """Whether the default policy retries ``error`` (``statuses``: the retryable HTTP ones).

    >>> is_retryable(ProviderError("HTTP 503: busy", status=503))
    True
    """
    if isinstance(error, TransportError):
        return True
    if isinstance(error, ProviderError):
        return error.status in statuses and not isinstance(error, BadResponse)
    return False


def backoff_delay(attempt: int, base_ms: float, rand: float, max_ms: float) -> float:
    """The backoff in seconds after the zero-based ``attempt`` failed.

    ``base_ms * 2**attempt`` with "equal jitter": half of it is fixed, the other half scaled by
    ``rand`` (in ``[0, 1)``), capped at ``max_ms`` and never below one millisecond.

    >>> backoff_delay(0, 500, 0.0, 60_000), backoff_delay(1, 500, 0.0, 60_000)
    (0.25, 0.5)
    """
    rand = min(max(rand, 0.0), 1.0) if math.isfinite(rand) else 0.0
    full = min(base_ms * 2.0 ** min(attempt, 64), max_ms)
    return max(full * (0.5 + 0.5 * rand) / 1000.0, _MIN_BACKOFF_S)


def _check_ms(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{name} must be a number of milliseconds, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise UsageError(f"{name} must be a finite number ≥ 0, got {value!r}")
    return number


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How many times to retry a failed model call, and how long to wait in between.

    Attributes:
        retries: extra attempts after the first (``2`` ⇒ at most three attempts).
        base_ms: the first backoff, doubled on every further attempt (before jitter).
        max_ms: the cap on one backoff (a ``Retry-After`` is never capped).
        on_error: the host's classifier; ``None`` ⇒ retry exactly the retryable failures.
        sleep: the coroutine that waits; injected by tests.
        rand: the jitter source, returning a float in ``[0, 1)``; injected by tests.
        retryable_statuses: the HTTP statuses retried by default (`RETRYABLE_STATUSES` plus
            the client's ``retryable_statuses``).

    >>> policy = RetryPolicy(retries=3, base_ms=100)
    """

    retries: int = 2
    base_ms: float = 500
    max_ms: float = 60_000
    on_error: OnError | None = None
    sleep: Callable[[float], Awaitable[Any]] = field(default=asyncio.sleep)
    rand: Callable[[], float] = field(default=random.random)
    retryable_statuses: frozenset[int] = RETRYABLE_STATUSES

    def __post_init__(self) -> None:
        retries = cast(object, self.retries)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise UsageError(f"retries must be an int ≥ 0, got {retries!r}")
        _check_ms("retry_base_ms", self.base_ms)
        _check_ms("max_ms", self.max_ms)
        on_error = cast(object, self.on_error)
        if on_error is not None and not callable(on_error):
            raise UsageError(f"on_error must be callable, got {on_error!r}")


async def _decide(policy: RetryPolicy, info: ErrorInfo) -> ErrorTier:
    on_error = policy.on_error
    if on_error is None:
        return "retry" if info["retryable"] else "fail"
    try:
        verdict: object = on_error(info)
        if inspect.isawaitable(verdict):
            verdict = await cast("Awaitable[object]", verdict)
    except Exception as exc:
        raise CallbackError(f"on_error raised {type(exc).__name__}: {exc}") from exc
    if isinstance(verdict, str) and verdict in ("retry", "fail"):
        return "retry" if verdict == "retry" else "fail"
    raise UsageError(f'on_error must return "retry" or "fail", got {verdict!r}')


def _info(error: ProviderError | TransportError, attempt: int, policy: RetryPolicy) -> ErrorInfo:
    retryable = is_retryable(error, policy.retryable_statuses)
    info: ErrorInfo = {"error": error, "attempt": attempt, "retryable": retryable}
    if isinstance(error, ProviderError) and error.status is not None:
        info["status"] = error.status
    return info


async def call_with_retries(attempt: Callable[[], Awaitable[T]], policy: RetryPolicy) -> T:
    """Run ``attempt()`` until it succeeds, the policy gives up, or the retries run out.

    Args:
        attempt: a zero-argument coroutine function making one model call.
        policy: the retry budget, the backoff and the host's ``on_error``.

    Returns:
        What the first successful attempt returned.

    Raises:
        ProviderError: the last failure, unchanged, once no further attempt is made.
        TransportError: likewise, for a network failure.
        CallbackError: ``on_error`` raised (the original is the cause).
        UsageError: ``on_error`` returned something other than ``"retry"``/``"fail"``.

    >>> async def main():
    ...     return await call_with_retries(fetch_reply, RetryPolicy(retries=3))
    """
    try:
        return await attempt()
    except (ProviderError, TransportError) as error:
        failed = error
    return await retry_after(failed, attempt, policy)


async def retry_after(
    error: ProviderError | TransportError, attempt: Callable[[], Awaitable[T]], policy: RetryPolicy
) -> T:
    """`call_with_retries` once the first attempt failed with ``error``.

    For a caller that makes its first attempt itself (the loop does: a call in flight then
    holds no retry frame); the rules are the same.

    Raises:
        ProviderError: the last failure, unchanged, once no further attempt is made.
        TransportError: likewise, for a network failure.
        CallbackError: ``on_error`` raised (the original is the cause).
        UsageError: ``on_error`` returned something other than ``"retry"``/``"fail"``.
    """
    index = 0
    while True:
        tier = await _decide(policy, _info(error, index, policy))
        if tier == "fail" or index >= policy.retries:
            raise error
        delay = error.retry_after_s if isinstance(error, ProviderError) else None
        if delay is None or delay < 0 or not math.isfinite(delay):
            delay = backoff_delay(index, policy.base_ms, policy.rand(), policy.max_ms)
        await policy.sleep(delay)
        index += 1
        try:
            return await attempt()
        except (ProviderError, TransportError) as again:
            error = again
