"""A served A2A task's life: its run, its saves and events, and its state as a view of the
request its run waits on.

The request is the one source of truth (DESIGN §5a): a task waiting for input shows the
request's state, whoever moved it. `TaskLife.sync` reads the request's record and moves the
task to match — ``working`` once anyone answered (the approvals inbox, the CLI,
``client.answer``, this task's own follow-up), then ``completed`` / ``failed`` / the next
``input-required`` with the outcome the resumed run settled with, ``canceled`` when the request
was cancelled — and makes sure the run goes on: an answered request nobody holds is taken and
resumed here (the fulfiller's resume goes through the one resumption), one another resumer
holds is followed until it settles; a task whose first run halted in a process that stopped
before the task showed the question shows it. `TaskLife.recover` syncs every task that waits
or works; `TaskLife.recovering` does it every ``recover_every`` seconds, and at once whenever
the store says an answer was queued.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any, cast

from ..intake import accepts
from ..stores.requests import SETTLED, AnswerChannel, AnswerRecord, Claim, RunStore
from .fulfil import Fulfiller, Outcome
from .tasks import PRIVATE, TERMINAL, WAITING, TaskStore, task_state
from .wire import now, public_task

__all__ = ["Live", "OnTask", "TaskLife"]

log = logging.getLogger("toolnexus.serve")

OnTask = Callable[[dict[str, Any]], Any]

_ERROR_STATUSES = frozenset({"error", "interrupted", "timeout", "closed"})
_SETTLE_POLL_MAX = 1.0


class Live:
    """A task with a run (or a follower) in this process: its subscribers, its settled signal."""

    __slots__ = ("queues", "runner", "settled")

    def __init__(self) -> None:
        self.queues: list[asyncio.Queue[dict[str, Any] | None]] = []
        self.settled = asyncio.Event()
        self.runner: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self.runner is not None and not self.runner.done()


class TaskLife:
    """The runs, saves and events of a server's tasks (see the module docs)."""

    def __init__(
        self,
        fulfiller: Fulfiller,
        tasks: TaskStore,
        *,
        on_task: OnTask | None,
        lease_s: float,
        recover_every: float | None,
    ) -> None:
        self.fulfiller = fulfiller
        self.tasks = tasks
        self.on_task = on_task
        self.lease_s = lease_s
        self.recover_every = recover_every
        self.live: dict[str, Live] = {}
        self.background: set[asyncio.Task[Any]] = set()
        self.answering: dict[str, str | None] = {}
        """Tasks a follow-up of this process is answering right now (and its message id): it
        goes on with their run itself (`sync` leaves them alone, so one copy of the task is
        saved)."""

    @property
    def runs(self) -> RunStore:
        return self.fulfiller.runs

    # -- runs ---------------------------------------------------------------------------------

    def watch(self, tid: str, queue: asyncio.Queue[dict[str, Any] | None] | None) -> Live:
        """The task's live entry (made when missing), not settled, with ``queue`` subscribed to
        its events."""
        live = self.live.get(tid)
        if live is None:
            live = self.live[tid] = Live()
        live.settled.clear()
        if queue is not None:
            live.queues.append(queue)
        return live

    def resent(self, tid: str, queue: asyncio.Queue[dict[str, Any] | None] | None) -> Live:
        """A message sent again: nothing new starts. Its stream (``queue``) follows the run the
        first one started while that goes on, else it ends after the task as it is."""
        live = self.live.get(tid)
        if live is not None and live.running:
            if queue is not None:
                live.queues.append(queue)
            return live
        done = Live()
        done.settled.set()
        if queue is not None:
            queue.put_nowait(None)
        return done

    def spawn(self, coro: Any) -> asyncio.Task[None]:
        runner: asyncio.Task[None] = asyncio.ensure_future(coro)
        self.background.add(runner)
        runner.add_done_callback(self.background.discard)
        return runner

    async def run(self, task: dict[str, Any], text: str, handle: str | None, stream: bool) -> None:
        """Run ``text`` as the task's turn and settle the task with how it ended."""
        chunks = _Chunks(self, task)
        try:
            await self.set(task, "working")
            async with self.holding(task):
                outcome = await self.fulfiller.start(
                    text,
                    context_id=task["contextId"],
                    handle=handle,
                    on_text=chunks.on_text if stream else None,
                )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("toolnexus: A2A task %s failed: %s", task["id"], type(exc).__name__)
            outcome = Outcome(status="error", text=str(exc) or type(exc).__name__)
        await self.finish(task, outcome, chunks.artifact, streamed=chunks.count > 0)

    async def resume(self, task: dict[str, Any], claim: Claim, stream: bool = False) -> None:
        """Resume the halted run of ``task`` under ``claim``; with ``stream``, the resumed
        run's text goes to the task's subscribers as artifact chunks as it is produced."""
        chunks = _Chunks(self, task)
        try:
            async with self.holding(task):
                outcome = await self.fulfiller.resume_claim(
                    claim, lease_s=self.lease_s, on_text=chunks.on_text if stream else None
                )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning(
                "toolnexus: resuming A2A task %s failed: %s", task["id"], type(exc).__name__
            )
            outcome = Outcome(status="error", text=str(exc) or type(exc).__name__)
        await self.finish(task, outcome, chunks.artifact, streamed=chunks.count > 0)

    @contextlib.asynccontextmanager
    async def holding(self, task: dict[str, Any]) -> AsyncGenerator[None]:
        """The task's claim on its context, held while its run goes on: taken (when free: a
        new task took it already; a resumed one takes it unless another task did), renewed
        every third of ``lease_s``, and given up when the run is cancelled (a server that
        stops). Its run's end gives it up by saving the task out of ``working``."""
        context, tid = task["contextId"], task["id"]
        await self.tasks.claim_context(context, tid, lease_s=self.lease_s)
        beat = asyncio.ensure_future(self._hold(context, tid))
        try:
            yield
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await self.tasks.hold_context(context, tid, lease_s=0)
            raise
        finally:
            beat.cancel()

    async def _hold(self, context: str, tid: str) -> None:
        while True:
            await asyncio.sleep(self.lease_s / 3)
            try:
                await self.tasks.hold_context(context, tid, lease_s=self.lease_s)
            except Exception:
                log.warning("toolnexus: renewing the claim of A2A task %s failed", tid)

    def follow_elsewhere(self, task: dict[str, Any], request_id: str) -> None:
        """Another resumer (a worker, another server) holds the task's request: settle the
        task with the outcome it records, when it does (a cancel, a lapse back to the queue
        and its take here included)."""
        live = self.watch(task["id"], None)
        if not live.running:
            live.runner = self.spawn(self._follow(task, request_id))

    async def _follow(self, task: dict[str, Any], request_id: str) -> None:
        pause = 0.02
        while True:
            record = await self.runs.answer_record(request_id)
            if record is None or record.status in SETTLED:
                await self.settle_from(task, record)
                return
            if record.status == "answered":
                claim = await self.runs.take(request_id, lease_s=self.lease_s)
                if claim is not None:  # the other resumer let go: go on here
                    await self.resume(task, claim)
                    return
            await asyncio.sleep(pause)
            pause = min(pause * 2, _SETTLE_POLL_MAX)

    async def settle_from(self, task: dict[str, Any], record: AnswerRecord | None) -> None:
        """Settle ``task`` as its request ``record`` settled (cancelled, or done with an
        outcome: the next question when the run halted again)."""
        if record is None:
            outcome = Outcome(status="error", text="the task's request is no longer stored")
            await self.finish(task, outcome, uuid.uuid4().hex, streamed=False)
        elif record.status == "cancelled":
            await self.set(task, "canceled")
            await self.notify(task, None)
        else:
            outcome = await _outcome_of(record, self.runs)
            await self.finish(task, outcome, uuid.uuid4().hex, streamed=False)

    # -- the view of the request ----------------------------------------------------------------

    async def sync(self, task: dict[str, Any]) -> dict[str, Any]:
        """``task`` as the request its run waits on says it is now (saved when it moved).

        A task waiting for input whose request was answered — anywhere — turns ``working`` and
        its run goes on (taken here, or followed while another resumer holds it); a cancelled
        request cancels it; a settled one settles it. A ``working`` task nobody here runs is
        followed the same way (a follow-up recorded by a process that stopped), and one whose
        first run halted in a process that stopped before it showed the question asks it now
        (`_unshown_question`)."""
        state = task_state(task)
        if state not in WAITING and state != "working":
            return task
        live = self.live.get(task["id"])
        if (live is not None and live.running) or task["id"] in self.answering:
            return task  # its run (or a follower, or a follow-up) is going on here
        rid = cast(dict[str, Any], task.get(PRIVATE) or {}).get("request")
        if not isinstance(rid, str):
            return await self._unshown_question(task) if state == "working" else task
        record = await self.runs.answer_record(rid)
        if record is None:
            return task  # still waiting (or working on a request not recorded yet)
        if record.status in ("answered", "claimed"):
            if state in WAITING:
                cast(dict[str, Any], task[PRIVATE]).pop("pending", None)
                await self.set(task, "working")
            claim = await self.runs.take(rid, lease_s=self.lease_s)
            watched = self.watch(task["id"], None)
            if claim is not None:
                watched.runner = self.spawn(self.resume(task, claim))
            else:
                self.follow_elsewhere(task, rid)
        else:
            await self.settle_from(task, record)
        return task

    async def _unshown_question(self, task: dict[str, Any]) -> dict[str, Any]:
        """A ``working`` task with no request, that nobody here runs: if its first run halted
        — the halt saved — in a process that stopped before saving the task with the question,
        the task asks that question now, as `finish` would have.

        The run is the conversation the task's context names (`ClientFulfiller.start`), so
        its question is the one request pending there that no other task of the context
        shows, saved at least ``lease_s`` ago (a live process shows it within moments: this
        one is taken as gone, as a claim is after its lease). An agent tree's halted handle
        is a conversation of its own, not found this way: its task stays ``working``."""
        context = task.get("contextId")
        if not isinstance(context, str):
            return task
        found = await self.runs.list_pending(conversation_id=context, limit=2)
        if len(found) != 1 or found[0].status != "pending":
            return task  # not halted (yet), or not one question to ask
        entry = found[0]
        if time.time() - entry.created_at < self.lease_s:
            return task  # its process may be showing it right now
        for other in await self.tasks.list(context_id=context, limit=50):
            if cast(dict[str, Any], other.get(PRIVATE) or {}).get("request") == entry.request_id:
                return task  # another task of the context asks it
        halted = await self.runs.load_halt(entry.request_id)
        if halted is None or halted.pending.id != entry.request_id:
            return task
        asked = Outcome(status="pending", text="", pending=halted.pending)
        await self.finish(task, asked, uuid.uuid4().hex, streamed=False)
        return task

    async def recover(self) -> int:
        """Sync every task that waits for input or works (see `sync`); how many moved."""
        moved = 0
        for state in ("working", "input-required", "auth-required"):
            for task in await self.tasks.list(state=state, limit=1000):
                before = task_state(task)
                synced = await self.sync(task)
                live = self.live.get(task["id"])
                if task_state(synced) != before or (live is not None and live.running):
                    moved += 1
        return moved

    async def recovering(self) -> None:
        """`recover` every ``recover_every`` seconds — and as soon as the store says an answer
        was queued (an answer from the inbox, the CLI, ``client.answer``) — until cancelled."""
        if self.recover_every is None:
            return
        runs = self.runs
        while True:
            try:
                await self.recover()
            except Exception:
                log.warning("toolnexus: recovering A2A tasks failed", exc_info=True)
            if isinstance(runs, AnswerChannel):
                await runs.wait_for_queued(timeout=self.recover_every)
            else:
                await asyncio.sleep(self.recover_every)

    # -- saving and telling ------------------------------------------------------------------------

    async def finish(
        self, task: dict[str, Any], outcome: Outcome, artifact: str, *, streamed: bool
    ) -> None:
        """Settle ``task`` with how its run ended: the next question, a failure, or done."""
        private = cast(dict[str, Any], task.setdefault(PRIVATE, {}))
        if outcome.handle is not None:
            private["handle"] = outcome.handle
        if outcome.status == "pending" and outcome.pending is not None:
            request = outcome.pending
            private["request"] = request.id
            private["pending"] = request.to_dict()
            state = "auth-required" if request.kind == "authorization" else "input-required"
            prompt = request.prompt + (f"\n{request.url}" if request.url else "")
            parts = [
                {"kind": "text", "text": prompt},
                {"kind": "data", "data": request.to_dict()},
            ]
            shown = {"requestId": request.id, "accepts": accepts(request).to_dict()}
            message = _agent_message(task, parts, {"toolnexus": shown})
            await self.set(task, state, message=message)
        elif outcome.status in _ERROR_STATUSES:
            parts = [{"kind": "text", "text": outcome.text}]
            await self.set(task, "failed", message=_agent_message(task, parts))
        else:
            private.pop("pending", None)
            chunk = {"artifactId": artifact, "parts": [{"kind": "text", "text": outcome.text}]}
            if streamed:
                last = {"artifactId": artifact, "parts": [{"kind": "text", "text": ""}]}
                self.emit(task, _artifact_event(task, last, append=True, last=True))
            else:
                self.emit(task, _artifact_event(task, chunk, append=False, last=True))
            task["artifacts"] = [chunk]
            await self.set(task, "completed")
        await self.notify(task, outcome.result)

    async def set(
        self, task: dict[str, Any], state: str, *, message: dict[str, Any] | None = None
    ) -> None:
        """Save the task in ``state`` and tell its subscribers (the last event when the task
        settles: terminal, or waiting for input)."""
        status: dict[str, Any] = {"state": state, "timestamp": now()}
        if message is not None:
            status["message"] = message
        task["status"] = status
        await self.tasks.save(task)
        final = state in TERMINAL or state in WAITING
        self.emit(
            task,
            {
                "kind": "status-update",
                "taskId": task["id"],
                "contextId": task["contextId"],
                "status": status,
                "final": final,
            },
        )
        if final:
            live = self.live.get(task["id"])
            if live is not None:
                for queue in live.queues:
                    queue.put_nowait(None)
                live.queues.clear()
                live.settled.set()
                if state in TERMINAL:
                    self.live.pop(task["id"], None)

    def emit(self, task: dict[str, Any], event: dict[str, Any]) -> None:
        live = self.live.get(task["id"])
        if live is not None:
            for queue in live.queues:
                queue.put_nowait(event)

    async def notify(self, task: dict[str, Any], result: Any) -> None:
        if self.on_task is None:
            return
        shown = public_task(task)
        try:
            value = self.on_task(
                {"id": task["id"], "task": shown, "result": result, "state": task_state(task)}
            )
            if inspect.isawaitable(value):
                await value
        except Exception:
            log.warning("toolnexus: on_task raised", exc_info=True)

    async def aclose(self) -> None:
        """Cancel the runs in flight (their halts and answers stay in the stores)."""
        for runner in list(self.background):
            runner.cancel()
        if self.background:
            await asyncio.gather(*self.background, return_exceptions=True)
        for live in self.live.values():
            for queue in live.queues:
                queue.put_nowait(None)


async def _outcome_of(record: AnswerRecord, runs: RunStore) -> Outcome:
    """What a request settled by another resumer ended with."""
    outcome: dict[str, Any] = record.outcome or {}
    status = str(outcome.get("status") or "done")
    text = str(outcome.get("text") or "")
    next_id = outcome.get("pending")
    if status == "pending" and isinstance(next_id, str):
        halted = await runs.load_halt(next_id)
        if halted is not None:
            return Outcome(status="pending", text=text, pending=halted.pending)
        status = "error"
        text = f"the run halted again on request {next_id}, which is no longer stored"
    return Outcome(status=status, text=text)


class _Chunks:
    """A run's text deltas as artifact-update events of one artifact, to the task's
    subscribers."""

    __slots__ = ("artifact", "count", "life", "task")

    def __init__(self, life: TaskLife, task: dict[str, Any]) -> None:
        self.life = life
        self.task = task
        self.artifact = uuid.uuid4().hex
        self.count = 0

    def on_text(self, delta: str) -> None:
        if not delta:
            return
        chunk = {"artifactId": self.artifact, "parts": [{"kind": "text", "text": delta}]}
        event = _artifact_event(self.task, chunk, append=self.count > 0, last=False)
        self.life.emit(self.task, event)
        self.count += 1


def _agent_message(
    task: Mapping[str, Any], parts: list[dict[str, Any]], metadata: dict[str, Any] | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "kind": "message",
        "role": "agent",
        "messageId": uuid.uuid4().hex,
        "taskId": task["id"],
        "contextId": task["contextId"],
        "parts": parts,
    }
    if metadata is not None:
        message["metadata"] = metadata
    return message


def _artifact_event(
    task: Mapping[str, Any], artifact: dict[str, Any], *, append: bool, last: bool
) -> dict[str, Any]:
    return {
        "kind": "artifact-update",
        "taskId": task["id"],
        "contextId": task["contextId"],
        "artifact": artifact,
        "append": append,
        "lastChunk": last,
    }
