"""A2A inbound: the JSON-RPC endpoint, the task lifecycle, and the pause across the wire.

::

    SendMessage (new)      → task submitted → working → completed | failed
                                                     → input-required | auth-required
    SendMessage (taskId)   → follow-up: Answer recorded (exactly once) → working → …
    SendMessage (contextId of settled tasks) → a new task, the next turn of that conversation
    CancelTask             → canceled (an input-required task: its halted run is cancelled)

The context is the conversation: every task's run continues the transcript of its
``contextId`` (the caller's, or one made for the task), so a later message naming it goes on
from there (`_route`). A fulfiller that cannot resume (a host's ``run_task``) takes a follow-up
as the next turn of the context instead, on the same task, once (`_next_turn`).

A run that halts on a `Request` makes its task ``input-required`` (``auth-required`` for
``kind:"authorization"``), with ``status.message`` carrying the prompt as a text part and the
whole Request as a data part. A follow-up on that task (``taskId``, or a ``contextId`` naming
exactly one waiting task) becomes an `Answer` — a text part ⇒ ``ok=True, data={"text": …}``; a
data part ``{ok, data?, reason?}`` ⇒ that Answer; another data object ⇒ ``ok=True`` with it
as ``data`` — which is checked against the Request's ``data.schema``, *recorded* through the
fulfiller (`toolnexus.serve.fulfil`) and then resumed through the one resumption. A second
follow-up racing the first is refused by the run store and gets a JSON-RPC error; the task is
left as the winner makes it.

Written here rather than on a2a-sdk's ``DefaultRequestHandler`` + ``AgentExecutor``: there, an
``input-required`` task resumes by calling the executor again in memory, and an executor's
failure marks the task failed — a refused follow-up must instead leave the task untouched and
answer with an error, and the resume must go through the run store so that a new process can
finish it. a2a-sdk still provides the 1.0 wire types and conversions (`toolnexus.serve.wire`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, cast

from ..errors import AnswerConflict, RequestExpired, ResumeError, UsageError
from ..stores.requests import DEFAULT_LEASE_S, AnswerRecord, Claim, RunStore
from ..suspension import Answer, Request
from .fulfil import Fulfiller, Outcome
from .tasks import PRIVATE, TERMINAL, WAITING, TaskStore, task_state
from .wire import (
    ANSWER_REFUSED,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    NOT_CANCELABLE,
    PARSE_ERROR,
    TASK_NOT_FOUND,
    Incoming,
    RpcError,
    Wire,
    answer_of,
    dumps,
    method_op,
    now,
    parse_message,
    public_task,
    render_event,
    render_send_result,
    render_task,
    wire_of,
)

__all__ = ["A2AService", "answer_of"]

log = logging.getLogger("toolnexus.serve")

OnTask = Callable[[dict[str, Any]], Any]

_ERROR_STATUSES = frozenset({"error", "interrupted", "timeout", "closed"})
_V1_STATES = {
    "TASK_STATE_SUBMITTED": "submitted",
    "TASK_STATE_WORKING": "working",
    "TASK_STATE_COMPLETED": "completed",
    "TASK_STATE_FAILED": "failed",
    "TASK_STATE_CANCELED": "canceled",
    "TASK_STATE_INPUT_REQUIRED": "input-required",
    "TASK_STATE_REJECTED": "rejected",
    "TASK_STATE_AUTH_REQUIRED": "auth-required",
}


class _Live:
    """A task with a run in this process: its subscribers and its settled signal."""

    __slots__ = ("queues", "runner", "settled")

    def __init__(self) -> None:
        self.queues: list[asyncio.Queue[dict[str, Any] | None]] = []
        self.settled = asyncio.Event()
        self.runner: asyncio.Task[None] | None = None


class A2AService:
    """The task lifecycle over a fulfiller and a task store; `endpoint` is the JSON-RPC
    route (a Starlette endpoint).

    Args:
        fulfiller: who runs the tasks (`toolnexus.serve.fulfil`).
        tasks: where tasks are kept.
        on_task: called with ``{id, task, result, state}`` at each terminal or waiting save
            (sync or async; what it raises is logged).
    """

    def __init__(
        self,
        fulfiller: Fulfiller,
        tasks: TaskStore,
        *,
        on_task: OnTask | None = None,
        lease_s: float = DEFAULT_LEASE_S,
        recover_every: float | None = 30.0,
        tracer: Any = None,
    ) -> None:
        self.fulfiller = fulfiller
        self.tracer = tracer
        """An OpenTelemetry tracer: each request is a SERVER span (``None``: not traced)."""
        self.tasks = tasks
        self.on_task = on_task
        self.lease_s = lease_s
        self.recover_every = recover_every
        self._live: dict[str, _Live] = {}
        self._taken: set[str] = set()  # tasks a `_next_turn` follow-up is running
        self._background: set[asyncio.Task[Any]] = set()

    # -- the endpoint --------------------------------------------------------------------------

    async def endpoint(self, request: Any) -> Any:
        """Handle one JSON-RPC POST (a Starlette ``Request``) → a Starlette ``Response``.

        With a tracer, each request is an ``a2a {method}`` SERVER span parented on the
        caller's ``traceparent``; the runs it starts nest under it (`toolnexus.tracing`)."""
        if self.tracer is None:
            return (await self._endpoint(request, None))[0]
        from opentelemetry import trace

        from ..tracing import a2a_server_span, end_span

        span = a2a_server_span(self.tracer, str(request.url), request.headers)
        try:
            with trace.use_span(span, end_on_exit=False):
                response, streaming = await self._endpoint(request, span)
        except BaseException as exc:
            end_span(span, exc)
            raise
        if not streaming:
            end_span(span)  # a stream's span ends with the stream (`_sse`)
        return response

    async def _endpoint(self, request: Any, span: Any) -> tuple[Any, bool]:
        from starlette.responses import JSONResponse, StreamingResponse

        from ..tracing import rpc_failed, rpc_method

        rpc_id: Any = None
        try:
            try:
                body: Any = json.loads(await request.body())
            except (ValueError, UnicodeDecodeError):
                raise RpcError(PARSE_ERROR, "Parse error") from None
            if not isinstance(body, dict):
                raise RpcError(INVALID_REQUEST, "Invalid Request: expected one JSON-RPC object")
            call = cast(dict[str, Any], body)
            given_id = call.get("id")
            if isinstance(given_id, str | int) and not isinstance(given_id, bool):
                rpc_id = given_id
            method = call.get("method")
            if call.get("jsonrpc") != "2.0" or not isinstance(method, str):
                raise RpcError(
                    INVALID_REQUEST, 'Invalid Request: jsonrpc must be "2.0" and method a string'
                )
            if span is not None:
                rpc_method(span, method, rpc_id)
            op = method_op(method)
            if op is None:
                raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
            params: Any = call.get("params", {})
            wire = wire_of(op[1], request.headers.get("a2a-version"), params)
            if op[0] in ("stream", "subscribe"):
                events = (
                    await self._send_stream(params, wire)
                    if op[0] == "stream"
                    else await self._subscribe(params, wire)
                )
                response = StreamingResponse(
                    _sse(events, rpc_id, wire, span),
                    media_type="text/event-stream",
                    headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
                )
                return response, span is not None
            result = await self._call(op[0], params, wire)
            return JSONResponse({"jsonrpc": "2.0", "id": rpc_id, "result": result}), False
        except RpcError as exc:
            if span is not None:
                rpc_failed(span, exc.code)
            return JSONResponse(exc.body(rpc_id)), False
        except Exception:
            log.exception("toolnexus: the A2A endpoint failed")
            if span is not None:
                rpc_failed(span, -32603)
            return JSONResponse(RpcError(-32603, "Internal error").body(rpc_id)), False

    async def _call(self, op: str, params: Any, wire: Wire) -> Any:
        if op == "send":
            return await self._send(params, wire)
        if op == "get":
            return render_task(await self._task(params), wire)
        if op == "cancel":
            return render_task(await self._cancel(await self._task(params)), wire)
        return await self._list(params, wire)

    async def _task(self, params: Any) -> dict[str, Any]:
        tid: Any = cast(dict[str, Any], params).get("id") if isinstance(params, dict) else None
        if not isinstance(tid, str) or not tid:
            raise RpcError(INVALID_PARAMS, "Invalid params: id must be a non-empty string")
        task = await self.tasks.get(tid)
        if task is None:
            raise RpcError(TASK_NOT_FOUND, f"Task not found: {tid}")
        return task

    # -- send ------------------------------------------------------------------------------------

    async def _send(self, params: Any, wire: Wire) -> dict[str, Any]:
        incoming = parse_message(params, wire, stream=False)
        task, live = await self._route(incoming, wire)
        if incoming.blocking:
            await live.settled.wait()
            task = await self.tasks.get(task["id"]) or task
        return render_send_result(task, wire)

    async def _send_stream(self, params: Any, wire: Wire) -> AsyncIterator[dict[str, Any]]:
        incoming = parse_message(params, wire, stream=True)
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        task, _ = await self._route(incoming, wire, queue)
        snapshot = cast(dict[str, Any], json.loads(json.dumps(task)))  # the run mutates `task`
        return self._drain(snapshot, queue)

    async def _drain(
        self, first: dict[str, Any], queue: asyncio.Queue[dict[str, Any] | None]
    ) -> AsyncIterator[dict[str, Any]]:
        yield {**public_task(first), "kind": "task"}
        try:
            while (event := await queue.get()) is not None:
                yield event
        finally:
            live = self._live.get(first["id"])
            if live is not None and queue in live.queues:
                live.queues.remove(queue)

    async def _subscribe(self, params: Any, wire: Wire) -> AsyncIterator[dict[str, Any]]:
        task = await self._task(params)
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        live = self._live.get(task["id"])
        if live is not None and task_state(task) not in TERMINAL | WAITING:
            live.queues.append(queue)
        else:
            queue.put_nowait(None)
        return self._drain(task, queue)

    async def _route(
        self,
        incoming: Incoming,
        wire: Wire,
        queue: asyncio.Queue[dict[str, Any] | None] | None = None,
    ) -> tuple[dict[str, Any], _Live]:
        """A new task, or the follow-up of the waiting task the message names.

        A message naming a context (and no task) that has no task waiting for input is a new
        task *in that conversation*: its run continues the context's transcript.
        """
        context = incoming.context_id
        if incoming.task_id is not None:
            task = await self.tasks.get(incoming.task_id)
            if task is None:
                raise RpcError(TASK_NOT_FOUND, f"Task not found: {incoming.task_id}")
            if context is not None and task.get("contextId") != context:
                raise RpcError(
                    INVALID_PARAMS,
                    f"Invalid params: task {task['id']} belongs to another context than {context}",
                    {"reason": "context"},
                )
            return await self._follow_up(task, incoming, queue)
        earlier: list[dict[str, Any]] = []
        if context is not None:
            earlier = await self.tasks.list(context_id=context, limit=50)
            waiting = [t for t in earlier if task_state(t) in WAITING]
            if len(waiting) > 1:
                raise RpcError(
                    INVALID_PARAMS,
                    f"Invalid params: context {context} has {len(waiting)} tasks "
                    "waiting for input; name one with taskId",
                    {"reason": "ambiguous"},
                )
            if waiting:
                return await self._follow_up(waiting[0], incoming, queue)
            for t in earlier:
                live = self._live.get(t["id"])
                if live is not None and live.runner is not None and not live.runner.done():
                    raise RpcError(
                        INVALID_PARAMS,
                        f"Invalid params: context {context} has task {t['id']} in progress; "
                        "send the next message when it has finished",
                        {"reason": "busy", "taskId": t["id"]},
                    )
        return await self._start(incoming, wire, queue, earlier)

    async def _start(
        self,
        incoming: Incoming,
        wire: Wire,
        queue: asyncio.Queue[dict[str, Any] | None] | None,
        earlier: list[dict[str, Any]],
    ) -> tuple[dict[str, Any], _Live]:
        """A new task. Its context — the caller's, else a new one — names the conversation
        its run continues (and the one a later message with that contextId continues)."""
        tid = uuid.uuid4().hex
        context = incoming.context_id or uuid.uuid4().hex
        task: dict[str, Any] = {
            "id": tid,
            "contextId": context,
            "kind": "task",
            "status": {"state": "submitted", "timestamp": now()},
            PRIVATE: {"wire": wire},
        }
        handle = _handle_of(earlier)
        await self.tasks.save(task)
        live = self._watch(tid, queue)
        live.runner = self._spawn(self._run(task, incoming.text, handle, queue is not None))
        return task, live

    async def _follow_up(
        self,
        task: dict[str, Any],
        incoming: Incoming,
        queue: asyncio.Queue[dict[str, Any] | None] | None,
    ) -> tuple[dict[str, Any], _Live]:
        tid, state = task["id"], task_state(task)
        private = cast(dict[str, Any], task.get(PRIVATE) or {})
        wire_request: Any = private.get("pending")
        if state not in WAITING or not isinstance(wire_request, dict):
            hint = (
                "start a new task (same contextId, no taskId) to go on"
                if state in TERMINAL
                else "wait until it asks for input"
            )
            raise RpcError(
                INVALID_PARAMS,
                f"Invalid params: task {tid} is {state}, not waiting for input; {hint}",
                {"reason": "state", "state": state},
            )
        request = Request(**cast(dict[str, Any], wire_request))
        answer = answer_of(request, incoming)
        if not self.fulfiller.resumes:
            return await self._next_turn(task, request, answer, incoming, queue)
        expired: RequestExpired | None = None
        try:
            await self.fulfiller.answer(request.id, answer, answered_by=f"a2a:{tid}")
        except RequestExpired as exc:
            expired = exc  # the expired decline was recorded instead: the run resumes with it
        except AnswerConflict as exc:
            raise RpcError(
                ANSWER_REFUSED,
                f"Invalid params: task {tid} was already answered or is being resumed: {exc}",
                {"reason": "conflict"},
            ) from None
        except (ResumeError, UsageError) as exc:
            raise RpcError(
                ANSWER_REFUSED, f"Invalid params: {exc}", {"reason": "invalid"}
            ) from None
        live = self._watch(tid, queue)
        await self._set(task, "working")
        claim = await self.fulfiller.runs.take(request.id, lease_s=self.lease_s)
        if claim is not None:
            live.runner = self._spawn(self._resume(task, claim, stream=queue is not None))
        # else another resumer (a worker, another server) took it: `recover` settles the task
        if expired is not None:
            raise RpcError(
                ANSWER_REFUSED,
                f"Invalid params: the request of task {tid} expired; it resumes with the "
                "expired decline",
                {"reason": "expired"},
            )
        return task, live

    async def _next_turn(
        self,
        task: dict[str, Any],
        request: Request,
        answer: Answer,
        incoming: Incoming,
        queue: asyncio.Queue[dict[str, Any] | None] | None,
    ) -> tuple[dict[str, Any], _Live]:
        """A follow-up for a fulfiller that cannot resume (a host's ``run_task``): its text
        runs as the next turn of the task's context, on the same task — once."""
        tid = task["id"]
        conflict = RpcError(
            ANSWER_REFUSED,
            f"Invalid params: task {tid} was already answered",
            {"reason": "conflict"},
        )
        if tid in self._taken:
            raise conflict
        self._taken.add(tid)
        try:
            fresh = await self.tasks.get(tid) or {}
            held: Any = cast(dict[str, Any], fresh.get(PRIVATE) or {}).get("request")
            if task_state(fresh) not in WAITING or held != request.id:
                raise conflict  # another follow-up won while this one was read
        except BaseException:
            self._taken.discard(tid)
            raise
        text = incoming.text or json.dumps(answer.data if answer.ok else answer.to_dict())
        cast(dict[str, Any], task.setdefault(PRIVATE, {})).pop("pending", None)
        live = self._watch(tid, queue)
        live.runner = self._spawn(self._run(task, text, None, queue is not None))
        live.runner.add_done_callback(lambda _: self._taken.discard(tid))
        return task, live

    # -- running -------------------------------------------------------------------------------

    def _watch(self, tid: str, queue: asyncio.Queue[dict[str, Any] | None] | None) -> _Live:
        live = self._live.get(tid)
        if live is None:
            live = self._live[tid] = _Live()
        live.settled.clear()
        if queue is not None:
            live.queues.append(queue)
        return live

    def _spawn(self, coro: Any) -> asyncio.Task[None]:
        runner: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._background.add(runner)
        runner.add_done_callback(self._background.discard)
        return runner

    async def _run(self, task: dict[str, Any], text: str, handle: str | None, stream: bool) -> None:
        chunks = _Chunks(self, task)
        try:
            await self._set(task, "working")
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
        await self._finish(task, outcome, chunks.artifact, streamed=chunks.count > 0)

    async def _resume(self, task: dict[str, Any], claim: Claim, stream: bool = False) -> None:
        """Resume the halted run of ``task`` under ``claim``; with ``stream``, the resumed
        run's text goes to the task's subscribers as artifact chunks as it is produced."""
        chunks = _Chunks(self, task)
        try:
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
        await self._finish(task, outcome, chunks.artifact, streamed=chunks.count > 0)

    async def _finish(
        self, task: dict[str, Any], outcome: Outcome, artifact: str, *, streamed: bool
    ) -> None:
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
            await self._set(task, state, message=_agent_message(task, parts))
        elif outcome.status in _ERROR_STATUSES:
            parts = [{"kind": "text", "text": outcome.text}]
            await self._set(task, "failed", message=_agent_message(task, parts))
        else:
            private.pop("pending", None)
            chunk = {"artifactId": artifact, "parts": [{"kind": "text", "text": outcome.text}]}
            if streamed:
                last = {"artifactId": artifact, "parts": [{"kind": "text", "text": ""}]}
                self._emit(task, _artifact_event(task, last, append=True, last=True))
            else:
                self._emit(task, _artifact_event(task, chunk, append=False, last=True))
            task["artifacts"] = [chunk]
            await self._set(task, "completed")
        await self._notify(task, outcome.result)

    async def _set(
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
        self._emit(
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
            live = self._live.get(task["id"])
            if live is not None:
                for queue in live.queues:
                    queue.put_nowait(None)
                live.queues.clear()
                live.settled.set()
                if state in TERMINAL:
                    self._live.pop(task["id"], None)

    def _emit(self, task: dict[str, Any], event: dict[str, Any]) -> None:
        live = self._live.get(task["id"])
        if live is not None:
            for queue in live.queues:
                queue.put_nowait(event)

    async def _notify(self, task: dict[str, Any], result: Any) -> None:
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

    # -- cancel, list ----------------------------------------------------------------------------

    async def _cancel(self, task: dict[str, Any]) -> dict[str, Any]:
        tid, state = task["id"], task_state(task)
        if state in TERMINAL:
            raise RpcError(NOT_CANCELABLE, f"Task cannot be canceled: {tid} is {state}")
        if state in WAITING:
            rid = cast(dict[str, Any], task.get(PRIVATE) or {}).get("request")
            if isinstance(rid, str):
                try:
                    await self.fulfiller.cancel(
                        rid, reason="canceled by the A2A caller", answered_by=f"a2a:{tid}"
                    )
                except AnswerConflict as exc:
                    raise RpcError(
                        NOT_CANCELABLE, f"Task cannot be canceled: {tid}: {exc}"
                    ) from None
        else:
            live = self._live.get(tid)
            if live is None or live.runner is None or live.runner.done():
                raise RpcError(
                    NOT_CANCELABLE, f"Task cannot be canceled: {tid} is not running here"
                )
            live.runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait((live.runner,))
        await self._set(task, "canceled")
        await self._notify(task, None)
        return task

    async def _list(self, params: Any, wire: Wire) -> dict[str, Any]:
        p = cast(dict[str, Any], params) if isinstance(params, dict) else {}
        context: Any = p.get("contextId")
        state: Any = p.get("status")
        size: Any = p.get("pageSize", 50)
        if context is not None and not isinstance(context, str):
            raise RpcError(INVALID_PARAMS, "Invalid params: contextId must be a string")
        if isinstance(state, str):
            state = _V1_STATES.get(state, state)
        elif state is not None:
            raise RpcError(INVALID_PARAMS, "Invalid params: status must be a string")
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 100:
            raise RpcError(INVALID_PARAMS, "Invalid params: pageSize must be an int in 1..100")
        found = await self.tasks.list(context_id=context, state=state, limit=size)
        shown = [render_task(t, wire) for t in found]
        return {"tasks": shown, "nextPageToken": "", "pageSize": size, "totalSize": len(shown)}

    # -- lifecycle ----------------------------------------------------------------------------

    async def recover(self) -> int:
        """Finish the tasks whose follow-up was recorded but whose run nobody here finished —
        a stopped process's, or one another resumer took — and return how many it moved.

        A ``working`` task whose request is answered (or whose resumer's lease ran out) is
        taken and resumed here; one whose request was settled elsewhere takes that outcome
        (the next Request when the run halted again); one cancelled elsewhere is canceled.
        """
        moved = 0
        runs = self.fulfiller.runs
        for task in await self.tasks.list(state="working", limit=1000):
            rid = cast(dict[str, Any], task.get(PRIVATE) or {}).get("request")
            live = self._live.get(task["id"])
            if not isinstance(rid, str) or (live and live.runner and not live.runner.done()):
                continue  # no request to follow, or its run is going on here
            record = await runs.answer_record(rid)
            if record is None:
                continue
            if record.status in ("answered", "claimed"):
                claim = await runs.take(rid, lease_s=self.lease_s)
                if claim is None:
                    continue  # held under a live lease by another resumer
                watched = self._watch(task["id"], None)
                watched.runner = self._spawn(self._resume(task, claim))
            elif record.status == "cancelled":
                await self._set(task, "canceled")
            else:
                await self._finish(
                    task, await _outcome_of(record, runs), uuid.uuid4().hex, streamed=False
                )
            moved += 1
        return moved

    async def recovering(self) -> None:
        """`recover` every ``recover_every`` seconds, until cancelled."""
        if self.recover_every is None:
            return
        while True:
            try:
                await self.recover()
            except Exception:
                log.warning("toolnexus: recovering A2A tasks failed", exc_info=True)
            await asyncio.sleep(self.recover_every)

    def start_recovering(self) -> None:
        """Run `recovering` in the background (stopped by `aclose`)."""
        self._spawn(self.recovering())

    async def aclose(self) -> None:
        """Cancel the runs in flight (their halts and answers stay in the stores)."""
        for runner in list(self._background):
            runner.cancel()
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        for live in self._live.values():
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


def _handle_of(tasks: list[dict[str, Any]]) -> str | None:
    """The agent handle that ran the latest of ``tasks`` (most recent first), if any."""
    for task in tasks:
        handle = cast(dict[str, Any], task.get(PRIVATE) or {}).get("handle")
        if isinstance(handle, str):
            return handle
    return None


class _Chunks:
    """A run's text deltas as artifact-update events of one artifact, to the task's
    subscribers."""

    __slots__ = ("artifact", "count", "service", "task")

    def __init__(self, service: A2AService, task: dict[str, Any]) -> None:
        self.service = service
        self.task = task
        self.artifact = uuid.uuid4().hex
        self.count = 0

    def on_text(self, delta: str) -> None:
        if not delta:
            return
        chunk = {"artifactId": self.artifact, "parts": [{"kind": "text", "text": delta}]}
        event = _artifact_event(self.task, chunk, append=self.count > 0, last=False)
        self.service._emit(self.task, event)  # pyright: ignore[reportPrivateUsage]
        self.count += 1


def _agent_message(task: Mapping[str, Any], parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "kind": "message",
        "role": "agent",
        "messageId": uuid.uuid4().hex,
        "taskId": task["id"],
        "contextId": task["contextId"],
        "parts": parts,
    }


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


async def _sse(
    events: AsyncIterator[dict[str, Any]], rpc_id: Any, wire: Wire, span: Any = None
) -> AsyncIterator[str]:
    error: BaseException | None = None
    try:
        async for event in events:
            body = {"jsonrpc": "2.0", "id": rpc_id, "result": render_event(event, wire)}
            yield f"data: {dumps(body)}\n\n"
    except RpcError as exc:
        if span is not None:
            from ..tracing import rpc_failed

            rpc_failed(span, exc.code)
        yield f"event: error\ndata: {dumps(exc.body(rpc_id))}\n\n"
    except GeneratorExit:
        raise  # the caller went away: the span ends, not as a failure
    except BaseException as exc:
        error = exc
        raise
    finally:
        if span is not None:
            from ..tracing import end_span

            end_span(span, error)
