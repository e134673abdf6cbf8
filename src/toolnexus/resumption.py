"""The one resumption: every halted run is continued and settled through here.

::

    guards → accept (the intake) → claim or take → heartbeat → restore → bind (the approved
    call is the one in the checkpoint) → apply (the lease confirmed right before the approved
    tool runs) → record progress → [the caller's driver continues the run] → settle | abandon

Five kinds of halted run go through it: a bare client's (``client.resume`` / ``run_with_answer``
/ ``ask_with_answer`` and their stream variants, the run parked by ``store_wait_for``), a
worker's (`toolnexus.worker`), an A2A task's (`toolnexus.serve.fulfil`), an agent tree's (each
level of the cascade, `toolnexus.agents`) and a served MCP call's (`toolnexus.serve.mcp_halts`).

`Resumption.begin` does everything up to "continue": the guards check the answer against the
halted run before anything is written; a host's own answer goes through the intake
(`toolnexus.intake`) — once per resume — and is claimed (T4; a recorded answer arrives already
taken, T5, see `toolnexus.stores.requests`); from then on a heartbeat renews the lease every
third of ``lease_s`` until the run is settled or abandoned. The checkpoint is restored and the
call the answer approves is checked against the digest recorded with it: a checkpoint changed
after the approval is flagged for an operator and nothing runs (`ApprovalMismatch`). The answer
is applied — the halted tool re-executed with ``ctx.answer``, the lease confirmed after the
``before_tool`` hooks and right before the tool starts (renewed, fenced, unless it was taken or
renewed a moment ago), so a resumer that was overtaken never starts it — and the resolved
calls are recorded with the claim's fencing token *before* the model is called again: a resume
that dies after that and is retried never runs those calls twice.

The caller then continues the run with its own driver (the client's loop, streaming or not; an
agent handle's turn; nothing for a served MCP call) and calls `Resumption.settle` with the run's
`Outcome`: the transcript is saved first (fenced by a renew), then the request is completed,
fenced — so the outcome is durable before the request counts as done, and a resumer that was
overtaken cannot record a second one. A failure anywhere gives the claim back
(`Resumption.abandon`), so the run stays retryable; an unreadable checkpoint is flagged for
operators as it is given back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._types import Message, RunResult
from .errors import ApprovalMismatch, CheckpointError, LeaseLost, ResumeError, UnknownRequest
from .intake import intake
from .loop import edits
from .loop.checkpoint import Checkpoint
from .loop.engine import Engine, RunState, Slot
from .loop.guards import check_echo, check_tools
from .stores.base import ConversationStore
from .stores.checks import answer_audit, call_digest, conflict, halted_request
from .stores.requests import DEFAULT_LEASE_S, EXPIRED_BY, Claim, RunStore
from .suspension import Answer, Request, expired_decline, is_expired

__all__ = ["Outcome", "Recorder", "Resumed", "Resumption", "claim_fresh_s"]

Recorder = Callable[[Checkpoint, Claim], Awaitable[None]]
"""Records a resume's progress (the checkpoint with the resolved calls) under its claim."""

log = logging.getLogger("toolnexus")


@dataclass(slots=True, kw_only=True)
class Outcome:
    """What a settled request keeps of the run it resumed — one type for every halted run.

    Attributes:
        status: ``done``, ``pending`` (halted again), ``incomplete``, ``error`` … (an agent
            tree: the highest resumed handle's status).
        text: the final text.
        turns: model calls so far.
        usage: token counts (a tree: ``total_tokens`` of the resumed subtree).
        limit: the limit an ``incomplete`` run stopped at.
        pending: the id of the next Request, when the run halted again.
        messages: the transcript, kept only when no conversation store saves it.
        extra: what a surface keeps beside (a served MCP call's result and token note), stored
            at the top level of the outcome.
    """

    status: str
    text: str = ""
    turns: int = 0
    usage: Mapping[str, int] = field(default_factory=lambda: {})
    limit: str | None = None
    pending: str | None = None
    messages: list[Message] | None = None
    extra: Mapping[str, Any] | None = None

    @classmethod
    def of_run(cls, result: RunResult) -> Outcome:
        """A client run's outcome (its transcript too)."""
        return cls(
            status=result.status,
            text=result.text,
            turns=result.turns,
            usage=dict(result.usage),
            limit=result.limit,
            pending=result.pending.id if result.pending is not None else None,
            messages=result.messages,
        )

    def to_json(self, *, messages: bool = True) -> dict[str, Any]:
        """The stored outcome (JSON data): ``status``/``text``/``turns``/``usage``, ``limit``
        and ``pending`` when set, ``messages`` when kept, then ``extra``."""
        out: dict[str, Any] = {
            "status": self.status,
            "text": self.text,
            "turns": self.turns,
            "usage": dict(self.usage),
        }
        if self.pending is not None:
            out["pending"] = self.pending
        if self.limit:
            out["limit"] = self.limit
        if messages and self.messages is not None:
            out["messages"] = self.messages
        if self.extra:
            out.update(self.extra)
        return out


@dataclass(slots=True, kw_only=True)
class Resumed:
    """A taken request whose answer is applied and recorded: the run, ready to go on.

    Attributes:
        claim: the claim every later write is fenced with (kept current by the heartbeat).
        request: the halted request.
        state: the restored run state (answer applied).
        slots: the halted turn's calls, now resolved (or suspended again).
        started: ``time.perf_counter()`` when the resume began (for the run metric).
        conversation_id: where the transcript is saved when the run ends (``None``: the
            outcome keeps the messages instead).
    """

    claim: Claim
    request: Request
    state: RunState
    slots: list[Slot]
    started: float
    conversation_id: str | None


class _Fence:
    """The engine's view of a claim while the answer is applied (`toolnexus.loop.state.Fence`)."""

    __slots__ = ("claim", "resumption")

    def __init__(self, resumption: Resumption, claim: Claim) -> None:
        self.resumption = resumption
        self.claim = claim

    @property
    def token(self) -> int:
        return self.claim.token

    async def confirm(self) -> None:
        self.claim = await self.resumption.confirm(self.claim)


class Resumption:
    """The resume protocol over one run store.

    Args:
        runs: the store that holds the halted runs.
        lease_s: how long a claim holds the request before another resumer may take over; a
            heartbeat renews it every third of that while the run is held here.
        hold_on_failure: ``None`` gives a failed resume's claim back at once (a host that
            resumes itself retries when it likes); a number of seconds keeps holding it that
            long instead, so the request returns to the queue only then — a worker's backoff,
            which keeps a run that cannot resume here from being retried in a hot loop.
    """

    __slots__ = ("_held", "_renewing", "_timer", "hold_on_failure", "lease_s", "runs")

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
        self._held: dict[str, Claim] = {}
        self._timer: asyncio.TimerHandle | None = None  # the heartbeat's next tick
        self._renewing: asyncio.Task[None] | None = None  # a tick's renews, in flight

    # -- before anything is written ------------------------------------------------------------

    @staticmethod
    def check(
        state: RunState,
        checkpoint: Checkpoint,
        answer: Answer,
        *,
        conversation_id: str | None = None,
    ) -> Request:
        """The guards (pure, nothing written); returns the halted Request.

        Raises:
            AnswerMismatch: the answer does not echo the halted request.
            ResumeError: a halted tool is missing, or the checkpoint belongs to another
                conversation than ``conversation_id``.
        """
        rid = answer.id
        request: Request = halted_request(checkpoint, rid)
        check_echo(request, answer)
        owner = checkpoint.conversation_id
        if conversation_id is not None and owner is not None and owner != conversation_id:
            raise ResumeError(
                f'toolnexus: cannot resume — request "{rid}" belongs to conversation '
                f'"{owner}", not "{conversation_id}"'
            )
        check_tools(checkpoint, state.by_name)
        return request

    @staticmethod
    def accept(state: RunState, checkpoint: Checkpoint, answer: Answer) -> Answer:
        """A host's own answer through the intake (`toolnexus.intake`), against the halted
        call's tool as this process has it (an edit checked against its input schema).

        Raises:
            InvalidAnswer: the request does not take that answer (`AnswerRefused`).
        """
        request: Request = halted_request(checkpoint, answer.id)
        name, schema = "", None
        for slot in checkpoint.outstanding:
            if slot.request is not None and slot.request.id == request.id:
                tool = state.by_name.get(slot.name)
                name = slot.name
                schema = edits.edit_schema(tool) if tool is not None else slot.input_schema
                break
        return intake(request, answer, tool=name, edit_schema=schema)

    async def refuse_if_answered(self, request_id: str) -> None:
        """Raise the `AnswerConflict` naming who answered (or cancelled) ``request_id``, if
        anyone did; return when nobody has."""
        record = await self.runs.answer_record(request_id)
        if record is not None:
            raise conflict(request_id, record.answered_by, record.status)

    async def load(self, claim: Claim) -> Checkpoint:
        """The halted run of a taken request: read with the take, else loaded now.

        A checkpoint that cannot be read is flagged for operators as the claim is given back
        (held for ``hold_on_failure``, then queued again; an operator may cancel it).

        Raises:
            UnknownRequest: no checkpoint is stored for it (the claim is given back).
            CheckpointError: it cannot be read (flagged, given back).
        """
        checkpoint = claim.checkpoint
        try:
            if checkpoint is None and claim.unreadable is not None:
                raise CheckpointError(claim.unreadable)
            if checkpoint is None:
                checkpoint = await self.runs.load_halt(claim.request_id)
        except CheckpointError as exc:
            await self.abandon(claim, problem=f"the stored checkpoint cannot be read: {exc}")
            raise
        if checkpoint is None:
            await self.abandon(claim)
            raise UnknownRequest(f'no halted run waits on request "{claim.request_id}"')
        return checkpoint

    # -- begin ---------------------------------------------------------------------------------

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
        checked: bool = False,
    ) -> Resumed:
        """Guards, accept, claim, heartbeat, restore, bind, apply, record. Nothing is written
        until the guards and the intake passed; once the request is held — claimed here, or
        handed in — a failure gives it back (`abandon`) before raising, so callers never have
        to.

        Args:
            engine: the engine that continues the run.
            state: a fresh run state over the resuming toolkit (``by_name`` is checked).
            checkpoint: the halted run (from the store, or rebuilt from a transcript).
            answer: the answer to apply (a claim's own answer when ``claim`` is given).
            claim: a request already taken (T5: a worker, a parked run, a served task); its
                answer was accepted when it was recorded. ``None`` accepts ``answer`` and
                claims the request with it now (T4).
            answered_by: recorded with a claim made here.
            conversation_id: when given, it must be the halted run's own conversation.
            record: how the resolved calls are recorded (default: `RunStore.save_progress`,
                fenced by the claim); the agent runtime also writes the handle's row.
            checked: the caller ran `check` already (an agent tree checks each level before it
                moves the handle).

        Raises:
            AnswerMismatch: the answer does not echo the halted request.
            InvalidAnswer: the request does not take the answer (nothing written).
            ResumeError: the toolkit lacks a halted tool, or the checkpoint belongs to another
                conversation.
            AnswerConflict: someone else answered or holds the request — also when the very
                same answer was recorded already (resume that one with ``client.resume(
                toolkit, request_id)``).
            ApprovalMismatch: the call in the checkpoint is not the one that was approved; the
                request is held for an operator and nothing ran.
            LeaseLost: the claim was overtaken before the approved tool could start.
        """
        rid = answer.id
        handed = claim
        try:
            if checked:
                request: Request = halted_request(checkpoint, rid)
            else:
                request = self.check(state, checkpoint, answer, conversation_id=conversation_id)
            owner = checkpoint.conversation_id
            _warn_if_tools_changed(checkpoint, state, rid)
            if claim is None:
                effective = self.accept(state, checkpoint, answer)
                if is_expired(request):
                    effective, answered_by = expired_decline(rid), EXPIRED_BY
                audit = answer_audit(checkpoint, effective)
                claim = await self.runs.claim(
                    rid,
                    effective,
                    answered_by=answered_by,
                    digest=audit.approved,
                    original=audit.original,
                    lease_s=self.lease_s,
                )
                bound = True  # its digest is this checkpoint's: nothing to compare
            else:
                # A claim taken a while ago (a worker's queue, a parked run): make sure it is
                # still ours before anything runs.
                claim = await self.confirm(claim)
                effective = claim.answer
                bound = False
                if _edit_unchecked(checkpoint, request, effective):
                    self.accept(state, checkpoint, effective)  # recorded before the schema was
        except BaseException:
            if handed is not None:  # a claim handed in is given back on every failure
                await self.abandon(handed)
            raise
        self._hold(claim)
        started = time.perf_counter()
        state.expired = not effective.ok and claim.answered_by == EXPIRED_BY
        fence = _Fence(self, claim)
        try:
            state.conversation_id = owner or conversation_id
            slots = engine.restore(state, checkpoint)
            if not bound:  # an answer recorded earlier: is the call still the approved one?
                await self._bind(state, slots, request, effective, claim)
            engine.trace_wait(checkpoint, effective, claim.answered_by)
            state.fence = fence
            try:
                await engine.apply_answer(state, slots, request, effective)
            finally:
                state.fence = None
            claim = self._held.get(rid, fence.claim)
            # Record the resolved calls before going on: a resume that fails from here (or a
            # process that dies) and is retried never executes them twice.
            progress = engine.snapshot(state, slots, checkpoint.pending)
            progress.created_at = checkpoint.created_at
            progress.queue = checkpoint.queue  # (the recorder of an agent tree sets its own)
            progress.trace = checkpoint.trace  # a retried resume joins the halted run's trace
            if record is None:
                await self.runs.save_progress(progress, claim)
            else:
                await record(progress, claim)
        except ApprovalMismatch as exc:
            engine.end_span(state, None, exc)
            self._unhold(rid)
            raise
        except BaseException as exc:
            engine.end_span(state, None, exc)
            await self.abandon(claim)
            raise
        return Resumed(
            claim=claim,
            request=request,
            state=state,
            slots=slots,
            started=started,
            conversation_id=state.conversation_id,
        )

    async def _bind(
        self, state: RunState, slots: list[Slot], request: Request, answer: Answer, claim: Claim
    ) -> None:
        """The approval is bound to the action: each call the answer approves — as it will run,
        edited arguments included — must have the digest recorded with the answer. A mismatch
        (the checkpoint changed after the approval) holds the request for an operator.

        Raises:
            ApprovalMismatch: a call does not match; the request is flagged, nothing ran.
        """
        if not answer.ok or not claim.digest:
            return
        for slot in slots:
            if slot.request is None or slot.request.id != request.id:
                continue
            tool = state.by_name.get(slot.name)
            if tool is None or not edits.editable(tool):
                continue  # a tool that maps its answers itself runs no approved call here
            edit = edits.proposed_edit(request, answer)
            arguments = slot.arguments if edit is None else edits.encode_arguments(edit.value)
            found = call_digest(slot.name, arguments)
            if found == claim.digest:
                continue
            problem = (
                f"the call to run ({slot.name}, digest {found[:12]}) is not the call that was "
                f"approved (digest {claim.digest[:12]}): the checkpoint changed after the "
                "approval; nothing ran — cancel the request, or inspect the stored run"
            )
            log.error("toolnexus: request %s held for an operator: %s", request.id, problem)
            # (a LeaseLost: another resumer holds it now, and will find the same mismatch)
            with contextlib.suppress(LeaseLost):
                await self.runs.flag(request.id, claim, problem, hold_s=math.inf)
            raise ApprovalMismatch(f'toolnexus: request "{request.id}" was not resumed: {problem}')

    # -- the lease ----------------------------------------------------------------------------

    async def confirm(self, claim: Claim) -> Claim:
        """``claim``, known to be still ours: one taken or renewed less than `claim_fresh_s`
        ago (by the monotonic clock, which runs on while the process is stopped) holds most of
        its lease — and a live claim is lost only when its lease runs out (a cancel waits for
        it) — so it needs no round trip; an older one is renewed, fenced.

        Raises:
            LeaseLost: another resumer took the request over.
        """
        held = self._held.get(claim.request_id)
        if held is not None and held.token == claim.token:
            claim = held  # the heartbeat's latest renewal
        if time.monotonic() - claim.taken <= claim_fresh_s(self.lease_s):
            return claim
        return await self.renew(claim)

    async def renew(self, claim: Claim) -> Claim:
        """Renew ``claim`` (fenced) and keep the renewed one for the heartbeat.

        Raises:
            LeaseLost: another resumer took the request over.
        """
        renewed = await self.runs.renew(claim, lease_s=self.lease_s)
        if claim.request_id in self._held:
            self._held[claim.request_id] = renewed
        return renewed

    def _hold(self, claim: Claim) -> None:
        """Hold ``claim`` here: the heartbeat renews it until it is settled or given back."""
        self._held[claim.request_id] = claim
        if self._timer is None:
            self._tick_later()

    def _tick_later(self) -> None:
        # A timer, not a task per resume: most resumes settle long before the first tick.
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self.lease_s / 3, self._tick)

    def _unhold(self, request_id: str) -> None:
        self._held.pop(request_id, None)
        timer = self._timer
        if not self._held and timer is not None:  # nothing left to renew: no tick lingers
            self._timer = None
            timer.cancel()

    def _tick(self) -> None:
        """The heartbeat, every third of ``lease_s`` while anything is held: renew them all (one
        pass at a time), then tick again."""
        self._timer = None
        if not self._held:
            return
        if self._renewing is None or self._renewing.done():
            self._renewing = asyncio.ensure_future(self._heartbeat())
        self._tick_later()

    async def _heartbeat(self) -> None:
        """Renew the lease of every run held here (one tick's pass)."""
        for rid, claim in list(self._held.items()):
            try:
                renewed = await self.runs.renew(claim, lease_s=self.lease_s)
            except LeaseLost:
                # A renew that crossed this run's own settling fails too: let the run's end
                # (ready by now) take it off the held ones before calling it lost.
                await asyncio.sleep(0)
                if self._held.get(rid) is claim:
                    log.warning("toolnexus: the lease on request %s was lost", rid)
                    self._unhold(rid)
            except Exception:
                log.warning("toolnexus: could not renew request %s", rid, exc_info=True)
            else:
                if self._held.get(rid) is claim:  # (not if it settled while this ran)
                    self._held[rid] = renewed

    # -- settle, abandon ------------------------------------------------------------------------

    async def settle(
        self,
        resumed: Resumed | Claim,
        outcome: Outcome | RunResult,
        conversations: ConversationStore | None = None,
    ) -> None:
        """The resumed run ended (done, incomplete, or halted again on a new request, already
        saved): save its transcript, then complete the request with its outcome (fenced).

        A conversation store is not fenced by the claim, so the claim is checked (renewed)
        right before the transcript is written: a resumer that was overtaken stops here with
        `LeaseLost` instead of writing over the winner's transcript. Without a conversation
        (or a store), the outcome keeps the messages. A bare `Claim` settles a request whose
        run went on elsewhere (an agent tree settling late): nothing to save.

        Raises:
            LeaseLost: the claim was overtaken; nothing was written.
        """
        done = Outcome.of_run(outcome) if isinstance(outcome, RunResult) else outcome
        held = resumed.claim if isinstance(resumed, Resumed) else resumed
        rid = held.request_id
        cid = resumed.conversation_id if isinstance(resumed, Resumed) else None
        claim = self._held.get(rid, held)
        try:
            kept = done.messages
            saving = cid is not None and conversations is not None and kept is not None
            if cid is not None and conversations is not None and kept is not None:
                claim = await self.renew(claim)
                await conversations.save(cid, kept)
            await self.runs.complete(rid, claim, outcome=done.to_json(messages=not saving))
        finally:
            self._unhold(rid)
        if isinstance(resumed, Resumed):
            resumed.claim = claim

    async def abandon(self, claim: Claim | Resumed, problem: str | None = None) -> None:
        """After a failure: give the claim back, or hold it for ``hold_on_failure`` seconds
        (the run stays retryable either way); with ``problem`` (an unreadable checkpoint), the
        request is flagged with it for operators (`RunStore.flag`). Never raises."""
        held = claim.claim if isinstance(claim, Resumed) else claim
        rid = held.request_id
        held = self._held.get(rid, held)
        self._unhold(rid)
        try:
            if problem is not None:
                hold = self.hold_on_failure or 0.0
                await asyncio.shield(self.runs.flag(rid, held, problem, hold_s=hold))
            elif self.hold_on_failure is None:
                await asyncio.shield(self.runs.release(rid, held))
            else:
                await asyncio.shield(self.runs.renew(held, lease_s=self.hold_on_failure))
        except LeaseLost:
            pass  # another resumer holds it now: nothing of ours to give back
        except Exception:
            log.warning("toolnexus: could not release the claim on %s", rid, exc_info=True)


def claim_fresh_s(lease_s: float) -> float:
    """How old a claim may be and still be applied without renewing it first: a tenth of its
    lease, so at least nine tenths of it remain for the approved call."""
    return lease_s / 10


def _edit_unchecked(checkpoint: Checkpoint, request: Request, answer: Answer) -> bool:
    """Whether a recorded answer's edited arguments were checked only as an object: the
    checkpoint was written before toolnexus kept the tool's schema, so the resuming process,
    which has the tool, checks them against it (once)."""
    if edits.proposed_edit(request, answer) is None:
        return False
    return any(
        s.request is not None and s.request.id == request.id and s.input_schema is None
        for s in checkpoint.outstanding
    )


def _warn_if_tools_changed(checkpoint: Checkpoint, state: RunState, request_id: str) -> None:
    if checkpoint.fingerprint and checkpoint.fingerprint != state.tool_fingerprint():
        log.warning(
            "toolnexus: the tool set changed since request %s halted; resuming anyway", request_id
        )
