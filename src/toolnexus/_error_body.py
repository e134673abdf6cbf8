"""What a provider's error reply tells: its body, redacted and capped (the existing package's
rules), and the delay its ``Retry-After`` header asks for.

* ``redact_identifiers(text)`` replaces the values of ``user_id``, ``account_id``, ``org_id``
  and ``organization`` (JSON string or number values) with `REDACTED`;
* ``safe_error_body(status, text)`` is ``""`` for 401/403 (an auth failure's body may echo the
  key), else the redacted text;
* ``capped_error_body(status, text)`` is ``safe_error_body`` cut to `MAX_ERROR_BODY`
  characters, with ``…`` when it cut (the message form; a typed error's ``body`` keeps it all);
* ``parse_retry_after(value)`` reads the header's delay-seconds form.

Below `toolnexus.errors` (whose `ProviderError` is built from a status, a body and the header)
and imports nothing of ours.
"""

from __future__ import annotations

import re

__all__ = [
    "MAX_ERROR_BODY",
    "REDACTED",
    "capped_error_body",
    "parse_retry_after",
    "redact_identifiers",
    "safe_error_body",
]

REDACTED = "«redacted»"
MAX_ERROR_BODY = 200

_RETRY_AFTER_MAX = 2_147_483_647
_ASCII_DIGITS = frozenset("0123456789")
# RFC 9110 §5.6.3: optional whitespace around a field value is spaces and horizontal tabs.
_OWS = " \t"

_IDENTIFIER = re.compile(
    r'("(?:user_id|account_id|org_id|organization)"\s*:\s*)("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?)'
)


def redact_identifiers(text: str) -> str:
    """``text`` with the values of the account identifiers replaced by `REDACTED`.

    >>> redact_identifiers('{"user_id": "u-1", "x": 1}')
    '{"user_id": "«redacted»", "x": 1}'
    """
    return _IDENTIFIER.sub(lambda m: f'{m.group(1)}"{REDACTED}"', text)


def safe_error_body(status: int | None, text: str) -> str:
    """The body an error may carry: empty for 401/403, otherwise redacted."""
    if status in (401, 403):
        return ""
    return redact_identifiers(text)


def capped_error_body(status: int | None, text: str) -> str:
    """`safe_error_body` in at most `MAX_ERROR_BODY` characters, with ``…`` when cut."""
    body = safe_error_body(status, text)
    if len(body) <= MAX_ERROR_BODY:
        return body
    return body[:MAX_ERROR_BODY] + "…"


def parse_retry_after(value: str | None) -> float | None:
    """Read a ``Retry-After`` header in its delay-seconds form.

    Only ``1*DIGIT`` (ASCII) in ``0…2147483647`` is honoured, and ``0`` is a real answer
    ("retry now"), so test the result with ``is not None``. Optional whitespace (spaces and
    tabs) around the value is trimmed, as RFC 9110 allows for every field value. Everything
    else — fractional, signed, an HTTP-date, out of range, empty, non-ASCII digits — yields
    ``None`` and the caller falls back to backoff.

    Args:
        value: the raw header value, or ``None`` when the header is absent.

    Returns:
        The delay in seconds, or ``None`` when the value is not a delay we honour.

    >>> parse_retry_after("120"), parse_retry_after("0"), parse_retry_after("1.5")
    (120.0, 0.0, None)
    """
    if value is None:
        return None
    text = value.strip(_OWS)
    if not text or not _ASCII_DIGITS.issuperset(text):
        return None
    seconds = int(text)
    return float(seconds) if seconds <= _RETRY_AFTER_MAX else None
