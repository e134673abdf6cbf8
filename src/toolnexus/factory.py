"""A client's configuration: `setup_client` checks `create_client`'s options and builds the
`EngineConfig` (dialect, transport, retries, tracing, redactor) and the store a client runs with.

It builds configuration only and never a `Client`: `toolnexus.client` stands on it, and
``create_client`` / ``create_in_process_client`` / ``Client(**options)`` all come through here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, TypedDict

from ._compat import UsageTypeError
from .errors import UsageError
from .llm.base import Dialect, Style
from .llm.dialects import api_key_from_env, dialect_for, env_key_names, is_loopback_url
from .llm.inprocess import Generate, InProcessTransport
from .llm.openai import OpenAIDialect
from .llm.parts_wire import PartPolicy
from .llm.retry import RETRYABLE_STATUSES, ErrorInfo, OnError, RetryPolicy
from .llm.transport import as_transport
from .loop.engine import EngineConfig
from .loop.hooks import as_hooks
from .redaction import Redactor
from .stores.url import resolve_store
from .suspension import WaitFor
from .tracing import tracing_for

__all__ = [
    "NO_WIRE",
    "ClientOptions",
    "ClientSetup",
    "client_secrets",
    "known_options",
    "resolve_api_key",
    "setup_client",
]


class ClientOptions(TypedDict, total=False):
    """The keyword options of `create_client`, ``Client(**options)`` and (less the wire ones)
    `create_in_process_client` — one list, documented at `create_client`. ``model`` is
    required, and ``base_url`` too unless the model is in-process."""

    base_url: str
    style: Literal["openai", "anthropic"]
    model: str
    api_key: str | None
    headers: Mapping[str, str] | None
    system_prompt: str | None
    max_turns: int
    hooks: Any
    retries: int
    retry_base_ms: int
    retryable_statuses: Iterable[int] | None
    timeout_ms: float | None
    store: Any
    on_metric: Callable[[dict[str, Any]], Any] | None
    wait_for: WaitFor | None
    request_params: Mapping[str, Any] | None
    body_transform: Callable[[dict[str, Any]], Any] | None
    http_transport: Any
    on_error: OnError | None
    on_unsupported_part: Literal["error", "text"] | None
    max_part_bytes: int | None
    pending_ttl: float | None
    tracing: Any
    trace_content: bool


def known_options() -> frozenset[str]:
    """The names `ClientOptions` holds."""
    return ClientOptions.__optional_keys__ | ClientOptions.__required_keys__


ClientSetup = tuple[EngineConfig, Any, bool, bool, dict[str, Any]]
"""What `setup_client` gives `Client.__init__`: the engine configuration, the conversation
store, whether the model is in-process, whether the client owns the store, and the options as
given (the client's read-only attributes)."""

_UNSUPPORTED_PART_MODES = (None, "error", "text")
NO_WIRE = ("base_url", "api_key", "style", "http_transport")
"""The options an in-process model refuses: it has no wire to configure."""


def resolve_api_key(
    style: Style, api_key: str | None, base_url: object, *, injected: bool
) -> str | None:
    """The key a client sends: ``api_key``, else the environment's (`api_key_from_env`).

    Without either, no key is sent — no ``Authorization`` header at all — when the host injected
    the transport (it owns the wire) or ``base_url`` is a loopback address (a local model);
    anywhere else a missing key fails here, at construction.

    Raises:
        UsageError: no key, for a network endpoint reached through our own transport.
    """
    key = api_key or api_key_from_env(style)
    if key or injected or is_loopback_url(base_url):
        return key or None
    _, own, other = env_key_names(style)
    raise UsageError(f"no API key: pass api_key= or set OPENROUTER_API_KEY or {own} (or {other})")


def _statuses(value: Iterable[int] | None) -> frozenset[int] | None:
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UsageError(f"retryable_statuses must be a collection of ints, got {value!r}")
    statuses = frozenset(value)
    for status in statuses:
        if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UsageError(f"retryable_statuses: {status!r} is not an HTTP status")
    return statuses


def _part_options(max_part_bytes: Any, on_unsupported_part: Any) -> None:
    if max_part_bytes is not None and (
        isinstance(max_part_bytes, bool)
        or not isinstance(max_part_bytes, int)
        or max_part_bytes < 1
    ):
        raise UsageError(f"max_part_bytes must be a positive int or None, got {max_part_bytes!r}")
    if on_unsupported_part not in _UNSUPPORTED_PART_MODES:
        raise UsageError(
            f'on_unsupported_part must be None, "error" or "text", got {on_unsupported_part!r}'
        )


def setup_client(
    *,
    base_url: str | None = None,
    style: Literal["openai", "anthropic"] = "openai",
    model: str,
    api_key: str | None = None,
    headers: Mapping[str, str] | None = None,
    system_prompt: str | None = None,
    max_turns: int = 10,
    hooks: Any = None,
    retries: int | None = None,
    retry_base_ms: int = 500,
    retryable_statuses: Iterable[int] | None = None,
    timeout_ms: float | None = None,
    store: Any = None,
    on_metric: Callable[[dict[str, Any]], Any] | None = None,
    wait_for: WaitFor | None = None,
    request_params: Mapping[str, Any] | None = None,
    body_transform: Callable[[dict[str, Any]], Any] | None = None,
    http_transport: Any = None,
    on_error: OnError | None = None,
    on_unsupported_part: Literal["error", "text"] | None = None,
    max_part_bytes: int | None = None,
    pending_ttl: float | None = None,
    in_process: Generate | None = None,
    tracing: Any = None,
    trace_content: bool = False,
) -> ClientSetup:
    """Check ``create_client``'s options and build what a `Client` runs with.

    ``in_process`` (a ``generate`` function) makes the model in-process, as
    `create_in_process_client` does; the wire options are then refused. ``Client(**options)``
    and both factories go through here.
    """
    statuses = _statuses(retryable_statuses)
    _part_options(max_part_bytes, on_unsupported_part)
    if in_process is not None:
        if not callable(in_process):
            raise UsageTypeError(
                "toolnexus: create_in_process_client requires a callable `generate`"
            )
        for name, value in (
            ("base_url", base_url),
            ("api_key", api_key),
            ("http_transport", http_transport),
        ):
            if value is not None:
                raise UsageTypeError(
                    f"toolnexus: create_in_process_client does not take `{name}` — an "
                    "in-process model has no wire to configure. Use create_client for a "
                    "network-backed model."
                )
        dialect: Dialect = OpenAIDialect(PartPolicy(on_unsupported_part, max_part_bytes))
        transport: Any = InProcessTransport(in_process)
        url, wire_headers = "inprocess://model", {}
        retries = 0 if retries is None else retries
        secrets = Redactor()
    else:
        dialect = dialect_for(style, PartPolicy(on_unsupported_part, max_part_bytes))
        key = resolve_api_key(dialect.style, api_key, base_url, injected=http_transport is not None)
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise UsageError(f"base_url must be an http(s) URL, got {base_url!r}")
        wire_headers = {**dialect.auth_headers(key), **dict(headers or {})}
        transport = as_transport(http_transport)
        url = dialect.endpoint(base_url)
        retries = 2 if retries is None else retries
        secrets = client_secrets(key, wire_headers)
    if not isinstance(model, str) or not model:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UsageError("model must be a non-empty string")
    if max_turns < 1:
        raise UsageError("max_turns must be at least 1")
    if retries < 0 or retry_base_ms < 0:
        raise UsageError("retries and retry_base_ms must not be negative")
    if timeout_ms is not None and timeout_ms <= 0:
        raise UsageError("timeout_ms must be positive")
    config = EngineConfig(
        dialect=dialect,
        transport=transport,
        url=url,
        headers=wire_headers,
        model=model,
        style=dialect.style,
        system_prompt=system_prompt,
        max_turns=max_turns,
        hooks=as_hooks(hooks),
        retry=RetryPolicy(
            retries=retries,
            base_ms=retry_base_ms,
            on_error=_masked(on_error, secrets),
            retryable_statuses=RETRYABLE_STATUSES | (statuses or frozenset()),
        ),
        timeout_ms=timeout_ms,
        on_metric=on_metric,
        wait_for=wait_for,
        request_params=request_params,
        body_transform=body_transform,
        pending_ttl=pending_ttl,
        supports_stream=bool(getattr(transport, "supports_stream", True)),
        max_part_bytes=max_part_bytes,
        on_unsupported_part=on_unsupported_part,
        tracing=tracing_for(
            tracing, style=dialect.style, url=url, model=model, content=trace_content
        ),
        redactor=secrets,
    )
    options: dict[str, Any] = {
        "base_url": base_url,
        "style": dialect.style,
        "model": model,
        "api_key": api_key,
        "headers": dict(headers) if headers is not None else None,
        "system_prompt": system_prompt,
        "max_turns": max_turns,
        "hooks": hooks,
        "retries": retries,
        "retry_base_ms": retry_base_ms,
        "retryable_statuses": statuses,
        "timeout_ms": timeout_ms,
        "request_params": request_params,
        "body_transform": body_transform,
        "on_error": on_error,
        "on_unsupported_part": on_unsupported_part,
        "max_part_bytes": max_part_bytes,
        "store": store,
        "wait_for": wait_for,
        "on_metric": on_metric,
        "http_transport": http_transport,
        "pending_ttl": pending_ttl,
        "tracing": tracing,
        "trace_content": trace_content,
    }
    owns = isinstance(store, str)
    return config, resolve_store(store), in_process is not None, owns, options


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
