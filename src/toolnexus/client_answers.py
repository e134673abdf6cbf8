"""The client's side of suspension: answer, cancel, purge, resume, park, and the worker.

`Answering` is mixed into `toolnexus.client.Client`. Answering is separate from resuming:

- ``await client.answer(request_id, answer, answered_by=...)`` records the answer (validated,
  exactly once) and nothing else — any process may call it, no toolkit needed;
- the run is then continued by exactly one resumer: the live run parked on it
  (``wait_for=store_wait_for(store)``), a worker (``client.worker(toolkit)``), or a host that
  resumes itself (``client.resume(toolkit, request_id)``);
- ``client.resume(toolkit, answer)`` / ``run_with_answer`` / ``ask_with_answer`` still answer
  and resume in one step.

Every resume goes through `toolnexus.resumption.Resumption`.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._compat import no_stream_error
from ._types import Message, RunResult
from .errors import ResumeError, RunCancelled, UnknownRequest
from .loop.checkpoint import Checkpoint
from .loop.engine import Engine, EngineConfig, Finished, RunState, Slot
from .loop.guards import as_answer, as_request, check_echo
from .loop.rebuild import checkpoint_from_transcript
from .stores.base import ConversationStore
from .stores.checks import check_request_id
from .stores.requests import DEFAULT_LEASE_S, AnswerRecord, Claim, RunStore, WaitingReader
from .suspension import Answer, Request
from .waiting import StoreWaitFor

if TYPE_CHECKING:
    from ._toolkit import ToolSet
    from .resumption import Resumed, Resumption
    from .worker import Worker

__all__ = ["Answering", "History", "text_to"]

History = (
    Sequence[Message] | Callable[[], Awaitable[list[Message] | None]] | None
)  # a transcript, or how to load one when it is needed


class Answering:
    """Answer, cancel, purge and resume halted runs: the base of `Client`.

    `Client` provides the store, the engine and the three loop steps declared below.
    """

    _runs: RunStore
    _store: ConversationStore
    _cfg: EngineConfig
    _engine: Engine
    _in_process: bool
    _parks: bool

    @property
    def run_store(self) -> RunStore:
        """Where halted runs wait for their answer (the store itself when it is durable)."""
        return self._runs

    def _state(
        self,
        prompt: str | None,
        toolkit: ToolSet,
        history: Sequence[Message] | None,
        cancel: asyncio.Event | None,
    ) -> RunState:
        raise NotImplementedError

    async def _final(
        self, state: RunState, resumed: list[Slot] | None = None, started: float | None = None
    ) -> Finished:
        raise NotImplementedError

    def _drive(
        self,
        state: RunState,
        *,
        stream: bool,
        resumed: list[Slot] | None = None,
        started: float | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        raise NotImplementedError

    # -- answering ---------------------------------------------------------------------------

    async def answer(
        self,
        request_id: str,
        answer: Answer | Mapping[str, Any],
        *,
        answered_by: str | None = None,
    ) -> AnswerRecord:
        """Record the human's ``answer`` to a halted run — exactly once, and nothing else.

        Any process sharing the store may call this (a webhook, an approvals page, a CLI); the
        run is continued by the live run parked on it, or by a worker
        (`Client.worker`), or by ``client.resume(toolkit, request_id)``.

        Raises:
            UnknownRequest: no halted run waits on ``request_id``.
            AnswerMismatch: ``answer.id`` is not ``request_id``.
            InvalidAnswer: the answer's fields have the wrong types.
            AnswerConflict: already answered (names who), being resumed, or cancelled.
            RequestExpired: past its ``expiresAt``; the expired decline was recorded instead.
        """
        return await self._runs.post_answer(
            request_id,
            answer,  # pyright: ignore[reportArgumentType]  (the wire dict is accepted too)
            answered_by=answered_by,
        )

    async def cancel(
        self,
        request_id: str,
        *,
        reason: str | None = None,
        answered_by: str | None = None,
    ) -> AnswerRecord:
        """Abandon a halted run without calling the model again.

        The request leaves the pending index; a later answer is an `AnswerConflict` saying it
        was cancelled; the record keeps who cancelled, when and why. A run parked on it ends
        with `RunCancelled`.

        Raises:
            UnknownRequest: no halted run waits on ``request_id``.
            AnswerConflict: it was answered or settled first.
        """
        return await self._runs.cancel(request_id, reason=reason, answered_by=answered_by)

    async def purge(self, *, older_than: float) -> int:
        """Forget requests settled (done, expired, cancelled) more than ``older_than`` seconds
        ago; returns how many. Pending, answered and claimed requests are never touched."""
        return await self._runs.purge(older_than=older_than)

    def worker(self, toolkit: ToolSet, **options: Any) -> Worker:
        """A worker that resumes every answered run of this client's store with ``toolkit``.

        ``options``: ``lease_s``, ``poll_interval``, ``retry_s``, ``concurrency``,
        ``on_result`` (see `toolnexus.worker.Worker`).

        Example:
            >>> async def serve(client, toolkit, stop):
            ...     async with client.worker(toolkit):
            ...         await stop.wait()
        """
        from .worker import Worker

        async def resume(claim: Claim, resumption: Resumption) -> RunResult:
            return await self.resume_claim(toolkit, claim, resumption=resumption)

        return Worker(self._runs, resume, **options)

    # -- resuming --------------------------------------------------------------------------

    @functools.cached_property
    def resumption(self) -> Resumption:
        """The resume protocol over this client's run store."""
        from .resumption import Resumption  # loaded with the first resume

        return Resumption(self._runs)

    @functools.cached_property
    def _parked_resumption(self) -> Resumption:
        """The resumption of runs parked with ``store_wait_for`` (its ``lease_s``)."""
        from .resumption import Resumption

        parking = self._parking()
        return Resumption(self._runs, lease_s=parking.lease_s if parking else DEFAULT_LEASE_S)

    async def resume(
        self,
        toolkit: ToolSet,
        answer: Answer | Mapping[str, Any] | str,
        *,
        answered_by: str | None = None,
        cancel: asyncio.Event | None = None,
    ) -> RunResult:
        """Resume whichever stored run waits on ``answer.id`` — the answer is all you need.

        Pass the request id instead of an answer to resume with the answer already recorded
        (by `answer`, from any process) — what a host that prefers to resume itself calls.

        Raises:
            UnknownRequest: no stored run waits on that id (or, given an id, none is
                answered and waiting for a resumer).
            AnswerConflict: it was already answered, or another resume holds it.
        """
        if isinstance(answer, str):
            rid = check_request_id(answer)
            claim = await self._runs.take(rid)
            if claim is None:
                await self.resumption.refuse_if_answered(rid)
                raise UnknownRequest(f'no answered run waits on request "{rid}" for a resumer')
            return await self.resume_claim(toolkit, claim, cancel=cancel)
        reply = as_answer(answer)
        runs = self._runs
        if isinstance(runs, WaitingReader):  # it refuses a taken run in the same read
            checkpoint = await runs.load_waiting(reply.id)
        else:
            checkpoint = await runs.load_halt(reply.id)
        if checkpoint is None:
            await self.resumption.refuse_if_answered(reply.id)
            raise UnknownRequest(f'no halted run waits on request "{reply.id}"')
        resumed = await self._begin(
            toolkit, checkpoint, reply, answered_by=answered_by, cancel=cancel
        )
        return await self._continue(resumed, toolkit)

    async def resume_claim(
        self,
        toolkit: ToolSet,
        claim: Claim,
        *,
        resumption: Resumption | None = None,
        cancel: asyncio.Event | None = None,
        on_text: Callable[[str], Any] | None = None,
    ) -> RunResult:
        """Resume the run of a request taken from the store (`RunStore.take`): a worker's step.

        ``resumption`` overrides the client's (a worker's holds failed claims). ``on_text``
        receives the resumed run's text deltas as they stream (as in ``ask``); a `RunResult`
        is still returned.

        Raises:
            UnknownRequest: the store holds no checkpoint for it (the claim is abandoned).
            ResumeError: a guard failed (the claim is abandoned).
        """
        using = resumption or self.resumption
        if on_text is not None and self._in_process:
            await using.abandon(claim)
            raise no_stream_error("resume_claim() without on_text")
        checkpoint = await using.load(claim)
        resumed = await self._begin(
            toolkit, checkpoint, claim.answer, claim=claim, cancel=cancel, resumption=using
        )
        if on_text is None:
            return await self._continue(resumed, toolkit, using)
        return await text_to(on_text, self._continue_stream(resumed, using))

    async def run_with_answer(
        self,
        toolkit: ToolSet,
        history: Sequence[Message] | None,
        pending: Request | Mapping[str, Any],
        answer: Answer | Mapping[str, Any],
        *,
        answered_by: str | None = None,
        cancel: asyncio.Event | None = None,
    ) -> RunResult:
        """Resume a halted run with the human's ``answer`` — in this process or any other.

        The halted tool is re-executed with ``ctx.answer`` (relayed calls get the host's
        output spliced); calls of the halted turn that already finished keep their recorded
        result; calls that never ran run now or suspend again (then the result is ``pending``
        once more, with the next Request). No user turn is added; turns and usage continue.

        Args:
            toolkit: the tools, as when the run halted.
            history: the halted ``RunResult.messages`` (used when no store holds the
                checkpoint; with a durable ``store=`` it may be ``None``).
            pending: the halted ``RunResult.pending`` (a `Request` or its wire dict).
            answer: the `Answer`; its ``id`` must echo ``pending.id``.
            answered_by: recorded with the answer (who approved).
            cancel: aborts the in-flight model request.

        Raises:
            AnswerMismatch: the answer does not echo the pending id (nothing changed).
            AnswerConflict: the request was already answered (nothing changed).
            InvalidAnswer: the answer's fields have the wrong types (nothing changed).
            ResumeError: no transcript, no halted turn, a missing tool, or an ``ok`` relay
                answer without output (nothing changed).
        """
        resumed = await self._prepare(
            toolkit, history, pending, answer, None, answered_by=answered_by, cancel=cancel
        )
        return await self._continue(resumed, toolkit)

    async def ask_with_answer(
        self,
        toolkit: ToolSet,
        id: str,
        pending: Request | Mapping[str, Any],
        answer: Answer | Mapping[str, Any],
        *,
        answered_by: str | None = None,
        cancel: asyncio.Event | None = None,
    ) -> RunResult:
        """`run_with_answer` for a conversation kept in the store: load, resume, save.

        Raises:
            ResumeError: also when ``pending`` belongs to another conversation than ``id``.
        """
        history = self._history_for_resume(id)
        resumed = await self._prepare(
            toolkit, history, pending, answer, id, answered_by=answered_by, cancel=cancel
        )
        return await self._continue(resumed, toolkit)

    async def stream_with_answer(
        self,
        toolkit: ToolSet,
        history: Sequence[Message] | None,
        pending: Request | Mapping[str, Any],
        answer: Answer | Mapping[str, Any],
        *,
        answered_by: str | None = None,
        cancel: asyncio.Event | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """`run_with_answer` as a stream: ``tool_result`` events for the halted turn, then the
        events of the continued loop, ending with ``done``."""
        self._refuse_streaming_in_process("run_with_answer()")
        resumed = await self._prepare(
            toolkit, history, pending, answer, None, answered_by=answered_by, cancel=cancel
        )
        async for event in self._continue_stream(resumed):
            yield event

    async def stream_ask_with_answer(
        self,
        toolkit: ToolSet,
        id: str,
        pending: Request | Mapping[str, Any],
        answer: Answer | Mapping[str, Any],
        *,
        answered_by: str | None = None,
        cancel: asyncio.Event | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """`ask_with_answer` as a stream; the transcript is saved on ``done``."""
        self._refuse_streaming_in_process("ask_with_answer()")
        history = self._history_for_resume(id)
        resumed = await self._prepare(
            toolkit, history, pending, answer, id, answered_by=answered_by, cancel=cancel
        )
        async for event in self._continue_stream(resumed):
            yield event

    # -- the steps -------------------------------------------------------------------------

    async def _prepare(
        self,
        toolkit: ToolSet,
        history: History,
        pending: Request | Mapping[str, Any],
        answer: Answer | Mapping[str, Any],
        conversation_id: str | None,
        *,
        answered_by: str | None,
        cancel: asyncio.Event | None,
    ) -> Resumed:
        """The host-held entry points: the stored checkpoint, else one rebuilt from the
        transcript; then `Resumption.begin`."""
        request = as_request(pending)
        reply = as_answer(answer)
        check_echo(request, reply)
        checkpoint = await self._runs.load_halt(request.id)
        if checkpoint is None:
            await self.resumption.refuse_if_answered(request.id)
            transcript = await history() if callable(history) else history
            checkpoint = checkpoint_from_transcript(
                transcript or [], request, model=self._cfg.model, style=self._cfg.style
            )
            checkpoint.conversation_id = conversation_id
        return await self._begin(
            toolkit,
            checkpoint,
            reply,
            answered_by=answered_by,
            cancel=cancel,
            conversation_id=conversation_id,
        )

    async def _begin(
        self,
        toolkit: ToolSet,
        checkpoint: Checkpoint,
        answer: Answer,
        *,
        claim: Claim | None = None,
        answered_by: str | None = None,
        cancel: asyncio.Event | None = None,
        conversation_id: str | None = None,
        resumption: Resumption | None = None,
    ) -> Resumed:
        state = self._state(None, toolkit, None, cancel)
        return await (resumption or self.resumption).begin(
            self._engine,
            state,
            checkpoint,
            answer,
            claim=claim,
            answered_by=answered_by,
            conversation_id=conversation_id,
        )

    async def _continue(
        self, resumed: Resumed, toolkit: ToolSet, resumption: Resumption | None = None
    ) -> RunResult:
        """A resumed run to its `RunResult`, settled (the non-streaming entry points); with
        ``store_wait_for``, a run that halts again parks once more (`_park`)."""
        finished = await self._settled(resumed, resumption or self.resumption)
        return await self._park(finished, toolkit, resumed.state)

    async def _settled(self, resumed: Resumed, using: Resumption) -> Finished:
        """Drive a resumed run to its last step and settle it; a failure gives the claim
        back."""
        try:
            finished = await self._final(resumed.state, resumed.slots, resumed.started)
            await using.settle(resumed, finished.result, self._store)
        except BaseException:
            await using.abandon(resumed.claim)
            raise
        return finished

    async def _continue_stream(
        self, resumed: Resumed, resumption: Resumption | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """A resumed run as a stream of events, settled on ``done``."""
        using = resumption or self.resumption
        try:
            async for event in self._drive(
                resumed.state, stream=True, resumed=resumed.slots, started=resumed.started
            ):
                if event["type"] == "done":
                    await using.settle(resumed, event["result"], self._store)
                yield event
        except BaseException:
            await using.abandon(resumed.claim)
            raise

    # -- parking on the store (store_wait_for) ------------------------------------------------

    def _parking(self) -> StoreWaitFor | None:
        """The client's ``wait_for`` when it parks runs on the store, else ``None``."""
        wait_for = self._cfg.wait_for
        return wait_for if isinstance(wait_for, StoreWaitFor) else None

    async def _park(self, finished: Finished, toolkit: ToolSet, state: RunState) -> RunResult:
        """With ``store_wait_for``: while the run halts, wait for its answer, take it and
        resume — the worker's path, so a process that dies while it waits loses nothing (its
        halt is stored; a worker finishes it once answered)."""
        result = finished.result
        while self._parks and result.status == "pending" and result.pending is not None:
            taken = await self._take_parked(finished, toolkit, state)
            if isinstance(taken, RunResult):
                return taken
            finished = await self._settled(taken, self._parked_resumption)
            result, state = finished.result, taken.state
        return result

    async def _park_stream(
        self, finished: Finished, toolkit: ToolSet, state: RunState
    ) -> AsyncIterator[dict[str, Any]]:
        """`_park` as a stream: the events of each resumed stretch, ending with ``done``."""
        while True:
            taken = await self._take_parked(finished, toolkit, state)
            if isinstance(taken, RunResult):
                yield {"type": "done", "result": taken}
                return
            halted_again: RunResult | None = None
            async for event in self._continue_stream(taken, self._parked_resumption):
                if event["type"] == "done" and event["result"].status == "pending":
                    halted_again = event["result"]
                    continue
                yield event
            if halted_again is None:
                return
            finished, state = Finished(halted_again), taken.state

    async def _take_parked(
        self, halted: Finished, toolkit: ToolSet, state: RunState
    ) -> Resumed | RunResult:
        """Wait for the halted run's answer, take it and begin the resume; or, when another
        resumer took it first, that resumer's outcome."""
        request = halted.result.pending
        assert request is not None
        parking = self._parking()
        assert parking is not None
        record = await parking.wait(request)
        if record.status == "cancelled":
            raise RunCancelled(_cancelled_text(record))
        using = self._parked_resumption
        claim = await self._runs.take(request.id, lease_s=using.lease_s)
        if claim is None:
            return await self._resumed_elsewhere(parking, request.id, state, halted.result)
        checkpoint = halted.checkpoint
        if checkpoint is None or checkpoint.pending.id != request.id:
            checkpoint = await using.load(claim)
        return await self._begin(
            toolkit, checkpoint, claim.answer, claim=claim, cancel=state.cancel, resumption=using
        )

    async def _resumed_elsewhere(
        self, parking: StoreWaitFor, request_id: str, state: RunState, halted: RunResult
    ) -> RunResult:
        """Another resumer (a worker, a host) took the answer first: its outcome is ours."""
        record = await parking.settled(request_id)
        if record.status == "cancelled":
            raise RunCancelled(_cancelled_text(record))
        outcome: dict[str, Any] = record.outcome or {}
        messages: Any = outcome.get("messages")
        if not isinstance(messages, list) and state.conversation_id is not None:
            messages = await self._store.get(state.conversation_id)
        status: Any = outcome.get("status", "done")
        return RunResult(
            text=str(outcome.get("text", "")),
            messages=list(messages or halted.messages),  # pyright: ignore[reportUnknownArgumentType]
            tool_calls=[],
            tool_call_count=0,
            turns=int(outcome.get("turns", 0)),
            usage=outcome.get("usage") or dict(halted.usage),
            model=self._cfg.model,
            status=status,
        )

    # -- small helpers -----------------------------------------------------------------------

    def _history_for_resume(self, id: str) -> Callable[[], Awaitable[list[Message] | None]]:
        """The stored transcript, read only if no stored checkpoint makes it unnecessary."""
        if not isinstance(id, str) or not id:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ResumeError("toolnexus: cannot resume — ask_with_answer needs a conversation id")
        return functools.partial(self._store.get, id)

    def _refuse_streaming_in_process(self, instead: str) -> None:
        if self._in_process:
            raise no_stream_error(instead)


async def text_to(
    on_text: Callable[[str], Any], events: AsyncIterator[dict[str, Any]]
) -> RunResult:
    """Feed a run's ``text`` deltas to ``on_text`` (sync or async) → the run's `RunResult`."""
    result: RunResult | None = None
    async for event in events:
        if event["type"] == "text":
            value = on_text(event["delta"])
            if inspect.isawaitable(value):
                await value
        elif event["type"] == "done":
            result = event["result"]
    assert result is not None
    return result


def _cancelled_text(record: AnswerRecord) -> str:
    note = (record.answer.data or {}).get("note")
    who = f" by {record.answered_by}" if record.answered_by else ""
    why = f": {note}" if note else ""
    return f'toolnexus: request "{record.request_id}" was cancelled{who}{why}'
