"""The engine: one state machine that moves a run forward, turn by turn.

call the model → plan the tool calls → execute them concurrently → record each result or
suspension → decide (continue, finish, halt). The loop is written once, `Engine._loop`: it
hands a stream's events out along the way (`Engine.drive` iterates them) and ends with a
`Finished` step that carries the result and, when the run halted, its checkpoint. ``run`` and
``ask`` await it (`Engine.complete`).
Resolving a suspension — inline through ``wait_for`` or later from a checkpoint — is one code
path: re-execute the call with ``ctx.answer`` (see `Engine.resolve`).

Parked-run memory — the one list of the measured tricks. A run parked on a human (and the
thousands in their first model call, whose peak sets the process's RSS) is mostly coroutine
frames and the few objects they hold, so each frame and copy between a run and its host's
``wait_for`` is counted; ``bench/bench_durable.py --only park`` pins the figure (RSS and
tracemalloc KiB per parked run, against the floor). Every trick is marked ``[parked-run
memory]`` at its site; keep them when editing there, and measure before adding one:

- the loop is one coroutine (`Engine._loop`): ``run``, ``ask`` and the agent runtime await
  it (`Engine.complete` returns it); only streaming iterates it, through
  `toolnexus.loop.events.EventStream` — an async generator cost its object, an ``asend``
  awaitable and an entry in the event loop's weak set of async generators (≈ 0.25 KiB per
  run, in flight and parked);
- `Client.run` inlines ``_final`` (one frame fewer), and emits its ``run`` metric from a
  ``try`` of its own frame, not from a context-manager object it keeps (≈ 0.1 KiB);
- `Engine.ask`, `Engine._wait` and `Engine._start` (a single call) are not coroutines: the
  awaitable they return is awaited by the caller (one frame fewer each);
- `Engine._loop` asks about a single call after it ran, not from inside it (one frame fewer),
  drops the model's raw reply (``del turn``) before the calls run;
- `Engine._ask` drops the run's rendering cache (``state.bodies``) while it waits;
- ``ModelCall.call_model`` is not a coroutine without a hook (one frame fewer in flight), and
  ``ModelCall.send`` awaits the first attempt directly (the retry loop and the abort wrapper
  only after a failure, or with a cancel event or deadline);
- ``ModelCall._build_body`` keeps no rendering cache during the first turn, and
  ``ModelCall._send_turn`` passes ``None``, not an empty list, for a body without parts;
- `AiohttpTransport.post` waits for one of the own pool's connections before it encodes the
  body and makes aiohttp's request (a counter of ``connector_limit`` slots, in front of
  the connector's own limit): the runs beyond the pool — most of a thousand in their first
  model call — hold a waiter each instead of an encoded body and aiohttp's request state
  (≈ 3.7 KiB each; the largest single item, as it sets the peak that sets the RSS); and it
  builds no options dict without a timeout;
- ``RunState.model_asked`` is a tuple (empty and shared in the common run), not a list;
- `Toolkit.run_tools` shares one tool list and name index among the toolkit's runs.

The run's data lives in `toolnexus.loop.state`; the pure transcript rules in
`toolnexus.loop.transcript`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from .._types import Message, RunResult, Tool, ToolContext, ToolResult
from ..errors import AnswerMismatch, CallbackError
from ..intake import intake
from ..llm.abort import run_abortable
from ..llm.base import ModelTurn
from ..llm.convert import normalize_history
from ..llm.model_halt import ModelSuspended
from ..suspend import pending_of
from ..suspension import (
    RELAY_CALLS_KEY,
    Answer,
    Request,
    WaitFor,
    expired_decline,
    format_timestamp,
    is_expired,
    is_relay_request,
    with_note,
)
from ..tools.execute import coerce_result, invoke_tool, unknown_tool_result
from ..tools.validation import parse_arguments, validate_arguments
from . import edits
from . import transcript as tx
from .checkpoint import Checkpoint, Outstanding
from .events import EventStream, emit
from .hooks import call_callback
from .model_call import ModelCalls
from .state import (
    EngineConfig,
    Finished,
    ParkingWaitFor,
    RunState,
    Slot,
    TurnGuard,
)
from .transcript import relay_splice

if TYPE_CHECKING:
    from ..tracing import Tracing

__all__ = [
    "Engine",
    "EngineConfig",
    "Finished",
    "ParkingWaitFor",
    "RunState",
    "Slot",
    "TurnGuard",
    "relay_splice",
]

log = logging.getLogger("toolnexus")

Event = dict[str, Any]
_NO_TOOLKIT = "custom (no toolkit)"  # the source of a call in a run without tools: no event


class Engine(ModelCalls):
    """Drives runs for one client configuration (its model-call step: `ModelCalls`)."""

    def new_state(
        self,
        prompt: str | Sequence[Any] | None,
        tools: list[Tool],
        wire_tools: list[dict[str, Any]],
        *,
        skills_prompt: str = "",
        history: Sequence[Message] | None = None,
        cancel: asyncio.Event | None = None,
        by_name: dict[str, Tool] | None = None,
    ) -> RunState:
        """A fresh run: the history (normalised to the canonical shape) or the system prompt,
        then the user ``prompt`` (none on a resume; a list: content parts). ``by_name`` indexes
        ``tools`` (built when not given; a shared one must not change while the run lives)."""
        cfg = self.cfg
        messages = normalize_history(list(history)) if history else []
        if prompt is not None:
            tx.balance_last_turn(messages)
        if not messages:
            system = "\n\n".join(p for p in (cfg.system_prompt, skills_prompt) if p)
            if system:
                messages.append({"role": "system", "content": system})
        if prompt is not None:
            messages.append(tx.user_message(prompt))
        deadline = None
        if cfg.timeout_ms is not None:
            deadline = asyncio.get_running_loop().time() + cfg.timeout_ms / 1000
        return RunState(
            messages=messages,
            tools=tools,
            by_name={t.name: t for t in tools} if by_name is None else by_name,
            wire_tools=wire_tools,
            cancel=cancel,
            deadline=deadline,
            wait_for=cfg.wait_for,
            redactor=cfg.redactor,
        )

    # -- tool calls --------------------------------------------------------------------------

    def _ctx(self, state: RunState, slot: Slot, answer: Answer | None) -> ToolContext:
        timeout = None
        if state.deadline is not None:
            timeout = max(0.0, state.deadline - asyncio.get_running_loop().time())
        if answer is None:
            return ToolContext(signal=state.cancel, timeout=timeout, call_id=slot.id)
        request = slot.request
        fence = state.fence
        return ToolContext(
            signal=state.cancel,
            timeout=timeout,
            answer=answer,
            call_id=slot.id,
            request=request,
            idempotency_key=f"{request.id if request is not None else answer.id}:{slot.id}",
            fencing_token=fence.token if fence is not None else None,
        )

    async def _execute_once(
        self, state: RunState, slot: Slot, answer: Answer | None
    ) -> tuple[ToolResult, str]:
        """before_tool → lookup → validate → execute. Returns the result and the source."""
        hooks = self.cfg.hooks
        args = slot.args
        if hooks.before_tool is not None:
            info: dict[str, Any] = {
                "name": slot.name,
                "args": args,
                "id": slot.id,
                "turn": state.turns - 1,
            }
            if answer is not None:
                info["answer"] = answer
            change = await call_callback("before_tool hook", hooks.before_tool, info)
            if isinstance(change, Mapping):
                if "result" in change:
                    return coerce_result(cast(object, change["result"])), tx.source(
                        state, slot.name
                    )
                new_args = change.get("args")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
                if isinstance(new_args, dict):
                    args = slot.args = dict(new_args)  # pyright: ignore[reportUnknownArgumentType]
        tool = state.by_name.get(slot.name)
        if tool is None:
            if not state.by_name:
                # A toolkit-less run: the existing package's text, and no ``tool`` event.
                return ToolResult(f"unknown tool: {slot.name}", True), _NO_TOOLKIT
            return unknown_tool_result(slot.name, list(state.by_name)), "custom"
        problem = validate_arguments(tool, args)
        if problem is not None:
            return ToolResult(problem, True), tool.source
        ctx = self._ctx(state, slot, answer)
        if answer is not None and state.fence is not None:
            # A durable resume: the claim is confirmed after the hooks, right before the
            # approved tool runs, so a resumer that was overtaken never starts it (LeaseLost).
            await state.fence.confirm()
        return await invoke_tool(tool, args, ctx, state.redactor), tool.source

    async def _run(self, state: RunState, slot: Slot, answer: Answer | None) -> ToolResult:
        started = time.perf_counter()
        tracing = self.cfg.tracing
        if state.span is None or tracing is None:
            result, source = await self._execute_once(state, slot, answer)
        else:
            with tracing.tool(state.span, slot.name, slot.id, slot.args) as span:
                result, source = await self._execute_once(state, slot, answer)
            tracing.end_tool(span, result, source, pending_of(result))
        if source is _NO_TOOLKIT:
            return result
        request = pending_of(result)
        event: dict[str, Any] = {
            "event": "tool",
            "tool": slot.name,
            "source": source,
            "is_error": result.is_error and request is None,
            "ms": (time.perf_counter() - started) * 1000,
            "model": state.sent_model or self.cfg.model,
        }
        if request is not None:
            event["pending"] = True
        self._emit(event)
        return result

    async def _after_tool(self, state: RunState, slot: Slot, result: ToolResult) -> ToolResult:
        hook = self.cfg.hooks.after_tool
        if hook is None:
            return result
        info = {
            "name": slot.name,
            "args": slot.args,
            "result": result,
            "id": slot.id,
            "turn": state.turns - 1,
        }
        change = await call_callback("after_tool hook", hook, info)
        if isinstance(change, Mapping) and "result" in change:
            return coerce_result(cast(object, change["result"]))
        return result

    def _stamp(self, request: Request, slot: Slot | None) -> Request:
        """Give a suspension its deadline and, for relay calls, the provider call id."""
        changes: dict[str, Any] = {}
        ttl = self.cfg.pending_ttl
        if request.expiresAt is None and ttl is not None:
            changes["expiresAt"] = format_timestamp(datetime.now(UTC) + timedelta(seconds=ttl))
        if slot is not None and is_relay_request(request):
            calls: list[Any] = list((request.data or {})[RELAY_CALLS_KEY])
            stamped: list[Any] = []
            for call in calls:
                if isinstance(call, dict) and not call.get("id"):  # pyright: ignore[reportUnknownMemberType]
                    call = {**call, "id": slot.id}  # pyright: ignore[reportUnknownVariableType]
                stamped.append(call)
            changes["data"] = {**(request.data or {}), RELAY_CALLS_KEY: stamped}
        return replace(request, **changes) if changes else request

    async def start_slot(self, state: RunState, slot: Slot, resolve_inline: bool) -> None:
        """First execution of a call; with ``resolve_inline`` a suspension is resolved here."""
        try:
            slot.args, problem = tx.parse(slot)
        except Exception as exc:
            slot.args, problem = {}, f"malformed arguments for tool {slot.name}: {exc}"
        if problem is not None:
            self._emit(
                {
                    "event": "tool",
                    "tool": slot.name,
                    "source": tx.source(state, slot.name),
                    "is_error": True,
                    "ms": 0.0,
                    "model": state.sent_model or self.cfg.model,
                }
            )
            slot.finish(await self._after_tool(state, slot, ToolResult(problem, True)))
            return
        result = await self._run(state, slot, None)
        request = pending_of(result)
        if request is None:
            slot.finish(await self._after_tool(state, slot, result))
            return
        request = self._stamp(request, slot)
        slot.suspend(request)
        if resolve_inline:
            answer = self.accepted(state, slot, request, await self.ask(state, request))
            await self.resolve(state, slot, answer)

    async def resolve(self, state: RunState, slot: Slot, answer: Answer) -> None:
        """Resolve a suspended call with ``answer``: the one rule for inline and durable paths.

        ``answer`` was accepted by the intake already (`accepted` inline; when it was recorded
        or claimed on the durable path). ``ok`` ⇒ re-execute once with ``ctx.answer``; ``!ok``
        ⇒ ``declined/expired: <prompt>``. An approval answered with edited arguments
        (`toolnexus.loop.edits`) re-executes with them: the slot's arguments and the
        transcript's call become the edited ones first.
        Relay tools map the answer themselves (their output, or ``relay declined for …``).
        A retry that suspends again with the *same* question becomes ``unresolved: <prompt>``
        — the loop never asks twice for one request. A retry that asks a *new* question (an MCP
        server's follow-up, say) is a fresh suspension: asked inline when there is a
        ``wait_for``, else the call stays suspended and the run halts on it (bounded rounds).
        """
        request = slot.request
        assert request is not None
        tool = state.by_name.get(slot.name)
        result: ToolResult | None = None
        for rounds in range(tx.MAX_FOLLOW_UPS + 1):
            if not answer.ok and (tool is None or not tool.handles_declines):
                result = ToolResult(with_note(f"declined/expired: {request.prompt}", answer), True)
                break
            edit = edits.proposed_edit(request, answer) if edits.editable(tool) else None
            if edit is not None:  # approved with edited arguments: they are what runs
                slot.args = dict(edit.value)
                slot.arguments = edits.encode_arguments(edit.value)
                edits.rewrite_call(state.messages, slot.id, slot.arguments)
            retry = await self._run(state, slot, answer)
            follow = pending_of(retry)
            if follow is None:
                result = retry if tool is None or tool.handles_declines else _noted(retry, answer)
                break
            if rounds == tx.MAX_FOLLOW_UPS or tx.same_question(follow, request):
                result = ToolResult(f"unresolved: {request.prompt}", True)
                break
            request = self._stamp(follow, slot)
            slot.suspend(request)
            if state.wait_for is None:
                return  # a new question and nobody to ask now: the run halts on it
            answer = self.accepted(state, slot, request, await self.ask(state, request))
        assert result is not None
        slot.finish(await self._after_tool(state, slot, result))

    def restore(self, state: RunState, checkpoint: Checkpoint) -> list[Slot]:
        """Load a checkpoint into ``state``; return the halted turn's calls as slots.

        A traced run's span opens here, under the halted run's (`Checkpoint.trace`), so the
        re-executed call is already inside it."""
        if self.cfg.tracing is not None and state.span is None:
            self.start_span(state, resumed_from=checkpoint.trace)
        state.messages = list(checkpoint.messages)
        state.turns = checkpoint.turn
        state.usage = dict(checkpoint.usage)
        state.records = list(checkpoint.tool_calls)
        slots: list[Slot] = []
        for i, o in enumerate(checkpoint.outstanding):
            slot = Slot(i, o.call_id, o.name, o.arguments)
            slot.args, _ = parse_arguments(o.arguments)
            if o.state == "done":
                assert o.result is not None
                slot.finish(o.result)
            elif o.state == "suspended":
                assert o.request is not None
                slot.suspend(o.request)
            slots.append(slot)
        return slots

    async def apply_answer(
        self, state: RunState, slots: list[Slot], request: Request, answer: Answer
    ) -> None:
        """Resolve every slot waiting on ``request`` with ``answer`` (the durable resume).

        A non-relay call is re-executed with ``ctx.answer`` — the same rule as the inline
        path. Relay calls get the host's output spliced (``results[]`` by call id, or the
        single-call ``output`` shorthand for the first one).
        """
        if not slots:  # a halt at the model call: the model gets the answer on its next call
            state.model_answer = answer
            state.model_asked += (request.id,)
            return
        targets = [s for s in slots if s.request is not None and s.request.id == request.id]
        for position, slot in enumerate(targets):
            tool = state.by_name.get(slot.name)
            if tool is not None and tool.source == "relay":
                started = time.perf_counter()
                result = tx.relay_splice(slot.name, slot.id, answer, first=position == 0)
                self._emit(
                    {
                        "event": "tool",
                        "tool": slot.name,
                        "source": "relay",
                        "is_error": result.is_error,
                        "ms": (time.perf_counter() - started) * 1000,
                        "model": state.sent_model or self.cfg.model,
                    }
                )
                slot.finish(await self._after_tool(state, slot, result))
            else:
                await self.resolve(state, slot, answer)

    def accepted(
        self, state: RunState, slot: Slot | None, request: Request, answer: Answer
    ) -> Answer:
        """The host's inline answer through the intake: `toolnexus.loop.edits.accepted_for`
        the halted call's tool (``slot``; ``None``: a halt at the model call)."""
        if slot is None:
            return intake(request, answer)
        return edits.accepted_for(state.by_name.get(slot.name), slot.name, request, answer)

    def ask(self, state: RunState, request: Request) -> Awaitable[Answer]:
        """Ask the host's ``wait_for``, enforcing the Request's deadline and the id echo.

        Not a coroutine itself [parked-run memory]: an untraced run (the common case) waits in
        `_ask` directly, one frame fewer for every parked run; a traced one inside its
        ``await_human`` span.
        """
        if state.span is None or self.cfg.tracing is None:
            return self._ask(state, request)
        return self._traced_ask(state, request, self.cfg.tracing)

    async def _traced_ask(self, state: RunState, request: Request, tracing: Tracing) -> Answer:
        span = tracing.start_wait(state.span, request)
        try:
            answer = await self._ask(state, request)
        except BaseException as exc:
            tracing.end_wait(span, None, exc)
            raise
        tracing.end_wait(span, answer, None)
        return answer

    async def _ask(self, state: RunState, request: Request) -> Answer:
        wait_for = state.wait_for
        assert wait_for is not None
        # [parked-run memory] a run waiting for a human keeps no rendering cache; the next
        # body is rendered afresh.
        state.bodies = None
        if is_expired(request):
            if isinstance(wait_for, ParkingWaitFor):  # the store records the expiry too
                await wait_for.expire(request)
            return expired_decline(request.id)
        deadline = request.expires_at if request.expiresAt else None
        try:
            if deadline is not None:
                async with asyncio.timeout((deadline - datetime.now(UTC)).total_seconds()):
                    value = await self._wait(state, request, wait_for)
            else:
                # The common case, kept shallow: a parked run's memory is mostly its frames.
                value = await self._wait(state, request, wait_for)
        except TimeoutError:
            if deadline is not None and is_expired(request):
                return expired_decline(request.id)
            raise CallbackError("wait_for raised TimeoutError") from None
        except (CallbackError, asyncio.CancelledError):
            raise
        except Exception as exc:
            if type(exc).__module__.startswith("toolnexus"):
                raise
            raise CallbackError(f"wait_for raised {type(exc).__name__}: {exc}") from exc
        answer = tx.as_answer(value)
        if answer.id != request.id:
            raise AnswerMismatch(
                f'wait_for answered id "{answer.id}", which does not echo the pending request '
                f'id "{request.id}"'
            )
        if is_expired(request):
            return expired_decline(request.id)
        return answer

    def _wait(self, state: RunState, request: Request, wait_for: WaitFor) -> Awaitable[Any]:
        """What ``ask`` awaits: the host's answer, abortable by the run's ``cancel`` event.

        Not a coroutine itself [parked-run memory]: without a cancel event the host's own
        awaitable is awaited directly, one frame fewer for every parked run. With one, the
        host is not even asked when the run is already cancelled.
        """
        if state.cancel is None:
            return self._ask_host(state, request, wait_for)
        return run_abortable(
            self._ask_host_later(state, request, wait_for), cancel=state.cancel, deadline=None
        )

    def _ask_host(self, state: RunState, request: Request, wait_for: WaitFor) -> Awaitable[Any]:
        if isinstance(wait_for, ParkingWaitFor):
            return wait_for.park(request, self.snapshot(state, state.turn_slots, request))
        value = wait_for(request)
        return value if inspect.isawaitable(value) else _ready(value)

    async def _ask_host_later(self, state: RunState, request: Request, wait_for: WaitFor) -> Any:
        return await self._ask_host(state, request, wait_for)

    # -- the loop ----------------------------------------------------------------------------

    def complete(
        self,
        state: RunState,
        *,
        resumed: list[Slot] | None = None,
        on_text: Callable[[str], Any] | None = None,
    ) -> Coroutine[Any, Any, Finished]:
        """Run turns until the model answers, a limit stops the run, or a call halts it: the
        loop `drive` plays, without events (``run``, ``ask``, the agent runtime).

        Without ``on_text``, the loop coroutine itself [parked-run memory]: awaited by the
        caller, it is the run's only frame for the loop (`toolnexus.loop.events`). With it,
        the loop streams and each text delta goes to ``on_text`` (sync or async) as it comes."""
        if on_text is None:
            return self._loop(state, stream=False, resumed=resumed)
        return self._complete_streaming(state, resumed, on_text)

    async def _complete_streaming(
        self, state: RunState, resumed: list[Slot] | None, on_text: Callable[[str], Any]
    ) -> Finished:
        async for step in self.drive(state, stream=True, resumed=resumed):
            if isinstance(step, Finished):
                return step
            if step["type"] == "text":
                value = on_text(step["delta"])
                if inspect.isawaitable(value):
                    await value
        raise AssertionError("the engine's loop ended without finishing")  # pragma: no cover

    def drive(
        self, state: RunState, *, stream: bool, resumed: list[Slot] | None = None
    ) -> EventStream[Event | Finished]:
        """The turn loop — the only one: call the model, run the calls, resolve or halt, repeat.

        The last item is always the `Finished` step (the result, and the checkpoint when the
        run halted). With ``stream``, events come before it, per turn: ``text`` deltas, then
        ``usage`` before a final answer, or one ``tool_call`` per call and, per call in order,
        ``pending`` (before ``wait_for`` is asked, or before the run halts on it) and/or
        ``tool_result``. Without ``stream`` the `Finished` step is the only item.

        With ``resumed``, the halted turn's calls (already resolved, still suspended, or not
        yet run) are settled first, as if the turn had just been executed.
        """
        return EventStream(self._loop(state, stream=stream, resumed=resumed))

    async def _loop(self, state: RunState, *, stream: bool, resumed: list[Slot] | None) -> Finished:
        """`drive`'s loop: hands its events out with `emit` (only when ``stream``) and returns
        the `Finished` step."""
        if self.cfg.tracing is not None and state.span is None:
            self.start_span(state)
        try:
            limit = state.turns + self.cfg.max_turns
            slots = resumed
            text = tx.last_text(state.messages) if resumed is not None else None
            while True:
                if slots is None:
                    stop = self._stop_before_call(state, limit)
                    if stop is not None:
                        return self._finished(state, Finished(stop))
                    try:
                        if stream:
                            turn: ModelTurn | None = None
                            async for item in self.stream_model(state):
                                if isinstance(item, ModelTurn):
                                    turn = item
                                else:
                                    await emit(item)
                            assert turn is not None
                        else:
                            turn = await self.call_model(state)
                    except ModelSuspended as halt:
                        # The model itself asks (an ACP agent's permission): no tool call.
                        request = self._stamp(halt.request, None)
                        self.model_question(state, request)
                        if stream:
                            await emit({"type": "pending", "request": request})
                        if state.wait_for is None:
                            return self._finished(state, self._halt_at_model(state, request))
                        state.turn_slots = ()
                        asked = await self.ask(state, request)
                        state.model_answer = self.accepted(state, None, request, asked)
                        state.model_asked += (request.id,)
                        continue
                    slots = self._take_turn(state, turn)
                    text = turn.text
                    del turn  # [parked-run memory] its raw reply: not kept while calls run
                    if not slots:
                        if stream:
                            await emit({"type": "usage", "usage": dict(state.usage)})
                        done = self._done(state, text or "", "done", None)
                        return self._finished(state, Finished(done))
                    if stream:
                        for s in slots:
                            await emit(
                                {
                                    "type": "tool_call",
                                    "id": s.id,
                                    "name": s.name,
                                    "args": tx.peek(s),
                                }
                            )
                # Several calls run concurrently, each asking the host as soon as it suspends
                # (not when streaming: a ``pending`` event must come first). A single call is
                # asked about below, after it ran [parked-run memory]: one frame fewer.
                inline = not stream and state.wait_for is not None and len(slots) > 1
                await self._start(state, slots, inline=inline)
                for s in slots:
                    if isinstance(s.outcome, Request):  # (`s.request`, without the call)
                        if stream:
                            await emit({"type": "pending", "request": s.outcome})
                        if state.wait_for is not None:
                            asked = await self.ask(state, s.outcome)
                            await self.resolve(state, s, self.accepted(state, s, s.outcome, asked))
                        if s.request is not None:  # still: the host did not answer
                            return self._finished(state, self._halt(state, slots, s))
                    if stream:
                        await emit(tx.result_event(s))
                self.append_results(state, slots)
                if state.turns >= limit:
                    return self._finished(state, Finished(self._capped(state, text)))
                slots = None
        except BaseException as exc:
            if state.span is not None:
                self.end_span(state, None, exc)
            raise

    # -- traces (toolnexus.tracing) ----------------------------------------------------------

    def start_span(self, state: RunState, *, resumed_from: str = "") -> None:
        """Open the run's ``invoke_agent`` span (kept only while it records)."""
        tracing = self.cfg.tracing
        assert tracing is not None
        span = tracing.start_run(
            self.cfg.agent_name, conversation_id=state.conversation_id, resumed_from=resumed_from
        )
        state.span = span if span.is_recording() else None

    def end_span(self, state: RunState, status: str | None, error: BaseException | None) -> None:
        """Close the run's span (its outcome, or the error that ended it)."""
        span, state.span = state.span, None
        if span is not None and self.cfg.tracing is not None:
            self.cfg.tracing.end_run(span, status=status, error=error)

    def trace_wait(self, checkpoint: Checkpoint, answer: Answer, answered_by: str | None) -> None:
        """A durable resume: the ``await_human`` span from the halt to now (traced runs)."""
        if self.cfg.tracing is not None and checkpoint.trace:
            self.cfg.tracing.record_wait(checkpoint, answer, answered_by)

    def _finished(self, state: RunState, finished: Finished) -> Finished:
        if state.span is not None:
            self.end_span(state, finished.result.status, None)
        return finished

    def _stop_before_call(self, state: RunState, limit: int) -> RunResult | None:
        """The result of a run that a limit stops before its next model call, if any."""
        if state.turns >= limit:
            return self._done(state, tx.last_text(state.messages), "incomplete", "maxTurns")
        if state.guard is not None:
            stop = state.guard.before_call()
            if stop is not None:
                return self._done(state, tx.last_text(state.messages), "incomplete", stop)
        return None

    def _take_turn(self, state: RunState, turn: ModelTurn) -> list[Slot]:
        """Count a model reply and append it to the transcript; its calls, as slots."""
        state.turns += 1
        tx.add_usage(state.usage, turn.usage)
        if state.guard is not None:
            state.guard.after_call(turn.usage)
        calls = tx.unique_calls(turn.tool_calls, state.turns)
        state.messages.append(tx.assistant_message(turn.text, calls))
        return [Slot(i, c.id, c.name, c.arguments) for i, c in enumerate(calls)]

    def _start(self, state: RunState, slots: list[Slot], *, inline: bool) -> Awaitable[None]:
        """Run the turn's calls that have neither a result nor a suspension, concurrently.

        Not a coroutine itself [parked-run memory]: a single call (the common turn) is awaited
        directly, so a run in the middle of it holds one frame fewer.
        """
        state.turn_slots = slots
        todo = [s for s in slots if s.outcome is None]
        if len(todo) == 1:
            return self.start_slot(state, todo[0], inline)
        return self._start_all(state, todo, inline)

    async def _start_all(self, state: RunState, todo: list[Slot], inline: bool) -> None:
        async with asyncio.TaskGroup() as group:
            for s in todo:
                group.create_task(self.start_slot(state, s, inline))

    def _capped(self, state: RunState, text: str | None) -> RunResult:
        if text:
            return self._done(state, text, "done", None)
        return self._done(state, "", "incomplete", "maxTurns")

    def append_results(self, state: RunState, slots: Sequence[Slot]) -> None:
        """Append one tool message and one record per call, in emission order."""
        for s in slots:
            result = s.outcome
            assert isinstance(result, ToolResult)
            state.messages.append(tx.tool_message(s.id, result, s.name))
            state.records.append(tx.record(s, result))

    def snapshot(self, state: RunState, slots: Sequence[Slot], pending: Request) -> Checkpoint:
        """The checkpoint of ``state`` halted on ``slots`` (messages end at the assistant turn).

        Must be called before the turn's tool results are appended.
        """
        outstanding = [
            Outstanding(
                call_id=s.id,
                name=s.name,
                arguments=s.arguments,
                state=s.state,
                result=s.result,
                request=s.request,
                input_schema=_edit_schema(state, s),
            )
            for s in slots
        ]
        return Checkpoint(
            model=self.cfg.model,
            style=self.cfg.style,
            messages=list(state.messages),
            turn=state.turns,
            usage=dict(state.usage),
            tool_calls=list(state.records),
            outstanding=outstanding,
            pending=pending,
            fingerprint=state.tool_fingerprint(),
            conversation_id=state.conversation_id,
            trace=self.cfg.tracing.traceparent(state.span) if self.cfg.tracing else "",
        )

    def _halt(self, state: RunState, slots: list[Slot], halted: Slot) -> Finished:
        """The run stops on ``halted``'s question: the checkpoint, then the transcript up to
        the halted call (its placeholder result carries the halt note)."""
        tx.fold_relay(slots)
        request = halted.request
        assert request is not None
        checkpoint = self.snapshot(state, slots, request)
        before = slots[: halted.index]
        self.append_results(state, before)
        placeholder = ToolResult(request.prompt, True, {"pending": request})
        message = tx.tool_message(halted.id, placeholder)
        message[tx.HALT_KEY] = checkpoint.halt_note()
        state.messages.append(message)
        state.records.append(tx.record(halted, placeholder))
        result = self._done(state, request.prompt, "pending", None, pending=request)
        return Finished(result, checkpoint)

    def _halt_at_model(self, state: RunState, request: Request) -> Finished:
        """The model call stopped on ``request``: a checkpoint with no outstanding call (the
        transcript ends where the model was asked; nothing is appended)."""
        checkpoint = self.snapshot(state, [], request)
        result = self._done(state, request.prompt, "pending", None, pending=request)
        return Finished(result, checkpoint)

    def _done(
        self,
        state: RunState,
        text: str,
        status: Any,
        limit: str | None,
        pending: Request | None = None,
    ) -> RunResult:
        return RunResult(
            text=text,
            messages=state.messages,
            tool_calls=state.records,
            tool_call_count=len(state.records),
            turns=state.turns,
            usage=state.usage,
            model=state.sent_model or self.cfg.model,
            status=status,
            limit=limit,
            pending=pending,
            expired=state.expired,
        )


def _noted(result: ToolResult, answer: Answer) -> ToolResult:
    """An approved call's result with the approver's note after its text (`with_note`)."""
    output = with_note(result.output, answer)
    return result if output == result.output else replace(result, output=output)


def _edit_schema(state: RunState, slot: Slot) -> Any:
    """What the checkpoint keeps to check edited arguments of a call halted on an approval
    (`toolnexus.loop.edits`); ``None`` for every other call."""
    request = slot.request
    if request is None or request.kind != edits.APPROVAL:
        return None
    tool = state.by_name.get(slot.name)
    return edits.edit_schema(tool) if tool is not None else None


async def _ready(value: Any) -> Any:
    """An awaitable of a value a synchronous ``wait_for`` returned."""
    return value
