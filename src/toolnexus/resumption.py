"""The one resumption: every entry point that continues a halted run goes through here.

::

    guards → claim → restore → apply the answer → record the resolved calls → continue → settle

`Resumption.begin` does everything up to "continue": it checks the answer against the halted
run (`toolnexus.loop.guards`) before anything is written, takes the request (a host's own
answer is claimed, T4; a recorded answer arrives already taken, T5 — see
`toolnexus.stores.requests`), restores the checkpoint into a fresh run state, applies the
answer (the halted tool re-executed with ``ctx.answer``, or the relay output spliced), and
records the resolved calls with the claim's fencing token *before* the model is called again.
A resume that dies after that point and is retried never runs those calls twice.

The caller then continues the run with its own driver (the client's loop, streaming or not;
an agent handle's turn) and calls `Resumption.settle`: the transcript is saved first, then the
request is completed with the run's outcome, fenced — so the outcome is durable before the
request counts as done, and a resumer that was overtaken cannot record a second one. A failure
anywhere gives the claim back (`Resumption.abandon`), so the run stays retryable.

``client.resume`` / ``run_with_answer`` / ``ask_with_answer`` and their stream variants, the
parked run of ``store_wait_for``, the worker (`toolnexus.worker`) and the agent runtime all use
this one object.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ._types import RunResult
from .errors import AnswerConflict, LeaseLost, ResumeError
from .loop.checkpoint import Checkpoint
from .loop.edits import check_tool_edit
from .loop.engine import Engine, RunState, Slot
from .loop.guards import check_echo, check_relay_payload, check_tools
from .stores.base import ConversationStore
from .stores.checks import answer_digests, halted_request
from .stores.requests import DEFAULT_LEASE_S, EXPIRED_BY, Claim, RunStore
from .suspension import Answer, Request, expired_decline, is_expired

__all__ = ["Recorder", "Resumed", "Resumption", "outcome_of"]

Recorder = Callable[[Checkpoint, Claim], Awaitable[None]]
"""Records a resume's progress (the checkpoint with the resolved calls) under its claim."""

log = logging.getLogger("toolnexus")


@dataclass(slots=True, kw_only=True)
class Resumed:
    """A taken request whose answer is applied and recorded: the run, ready to go on.

    Attributes:
        claim: the claim every later write is fenced with.
        state: the restored run state (answer applied).
        slots: the halted turn's calls, now resolved (or suspended again).
        started: ``time.perf_counter()`` when the resume began (for the run metric).
        conversation_id: where the transcript is saved when the run ends (``None``: the
            outcome keeps the messages instead).
    """

    claim: Claim
    state: RunState
    slots: list[Slot]
    started: float
    conversation_id: str | None


def outcome_of(result: RunResult, *, messages: bool) -> dict[str, Any]:
    """What a settled request keeps of the run it resumed (JSON data).

    ``status`` / ``text`` / ``turns`` / ``usage``, the id of the next Request when the run
    halted again, and — when no conversation store keeps it — the whole transcript.
    """
    out: dict[str, Any] = {
        "status": result.status,
        "text": result.text,
        "turns": result.turns,
        "usage": dict(result.usage),
    }
    if result.pending is not None:
        out["pending"] = result.pending.id
    if result.limit:
        out["limit"] = result.limit
    if messages:
        out["messages"] = result.messages
    return out


class Resumption:
    """The resume protocol over one run store.

    Args:
        runs: the store that holds the halted runs.
        lease_s: how long a claim holds the request before another resumer may take over.
        hold_on_failure: ``None`` gives a failed resume's claim back at once (a host that
            resumes itself retries when it likes); a number of seconds keeps holding it that
            long instead, so the request returns to the queue only then — a worker's backoff,
            which keeps a run that cannot resume here from being retried in a hot loop.
    """

    __slots__ = ("hold_on_failure", "lease_s", "runs")

    def __init__(
        self,
        runs: RunStore,
        *,
        lease_s: float = DEFAULT_LEASE_S,
        hold_on_failure: float | None = None,
    ) -> None:
        self.runs = runs
        self.lease_s = lease_s
        self.hold_on_failure = hold_on_failure

    async def begin(
        self,
        engine: Engine,
        state: RunState,
        checkpoint: Checkpoint,
        answer: Answer,
        *,
        claim: Claim | None = None,
        answered_by: str | None = None,
        conversation_id: str | None = None,
        record: Recorder | None = None,
    ) -> Resumed:
        """Guards, claim, restore, apply, record. Nothing is written until the guards passed;
        once the request is held — claimed here, or handed in — a failure gives it back
        (`abandon`) before raising, so callers never have to.

        Args:
            engine: the engine that continues the run.
            state: a fresh run state over the resuming toolkit (``by_name`` is checked).
            checkpoint: the halted run (from the store, or rebuilt from a transcript).
            answer: the answer to apply (a claim's own answer when ``claim`` is given).
            claim: a request already taken (T5: a worker, a parked run); ``None`` claims it
                now with ``answer`` (T4).
            answered_by: recorded with a claim made here.
            conversation_id: when given, it must be the halted run's own conversation.
            record: how the resolved calls are recorded (default: `RunStore.save_progress`,
                fenced by the claim); the agent runtime also writes the handle's row.

        Raises:
            AnswerMismatch: the answer does not echo the halted request.
            ResumeError: the toolkit lacks a halted tool, an ``ok`` relay answer lacks an
                output, or the checkpoint belongs to another conversation.
            AnswerConflict: someone else answered or holds the request.
            LeaseLost: ``claim`` was overtaken before the answer could be applied.
        """
        rid = answer.id
        handed = claim
        try:
            request = self.check(state, checkpoint, answer, conversation_id=conversation_id)
            owner = checkpoint.conversation_id
            _warn_if_tools_changed(checkpoint, state, rid)
            effective = answer
            if claim is None:
                if is_expired(request):
                    effective, answered_by = expired_decline(rid), EXPIRED_BY
                try:
                    claim = await self.runs.claim(
                        rid,
                        effective,
                        answered_by=answered_by,
                        digest=answer_digests(checkpoint, effective)[0],
                        lease_s=self.lease_s,
                    )
                except AnswerConflict as refused:
                    claim = await self._retake(rid, effective, refused)
            else:
                # A claim taken a while ago (a worker's queue, a parked run): make sure it is
                # still ours before the approved call runs again. One taken a moment ago still
                # holds most of its lease: no round trip for that.
                if time.monotonic() - claim.taken > claim_fresh_s(self.lease_s):
                    claim = await self.runs.renew(claim, lease_s=self.lease_s)
                effective = claim.answer
        except BaseException:
            if handed is not None:  # a claim handed in is given back on every failure
                await self.abandon(handed)
            raise
        started = time.perf_counter()
        state.expired = not effective.ok and claim.answered_by == EXPIRED_BY
        try:
            state.conversation_id = owner or conversation_id
            slots = engine.restore(state, checkpoint)
            engine.trace_wait(checkpoint, effective, claim.answered_by)
            await engine.apply_answer(state, slots, request, effective)
            # Record the resolved calls before going on: a resume that fails from here (or a
            # process that dies) and is retried never executes them twice.
            progress = engine.snapshot(state, slots, checkpoint.pending)
            progress.created_at = checkpoint.created_at
            progress.trace = checkpoint.trace  # a retried resume joins the halted run's trace
            if record is None:
                await self.runs.save_progress(progress, claim)
            else:
                await record(progress, claim)
        except BaseException as exc:
            engine.end_span(state, None, exc)
            await self.abandon(claim)
            raise
        return Resumed(
            claim=claim,
            state=state,
            slots=slots,
            started=started,
            conversation_id=state.conversation_id,
        )

    async def _retake(self, request_id: str, answer: Answer, refused: AnswerConflict) -> Claim:
        """A host retrying its own resume: when the very answer it resumes with is already
        recorded and queued (its earlier attempt recorded it, then failed), take it.

        Raises:
            AnswerConflict: ``refused`` (which names who holds or answered the request) for
                anything else — another answer, a live claim, a settled request.
        """
        if refused.status not in (None, "answered"):
            raise refused  # held under a live lease, or settled: nothing here to take
        record = await self.runs.answer_record(request_id)
        if record is not None and record.status == "answered" and record.answer == answer:
            claim = await self.runs.take(request_id, lease_s=self.lease_s)
            if claim is not None:
                return claim
        raise refused

    @staticmethod
    def check(
        state: RunState,
        checkpoint: Checkpoint,
        answer: Answer,
        *,
        conversation_id: str | None = None,
    ) -> Request:
        """The guards alone (pure, nothing written); returns the halted Request.

        Raises:
            AnswerMismatch: the answer does not echo the halted request.
            ResumeError: a halted tool is missing, an ``ok`` relay answer lacks an output, or
                the checkpoint belongs to another conversation than ``conversation_id``.
            InvalidAnswer: the answer approves edited arguments that fail the halted tool's
                input schema (`toolnexus.loop.edits`).
        """
        rid = answer.id
        request = halted_request(checkpoint, rid)
        check_echo(request, answer)
        owner = checkpoint.conversation_id
        if conversation_id is not None and owner is not None and owner != conversation_id:
            raise ResumeError(
                f'toolnexus: cannot resume — request "{rid}" belongs to conversation '
                f'"{owner}", not "{conversation_id}"'
            )
        check_tools(checkpoint, state.by_name)
        check_relay_payload(checkpoint, answer, state.by_name)
        for slot in checkpoint.outstanding:
            if slot.request is not None and slot.request.id == rid:
                check_tool_edit(state.by_name.get(slot.name), slot.name, slot.request, answer)
        return request

    async def settle(
        self,
        resumed: Resumed,
        result: RunResult,
        conversations: ConversationStore | None,
    ) -> None:
        """The resumed run ended (done, incomplete, or halted again on a new request, already
        saved): save its transcript, then complete the request with its outcome (fenced).

        A conversation store is not fenced by the claim, so the claim is checked (renewed)
        right before the transcript is written: a resumer that was overtaken stops here with
        `LeaseLost` instead of writing over the winner's transcript.
        """
        cid = resumed.conversation_id
        keep_messages = cid is None or conversations is None
        if not keep_messages:
            assert conversations is not None
            assert cid is not None
            resumed.claim = await self.runs.renew(resumed.claim, lease_s=self.lease_s)
            await conversations.save(cid, result.messages)
        await self.runs.complete(
            resumed.claim.request_id,
            resumed.claim,
            outcome=outcome_of(result, messages=keep_messages),
        )

    async def abandon(self, claim: Claim) -> None:
        """After a failure: give the claim back, or hold it for ``hold_on_failure`` seconds
        (the run stays retryable either way); never raises."""
        try:
            if self.hold_on_failure is None:
                await asyncio.shield(self.runs.release(claim.request_id, claim))
            else:
                await asyncio.shield(self.runs.renew(claim, lease_s=self.hold_on_failure))
        except LeaseLost:
            pass  # another resumer holds it now: nothing of ours to give back
        except Exception:
            log.warning(
                "toolnexus: could not release the claim on %s", claim.request_id, exc_info=True
            )


def claim_fresh_s(lease_s: float) -> float:
    """How old a claim may be and still be applied without renewing it first: a tenth of its
    lease, so at least nine tenths of it remain for the approved call."""
    return lease_s / 10


def _warn_if_tools_changed(checkpoint: Checkpoint, state: RunState, request_id: str) -> None:
    if checkpoint.fingerprint and checkpoint.fingerprint != state.tool_fingerprint():
        log.warning(
            "toolnexus: the tool set changed since request %s halted; resuming anyway", request_id
        )
