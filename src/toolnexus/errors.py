"""One exception tree for everything toolnexus raises.

::

    ToolnexusError
    ├── UsageError            the caller's mistake: bad options, missing API key, bad arguments
    ├── ProviderError         the model endpoint failed: ``status``, ``body``, ``retry_after``
    │   └── BadResponse       a 2xx reply we cannot read (garbage JSON, no choices, cut stream)
    ├── TransportError        the network failed (connection refused/reset) after retries
    ├── RunTimeout            ``timeout_ms`` elapsed; the in-flight request was aborted
    ├── RunCancelled          the caller's ``cancel`` fired; the in-flight request was aborted
    ├── CallbackError         a host callback (hook, ``wait_for``, ``on_error``) raised
    ├── ResumeError           a halted run cannot be resumed as asked
    │   ├── AnswerMismatch    the Answer does not echo the pending Request's id
    │   ├── InvalidAnswer     the Answer's fields have the wrong types (also a UsageError)
    │   ├── AnswerConflict    the Request was already answered (by someone else)
    │   │   └── LeaseLost     another resume took the request over (a stale fencing token)
    │   ├── UnknownRequest    no halted run waits on that Request id
    │   └── RequestExpired    the Request's ``expiresAt`` has passed (where rejection is asked for)
    ├── CheckpointError       a stored checkpoint is corrupt or of an unknown version
    └── StoreError            a conversation/run store failed (locked, corrupt, unreachable)

Lower-layer exceptions (``aiohttp``, ``sqlite3``, ``psycopg``) never escape: they are translated
at the boundary and chained as ``__cause__``.
"""

from __future__ import annotations

__all__ = [
    "AnswerConflict",
    "AnswerMismatch",
    "BadResponse",
    "CallbackError",
    "CheckpointError",
    "InvalidAnswer",
    "LeaseLost",
    "ProviderError",
    "RequestExpired",
    "ResumeError",
    "RunCancelled",
    "RunTimeout",
    "StoreError",
    "ToolnexusError",
    "TransportError",
    "UnknownRequest",
    "UsageError",
]


class ToolnexusError(Exception):
    """Base of every error toolnexus raises."""


class UsageError(ToolnexusError, ValueError):
    """The caller used the API wrongly (bad option, missing key, invalid argument)."""


class ProviderError(ToolnexusError):
    """The model endpoint answered with an error status.

    Attributes:
        status: the HTTP status (``None`` when the reply itself was unusable).
        body: the response body text, as received.
        retry_after: the parsed ``Retry-After`` delay in seconds, when the header was valid.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.retry_after = retry_after


class BadResponse(ProviderError):
    """The endpoint answered 2xx with something we cannot read."""


class TransportError(ToolnexusError, ConnectionError):
    """The network failed: connection refused, reset, or closed mid-stream."""


class RunTimeout(ToolnexusError, TimeoutError):
    """The run's ``timeout_ms`` deadline passed; the in-flight request was aborted."""


class RunCancelled(ToolnexusError):
    """The caller's cancel signal fired; the in-flight request was aborted."""


class CallbackError(ToolnexusError):
    """A host callback (hook, ``wait_for``, ``on_error``) raised; the original is the cause."""


class ResumeError(ToolnexusError):
    """A halted run cannot be resumed as asked. Nothing was changed."""


class AnswerMismatch(ResumeError):
    """The Answer's id does not echo the pending Request's id."""


class InvalidAnswer(UsageError, ResumeError):
    """The Answer is malformed (``ok="false"``, ``data="x"``, unknown keys): the same check for
    an `Answer` object and its wire dict, on every path. Nothing was recorded."""


class AnswerConflict(ResumeError):
    """The Request was already answered; ``answered_by`` names who won, when known."""

    def __init__(self, message: str, *, answered_by: str | None = None) -> None:
        super().__init__(message)
        self.answered_by = answered_by


class LeaseLost(AnswerConflict):
    """The resume's claim is no longer the request's current one: its lease ran out and
    another resume took the request over (or it was released). Nothing was written."""


class UnknownRequest(ResumeError, KeyError):
    """No halted run waits on that Request id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown request"


class RequestExpired(ResumeError):
    """The Request's ``expiresAt`` has passed."""


class CheckpointError(ToolnexusError):
    """A stored checkpoint is corrupt, hand-edited into nonsense, or of an unknown version."""


class StoreError(ToolnexusError):
    """A store failed: the database is locked, corrupt or unreachable."""
