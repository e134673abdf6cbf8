"""The existing package's transport shape: a synchronous object the client calls in a thread.

`HttpTransport` is the Protocol (``post(url, headers, payload, timeout) -> dict``, and for
streaming ``open(url, headers, payload, timeout)`` returning a live response whose ``read1`` /
``read`` yields the raw SSE bytes, plus ``close()``). `UrllibTransport` implements it with the
standard library only. Hand either to ``create_client(http_transport=...)``: the client wraps it
in `toolnexus.llm.transport.LegacyTransport`, which runs every blocking call in a worker thread.

The object must be thread-safe: several runs (and the agent runtime's handles) call it from
several threads at once. `UrllibTransport` keeps no state between calls.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, Protocol, cast, runtime_checkable

from ..errors import BadResponse, ProviderError

__all__ = ["HttpTransport", "UrllibTransport"]


@runtime_checkable
class HttpTransport(Protocol):
    """A synchronous transport: one blocking POST per attempt.

    ``timeout`` is in seconds. A non-2xx reply is raised as
    ``toolnexus.client.ProviderError(status, text, retry_after_header)``; ``OSError`` /
    ``urllib.error.URLError`` / ``TimeoutError`` are network failures (retried).
    """

    def post(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        """POST ``payload`` as JSON and return the reply's JSON object."""
        ...


class UrllibTransport:
    """`HttpTransport` over `urllib.request`: no dependency, no pool, no state (thread-safe).

    Redirects are not followed (a 3xx is a `ProviderError`), so credentials never travel to a
    host the caller did not name.

    >>> client = create_client(base_url=url, model="m", http_transport=UrllibTransport())
    """

    def _request(
        self, url: str, headers: dict[str, str], payload: dict[str, Any]
    ) -> urllib.request.Request:
        data = json.dumps(payload, ensure_ascii=False, allow_nan=False).encode()
        return urllib.request.Request(url, data=data, headers=dict(headers), method="POST")

    def _send(self, request: urllib.request.Request, timeout: float) -> Any:
        try:
            return _OPENER.open(request, timeout=timeout)
        except urllib.error.HTTPError as exc:
            try:
                text = exc.read().decode("utf-8", errors="replace")
            finally:
                exc.close()
            retry_after = exc.headers.get("Retry-After") if exc.headers else None
            raise ProviderError(exc.code, text, retry_after) from None

    def post(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        """POST and parse; see `HttpTransport.post`."""
        with self._send(self._request(url, headers, payload), timeout) as response:
            raw: bytes = response.read()
        try:
            value: object = json.loads(raw)
        except ValueError as exc:
            raise BadResponse(f"reply is not valid JSON: {exc}") from exc
        if not isinstance(value, dict):
            raise BadResponse(f"reply is not a JSON object but {type(value).__name__}")
        return cast("dict[str, Any]", value)

    def open(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], timeout: float
    ) -> Any:
        """POST and return the live response (``read1`` yields the SSE bytes; ``close``)."""
        return self._send(self._request(url, headers, payload), timeout)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)
