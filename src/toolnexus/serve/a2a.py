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
as the next turn of the context instead, on the same task, once (`_next_turn`). One message
at a time per context: a new task is saved only in the conditional write that claims its
context in the task store (`TaskStore.claim_context`), so racing messages — to this process or
to others sharing the store — start one task and the others are refused as busy.

Each task belongs to the caller that created it (the name `toolnexus.security.BearerAuth`
puts in the scope, kept in the task's private key): another caller's ListTasks, GetTask,
SubscribeToTask, CancelTask and follow-ups do not find it — the error of a missing task — and
its answer is recorded as ``answered_by`` the caller's name. Without callers every task is
everyone's, as before.

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
import json
import logging
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any, cast

from ..errors import AnswerConflict, RequestExpired, ResumeError, UsageError
from ..intake import AnswerRefused, intake
from ..security import CALLER
from ..stores.requests import DEFAULT_LEASE_S
from ..suspension import Answer, Request
from .a2a_life import Live, OnTask, TaskLife
from .fulfil import Fulfiller
from .tasks import PRIVATE, TERMINAL, WAITING, TaskStore, task_state, visible
from .wire import (
    ANSWER_REFUSED,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    NOT_CANCELABLE,
    TASK_NOT_FOUND,
    Incoming,
    RpcError,
    Wire,
    dumps,
    method_op,
    now,
    parse_body,
    parse_message,
    public_task,
    render_event,
    render_send_result,
    render_task,
    reply_of,
    wire_of,
)

__all__ = ["A2AService"]

_SEEN_KEPT = 64
"""How many follow-up message ids a task remembers (a resend of one is answered, not applied)."""


def _conflict(tid: str, rid: str, refused: AnswerConflict) -> RpcError:
    who = f" by {refused.answered_by}" if refused.answered_by else ""
    return RpcError(
        ANSWER_REFUSED,
        f"Invalid params: the request {rid} of task {tid} was already answered{who} or is "
        f"being resumed: {refused}; your follow-up changed nothing",
        {"reason": "conflict", "answeredBy": refused.answered_by},
    )


log = logging.getLogger("toolnexus.serve")

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
        self.lease_s = lease_s
        self.life = TaskLife(
            fulfiller, tasks, on_task=on_task, lease_s=lease_s, recover_every=recover_every
        )
        """The tasks' runs, saves and events (their state a view of their request)."""
        self._taken: set[str] = set()  # tasks a `_next_turn` follow-up is running

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
        found: Any = request.scope.get(CALLER)
        caller = found if isinstance(found, str) else None
        try:
            body: Any = parse_body(await request.body())
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
                    await self._send_stream(params, wire, caller)
                    if op[0] == "stream"
                    else await self._subscribe(params, wire, caller)
                )
                response = StreamingResponse(
                    _sse(events, rpc_id, wire, span),
                    media_type="text/event-stream",
                    headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
                )
                return response, span is not None
            result = await self._call(op[0], params, wire, caller)
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

    async def _call(self, op: str, params: Any, wire: Wire, caller: str | None) -> Any:
        if op == "send":
            return await self._send(params, wire, caller)
        if op == "get":
            return render_task(await self._task(params, caller), wire)
        if op == "cancel":
            task = await self._task(params, caller, sync=False)
            return render_task(await self._cancel(task, caller), wire)
        return await self._list(params, wire, caller)

    async def _task(self, params: Any, caller: str | None, *, sync: bool = True) -> dict[str, Any]:
        """The task ``params.id`` names, as its request says it is (`TaskLife.sync`)."""
        tid: Any = cast(dict[str, Any], params).get("id") if isinstance(params, dict) else None
        if not isinstance(tid, str) or not tid:
            raise RpcError(INVALID_PARAMS, "Invalid params: id must be a non-empty string")
        task = await self._owned(tid, caller)
        return await self.life.sync(task) if sync else task

    async def _owned(self, tid: str, caller: str | None) -> dict[str, Any]:
        """The task ``tid`` when ``caller`` may see it; another caller's task is not found,
        exactly as a missing one (`toolnexus.serve.tasks.visible`)."""
        task = await self.tasks.get(tid)
        if task is None or not visible(task, caller):
            raise RpcError(TASK_NOT_FOUND, f"Task not found: {tid}")
        return task

    # -- send ------------------------------------------------------------------------------------

    async def _send(self, params: Any, wire: Wire, caller: str | None) -> dict[str, Any]:
        incoming = parse_message(params, wire, stream=False)
        task, live = await self._route(incoming, wire, caller)
        if incoming.blocking:
            await live.settled.wait()
            task = await self.tasks.get(task["id"]) or task
        return render_send_result(task, wire)

    async def _send_stream(
        self, params: Any, wire: Wire, caller: str | None
    ) -> AsyncIterator[dict[str, Any]]:
        incoming = parse_message(params, wire, stream=True)
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        task, _ = await self._route(incoming, wire, caller, queue)
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
            live = self.life.live.get(first["id"])
            if live is not None and queue in live.queues:
                live.queues.remove(queue)

    async def _subscribe(
        self, params: Any, wire: Wire, caller: str | None
    ) -> AsyncIterator[dict[str, Any]]:
        task = await self._task(params, caller)  # synced: answered elsewhere, it works now
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        live = self.life.live.get(task["id"])
        if live is not None and task_state(task) not in TERMINAL | WAITING:
            live.queues.append(queue)
        else:
            queue.put_nowait(None)
        snapshot = cast(dict[str, Any], json.loads(json.dumps(task)))  # the run mutates `task`
        return self._drain(snapshot, queue)

    async def _route(
        self,
        incoming: Incoming,
        wire: Wire,
        caller: str | None,
        queue: asyncio.Queue[dict[str, Any] | None] | None = None,
    ) -> tuple[dict[str, Any], Live]:
        """A new task, or the follow-up of the waiting task the message names.

        A message naming a context (and no task) that has no task waiting for input is a new
        task *in that conversation*: its run continues the context's transcript. A context
        whose tasks another caller made is not this caller's to continue.
        """
        context = incoming.context_id
        if incoming.task_id is not None:
            task = await self._owned(incoming.task_id, caller)
            if context is not None and task.get("contextId") != context:
                raise RpcError(
                    INVALID_PARAMS,
                    f"Invalid params: task {task['id']} belongs to another context than {context}",
                    {"reason": "context"},
                )
            return await self._follow_up(task, incoming, queue, caller)
        earlier: list[dict[str, Any]] = []
        if context is not None:
            earlier = await self.tasks.list(context_id=context, limit=50)
            if any(not visible(t, caller) for t in earlier):
                raise _foreign(context)
            for t in earlier:
                if task_state(t) in WAITING:
                    await self.life.sync(t)
            waiting = [t for t in earlier if task_state(t) in WAITING]
            if len(waiting) > 1:
                raise RpcError(
                    INVALID_PARAMS,
                    f"Invalid params: context {context} has {len(waiting)} tasks "
                    "waiting for input; name one with taskId",
                    {"reason": "ambiguous"},
                )
            if waiting:
                return await self._follow_up(waiting[0], incoming, queue, caller)
            for t in earlier:
                live = self.life.live.get(t["id"])
                if live is not None and live.runner is not None and not live.runner.done():
                    raise _busy(context, t["id"])
        return await self._start(incoming, wire, caller, queue, earlier)

    async def _start(
        self,
        incoming: Incoming,
        wire: Wire,
        caller: str | None,
        queue: asyncio.Queue[dict[str, Any] | None] | None,
        earlier: list[dict[str, Any]],
    ) -> tuple[dict[str, Any], Live]:
        """A new task. Its context — the caller's, else a new one — names the conversation
        its run continues (and the one a later message with that contextId continues).

        The task is saved in the one conditional write that claims its context
        (`TaskStore.claim_context`): of messages racing on one context — in this process or
        in others sharing the store — one starts, the others are refused as busy."""
        tid = uuid.uuid4().hex
        context = incoming.context_id or uuid.uuid4().hex
        private: dict[str, Any] = {"wire": wire}
        if caller is not None:
            private["owner"] = caller
        task: dict[str, Any] = {
            "id": tid,
            "contextId": context,
            "kind": "task",
            "status": {"state": "submitted", "timestamp": now()},
            PRIVATE: private,
        }
        handle = _handle_of(earlier)
        holder = await self.tasks.claim_context(context, tid, lease_s=self.lease_s, task=task)
        if holder is not None:
            held = await self.tasks.get(holder)
            if held is not None and not visible(held, caller):
                raise _foreign(context)  # a new context another caller took first
            raise _busy(context, holder)
        live = self.life.watch(tid, queue)
        live.runner = self.life.spawn(self.life.run(task, incoming.text, handle, queue is not None))
        return task, live

    async def _follow_up(
        self,
        task: dict[str, Any],
        incoming: Incoming,
        queue: asyncio.Queue[dict[str, Any] | None] | None,
        caller: str | None,
    ) -> tuple[dict[str, Any], Live]:
        """A caller's follow-up on a waiting task: its reply, through the intake, answers the
        request the task shows — exactly once.

        A message seen before (its ``messageId``) is answered with the task as it is, never
        applied again (to a later request least of all); a reply naming another request than
        the one shown is refused; so is one the request does not take (the error names the
        accepted forms) and one that comes after another surface answered (it names who).
        A refused follow-up leaves the task as it was. The answer is recorded as given by
        the caller (its name; ``a2a:<task id>`` when the server names no caller).
        """
        tid = task["id"]
        private = cast(dict[str, Any], task.get(PRIVATE) or {})
        seen = cast(dict[str, Any], private.get("seen") or {})
        if incoming.message_id is not None and incoming.message_id in seen:
            return task, self.life.resent(tid, queue)  # a resend: the first result
        task = await self.life.sync(task)
        state = task_state(task)
        private = cast(dict[str, Any], task.get(PRIVATE) or {})
        wire_request: Any = private.get("pending")
        if state not in WAITING or not isinstance(wire_request, dict):
            await self._refuse_answered(task)
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
        request = Request.from_dict(cast(dict[str, Any], wire_request))
        if not self.fulfiller.resumes:
            return await self._next_turn(task, request, incoming, queue)
        reply, named = reply_of(incoming)
        if named is not None and named != request.id:
            raise RpcError(
                ANSWER_REFUSED,
                f"Invalid params: the follow-up answers request {named}, but task {tid} now "
                f"asks request {request.id}; read the task and answer what it shows",
                {"reason": "stale", "requestId": request.id},
            )
        if isinstance(reply, Mapping):  # a whole answer: the request it answers is the one shown
            reply = {"id": request.id, **reply}
        try:
            answer = intake(request, reply)
        except AnswerRefused as exc:
            raise RpcError(
                ANSWER_REFUSED,
                f"Invalid params: {exc}",
                {"reason": "refused", "accepts": exc.accepts.to_dict()},
            ) from None
        except ResumeError as exc:  # a wire answer of the wrong types
            raise RpcError(
                ANSWER_REFUSED, f"Invalid params: {exc}", {"reason": "invalid"}
            ) from None
        answering = self.life.answering
        if tid in answering:  # another follow-up of this task is being answered here now
            if incoming.message_id is not None and answering[tid] == incoming.message_id:
                return task, self.life.resent(tid, queue)  # the very same message, resent
            raise RpcError(
                ANSWER_REFUSED,
                f"Invalid params: task {tid} is being answered right now by another "
                "follow-up; your follow-up changed nothing",
                {"reason": "conflict"},
            )
        answering[tid] = incoming.message_id  # `TaskLife.sync` leaves the task to us
        try:
            by = caller if caller is not None else f"a2a:{tid}"
            return await self._record_follow_up(task, request, answer, incoming, queue, by)
        finally:
            answering.pop(tid, None)

    async def _record_follow_up(
        self,
        task: dict[str, Any],
        request: Request,
        answer: Answer,
        incoming: Incoming,
        queue: asyncio.Queue[dict[str, Any] | None] | None,
        by: str,
    ) -> tuple[dict[str, Any], Live]:
        """Record the follow-up's answer (exactly once) as given ``by`` the caller, remember
        its message, and resume the run here (or follow the resumer that took it)."""
        tid = task["id"]
        private = cast(dict[str, Any], task.setdefault(PRIVATE, {}))
        expired: RequestExpired | None = None
        try:
            await self.fulfiller.answer(request.id, answer, answered_by=by)
        except RequestExpired as exc:
            expired = exc  # the expired decline was recorded instead: the run resumes with it
        except AnswerConflict as exc:
            raise _conflict(tid, request.id, exc) from None
        except (ResumeError, UsageError) as exc:
            raise RpcError(
                ANSWER_REFUSED, f"Invalid params: {exc}", {"reason": "invalid"}
            ) from None
        if incoming.message_id is not None:
            seen = cast(dict[str, Any], private.get("seen") or {})
            seen[incoming.message_id] = request.id
            private["seen"] = dict(list(seen.items())[-_SEEN_KEPT:])
        live = self.life.watch(tid, queue)
        await self.life.set(task, "working")
        claim = await self.fulfiller.runs.take(request.id, lease_s=self.lease_s)
        if claim is not None:
            live.runner = self.life.spawn(self.life.resume(task, claim, stream=queue is not None))
        else:  # another resumer (a worker, another server) took it: follow it to its end
            self.life.follow_elsewhere(task, request.id)
        if expired is not None:
            raise RpcError(
                ANSWER_REFUSED,
                f"Invalid params: the request of task {tid} expired; it resumes with the "
                "expired decline",
                {"reason": "expired"},
            )
        return task, live

    async def _refuse_answered(self, task: dict[str, Any]) -> None:
        """A follow-up to a task whose request another surface answered (or cancelled): the
        error names who, and the task is left as the answer made it."""
        rid = cast(dict[str, Any], task.get(PRIVATE) or {}).get("request")
        if not isinstance(rid, str):
            return
        record = await self.fulfiller.runs.answer_record(rid)
        if record is not None:
            who = f" by {record.answered_by}" if record.answered_by else ""
            verb = "cancelled" if record.status == "cancelled" else "answered"
            raise RpcError(
                ANSWER_REFUSED,
                f"Invalid params: the request of task {task['id']} was already {verb}{who} "
                f"(the task is {task_state(task)}); your follow-up changed nothing",
                {"reason": "conflict", "answeredBy": record.answered_by},
            )

    async def _next_turn(
        self,
        task: dict[str, Any],
        request: Request,
        incoming: Incoming,
        queue: asyncio.Queue[dict[str, Any] | None] | None,
    ) -> tuple[dict[str, Any], Live]:
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
        text = incoming.text or json.dumps(
            [d for d in incoming.data_parts if d is not None], ensure_ascii=False
        )
        cast(dict[str, Any], task.setdefault(PRIVATE, {})).pop("pending", None)
        live = self.life.watch(tid, queue)
        live.runner = self.life.spawn(self.life.run(task, text, None, queue is not None))
        live.runner.add_done_callback(lambda _: self._taken.discard(tid))
        return task, live

    # -- cancel, list ----------------------------------------------------------------------------

    async def _cancel(self, task: dict[str, Any], caller: str | None) -> dict[str, Any]:
        tid, state = task["id"], task_state(task)
        if state in TERMINAL:
            raise RpcError(NOT_CANCELABLE, f"Task cannot be canceled: {tid} is {state}")
        if state in WAITING:
            rid = cast(dict[str, Any], task.get(PRIVATE) or {}).get("request")
            if isinstance(rid, str):
                try:
                    by = caller if caller is not None else f"a2a:{tid}"
                    await self.fulfiller.cancel(
                        rid, reason="canceled by the A2A caller", answered_by=by
                    )
                except AnswerConflict as exc:
                    await self.life.sync(task)  # the view follows whoever answered
                    raise RpcError(
                        NOT_CANCELABLE, f"Task cannot be canceled: {tid}: {exc}"
                    ) from None
        else:
            live = self.life.live.get(tid)
            if live is None or live.runner is None or live.runner.done():
                raise RpcError(
                    NOT_CANCELABLE, f"Task cannot be canceled: {tid} is not running here"
                )
            live.runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait((live.runner,))
        await self.life.set(task, "canceled")
        await self.life.notify(task, None)
        return task

    async def _list(self, params: Any, wire: Wire, caller: str | None) -> dict[str, Any]:
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
        # ``caller`` only when there is one: a host's store written before callers serves on
        query: dict[str, Any] = {"context_id": context, "state": state, "limit": size}
        if caller is not None:
            query["caller"] = caller
        listed = await self.tasks.list(**query)
        found = [await self.life.sync(t) for t in listed if visible(t, caller)]
        shown = [render_task(t, wire) for t in found if state is None or task_state(t) == state]
        return {"tasks": shown, "nextPageToken": "", "pageSize": size, "totalSize": len(shown)}

    # -- lifecycle ----------------------------------------------------------------------------

    async def recover(self) -> int:
        """Sync every task that waits or works with the request behind it (`TaskLife.sync`):
        a task answered elsewhere goes on, one settled elsewhere settles. How many moved."""
        return await self.life.recover()

    def start_recovering(self) -> None:
        """Run `TaskLife.recovering` in the background (stopped by `aclose`)."""
        self.life.spawn(self.life.recovering())

    async def aclose(self) -> None:
        """Cancel the runs in flight (their halts and answers stay in the stores)."""
        await self.life.aclose()


def _busy(context: str, holder: str) -> RpcError:
    return RpcError(
        INVALID_PARAMS,
        f"Invalid params: context {context} has task {holder} in progress; "
        "send the next message when it has finished",
        {"reason": "busy", "taskId": holder},
    )


def _foreign(context: str) -> RpcError:
    """A context another caller's tasks continue: not this caller's (its tasks stay unseen)."""
    return RpcError(
        INVALID_PARAMS,
        f"Invalid params: context {context} is not available; start a new conversation "
        "(send no contextId)",
        {"reason": "context"},
    )


def _handle_of(tasks: list[dict[str, Any]]) -> str | None:
    """The agent handle that ran the latest of ``tasks`` (most recent first), if any."""
    for task in tasks:
        handle = cast(dict[str, Any], task.get(PRIVATE) or {}).get("handle")
        if isinstance(handle, str):
            return handle
    return None


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
