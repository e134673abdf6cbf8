"""The run store protocol: one row per Request, and the state machine every backend implements.

A halted run is saved keyed by the id of the Request it waits on. *Answering* a request and
*resuming* its run are separate steps, done by different processes if need be: anyone may
record an answer (a webhook, the approvals inbox, the CLI, an A2A follow-up) with no toolkit at
hand; a process that holds the toolkit then takes the answered request and resumes the run —
the live run parked on it, a worker, or a host calling ``client.resume`` itself.

The request's states (``status``), written once here; each backend's SQL names the transition
it implements by the row number of this table:

====  =====================  ===========================  ======================================
 #    from                   operation                    to, and what else happens
====  =====================  ===========================  ======================================
 T1   (no row)               ``save_halt(checkpoint)``    ``pending``: listed by `list_pending`
 T2   ``pending``            ``post_answer(answer)``      ``answered``: the answer *recorded*
                                                          (who, when, digest of what it
                                                          approves, the model's call when it
                                                          edits); queued; waiters woken
 T3   ``pending``, past its  ``post_answer``/``expire``   ``answered`` with the expired decline,
      ``expiresAt``                                       by `EXPIRED_BY`; ``post_answer``
                                                          raises `RequestExpired`
 T4   ``pending`` / no row   ``claim(answer)`` → Claim    ``claimed``: a host resumes with its
                                                          own answer; new token; lease;
                                                          the holder (`holder_name`)
 T5   ``answered``           ``take(id?)`` → Claim        ``claimed``: a resumer takes the
                                                          recorded answer; new token; lease;
                                                          the holder (`holder_name`)
 T6   ``claimed`` (token)    ``renew(claim)``             ``claimed``: the lease extended
 T7   ``claimed`` (token)    ``save_progress(cp, claim)`` ``claimed``: resolved calls recorded;
                                                          the answer now counts as recorded
                                                          (a T4 claim's lapse or release then
                                                          returns it to ``answered``); a
                                                          problem (T13) is cleared
 T8   ``claimed`` (token)    ``complete(id, claim, ...)`` ``done`` (``expired`` for the expired
                                                          decline): outcome kept, checkpoint
                                                          dropped, ``settled_at`` set
 T9   ``claimed`` (token)    ``release(id, claim)``       ``pending`` when the answer came with
                                                          the claim (T4; it is forgotten), else
                                                          ``answered`` (T5; it stays)
 T10  ``claimed``, lease     (time passes)                as T9 with nobody writing: listed or
      run out                                             queued again; the next claim or take
                                                          gets a new token
 T11  ``pending``; or        ``cancel(reason, by)``       ``cancelled``: checkpoint dropped;
      ``answered`` /                                      who/when/why kept (and the problem);
      ``claimed`` carrying                                waiters woken; a holder's writes
      a problem (T13),                                    then raise `LeaseLost`
      whatever its lease
 T12  ``done``/``expired``   ``purge(older_than)``        (deleted)
      /``cancelled``
 T13  ``claimed`` (token)    ``flag(id, claim, problem,   ``claimed``, held until ``now +
                             hold_s=…)``                  hold_s`` (``math.inf``: until an
                                                          operator acts); ``problem`` and
                                                          when recorded; listed for operators
                                                          beside the pending rows
====  =====================  ===========================  ======================================

**Fencing.** Every claim and take (T4, T5) gives the row a new, larger token and returns it in
the `Claim`. The holder's writes (T6–T9) succeed only while the row is ``claimed`` with *that*
token; otherwise they raise `LeaseLost` and change nothing. So a resumer that stalled past its
lease (a stopped process, a long GC pause) and was overtaken cannot record a second execution
of the tool or a second outcome. A holder keeps its lease alive with `RunStore.renew`.

**What exactly once means.** The answer is recorded once (a second `post_answer`, `claim` or
`cancel` is an `AnswerConflict` naming who answered); the outcome is recorded once (fencing);
the halted tool runs again only if its process dies in the gap between the tool returning and
the resolved call being recorded (T7), which a tool that must never repeat closes with the
idempotency key ``ctx.request_id`` gives it.

**Problems (T13).** A resumer that cannot go on with a request it holds flags it: the row
stays ``claimed`` under the holder's token, held for ``hold_s`` seconds (``math.inf``: until an
operator acts), and keeps the ``problem`` and when it was flagged. A finite hold then lapses
like any lease (T10: queued again, or pending again for a T4 claim); an infinite one never
does. Until the resume gets past the point that failed (T7 clears it), an unsettled row with a
problem is listed beside the pending ones (`RunStore.list_pending`, the inbox's queries) with
its real status, and an operator may `RunStore.cancel` it whatever its lease. A settled or
cancelled request keeps its problem, for the audit (`AnswerRecord.problem`).

**Unreadable checkpoints.** A stored checkpoint that this build cannot read (not JSON, not a
checkpoint, a ``version`` it does not know) is refused alike by every backend: `post_answer`
and `expire` raise `CheckpointError` and record nothing (an answer is never recorded for a run
that cannot resume); `take` never raises once it took a row — its `Claim` carries
``checkpoint=None`` and the error's text in ``unreadable``, for the resumer to flag (T13) —
and `load_halt` raises `CheckpointError`.

A ``pending`` row past its ``expiresAt`` stays listed until someone answers it or a worker
settles it (T3): the inbox shows it as expired.
"""

from __future__ import annotations

import functools
import os
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from ..loop.checkpoint import Checkpoint
from ..suspension import Answer

__all__ = [
    "DEFAULT_LEASE_S",
    "EXPIRED_BY",
    "SETTLED",
    "AnswerChannel",
    "AnswerRecord",
    "Claim",
    "HaltStatus",
    "PendingEntry",
    "RequestStatus",
    "RunStore",
    "WaitingReader",
    "holder_name",
]

DEFAULT_LEASE_S = 300.0
"""How long a claim holds a request before another process may take it over (seconds)."""

EXPIRED_BY = "toolnexus:expired"
"""The ``answered_by`` recorded with the expired decline of a request past its deadline."""

RequestStatus = Literal["pending", "answered", "claimed", "done", "expired", "cancelled"]
"""Where a request is in the state machine above."""

HaltStatus = RequestStatus  # the name this type had before the answered/claimed split

SETTLED: frozenset[str] = frozenset({"done", "expired", "cancelled"})
"""The final states: nothing moves a request out of them (only `RunStore.purge` deletes it)."""


def holder_name() -> str:
    """Who takes a claim (T4, T5) in this process, as every store records it: the host's name
    and the process id (``build-7:41234``), what an operator reads to tell which worker holds
    a request. ``toolnexus worker`` prints it when it starts."""
    return f"{_host()}:{os.getpid()}"  # the pid read each time: a forked child is another holder


@functools.cache
def _host() -> str:
    return socket.gethostname() or "localhost"


@dataclass(frozen=True, slots=True)
class PendingEntry:
    """One row of the pending index: a Request waiting for a human — or, for an operator, an
    unsettled one a resumer flagged (T13).

    Attributes:
        request_id, kind, prompt, tool, conversation_id, created_at, expires_at: the halted
            Request and its run, as the checkpoint had them.
        status: ``pending``; for a flagged row its real status (``answered``, ``claimed``).
        problem: what the resumer that flagged it reported (``None``: none).
        flagged_at: when it was flagged (seconds since the epoch; ``None``: never).
    """

    request_id: str
    kind: str
    prompt: str
    tool: str
    conversation_id: str | None
    created_at: float
    expires_at: str | None
    status: RequestStatus = "pending"
    problem: str | None = None
    flagged_at: float | None = None


@dataclass(frozen=True, slots=True)
class AnswerRecord:
    """What became of a Request once someone answered (or cancelled) it.

    Attributes:
        request_id: the Request's id.
        answer: the accepted answer (the expired decline for T3, ``ok=False,
            reason="cancelled"`` with ``data={"note": why}`` for a cancel).
        answered_at: when it was recorded (seconds since the epoch).
        answered_by: who answered (``None`` when nobody was named).
        digest: sha256 of the approved call's name and arguments: what was approved (the
            call with the edited arguments when the answer edits them).
        status: ``answered``, ``claimed``, ``done``, ``expired`` or ``cancelled``.
        settled_at: when the request reached a final state (``None`` before).
        outcome: what the resumed run ended with, once ``done``/``expired`` (see
            `toolnexus.resumption.outcome_of`).
        original: the model's call when the answer approved it with edited arguments:
            ``{"tool": name, "arguments": the model's raw arguments JSON text, "digest": that
            call's digest}`` (`toolnexus.stores.checks.edit_audit`); ``None`` when it did not
            edit. Kept once the request settles, for the audit.
        problem: what a resumer reported when it flagged the request (T13), kept once it
            settles or is cancelled; ``None`` when none.
        flagged_at: when it was flagged (``None``: never).
        lease_until: while ``claimed``, when the claim's lease runs out (seconds since the
            epoch; ``math.inf`` for a request held for an operator, T13); else ``None``.
        holder: while ``claimed``, who holds the claim (`holder_name` of the process that
            took it; ``None`` for a claim taken before stores recorded it); else ``None``.
    """

    request_id: str
    answer: Answer
    answered_at: float
    answered_by: str | None
    digest: str
    status: RequestStatus = "done"
    settled_at: float | None = None
    outcome: dict[str, Any] | None = field(default=None, compare=False)
    original: dict[str, Any] | None = None
    problem: str | None = None
    flagged_at: float | None = None
    lease_until: float | None = field(default=None, compare=False)
    holder: str | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Claim:
    """A request taken for resuming: the answer to apply and the fencing token to write with.

    Attributes:
        request_id: the Request's id.
        token: the fencing token; every write of the holder passes it.
        answer: the answer the resume applies.
        answered_by: who answered.
        lease_until: when the lease runs out unless renewed (seconds since the epoch).
        digest: the digest recorded with the answer: what it approves
            (`toolnexus.stores.checks.answer_digests`), for a check right before the approved
            call runs that the call is still that one. ``take`` returns the row's, ``claim``
            the one it was passed.
        unreadable: ``take`` only: the `CheckpointError`'s text when the stored checkpoint
            cannot be read (``checkpoint`` is then ``None``): the resumer flags the request
            (`RunStore.flag`) rather than resume it.
    """

    request_id: str
    token: int
    answer: Answer
    answered_by: str | None
    lease_until: float
    taken: float = field(default_factory=time.monotonic, compare=False)
    """When this process got the claim (``time.monotonic()``): how fresh its lease is."""
    checkpoint: Checkpoint | None = field(default=None, compare=False, repr=False)
    """The halted run, when the store read it with the take (saves the resumer a
    `RunStore.load_halt`); ``None`` otherwise."""
    digest: str = ""
    unreadable: str | None = None


@runtime_checkable
class RunStore(Protocol):
    """Where halted runs wait for their answer (the table above).

    Every method validates its arguments first (`UsageError`) and changes nothing when it
    raises.
    """

    async def save_halt(self, checkpoint: Checkpoint) -> None:
        """T1: insert the halted run waiting on ``checkpoint.pending.id``.

        Saving again replaces the checkpoint and keeps the row's status."""
        ...

    async def load_halt(self, request_id: str) -> Checkpoint | None:
        """The checkpoint waiting on ``request_id`` (any status), or ``None``."""
        ...

    async def post_answer(
        self,
        request_id: str,
        answer: Answer,
        *,
        answered_by: str | None = None,
        digest: str | None = None,
    ) -> AnswerRecord:
        """T2/T3: record ``answer`` for the halted run waiting on ``request_id``, exactly once.

        Records only: a resumer (the parked run, a worker) continues the run. ``digest``
        defaults to the digest of the stored halted call.

        Raises:
            UnknownRequest: no halted run waits on ``request_id``.
            AnswerMismatch: ``answer.id`` is not ``request_id``.
            UsageError: ``answer`` is not a well-typed `Answer` (or its wire dict).
            AnswerConflict: already answered, claimed under a live lease, or cancelled.
            RequestExpired: past its ``expiresAt``; the expired decline was recorded instead.
            CheckpointError: the stored checkpoint cannot be read; nothing was recorded.
        """
        ...

    async def expire(self, request_id: str) -> AnswerRecord:
        """T3: record the expired decline for a pending request (answered by `EXPIRED_BY`).

        Raises:
            UnknownRequest: no halted run waits on ``request_id``.
            AnswerConflict: it was answered or cancelled first.
            CheckpointError: the stored checkpoint cannot be read; nothing was recorded.
        """
        ...

    async def claim(
        self,
        request_id: str,
        answer: Answer,
        *,
        answered_by: str | None = None,
        digest: str = "",
        lease_s: float = DEFAULT_LEASE_S,
        original: Mapping[str, Any] | None = None,
    ) -> Claim:
        """T4: take ``request_id`` for resuming with ``answer`` (a host resuming itself).

        A request with no row is recorded too (a resume from a host-held transcript), so it
        can be answered only once as well. ``digest`` is what ``answer`` approves and
        ``original`` the model's call when it edits it (`toolnexus.stores.checks.edit_audit`
        of the checkpoint and ``answer``): both are recorded with the answer.

        Raises:
            AnswerConflict: answered, claimed under a live lease, or cancelled.
            UsageError: ``original`` is not ``None`` or an `edit_audit` mapping.
        """
        ...

    async def take(
        self,
        request_id: str | None = None,
        *,
        lease_s: float = DEFAULT_LEASE_S,
        queue: str = "",
    ) -> Claim | None:
        """T5: take an answered request for resuming: ``request_id``, or the oldest one
        answered in ``queue`` (the checkpoint's `Checkpoint.queue`: ``""`` for a client's
        runs, ``agents/<runtime id>`` for an agent tree's).

        Returns ``None`` when there is nothing to take (not answered yet, held by a live
        lease, settled, unknown). Two takers never get the same request under live leases.
        The `Claim` carries the stored checkpoint, or — when it cannot be read — ``None`` and
        the reason in ``unreadable``: a take never raises once it has taken the row.
        """
        ...

    async def renew(self, claim: Claim, *, lease_s: float = DEFAULT_LEASE_S) -> Claim:
        """T6: extend the lease; the returned `Claim` carries the new ``lease_until``.

        Raises:
            LeaseLost: the claim is no longer the request's current one.
        """
        ...

    async def save_progress(self, checkpoint: Checkpoint, claim: Claim) -> None:
        """T7: replace the claimed run's checkpoint (the calls the resume resolved).

        From here the claim's answer is recorded (``answered_at`` set if it was not): the
        approved call has run with it, so a lapse or a release returns the request to
        ``answered`` — to be finished with the same answer — never to ``pending``.

        Raises:
            LeaseLost: the claim is no longer the request's current one.
        """
        ...

    async def complete(
        self,
        request_id: str,
        claim: Claim | None = None,
        *,
        outcome: dict[str, Any] | None = None,
    ) -> None:
        """T8: the resume finished: settle the request ``done`` (or ``expired``).

        Without ``claim`` the write is not fenced (for callers that hold no claim).

        Raises:
            UnknownRequest: no row for ``request_id``.
            LeaseLost: ``claim`` is no longer the request's current one.
        """
        ...

    async def release(self, request_id: str, claim: Claim | None = None) -> None:
        """T9: the resume failed before finishing: give the request back.

        A stale ``claim`` (or a request that is not claimed) changes nothing."""
        ...

    async def cancel(
        self,
        request_id: str,
        *,
        reason: str | None = None,
        answered_by: str | None = None,
    ) -> AnswerRecord:
        """T11: end the halted run without resuming it.

        A pending request, or an unsettled one a resumer flagged (T13), whatever its lease: an
        operator ends a run held for them, and its holder's writes then raise `LeaseLost`.

        Raises:
            UnknownRequest: no halted run waits on ``request_id``.
            AnswerConflict: it was answered, claimed under a live lease, or settled first
                (and carries no problem).
        """
        ...

    async def purge(self, *, older_than: float) -> int:
        """T12: delete requests settled more than ``older_than`` seconds ago; the count."""
        ...

    async def flag(self, request_id: str, claim: Claim, problem: str, *, hold_s: float) -> None:
        """T13: the holder cannot go on: hold the request, with ``problem``, for an operator.

        Fenced like `renew`. The row stays ``claimed`` with its lease until ``now + hold_s``
        (``math.inf``: until an operator cancels it), and keeps ``problem`` and when it was
        flagged until a resume records progress (T7). A finite hold lapses like any lease
        (T10), so a checkpoint that could not be read is tried again after ``hold_s``.

        Example:
            >>> await store.flag(claim.request_id, claim, "the approved call changed",
            ...                  hold_s=math.inf)  # doctest: +SKIP

        Raises:
            UsageError: ``problem`` is not a non-empty string, ``hold_s`` not a number of
                seconds > 0 (``math.inf`` allowed), or ``claim`` not a `Claim`.
            LeaseLost: the claim is no longer the request's current one (or is another
                request's); nothing changed.
        """
        ...

    async def answer_record(self, request_id: str) -> AnswerRecord | None:
        """The recorded answer and status of ``request_id``; ``None`` while pending/unknown."""
        ...

    async def list_pending(
        self,
        *,
        kind: str | None = None,
        tool: str | None = None,
        conversation_id: str | None = None,
        older_than: float | None = None,
        newer_than: float | None = None,
        limit: int = 100,
    ) -> list[PendingEntry]:
        """Requests waiting for a human (``pending``, or T10 back to pending), and the
        unsettled ones a resumer flagged (T13, with their real ``status`` and ``problem``),
        oldest first.

        ``older_than`` / ``newer_than`` are ages in seconds."""
        ...


@runtime_checkable
class WaitingReader(Protocol):
    """Optional, beside `RunStore`: the read before a resume with the host's own answer
    (``client.resume(toolkit, answer)``).

    It is `RunStore.load_halt`, except that a halted run the same read shows claimed under a
    live lease raises the `AnswerConflict` the claim (T4) would, and a settled one the
    `AnswerConflict` its answer record names — a racing loser pays one read, not the guards,
    the claim and the record. `PostgresStore` has it; for a store without it the client reads
    with ``load_halt`` and the claim refuses instead.
    """

    async def load_waiting(self, request_id: str) -> Checkpoint | None:
        """The checkpoint to resume with the host's answer, or ``None`` (as ``load_halt``).

        Raises:
            AnswerConflict: claimed under a live lease, or settled.
            CheckpointError: the stored checkpoint is corrupt or from a newer toolnexus.
        """
        ...


@runtime_checkable
class AnswerChannel(Protocol):
    """The cross-process ``wait_for``: a live run parks on the store until its request moves.

    Wake-up is per backend: a future in memory, polling on the worker thread for SQLite
    (``poll_interval``), ``LISTEN/NOTIFY`` on the store's channel for Postgres (one per schema;
    ``toolnexus_answers`` in ``public``). A spurious wake is harmless: waiters re-read the row.
    """

    async def wait_for_answer(
        self, request_id: str, *, timeout: float | None
    ) -> AnswerRecord | None:
        """Wait until ``request_id`` leaves ``pending`` and return its record.

        Returns at once when it already has; ``None`` when ``timeout`` seconds pass first
        (``None`` waits for ever).
        """
        ...

    async def wait_for_queued(self, *, timeout: float) -> None:
        """Return when an answer may have been queued for a resumer (T2, T3, T9), or after
        ``timeout`` seconds — what a worker waits on between drains. A spurious return is
        harmless; a lease running out (T10) is noticed at the next drain."""
        ...
