"""What a provider's error body may show: redacted and capped (the existing package's rules).

* ``redact_identifiers(text)`` replaces the values of ``user_id``, ``account_id``, ``org_id``
  and ``organization`` (JSON string or number values) with `REDACTED`;
* ``safe_error_body(status, text)`` is ``""`` for 401/403 (an auth failure's body may echo the
  key), else the redacted text;
* ``capped_error_body(text)`` keeps the first `MAX_ERROR_BODY` characters, adding ``…`` when
  it cut.
"""

from __future__ import annotations

import re

__all__ = [
    "MAX_ERROR_BODY",
    "REDACTED",
    "capped_error_body",
    "redact_identifiers",
    "safe_error_body",
]

REDACTED = "«redacted»"
MAX_ERROR_BODY = 200

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


def capped_error_body(text: str) -> str:
    """At most `MAX_ERROR_BODY` characters, with ``…`` when cut."""
    if len(text) <= MAX_ERROR_BODY:
        return text
    return text[:MAX_ERROR_BODY] + "…"
