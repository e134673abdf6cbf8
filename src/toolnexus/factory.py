"""Building clients: `create_client` for an HTTP endpoint, `create_in_process_client` for a
host function standing in for the model."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

from .client import Client
from .errors import UsageError
from .llm.base import Dialect, Style
from .llm.dialects import api_key_from_env, dialect_for, env_key_names
from .llm.inprocess import Generate, InProcessTransport
from .llm.openai import OpenAIDialect
from .llm.parts_wire import OnUnsupportedPart, PartPolicy
from .llm.retry import ErrorInfo, OnError, RetryPolicy
from .llm.transport import as_transport
from .loop.engine import EngineConfig
from .loop.hooks import as_hooks
from .redaction import Redactor
from .stores.url import resolve_store
from .suspension import WaitFor
from .tracing import tracing_for

__all__ = ["create_client", "create_in_process_client"]


def _resolve_api_key(style: Style, api_key: str | None) -> str:
    key = api_key or api_key_from_env(style)
    if key:
        return key
    _, own, other = env_key_names(style)
    raise UsageError(f"no API key: pass api_key= or set OPENROUTER_API_KEY or {own} (or {other})")


def _build(
    *,
    dialect: Dialect,
    transport: Any,
    url: str,
    headers: dict[str, str],
    model: str,
    system_prompt: str | None,
    max_turns: int,
    hooks: Any,
    retries: int,
    retry_base_ms: int,
    timeout_ms: float | None,
    store: Any,
    on_metric: Callable[[dict[str, Any]], Any] | None,
    wait_for: WaitFor | None,
    request_params: Mapping[str, Any] | None,
    body_transform: Callable[[dict[str, Any]], Any] | None,
    on_error: OnError | None,
    pending_ttl: float | None,
    in_process: bool,
    tracing: Any = None,
    trace_content: bool = False,
    redactor: Redactor | None = None,
) -> Client:
    if not isinstance(model, str) or not model:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UsageError("model must be a non-empty string")
    if max_turns < 1:
        raise UsageError("max_turns must be at least 1")
    if retries < 0 or retry_base_ms < 0:
        raise UsageError("retries and retry_base_ms must not be negative")
    if timeout_ms is not None and timeout_ms <= 0:
        raise UsageError("timeout_ms must be positive")
    secrets = redactor if redactor is not None else Redactor()
    config = EngineConfig(
        dialect=dialect,
        transport=transport,
        url=url,
        headers=headers,
        model=model,
        style=dialect.style,
        system_prompt=system_prompt,
        max_turns=max_turns,
        hooks=as_hooks(hooks),
        retry=RetryPolicy(
            retries=retries, base_ms=retry_base_ms, on_error=_masked(on_error, secrets)
        ),
        timeout_ms=timeout_ms,
        on_metric=on_metric,
        wait_for=wait_for,
        request_params=request_params,
        body_transform=body_transform,
        pending_ttl=pending_ttl,
        supports_stream=bool(getattr(transport, "supports_stream", True)),
        tracing=tracing_for(
            tracing, style=dialect.style, url=url, model=model, content=trace_content
        ),
        redactor=secrets,
    )
    owns = isinstance(store, str)
    return Client(config, store=resolve_store(store), in_process=in_process, owns_store=owns)


def _masked(on_error: OnError | None, secrets: Redactor) -> OnError | None:
    """``on_error`` seeing the failed attempt's error with the secrets masked."""
    if on_error is None:
        return None

    def classify(info: ErrorInfo) -> Any:
        secrets.scrub(info["error"])
        return on_error(info)

    return classify


def client_secrets(api_key: str | None, headers: Mapping[str, str]) -> Redactor:
    """The redactor of a client: its key, its credential headers and every provider key
    variable (a tool that prints the environment must not show them either)."""
    secrets = Redactor(api_key)
    secrets.add_env(*env_key_names("openai"))
    for name, value in headers.items():
        secrets.add_setting(name, value)
    return secrets


def create_client(
    *,
    base_url: str,
    style: Literal["openai", "anthropic"] = "openai",
    model: str,
    api_key: str | None = None,
    headers: Mapping[str, str] | None = None,
    system_prompt: str | None = None,
    max_turns: int = 10,
    hooks: Any = None,
    retries: int = 2,
    retry_base_ms: int = 500,
    timeout_ms: float | None = None,
    store: Any = None,
    on_metric: Callable[[dict[str, Any]], Any] | None = None,
    wait_for: WaitFor | None = None,
    request_params: Mapping[str, Any] | None = None,
    body_transform: Callable[[dict[str, Any]], Any] | None = None,
    http_transport: Any = None,
    on_error: OnError | None = None,
    pending_ttl: float | None = None,
    tracing: Any = None,
    trace_content: bool = False,
    # merge: compat also adds these two options (COMPAT §2); parts implements their behaviour.
    on_unsupported_part: OnUnsupportedPart = None,
    max_part_bytes: int | None = None,
) -> Client:
    """Create a `Client` for an OpenAI- or Anthropic-style endpoint.

    Args:
        base_url: e.g. ``https://api.openai.com/v1`` or ``https://api.anthropic.com``.
        style: ``"openai"`` (``POST {base}/chat/completions``) or ``"anthropic"``
            (``POST {base}/v1/messages``).
        model: sent verbatim on every request.
        api_key: falls back to ``OPENROUTER_API_KEY``, then the style's own key
            (``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``), then the other one.
        headers: extra request headers (they win over the auth headers).
        system_prompt: joined with the toolkit's skills prompt by a blank line.
        max_turns: model calls per run (default 10).
        hooks: ``before_llm`` / ``after_llm`` / ``before_tool`` / ``after_tool``.
        retries: extra attempts on 429/5xx/network errors (default 2).
        retry_base_ms: backoff base (default 500 ms); ``Retry-After`` seconds win.
        timeout_ms: whole-run deadline for model calls; the in-flight request is aborted.
        store: conversation store for ``ask(id=)``: an object, ``"memory"`` or
            ``"sqlite:///path.db"``.
        on_metric: receives ``llm`` / ``tool`` / ``run`` event dicts.
        wait_for: answers suspensions inline; without it a suspension halts the run.
        request_params: merged into every request body (wins on collision).
        body_transform: ``body -> body``, runs last before the wire.
        http_transport: our `Transport`, or any object with a sync
            ``post(url, headers, payload, timeout) -> dict``.
        on_error: ``info -> "retry" | "fail"`` for failed model calls.
        pending_ttl: seconds; stamps ``expiresAt`` on suspensions that carry none.
        tracing: OpenTelemetry spans (`toolnexus.tracing`): ``None`` (default) traces when
            ``opentelemetry-api`` is installed, ``True`` requires it, ``False`` never traces;
            a ``TracerProvider`` sends the spans there rather than to the global provider.
        trace_content: also record prompts, replies and tool arguments/results on the spans.
        on_unsupported_part: what a content part that cannot be sent does: ``None`` (an
            attached part fails the request, a tool's becomes a text placeholder), ``"error"``
            or ``"text"`` for both (docs/parts.md).
        max_part_bytes: the decoded-byte ceiling per content part, checked when a request is
            built; ``None`` = `toolnexus.get_max_part_bytes`.
    """
    dialect = dialect_for(style, PartPolicy(on_unsupported_part, max_part_bytes))
    key = _resolve_api_key(dialect.style, api_key)
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UsageError(f"base_url must be an http(s) URL, got {base_url!r}")
    wire_headers = {**dialect.auth_headers(key), **dict(headers or {})}
    transport = as_transport(http_transport)
    secrets = client_secrets(key, wire_headers)
    return _build(
        dialect=dialect,
        transport=transport,
        url=dialect.endpoint(base_url),
        headers=wire_headers,
        model=model,
        system_prompt=system_prompt,
        max_turns=max_turns,
        hooks=hooks,
        retries=retries,
        retry_base_ms=retry_base_ms,
        timeout_ms=timeout_ms,
        store=store,
        on_metric=on_metric,
        wait_for=wait_for,
        request_params=request_params,
        body_transform=body_transform,
        on_error=on_error,
        pending_ttl=pending_ttl,
        in_process=False,
        tracing=tracing,
        trace_content=trace_content,
        redactor=secrets,
    )


def create_in_process_client(
    *,
    model: str,
    generate: Generate,
    system_prompt: str | None = None,
    max_turns: int = 10,
    hooks: Any = None,
    timeout_ms: float | None = None,
    store: Any = None,
    on_metric: Callable[[dict[str, Any]], Any] | None = None,
    wait_for: WaitFor | None = None,
    request_params: Mapping[str, Any] | None = None,
    body_transform: Callable[[dict[str, Any]], Any] | None = None,
    pending_ttl: float | None = None,
    tracing: Any = None,
    trace_content: bool = False,
    # merge: compat also adds these two options (COMPAT §2); parts implements their behaviour.
    on_unsupported_part: OnUnsupportedPart = None,
    max_part_bytes: int | None = None,
) -> Client:
    """A `Client` whose "model" is a host function (tests, local rules, a model in memory).

    ``generate(request)`` gets the OpenAI-shaped body and returns one assistant message:
    ``{"content": "..."}`` or ``{"toolCalls": [{"name": ..., "arguments": {...}}]}``. No URL,
    key or HTTP is involved; failures are final (no retries); streaming raises `UsageError`.
    """
    return _build(
        dialect=OpenAIDialect(PartPolicy(on_unsupported_part, max_part_bytes)),
        transport=InProcessTransport(generate),
        url="inprocess://model",
        headers={},
        model=model,
        system_prompt=system_prompt,
        max_turns=max_turns,
        hooks=hooks,
        retries=0,
        retry_base_ms=0,
        timeout_ms=timeout_ms,
        store=store,
        on_metric=on_metric,
        wait_for=wait_for,
        request_params=request_params,
        body_transform=body_transform,
        on_error=None,
        pending_ttl=pending_ttl,
        in_process=True,
        tracing=tracing,
        trace_content=trace_content,
    )
