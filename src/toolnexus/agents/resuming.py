"""`TreeResumer`: the agent runtime's durable resume — the cascade, on the one resumption.

A resume delivers the Answer to the deepest suspended handle and cascades up through each
suspended ancestor's ``task`` call; every level goes through `toolnexus.resumption.Resumption`
(guards → claim → restore → apply → record → continue), the request is claimed once and settled
once, fenced. A tree's halted requests wait in their own queue of the run store
(``agents/<runtime id>``), so a runtime's worker takes only its own and a client's worker never
takes a tree's.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from ..errors import AnswerMismatch, LeaseLost, ResumeError
from ..loop.checkpoint import Checkpoint
from ..loop.guards import as_answer
from ..resumption import Outcome, Resumed, Resumption
from ..stores.runs import Claim, RunStore
from ..suspension import Answer, Request
from .budget import BudgetGuard
from .clock import Clock
from .handle import Handle, restamp, stamp_path
from .scheduling import TurnScheduler
from .tree import Tree
from .turns import TurnDriver
from .types import TaskResult

if TYPE_CHECKING:
    from ..worker import Worker

__all__ = ["NoSuspendedHandle", "TreeResumer"]

log = logging.getLogger("toolnexus.agents")


class NoSuspendedHandle(ResumeError, RuntimeError):  # merge: move to _compat
    """`resume` found no suspended handle (also a ``RuntimeError``, as the package raises)."""


class TreeResumer:
    """Resumes a suspended tree: durably (`resume`, `resume_claim`, the `worker`) or inline
    (`resume_handle`, when a ``wait_for`` up the chain answered).

    Args:
        tree: the handles.
        driver: runs a resumed handle's turn on.
        scheduler: settles it.
        runs: the run store the tree's requests are claimed and settled in.
        resumption: the one resumption (guards, claim, restore, apply, record).
        clock: the handles' budgets' wall time.
    """

    def __init__(
        self,
        *,
        tree: Tree,
        driver: TurnDriver,
        scheduler: TurnScheduler,
        runs: RunStore,
        resumption: Resumption,
        clock: Clock,
    ) -> None:
        self._tree = tree
        self._driver = driver
        self._scheduler = scheduler
        self._runs = runs
        self._resumption = resumption
        self._clock = clock

    def _deepest_suspended(self, node: Handle, request_id: str | None = None) -> Handle | None:
        """Depth-first, children before self: the deepest suspended handle (waiting on
        ``request_id`` when given)."""
        for child in node.children:
            found = self._deepest_suspended(child, request_id)
            if found is not None:
                return found
        if node is self._tree.root or node.state != "suspended":
            return None
        if request_id is not None and (node.pending is None or node.pending.id != request_id):
            return None
        return node

    async def resume(
        self, answer: Answer | Mapping[str, Any], *, answered_by: str | None = None
    ) -> TaskResult:
        """Deliver ``answer`` to the deepest suspended handle, then cascade up; return the
        `TaskResult` of the last turn the cascade ran (the outermost resumed ancestor, or the
        leaf).

        The deepest handle's halted call is re-executed with ``ctx.answer`` (retry-with-answer
        from its checkpoint: no model call is repeated); each suspended ancestor then resumes
        its own halted ``task`` call, which reattaches to the finished child. Every level goes
        through the one resumption (`toolnexus.resumption`): the request is claimed once, and
        each level's resolved calls are recorded — in the run store, fenced by the claim, and
        in the handle's row — before its model is called again, so a process that dies
        mid-cascade and is resumed again never runs an approved call twice. `wait` on a
        handle gives its result afterwards too.

        Raises:
            NoSuspendedHandle: nothing is suspended (a `ResumeError` and a ``RuntimeError``).
            AnswerMismatch: the answer does not echo the pending request id.
            InvalidAnswer: the answer's fields have the wrong types.
            AnswerConflict: the request was already answered (here or in another process),
                also when the tree has finished since.
        """
        reply = as_answer(answer)
        root = self._tree.root
        deepest = self._deepest_suspended(root, reply.id) or self._deepest_suspended(root)
        if deepest is None or deepest.pending is None or deepest.checkpoint is None:
            await self._resumption.refuse_if_answered(reply.id)
            raise NoSuspendedHandle("no suspended handle")
        if reply.id != deepest.pending.id:
            await self._resumption.refuse_if_answered(reply.id)
            raise AnswerMismatch(
                f'answer id "{reply.id}" does not echo the pending request id '
                f'"{deepest.pending.id}"'
            )
        result = await self._cascade(deepest, reply, None, answered_by)
        assert result is not None
        return result

    async def resume_claim(
        self,
        claim: Claim,
        resumption: Resumption | None = None,
        *,
        on_text: Callable[[str], Any] | None = None,
    ) -> TaskResult | None:
        """`AgentRuntime.resume_claim`: the cascade from a request taken from the store; ``None``
        when no handle waits on it any more (its cascade ran, only settling it failed)."""
        using = resumption or self._resumption
        deepest = self._deepest_suspended(self._tree.root, claim.request_id)
        if deepest is None or deepest.checkpoint is None:
            return await self._settle_late(claim)
        top = deepest.ancestors()[-2]  # (the last is the root)
        top.on_text = on_text
        try:
            return await self._cascade(deepest, claim.answer, claim, claim.answered_by, using)
        finally:
            top.on_text = None

    def worker(self, **options: Any) -> Worker:
        """`AgentRuntime.worker`: a worker that takes only this tree's requests."""
        from ..worker import Worker

        return Worker(self._runs, self.resume_claim, queue=self._tree.queue, **options)

    async def _cascade(
        self,
        deepest: Handle,
        answer: Answer,
        claim: Claim | None,
        answered_by: str | None,
        resumption: Resumption | None = None,
    ) -> TaskResult | None:
        """Resume ``deepest`` and then each suspended ancestor; settle the request once."""
        using = resumption or self._resumption
        node: Handle | None = deepest
        result: TaskResult | None = None
        resumed: Resumed | None = None
        ok = "true" if answer.ok else "false"
        trace = self._tree.trace
        trace.append(
            f"{deepest.id}: resume with Answer(ok={ok}) at checkpoint "
            f"(turns so far: {deepest.turns})"
        )
        try:
            while node is not None and node is not self._tree.root and node.state == "suspended":
                if node is not deepest:
                    trace.append(f"{node.id}: cascade resume (replay reattaches by task key)")
                result, resumed = await self._resume_level(node, answer, claim, answered_by, using)
                claim = resumed.claim
                answer = claim.answer
                if result.status == "pending":
                    await self._resuspend_ancestors(node, result.pending)
                    break
                node = node.parent
            if resumed is not None:
                await using.settle(resumed, _outcome(result))
        except BaseException:
            if claim is not None:
                await using.abandon(claim)
            raise
        return result

    async def _resume_level(
        self,
        h: Handle,
        answer: Answer,
        claim: Claim | None,
        answered_by: str | None,
        resumption: Resumption,
    ) -> tuple[TaskResult, Resumed]:
        """One level of the cascade: the guards, then begin (accept, claim, restore, bind,
        apply, record), then drive the handle's turn on."""
        checkpoint = await self._latest_checkpoint(h, answer.id)
        engine = self._driver.engine(h)
        cancel = asyncio.Event()
        state = self._driver.state(h, engine, None, cancel=cancel)
        resumption.check(state, checkpoint, claim.answer if claim is not None else answer)
        self._tree.move(h, "idle", "Answer accepted, checkpoint restored")
        self._tree.move(h, "running")
        h.cancel = cancel
        h.task = None
        try:
            resumed = await resumption.begin(
                engine,
                state,
                checkpoint,
                answer,
                claim=claim,
                answered_by=answered_by,
                record=functools.partial(self._record, h),
                checked=True,
            )
        except BaseException:
            self._tree.move(h, "suspended")  # nothing was resumed: the handle still waits
            raise
        state.conversation_id = self._tree.conv_id(h)
        try:
            guard = BudgetGuard(h, self._clock.now)
            fence = functools.partial(resumption.renew, resumed.claim)
            result = await self._driver.drive(
                h, engine, state, guard, resumed=resumed.slots, fence=fence
            )
        except (asyncio.CancelledError, LeaseLost):
            raise
        except Exception as exc:
            result = TaskResult(text=f"{type(exc).__name__}: {exc}", status="error", is_error=True)
        await self._scheduler.settle(h, result)
        return result, resumed

    async def _settle_late(self, claim: Claim) -> TaskResult | None:
        """Settle a request no handle waits on any more: its cascade ran to the end and only
        the settling failed (the store was down, the process died just before). The outcome is
        the result of the top-level handle the request climbed to; nothing runs again."""
        top: Handle | None = None
        stored = await self._runs.load_halt(claim.request_id)
        path: Any = (stored.pending.data or {}).get("path") if stored is not None else None
        if isinstance(path, list):
            segments = [str(p) for p in cast(list[Any], path)]
            top = self._tree.handle("/".join(segments[:2])) if len(segments) >= 2 else None
        log.warning(
            "toolnexus: no handle of runtime %r waits on request %s any more; settling it",
            self._tree.runtime_id,
            claim.request_id,
        )
        result = top.result if top is not None else None
        await self._resumption.settle(claim, _outcome(result))
        return result

    async def _latest_checkpoint(self, h: Handle, request_id: str) -> Checkpoint:
        """``h``'s halted turn as last recorded: the run store's row when it is this handle's
        (it is written first, fenced, by `_record`), else the handle's own copy.

        A resumer that died between the two writes of `_record` left the resolved calls only
        in the run store; resuming from the handle's older copy would run them again.
        """
        assert h.checkpoint is not None
        stored = await self._runs.load_halt(request_id)
        if stored is None or stored.conversation_id != h.id:
            return h.checkpoint
        stored.conversation_id = h.checkpoint.conversation_id
        stored.queue = h.checkpoint.queue
        return stored

    async def _record(self, h: Handle, progress: Checkpoint, claim: Claim) -> None:
        """A level's resolved calls: into the run store (fenced) and the handle's row."""
        indexed = Checkpoint.loads(progress.dumps())
        indexed.conversation_id = h.id
        indexed.queue = self._tree.queue
        await self._runs.save_progress(indexed, claim)
        h.checkpoint = progress
        await self._tree.persist(h, as_state="suspended")

    async def _resuspend_ancestors(self, h: Handle, request: Request | None) -> None:
        """A re-suspended child: every suspended ancestor now waits on the new request; they
        are saved, and the new question is indexed once the chain is (see `_index`)."""
        if request is None:
            return
        node = h.parent
        changed: list[Handle] = []
        while node is not None and node is not self._tree.root and node.state == "suspended":
            if node.checkpoint is not None and node.pending is not None:
                stamped = stamp_path(request, node)
                node.checkpoint = restamp(node.checkpoint, node.pending.id, stamped)
                node.pending = stamped
                if node.result is not None:
                    node.result = replace(node.result, pending=stamped, text=stamped.prompt)
                changed.append(node)
            node = node.parent
        if changed:
            await self._tree.persist(*changed)
            await self._tree.index(changed[-1])

    async def resume_handle(self, h: Handle, answer: Answer) -> TaskResult:
        """Resume ``h``'s halted turn with ``answer`` inline (retry-with-answer from its
        checkpoint): the ``task`` tool's path when a ``wait_for`` up the chain answered.

        This traces the inline shape (suspended→running); the durable `resume` goes through the
        one resumption and traces idle→running."""
        checkpoint = h.checkpoint
        request = h.pending
        if checkpoint is None or request is None:
            raise ResumeError(f"{h.id} has no halted turn to resume")
        self._tree.move(h, "running", f"Answer ok={'true' if answer.ok else 'false'}")
        h.cancel = asyncio.Event()
        h.task = None
        try:
            engine = self._driver.engine(h)
            state = self._driver.state(h, engine, None, cancel=h.cancel)
            slots = engine.restore(state, checkpoint)
            state.conversation_id = self._tree.conv_id(h)
            asker = next(
                (s for s in slots if s.request is not None and s.request.id == request.id), None
            )
            answer = engine.accepted(state, asker, request, answer)  # the intake, inline
            await engine.apply_answer(state, slots, request, answer)
            guard = BudgetGuard(h, self._clock.now)
            result = await self._driver.drive(h, engine, state, guard, resumed=slots)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            result = TaskResult(text=f"{type(exc).__name__}: {exc}", status="error", is_error=True)
        await self._scheduler.settle(h, result)
        return result


def _outcome(result: TaskResult | None) -> Outcome:
    """What a settled tree request keeps: the highest resumed handle's result (its subtree's
    tokens as its usage)."""
    if result is None:
        return Outcome(status="done")
    return Outcome(
        status=result.status,
        text=result.text,
        turns=result.turns,
        usage={"total_tokens": result.total_tokens},
        limit=result.limit,
        pending=result.pending.id if result.pending is not None else None,
    )
