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
    │   └── ContentGuardBlocked   the content guard's ``before_llm`` hook refused the text
    ├── ResumeError           a halted run cannot be resumed as asked
    │   ├── AnswerMismatch    the Answer does not echo the pending Request's id
    │   ├── InvalidAnswer     the Answer's fields have the wrong types, or the request does not
    │   │                     take that answer (`toolnexus.intake`; also a UsageError)
    │   ├── ApprovalMismatch  the call to run is not the one that was approved: nothing ran
    │   ├── AnswerConflict    the Request was already answered (by someone else)
    │   │   └── LeaseLost     another resume took the request over (a stale fencing token)
    │   ├── UnknownRequest    no halted run waits on that Request id
    │   └── RequestExpired    the Request's ``expiresAt`` has passed (where rejection is asked for)
    ├── ClassifierError       a classifier could not answer: limits, HTTP, garbage, a miss
    ├── CheckpointError       a stored checkpoint is corrupt or of an unknown version
    └── StoreError            a conversation/run store failed (locked, corrupt, unreachable)

Lower-layer exceptions (``aiohttp``, ``sqlite3``, ``psycopg``) never escape: they are translated
at the boundary and chained as ``__cause__``.
"""

from __future__ import annotations

__all__ = [
    "AnswerConflict",
    "AnswerMismatch",
    "ApprovalMismatch",
    "BadResponse",
    "CallbackError",
    "CheckpointError",
    "ClassifierError",
    "ContentGuardBlocked",
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

    Two constructor forms::

        ProviderError("HTTP 503: busy", status=503, body="busy", retry_after=2.0)   # ours
        ProviderError(503, "busy", "2")          # the existing package's: status, text, header

    The second form is what a synchronous ``http_transport`` raises: its message is
    ``LLM <status>: <body capped at 200 chars>``, ``body`` is redacted (empty for 401/403, the
    account identifiers masked) and ``retry_after`` is the raw header string.

    Attributes:
        status: the HTTP status (``None`` when the reply itself was unusable).
        body: the response body text (``text`` is an alias).
        retry_after: the ``Retry-After`` as given: a parsed float in our form, the raw header
            string (or ``None``) in the existing package's form.
        retry_after_s: the delay in seconds the retry loop honours, or ``None``.
    """

    def __init__(
        self,
        message: str | int,
        text: str | None = None,
        retry_after_header: str | None = None,
        *,
        status: int | None = None,
        body: str = "",
        retry_after: float | None = None,
    ) -> None:
        if isinstance(message, int) and not isinstance(message, bool):
            from ._error_body import capped_error_body, parse_retry_after, safe_error_body

            status = message
            body = safe_error_body(status, text or "")
            shown = capped_error_body(status, text or "")
            super().__init__(f"LLM {status}: {shown}" if shown else f"LLM {status}")
            self.status: int | None = status
            self.body = body
            self.retry_after: float | str | None = retry_after_header
            self.retry_after_s = parse_retry_after(retry_after_header)
            return
        super().__init__(message)
        self.status = status
        self.body = body
        self.retry_after = retry_after
        self.retry_after_s = retry_after

    @property
    def text(self) -> str:
        """The existing package's name for `body`."""
        return self.body


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


class ContentGuardBlocked(CallbackError):
    """The content guard's ``before_llm`` hook blocked the latest user text
    (``content guard blocked: harmful``). A `CallbackError`, so the run ends with it as it is,
    not wrapped."""


class ResumeError(ToolnexusError):
    """A halted run cannot be resumed as asked. Nothing was changed."""


class AnswerMismatch(ResumeError):
    """The Answer's id does not echo the pending Request's id."""


class InvalidAnswer(UsageError, ResumeError):
    """The Answer is malformed (``ok="false"``, ``data="x"``, unknown keys): the same check for
    an `Answer` object and its wire dict, on every path. Nothing was recorded."""


class AnswerConflict(ResumeError):
    """The Request was already answered; ``answered_by`` names who won, when known.

    ``status`` is the request's status as the store saw it when it refused (``answered``,
    ``claimed``, ``done``, ``expired`` or ``cancelled``), when known.
    """

    def __init__(
        self, message: str, *, answered_by: str | None = None, status: str | None = None
    ) -> None:
        super().__init__(message)
        self.answered_by = answered_by
        self.status = status


class LeaseLost(AnswerConflict):
    """The resume's claim is no longer the request's current one: its lease ran out and
    another resume took the request over (or it was released). Nothing was written."""


class ApprovalMismatch(ResumeError):
    """The call a resume would run is not the call the answer approved: the checkpoint changed
    after the approval (its digest no longer matches the one recorded with the answer).
    Nothing ran; the request is held for an operator (listed with its problem; cancellable)."""


class UnknownRequest(ResumeError, KeyError):
    """No halted run waits on that Request id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown request"


class RequestExpired(ResumeError):
    """The Request's ``expiresAt`` has passed."""


class ClassifierError(ToolnexusError):
    """A classifier could not answer (`toolnexus.classifier`): a question over its limits, an
    endpoint that failed or answered garbage, a static corpus without the request. The text
    never carries a credential, an expanded header, or the body of a 401/403 reply.

    Attributes:
        status: the endpoint's HTTP status, when it answered with one.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class CheckpointError(ToolnexusError):
    """A stored checkpoint is corrupt, hand-edited into nonsense, or of an unknown version."""


class StoreError(ToolnexusError):
    """A store failed: the database is locked, corrupt or unreachable."""
