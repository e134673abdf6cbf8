"""`Classifier` and `create_classifier`: one object over four styles, with limits, warnings
and metrics around every evaluation.

::

    clf = create_classifier()                                  # systemone on TypeSafe
    d = await clf.evaluate({"message": "refund please"},
                           {"refund": NoulQuestion("Is the customer asking for a refund?")})
    d.noul("refund").noul                                      # 0.97

Every evaluation, whatever the style: an empty question map and a question over its limits
are refused before anything is sent; a choice whose options cannot be told apart by their
meanings is reported once per key (``classifier.warning``), never changed; the outcome is one
``classifier.evaluate`` event. Whatever goes wrong is a `ClassifierError` — a caller can fail
closed on that one type.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, Literal, Protocol, TypeAlias, cast
from urllib.parse import urlsplit

from ..errors import ClassifierError
from ..llm.retry import RETRYABLE_STATUSES, OnError, RetryPolicy
from ..observability import MetricEvent, OnMetric, deliver
from .answers import Decision
from .backends import Custom, CustomEvaluate, Llm, RecordedDecision, RunsPrompts, Static
from .questions import Question, as_questions, check_limits, degenerate_reason
from .systemone import CLASSIFIER_RETRYABLE_STATUSES, BodyTransform, SystemOne, no_jitter

__all__ = [
    "CLASSIFIER_BACKENDS",
    "DEFAULT_CLASSIFIER_API_KEY_ENV",
    "DEFAULT_CLASSIFIER_BASE_URL",
    "DEFAULT_CLASSIFIER_MODEL",
    "DEFAULT_CLASSIFIER_TIMEOUT",
    "METRIC_CLASSIFIER_EVALUATE",
    "METRIC_CLASSIFIER_WARNING",
    "Classifier",
    "ClassifierBackend",
    "ClassifierStyle",
    "create_classifier",
]

log = logging.getLogger("toolnexus.classifier")

ClassifierStyle: TypeAlias = Literal["systemone", "llm", "custom", "static"]
ClassifierBackend: TypeAlias = Literal["typesafe", "openrouter"]

DEFAULT_CLASSIFIER_BASE_URL: Final = "https://api.typesafe.ai/v1"
DEFAULT_CLASSIFIER_MODEL: Final = "jev-latest"
DEFAULT_CLASSIFIER_API_KEY_ENV: Final = "TYPESAFE_API_KEY"
DEFAULT_CLASSIFIER_TIMEOUT: Final = 10.0
"""Seconds per request."""

METRIC_CLASSIFIER_EVALUATE: Final = "classifier.evaluate"
METRIC_CLASSIFIER_WARNING: Final = "classifier.warning"

CLASSIFIER_BACKENDS: Final[Mapping[str, Mapping[str, str]]] = MappingProxyType(
    {
        "typesafe": MappingProxyType(
            {
                "base_url": DEFAULT_CLASSIFIER_BASE_URL,
                "model": DEFAULT_CLASSIFIER_MODEL,
                "api_key_env": DEFAULT_CLASSIFIER_API_KEY_ENV,
            }
        ),
        "openrouter": MappingProxyType(
            {
                "base_url": "https://openrouter.ai/api/v1",
                "model": "typesafe/jev-1.13",
                "api_key_env": "OPENROUTER_API_KEY",
            }
        ),
    }
)
"""Each backend's base URL, model and key variable, set as a unit (explicit options win)."""

_STYLES: Final = ("systemone", "llm", "custom", "static")
_BATCH_CONCURRENCY: Final = 16


class _Backend(Protocol):
    async def evaluate(self, state: object, questions: Mapping[str, Question]) -> Decision: ...


class Classifier:
    """Answers typed questions about a state (built by `create_classifier`).

    Attributes:
        style: ``systemone``, ``llm``, ``custom`` or ``static``.
        base_url: the systemone API base (set for every style, used by systemone).
        model: the model asked for.
        api_key_env: the variable the bearer key is read from.
        timeout: seconds per request.

    A systemone classifier holds a pooled HTTP session once it has sent a request: close it
    with `aclose` or ``async with``.
    """

    def __init__(
        self,
        *,
        style: ClassifierStyle,
        base_url: str,
        model: str,
        api_key_env: str,
        timeout: float,
        backend: _Backend,
        on_metric: OnMetric | None,
    ) -> None:
        self.style: ClassifierStyle = style
        self.base_url = base_url
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout
        self._backend = backend
        self._on_metric = on_metric
        self._warned: set[str] = set()
        self._tasks: set[asyncio.Future[Any]] = set()

    def __repr__(self) -> str:
        return f"<Classifier style={self.style!r} model={self.model!r}>"

    # -- events ------------------------------------------------------------------------------

    def _emit(self, event: MetricEvent) -> None:
        if self._on_metric is not None:
            deliver(self._on_metric, event, self._tasks)

    def _report_degenerate(self, questions: Mapping[str, Question]) -> None:
        """Warn once per key (per classifier) about a choice whose options cannot be told
        apart by their meanings. The question is sent unchanged."""
        for key in sorted(questions):
            if key in self._warned:
                continue
            reason = degenerate_reason(questions[key])
            if reason is None:
                continue
            self._warned.add(key)
            warning = (
                f"choice question {key!r}: {reason}, so the classifier cannot tell the options "
                "apart and answers near chance; describe what each option means (SPEC.md §8B)"
            )
            log.warning("%s", warning)
            self._emit({"event": METRIC_CLASSIFIER_WARNING, "question": key, "warning": warning})

    # -- evaluation --------------------------------------------------------------------------

    async def evaluate(
        self, state: object, questions: Mapping[str, Question] | Iterable[tuple[str, Question]]
    ) -> Decision:
        """Answer ``questions`` (keyed; the keys address the answers and are never sent as
        content) about ``state``.

        Raises:
            ClassifierError: no questions, a question over its limits, or the backend failed.
        """
        started = time.perf_counter()
        try:
            asked = as_questions(questions)
            if not asked:
                raise ClassifierError("classifier: no questions to evaluate")
            check_limits(asked)
            self._report_degenerate(asked)
            try:
                decision = await self._backend.evaluate(state, asked)
            except ClassifierError:
                raise
            except Exception as exc:
                raise ClassifierError(f"classifier: {type(exc).__name__}: {exc}") from exc
        except ClassifierError as exc:
            self._emit(
                {
                    "event": METRIC_CLASSIFIER_EVALUATE,
                    "model": self.model,
                    "status": "error",
                    "ms": _ms(started),
                    "prompt_tokens": 0,
                    "completion_tokens": 0,
                    "error": str(exc),
                }
            )
            raise
        self._emit(
            {
                "event": METRIC_CLASSIFIER_EVALUATE,
                "model": decision.model,
                "status": "ok",
                "ms": _ms(started),
                "prompt_tokens": decision.usage.input_tokens,
                "completion_tokens": decision.usage.output_tokens,
            }
        )
        return decision

    async def evaluate_batch(
        self,
        states: Sequence[object],
        questions: Mapping[str, Question] | Iterable[tuple[str, Question]],
        *,
        concurrency: int = _BATCH_CONCURRENCY,
    ) -> list[Decision]:
        """Evaluate the same questions over many states, at most ``concurrency`` at a time.

        Returns the decisions in state order. Fails closed: when any state fails, no decision
        is returned and the error names the lowest failing index (states after a known failure
        are not started).

        Raises:
            ClassifierError: ``classifier: evaluate_batch: state <i>: <error>``, or no states.
        """
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ClassifierError(
                f"classifier: evaluate_batch: concurrency must be ≥ 1, got {concurrency!r}"
            )
        items = list(states)
        if not items:
            raise ClassifierError("classifier: evaluate_batch: no states to evaluate")
        asked = as_questions(questions)
        results: list[Decision | None] = [None] * len(items)
        failures: dict[int, Exception] = {}
        cursor = iter(range(len(items)))

        async def work() -> None:
            for index in cursor:
                if failures and index > min(failures):
                    return
                try:
                    results[index] = await self.evaluate(items[index], asked)
                except Exception as exc:
                    failures[index] = exc

        async with asyncio.TaskGroup() as group:
            for _ in range(min(concurrency, len(items))):
                group.create_task(work())
        if failures:
            index = min(failures)
            raise ClassifierError(
                f"classifier: evaluate_batch: state {index}: {failures[index]}"
            ) from failures[index]
        return cast("list[Decision]", results)

    # -- lifetime ----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the HTTP session a systemone classifier opened (nothing else holds one)."""
        closer = getattr(self._backend, "aclose", None)
        if closer is not None:
            await closer()

    async def __aenter__(self) -> Classifier:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


def _on_openrouter(base_url: str) -> bool:
    host = urlsplit(base_url).hostname or ""
    return host == "openrouter.ai" or host.endswith(".openrouter.ai")


def create_classifier(
    *,
    style: ClassifierStyle = "systemone",
    backend: ClassifierBackend | None = None,
    base_url: str | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
    http_transport: object | None = None,
    retries: int = 2,
    retry_base_ms: float = 500,
    retryable_statuses: Iterable[int] | None = None,
    on_error: OnError | None = None,
    request_params: Mapping[str, Any] | None = None,
    body_transform: BodyTransform | None = None,
    on_metric: OnMetric | None = None,
    client: RunsPrompts | None = None,
    evaluate: CustomEvaluate | None = None,
    decisions: Iterable[RecordedDecision] | None = None,
) -> Classifier:
    """Build a classifier.

    Args:
        style: ``systemone`` (an HTTP endpoint), ``llm`` (a `Client`'s model, needs ``client``),
            ``custom`` (your ``evaluate(state, questions)``) or ``static`` (recorded
            ``decisions``: tests and CI, no network).
        backend: ``typesafe`` (the default) or ``openrouter``: base URL, model and key variable
            as a unit; explicit ``base_url`` / ``model`` / ``api_key_env`` still win.
        headers: extra request headers, ``${ENV}`` expanded at call time.
        timeout: seconds per request (10.0).
        http_transport: a `ClassifierTransport` (``post(url, headers, body, timeout)``; sync in
            a worker thread, or async), or an `AiohttpTransport` to share its session.
        retries, retry_base_ms, retryable_statuses, on_error: the client's retry policy
            (COMPAT §7); a classifier also retries 408, and backs off without jitter.
        request_params: merged into the systemone body (their keys win).
        body_transform: rewrites the body last (``None`` keeps it).
        on_metric: receives ``classifier.evaluate`` and ``classifier.warning`` events.

    Raises:
        ClassifierError: an unknown style or backend, a style without what it needs, or
            ``jev-latest`` on an openrouter.ai base.

    >>> clf = create_classifier(backend="openrouter")
    >>> clf.model
    'typesafe/jev-1.13'
    """
    if style not in _STYLES:
        raise ClassifierError(
            f"classifier: unknown style {style!r} (systemone, llm, custom or static)"
        )
    preset = CLASSIFIER_BACKENDS.get(backend or "typesafe")
    if preset is None:
        raise ClassifierError(f"classifier: unknown backend {backend!r} (typesafe or openrouter)")
    base_url = base_url or preset["base_url"]
    model = model or preset["model"]
    api_key_env = api_key_env if api_key_env is not None else preset["api_key_env"]
    seconds = DEFAULT_CLASSIFIER_TIMEOUT if timeout is None else timeout
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ClassifierError(
            f"classifier: timeout must be a number of seconds > 0, got {timeout!r}"
        )
    chosen: _Backend
    if style == "llm":
        if client is None:
            raise ClassifierError('classifier: style "llm" requires client')
        chosen = Llm(client)
    elif style == "custom":
        if evaluate is None:
            raise ClassifierError('classifier: style "custom" requires evaluate')
        chosen = Custom(evaluate)
    elif style == "static":
        if decisions is None:
            raise ClassifierError('classifier: style "static" requires decisions')
        chosen = Static(model, decisions)
    else:
        if model == DEFAULT_CLASSIFIER_MODEL and _on_openrouter(base_url):
            raise ClassifierError(
                'classifier: model "jev-latest" is TypeSafe\'s spelling; on openrouter.ai use '
                '"typesafe/jev-1.13"'
            )
        policy = RetryPolicy(
            retries=retries,
            base_ms=retry_base_ms,
            on_error=on_error,
            rand=no_jitter,
            retryable_statuses=RETRYABLE_STATUSES
            | CLASSIFIER_RETRYABLE_STATUSES
            | frozenset(retryable_statuses or ()),
        )
        chosen = SystemOne(
            base_url=base_url,
            model=model,
            api_key_env=api_key_env,
            headers=headers,
            timeout=float(seconds),
            policy=policy,
            transport=http_transport,
            request_params=request_params,
            body_transform=body_transform,
        )
    return Classifier(
        style=style,
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        timeout=float(seconds),
        backend=chosen,
        on_metric=on_metric,
    )
