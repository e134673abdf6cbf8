"""The engine: one state machine that moves a run forward, turn by turn.

call the model → plan the tool calls → execute them concurrently → record each result or
suspension → decide (continue, finish, halt). ``run`` and ``ask`` play the turns with
`Engine.complete`, ``stream`` with `Engine.drive`, which yields events along the way; both are
built from the same steps. Resolving a suspension — inline through ``wait_for`` or later from a
checkpoint — is one code path: re-execute the call with ``ctx.answer`` (see `Engine.resolve`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, Protocol, cast, runtime_checkable

from .._types import Message, RunResult, Tool, ToolCallRecord, ToolContext, ToolResult, Usage
from ..errors import AnswerMismatch, CallbackError
from ..llm.abort import abortable_iter, run_abortable
from ..llm.base import Dialect, ModelToolCall, ModelTurn, SSEEvent, Transport
from ..llm.convert import normalize_history
from ..llm.retry import RetryPolicy, call_with_retries
from ..suspension import (
    RELAY_CALLS_KEY,
    Answer,
    Request,
    WaitFor,
    format_timestamp,
    is_expired,
    is_relay_request,
    pending_of,
    relay_output_for,
)
from ..tools.validation import parse_arguments, validate_arguments
from .checkpoint import Checkpoint, Outstanding, tool_fingerprint
from .execute import coerce_result, invoke_tool, unknown_tool_result
from .hooks import Hooks, call_callback

__all__ = [
    "Engine",
    "EngineConfig",
    "ParkingWaitFor",
    "RunState",
    "Slot",
    "TurnGuard",
    "relay_splice",
]

log = logging.getLogger("toolnexus")

Event = dict[str, Any]
_STRIPPED_PARAMS = ("messages", "tools", "stream")


@dataclass(slots=True)
class EngineConfig:
    """Everything a client fixes at construction."""

    dialect: Dialect
    transport: Transport
    url: str
    headers: dict[str, str]
    model: str
    style: str
    system_prompt: str | None = None
    max_turns: int = 10
    hooks: Hooks = field(default_factory=Hooks)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout_ms: float | None = None
    on_metric: Callable[[dict[str, Any]], Any] | None = None
    wait_for: WaitFor | None = None
    request_params: Mapping[str, Any] | None = None
    body_transform: Callable[[dict[str, Any]], Any] | None = None
    pending_ttl: float | None = None
    supports_stream: bool = True


@dataclass(slots=True)
class Slot:
    """One tool call of the current turn while it executes."""

    index: int
    id: str
    name: str
    arguments: str
    args: dict[str, Any] = field(default_factory=lambda: {})
    result: ToolResult | None = None
    request: Request | None = None


class TurnGuard(Protocol):
    """Watches a run's model calls (budgets, roll-ups). Used by the agent runtime."""

    def before_call(self) -> str | None:
        """The name of a limit that stops the run now (``incomplete``), or ``None``."""
        ...

    def after_call(self, usage: Usage) -> None:
        """One model call finished with ``usage``."""
        ...


class BodyBuilder(Protocol):
    """Builds the request bodies of one run's successive turns (a dialect's ``new_transcript``)."""

    def build_body(
        self,
        *,
        model: str,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]],
        stream: bool,
    ) -> dict[str, Any]: ...


@runtime_checkable
class TranscriptDialect(Protocol):
    """A dialect that can render a run's growing transcript incrementally (ours both can)."""

    def new_transcript(self) -> BodyBuilder: ...


@runtime_checkable
class ParkingWaitFor(Protocol):
    """A ``wait_for`` that wants the run's checkpoint while it waits (see `store_wait_for`)."""

    async def park(self, request: Request, checkpoint: Checkpoint) -> Answer: ...


@dataclass(slots=True)
class RunState:
    """The mutable state of one run."""

    messages: list[Message]
    tools: list[Tool]
    by_name: dict[str, Tool]
    wire_tools: list[dict[str, Any]]
    cancel: asyncio.Event | None = None
    deadline: float | None = None
    turns: int = 0
    usage: Usage = field(
        default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    )
    records: list[ToolCallRecord] = field(default_factory=lambda: [])
    fingerprint: str = ""  # computed on first use: only halts and resumes need it
    conversation_id: str | None = None
    wait_for: WaitFor | None = None
    expired: bool = False
    checkpoint: Checkpoint | None = None
    guard: TurnGuard | None = None
    turn_slots: list[Slot] = field(default_factory=lambda: [])
    bodies: BodyBuilder | None = None  # what earlier turns rendered, reused by the next one

    def tool_fingerprint(self) -> str:
        """The digest of this run's tool set (cached)."""
        if not self.fingerprint:
            self.fingerprint = tool_fingerprint(self.tools)
        return self.fingerprint


class Engine:
    """Drives runs for one client configuration."""

    def __init__(self, config: EngineConfig, emit: Callable[[dict[str, Any]], None]) -> None:
        self.cfg = config
        self._emit = emit
        dialect = config.dialect
        self._new_transcript = (
            dialect.new_transcript if isinstance(dialect, TranscriptDialect) else None
        )

    def new_state(
        self,
        prompt: str | None,
        tools: list[Tool],
        wire_tools: list[dict[str, Any]],
        *,
        skills_prompt: str = "",
        history: Sequence[Message] | None = None,
        cancel: asyncio.Event | None = None,
    ) -> RunState:
        """A fresh run: the history (normalised to the canonical shape) or the system prompt,
        then the user ``prompt`` (none on a resume)."""
        cfg = self.cfg
        messages = normalize_history(list(history)) if history else []
        if prompt is not None:
            balance_last_turn(messages)
        if not messages:
            system = "\n\n".join(p for p in (cfg.system_prompt, skills_prompt) if p)
            if system:
                messages.append({"role": "system", "content": system})
        if prompt is not None:
            messages.append({"role": "user", "content": prompt})
        deadline = None
        if cfg.timeout_ms is not None:
            deadline = asyncio.get_running_loop().time() + cfg.timeout_ms / 1000
        return RunState(
            messages=messages,
            tools=tools,
            by_name={t.name: t for t in tools},
            wire_tools=wire_tools,
            cancel=cancel,
            deadline=deadline,
            wait_for=cfg.wait_for,
        )

    # -- model calls -----------------------------------------------------------------------

    async def _prepare(self, state: RunState, stream: bool) -> dict[str, Any]:
        cfg = self.cfg
        wire_tools = state.wire_tools
        hooks = cfg.hooks
        if hooks.before_llm is not None:
            info = {
                "messages": state.messages,
                "tools": wire_tools,
                "model": cfg.model,
                "turn": state.turns,
            }
            change = await call_callback("before_llm hook", hooks.before_llm, info)
            if isinstance(change, Mapping):
                if change.get("messages") is not None:  # pyright: ignore[reportUnknownMemberType]
                    state.messages = list(change["messages"])  # pyright: ignore[reportUnknownArgumentType]
                if change.get("tools") is not None:  # pyright: ignore[reportUnknownMemberType]
                    wire_tools = cast(list[dict[str, Any]], list(change["tools"]))  # pyright: ignore[reportUnknownArgumentType]
        body = self._build_body(state, wire_tools, stream)
        if cfg.request_params:
            for key, value in cfg.request_params.items():
                if key in _STRIPPED_PARAMS:
                    log.warning("toolnexus: request_params key %r ignored", key)
                    continue
                body[key] = value
        if cfg.body_transform is not None:
            changed = await call_callback("body_transform", cfg.body_transform, body)
            if isinstance(changed, dict):
                body = changed  # pyright: ignore[reportUnknownVariableType]
        return body  # pyright: ignore[reportUnknownVariableType]

    def _build_body(
        self, state: RunState, tools: list[dict[str, Any]], stream: bool
    ) -> dict[str, Any]:
        cfg = self.cfg
        # A hook that sees the transcript or the body may edit a message in place, so with one
        # every body is rendered afresh; otherwise each message is rendered once per run.
        hooked = cfg.hooks.before_llm is not None or cfg.body_transform is not None
        if self._new_transcript is None or hooked:
            return cfg.dialect.build_body(
                model=cfg.model, messages=state.messages, tools=tools, stream=stream
            )
        bodies = state.bodies
        if bodies is None:
            bodies = state.bodies = self._new_transcript()
        return bodies.build_body(
            model=cfg.model, messages=state.messages, tools=tools, stream=stream
        )

    async def finish_call(self, turn: ModelTurn, started: float, turn_index: int) -> None:
        """Emit the ``llm`` metric and run ``after_llm`` for a finished model call."""
        cfg = self.cfg
        self._emit(
            {
                "event": "llm",
                "model": cfg.model,
                "status": "ok",
                "ms": (time.perf_counter() - started) * 1000,
                "prompt_tokens": turn.usage.get("prompt_tokens", 0),
                "completion_tokens": turn.usage.get("completion_tokens", 0),
            }
        )
        if cfg.hooks.after_llm is not None:
            info = {"response": turn.raw, "model": cfg.model, "turn": turn_index}
            await call_callback("after_llm hook", cfg.hooks.after_llm, info)

    def emit_llm_error(self, started: float) -> None:
        """Emit the ``llm`` metric for a failed model call."""
        self._emit(
            {
                "event": "llm",
                "model": self.cfg.model,
                "status": "error",
                "ms": (time.perf_counter() - started) * 1000,
                "prompt_tokens": 0,
                "completion_tokens": 0,
            }
        )

    async def call_model(self, state: RunState) -> ModelTurn:
        """One non-streaming model call (retries, abort, hooks, metrics)."""
        cfg = self.cfg
        body = await self._prepare(state, stream=False)
        started = time.perf_counter()
        attempt = partial(cfg.transport.post, cfg.url, cfg.headers, body, timeout=None)
        try:
            payload = await run_abortable(
                call_with_retries(attempt, cfg.retry),
                cancel=state.cancel,
                deadline=state.deadline,
                timeout_ms=cfg.timeout_ms,
            )
            turn = cfg.dialect.parse_reply(payload)
        except BaseException:
            self.emit_llm_error(started)
            raise
        await self.finish_call(turn, started, state.turns)
        return turn

    async def stream_model(self, state: RunState) -> AsyncIterator[Event | ModelTurn]:
        """One streaming model call: yields text events, then the assembled `ModelTurn`."""
        cfg = self.cfg
        if not cfg.supports_stream:
            turn = await self.call_model(state)
            if turn.text:
                yield {"type": "text", "delta": turn.text}
            yield turn
            return
        body = await self._prepare(state, stream=True)
        started = time.perf_counter()
        transport = cfg.transport
        url, headers = cfg.url, cfg.headers

        async def open_stream() -> tuple[AsyncIterator[SSEEvent], SSEEvent | None]:
            events = transport.stream(url, headers, body, timeout=None)
            try:
                first = await anext(events)
            except StopAsyncIteration:
                return events, None
            except BaseException:
                await _aclose(events)
                raise
            return events, first

        try:
            events, first = await run_abortable(
                call_with_retries(open_stream, cfg.retry),
                cancel=state.cancel,
                deadline=state.deadline,
                timeout_ms=cfg.timeout_ms,
            )
        except BaseException:
            self.emit_llm_error(started)
            raise
        assembler = cfg.dialect.new_stream()
        try:
            if first is not None:
                delta = assembler.feed(first)
                if delta:
                    yield {"type": "text", "delta": delta}
            if not assembler.complete:
                async for event in abortable_iter(
                    events, cancel=state.cancel, deadline=state.deadline, timeout_ms=cfg.timeout_ms
                ):
                    delta = assembler.feed(event)
                    if delta:
                        yield {"type": "text", "delta": delta}
                    if assembler.complete:
                        break
            turn = assembler.finish()
        except BaseException:
            self.emit_llm_error(started)
            raise
        finally:
            await _aclose(events)
        await self.finish_call(turn, started, state.turns)
        yield turn

    # -- tool calls --------------------------------------------------------------------------

    def _ctx(self, state: RunState, slot: Slot, answer: Answer | None) -> ToolContext:
        timeout = None
        if state.deadline is not None:
            timeout = max(0.0, state.deadline - asyncio.get_running_loop().time())
        return ToolContext(
            signal=state.cancel,
            timeout=timeout,
            answer=answer,
            call_id=slot.id,
            request=slot.request if answer is not None else None,
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
                    return coerce_result(cast(object, change["result"])), _source(state, slot.name)
                new_args = change.get("args")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
                if isinstance(new_args, dict):
                    args = slot.args = dict(new_args)  # pyright: ignore[reportUnknownArgumentType]
        tool = state.by_name.get(slot.name)
        if tool is None:
            return unknown_tool_result(slot.name, list(state.by_name)), "custom"
        problem = validate_arguments(tool, args)
        if problem is not None:
            return ToolResult(problem, True), tool.source
        return await invoke_tool(tool, args, self._ctx(state, slot, answer)), tool.source

    async def _run(self, state: RunState, slot: Slot, answer: Answer | None) -> ToolResult:
        started = time.perf_counter()
        result, source = await self._execute_once(state, slot, answer)
        request = pending_of(result)
        event: dict[str, Any] = {
            "event": "tool",
            "tool": slot.name,
            "source": source,
            "is_error": result.is_error and request is None,
            "ms": (time.perf_counter() - started) * 1000,
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

    def _stamp(self, request: Request, slot: Slot) -> Request:
        """Give a suspension its deadline and, for relay calls, the provider call id."""
        changes: dict[str, Any] = {}
        ttl = self.cfg.pending_ttl
        if request.expiresAt is None and ttl is not None:
            changes["expiresAt"] = format_timestamp(datetime.now(UTC) + timedelta(seconds=ttl))
        if is_relay_request(request):
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
            slot.args, problem = _parse(slot)
        except Exception as exc:
            slot.args, problem = {}, f"malformed arguments for tool {slot.name}: {exc}"
        if problem is not None:
            self._emit(
                {
                    "event": "tool",
                    "tool": slot.name,
                    "source": _source(state, slot.name),
                    "is_error": True,
                    "ms": 0.0,
                }
            )
            slot.result = await self._after_tool(state, slot, ToolResult(problem, True))
            return
        result = await self._run(state, slot, None)
        request = pending_of(result)
        if request is None:
            slot.result = await self._after_tool(state, slot, result)
            return
        slot.request = self._stamp(request, slot)
        if resolve_inline:
            answer = await self.ask(state, slot.request)
            await self.resolve(state, slot, answer)

    async def resolve(self, state: RunState, slot: Slot, answer: Answer) -> None:
        """Resolve a suspended call with ``answer``: the one rule for inline and durable paths.

        ``ok`` ⇒ re-execute once with ``ctx.answer``; ``!ok`` ⇒ ``declined/expired: <prompt>``.
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
        for rounds in range(MAX_FOLLOW_UPS + 1):
            if not answer.ok and (tool is None or not tool.handles_declines):
                result = ToolResult(f"declined/expired: {request.prompt}", True)
                break
            retry = await self._run(state, slot, answer)
            follow = pending_of(retry)
            if follow is None:
                result = retry
                break
            if rounds == MAX_FOLLOW_UPS or _same_question(follow, request):
                result = ToolResult(f"unresolved: {request.prompt}", True)
                break
            slot.request = request = self._stamp(follow, slot)
            if state.wait_for is None:
                return  # a new question and nobody to ask now: the run halts on it
            answer = await self.ask(state, request)
        assert result is not None
        slot.result = await self._after_tool(state, slot, result)
        slot.request = None

    def restore(self, state: RunState, checkpoint: Checkpoint) -> list[Slot]:
        """Load a checkpoint into ``state``; return the halted turn's calls as slots."""
        state.messages = list(checkpoint.messages)
        state.turns = checkpoint.turn
        state.usage = dict(checkpoint.usage)
        state.records = list(checkpoint.tool_calls)
        slots: list[Slot] = []
        for i, o in enumerate(checkpoint.outstanding):
            slot = Slot(i, o.call_id, o.name, o.arguments)
            slot.args, _ = parse_arguments(o.arguments)
            if o.state == "done":
                slot.result = o.result
            elif o.state == "suspended":
                slot.request = o.request
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
        targets = [s for s in slots if s.request is not None and s.request.id == request.id]
        for position, slot in enumerate(targets):
            tool = state.by_name.get(slot.name)
            if tool is not None and tool.source == "relay":
                started = time.perf_counter()
                result = relay_splice(slot.name, slot.id, answer, first=position == 0)
                self._emit(
                    {
                        "event": "tool",
                        "tool": slot.name,
                        "source": "relay",
                        "is_error": result.is_error,
                        "ms": (time.perf_counter() - started) * 1000,
                    }
                )
                slot.result = await self._after_tool(state, slot, result)
                slot.request = None
            else:
                await self.resolve(state, slot, answer)

    async def ask(self, state: RunState, request: Request) -> Answer:
        """Ask the host's ``wait_for``, enforcing the Request's deadline and the id echo."""
        wait_for = state.wait_for
        assert wait_for is not None
        # A run waiting for a human keeps less in memory; the next body is rendered afresh.
        state.bodies = None
        expired = Answer(id=request.id, ok=False, reason="expired")
        if is_expired(request):
            return expired
        remaining: float | None = None
        deadline = request.expires_at if request.expiresAt else None
        if deadline is not None:
            remaining = (deadline - datetime.now(UTC)).total_seconds()

        async def call() -> Any:
            if isinstance(wait_for, ParkingWaitFor):
                return await wait_for.park(request, self.snapshot(state, state.turn_slots, request))
            value = wait_for(request)
            if inspect.isawaitable(value):
                value = await value
            return value

        try:
            if remaining is not None:
                async with asyncio.timeout(remaining):
                    value = await run_abortable(call(), cancel=state.cancel, deadline=None)
            else:
                value = await run_abortable(call(), cancel=state.cancel, deadline=None)
        except TimeoutError:
            if deadline is not None and is_expired(request):
                return expired
            raise CallbackError("wait_for raised TimeoutError") from None
        except (CallbackError, asyncio.CancelledError):
            raise
        except Exception as exc:
            if type(exc).__module__.startswith("toolnexus"):
                raise
            raise CallbackError(f"wait_for raised {type(exc).__name__}: {exc}") from exc
        answer = _as_answer(value)
        if answer.id != request.id:
            raise AnswerMismatch(
                f'wait_for answered id "{answer.id}", which does not echo the pending request '
                f'id "{request.id}"'
            )
        if is_expired(request):
            return expired
        return answer

    # -- the loop ----------------------------------------------------------------------------

    async def complete(self, state: RunState, *, resumed: list[Slot] | None = None) -> RunResult:
        """Run turns until the model answers, a limit stops the run, or a call halts it.

        The non-streaming loop (``run``, ``ask``): the turns `drive` plays, without events.
        With ``resumed``, the halted turn's calls (already resolved, still suspended, or not
        yet run) are settled first, as if the turn had just been executed.
        """
        limit = state.turns + self.cfg.max_turns
        if resumed is not None:
            await self._start(state, resumed, inline=state.wait_for is not None)
            halted = await self._settle_quietly(state, resumed)
            if halted is not None:
                return halted
            if state.turns >= limit:
                return self._capped(state, _last_text(state.messages))
        while True:
            stop = self._stop_before_call(state, limit)
            if stop is not None:
                return stop
            turn = await self.call_model(state)
            slots = self._take_turn(state, turn)
            text = turn.text
            del turn  # its raw reply: not kept while the calls run (and maybe park for long)
            if not slots:
                return self._done(state, text or "", "done", None)
            await self._start(state, slots, inline=state.wait_for is not None)
            halted = await self._settle_quietly(state, slots)
            if halted is not None:
                return halted
            if state.turns >= limit:
                return self._capped(state, text)

    async def drive(
        self, state: RunState, *, stream: bool, resumed: list[Slot] | None = None
    ) -> AsyncIterator[Event]:
        """`complete` as a stream of events; the last one is always
        ``{"type": "done", "result": ...}``.

        Without ``stream`` that is the only event. With it, per turn: ``text`` deltas, then
        ``usage`` before a final answer, or one ``tool_call`` per call and, per call in order,
        ``pending`` (before ``wait_for`` is asked) and/or ``tool_result``.
        """
        if not stream:
            yield _done_event(await self.complete(state, resumed=resumed))
            return
        limit = state.turns + self.cfg.max_turns
        if resumed is not None:
            await self._start(state, resumed, inline=False)
            async for event in self._settle(state, resumed):
                yield event
                if event["type"] == "done":
                    return
            if state.turns >= limit:
                yield _done_event(self._capped(state, _last_text(state.messages)))
                return
        while True:
            stop = self._stop_before_call(state, limit)
            if stop is not None:
                yield _done_event(stop)
                return
            turn: ModelTurn | None = None
            async for item in self.stream_model(state):
                if isinstance(item, ModelTurn):
                    turn = item
                else:
                    yield item
            assert turn is not None
            slots = self._take_turn(state, turn)
            if not slots:
                yield {"type": "usage", "usage": dict(state.usage)}
                yield _done_event(self._done(state, turn.text or "", "done", None))
                return
            for s in slots:
                yield {"type": "tool_call", "id": s.id, "name": s.name, "args": _peek(s)}
            await self._start(state, slots, inline=False)
            async for event in self._settle(state, slots):
                yield event
                if event["type"] == "done":
                    return
            if state.turns >= limit:
                yield _done_event(self._capped(state, turn.text))
                return

    def _stop_before_call(self, state: RunState, limit: int) -> RunResult | None:
        """The result of a run that a limit stops before its next model call, if any."""
        if state.turns >= limit:
            return self._done(state, _last_text(state.messages), "incomplete", "maxTurns")
        if state.guard is not None:
            stop = state.guard.before_call()
            if stop is not None:
                return self._done(state, _last_text(state.messages), "incomplete", stop)
        return None

    def _take_turn(self, state: RunState, turn: ModelTurn) -> list[Slot]:
        """Count a model reply and append it to the transcript; its calls, as slots."""
        state.turns += 1
        _add_usage(state.usage, turn.usage)
        if state.guard is not None:
            state.guard.after_call(turn.usage)
        calls = _unique_calls(turn.tool_calls, state.turns)
        state.messages.append(_assistant_message(turn.text, calls))
        return [Slot(i, c.id, c.name, c.arguments) for i, c in enumerate(calls)]

    async def _start(self, state: RunState, slots: list[Slot], *, inline: bool) -> None:
        """Run the turn's calls that have neither a result nor a suspension, concurrently."""
        state.turn_slots = slots
        calls = [
            self.start_slot(state, s, inline)
            for s in slots
            if s.result is None and s.request is None
        ]
        if len(calls) == 1:
            await calls[0]
            return
        async with asyncio.TaskGroup() as group:
            for call in calls:
                group.create_task(call)

    async def _settle(self, state: RunState, slots: list[Slot]) -> AsyncIterator[Event]:
        """After a turn's calls ran: resolve (``wait_for``) or halt, in call order.

        Ends with a ``done`` event when the run halts; otherwise every result is appended.
        """
        for s in slots:
            if s.request is not None and state.wait_for is not None:
                yield {"type": "pending", "request": s.request}
                await self.resolve(state, s, await self.ask(state, s.request))
            if s.request is not None:
                yield _done_event(self._halt(state, slots, s))
                return
            yield _result_event(s)
        self.append_results(state, slots)

    async def _settle_quietly(self, state: RunState, slots: list[Slot]) -> RunResult | None:
        """`_settle` without events: the halted run's result, or ``None`` when it goes on."""
        for s in slots:
            if s.request is not None and state.wait_for is not None:
                await self.resolve(state, s, await self.ask(state, s.request))
            if s.request is not None:
                return self._halt(state, slots, s)
        self.append_results(state, slots)
        return None

    def _capped(self, state: RunState, text: str | None) -> RunResult:
        if text:
            return self._done(state, text, "done", None)
        return self._done(state, "", "incomplete", "maxTurns")

    def append_results(self, state: RunState, slots: Sequence[Slot]) -> None:
        """Append one tool message and one record per call, in emission order."""
        for s in slots:
            assert s.result is not None
            state.messages.append(_tool_message(s.id, s.result))
            state.records.append(_record(s, s.result))

    def snapshot(self, state: RunState, slots: Sequence[Slot], pending: Request) -> Checkpoint:
        """The checkpoint of ``state`` halted on ``slots`` (messages end at the assistant turn).

        Must be called before the turn's tool results are appended.
        """
        outstanding = [
            Outstanding(
                call_id=s.id,
                name=s.name,
                arguments=s.arguments,
                state="suspended"
                if s.request is not None
                else ("done" if s.result is not None else "not_run"),
                result=s.result,
                request=s.request,
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
        )

    def _halt(self, state: RunState, slots: list[Slot], halted: Slot) -> RunResult:
        _fold_relay(slots)
        request = halted.request
        assert request is not None
        checkpoint = self.snapshot(state, slots, request)
        state.checkpoint = checkpoint
        before = slots[: halted.index]
        self.append_results(state, before)
        placeholder = ToolResult(request.prompt, True, {"pending": request})
        message = _tool_message(halted.id, placeholder)
        message[HALT_KEY] = checkpoint.halt_note()
        state.messages.append(message)
        state.records.append(_record(halted, placeholder))
        return self._done(state, request.prompt, "pending", None, pending=request)

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
            model=self.cfg.model,
            status=status,
            limit=limit,
            pending=pending,
            expired=state.expired,
        )


# -- pure helpers --------------------------------------------------------------------------


async def _aclose(events: AsyncIterator[Any]) -> None:
    closer = getattr(events, "aclose", None)
    if closer is not None:
        try:
            await closer()
        except Exception:
            log.debug("toolnexus: closing a stream failed", exc_info=True)


def _parse(slot: Slot) -> tuple[dict[str, Any], str | None]:
    args, problem = parse_arguments(slot.arguments)
    if problem is not None:
        return {}, f"tool {slot.name}: {problem}"
    return args, None


def _peek(slot: Slot) -> dict[str, Any]:
    args, _ = parse_arguments(slot.arguments)
    return args


def _source(state: RunState, name: str) -> str:
    tool = state.by_name.get(name)
    return tool.source if tool is not None else "custom"


def _as_answer(value: Any) -> Answer:
    if isinstance(value, Answer):
        return value
    if isinstance(value, Mapping):
        try:
            return Answer.from_dict(value)  # pyright: ignore[reportUnknownArgumentType]
        except (TypeError, ValueError) as exc:
            raise CallbackError(f"wait_for returned an invalid Answer: {exc}") from exc
    raise CallbackError(f"wait_for must return an Answer, got {type(value).__name__}")


def _add_usage(total: Usage, part: Usage) -> None:
    p = part.get("prompt_tokens", 0)
    c = part.get("completion_tokens", 0)
    total["prompt_tokens"] += p
    total["completion_tokens"] += c
    total["total_tokens"] += part.get("total_tokens", p + c) or (p + c)


def _unique_calls(calls: list[ModelToolCall], turn: int) -> list[ModelToolCall]:
    seen: set[str] = set()
    out: list[ModelToolCall] = []
    for i, c in enumerate(calls):
        cid = c.id or f"call_{turn}_{i}"
        if cid in seen:
            cid = f"{cid}_{i}"
        seen.add(cid)
        out.append(c if cid == c.id else ModelToolCall(cid, c.name, c.arguments))
    return out


def _assistant_message(text: str | None, calls: list[ModelToolCall]) -> Message:
    message: Message = {"role": "assistant", "content": text if text else None}
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    return message


def _tool_message(call_id: str, result: ToolResult) -> Message:
    message: Message = {"role": "tool", "tool_call_id": call_id, "content": result.output}
    if result.is_error:
        message["is_error"] = True
    return message


def _record(slot: Slot, result: ToolResult) -> ToolCallRecord:
    return ToolCallRecord(
        name=slot.name,
        args=slot.args,
        output=result.output,
        is_error=result.is_error,
        metadata=result.metadata,
        id=slot.id,
    )


def _done_event(result: RunResult) -> Event:
    return {"type": "done", "result": result}


def _result_event(slot: Slot) -> Event:
    assert slot.result is not None
    return {
        "type": "tool_result",
        "id": slot.id,
        "name": slot.name,
        "output": slot.result.output,
        "is_error": slot.result.is_error,
    }


def _last_text(messages: list[Message]) -> str:
    for m in reversed(messages):
        if m.get("role") == "assistant":
            content = m.get("content")
            return content if isinstance(content, str) else ""
    return ""


NOT_RUN = "not run: the run halted before this call"
MAX_FOLLOW_UPS = 8  # new questions one call may ask after its first answer


def _same_question(a: Request, b: Request) -> bool:
    return a.id == b.id or (a.kind, a.prompt, a.url) == (b.kind, b.prompt, b.url)


HALT_KEY = "toolnexus_halt"


def balance_last_turn(messages: list[Message]) -> None:
    """Give every call of a halted last turn a result, in place, before a new user turn.

    A transcript saved at a halt ends with the calls before the halted one, the halted call's
    placeholder, and nothing for the calls after it. A *new* turn on it (a replay, not a
    resume) must still send the provider one result per call, so the missing ones are filled
    with an explicit "not run" error.
    """
    at = len(messages) - 1
    while at >= 0 and messages[at].get("role") == "tool":
        at -= 1
    if at < 0 or messages[at].get("role") != "assistant" or not messages[at].get("tool_calls"):
        return
    answered = {m.get("tool_call_id") for m in messages[at + 1 :]}
    calls: list[Any] = messages[at]["tool_calls"]
    for call in calls:
        cid: object = cast(dict[str, Any], call).get("id") if isinstance(call, dict) else None
        if isinstance(cid, str) and cid not in answered:
            messages.append(
                {"role": "tool", "tool_call_id": cid, "content": NOT_RUN, "is_error": True}
            )


def relay_splice(name: str, call_id: str, answer: Answer, *, first: bool) -> ToolResult:
    """The result of a relayed call from the host's answer (durable path)."""
    if not answer.ok:
        return ToolResult(f"relay declined for {name}: {answer.reason or 'declined'}", True)
    found = relay_output_for(answer, call_id, first=first)
    if found is None:
        return ToolResult(f"no result supplied on resume for {name}", True)
    return ToolResult(found[0], found[1])


def _fold_relay(slots: list[Slot]) -> None:
    """Fold every relay suspension of the turn into the first one's ``data.calls``."""
    relays = [s for s in slots if s.request is not None and is_relay_request(s.request)]
    if len(relays) < 2:
        return
    head = relays[0]
    assert head.request is not None
    calls: list[Any] = []
    for s in relays:
        assert s.request is not None
        calls.extend((s.request.data or {}).get(RELAY_CALLS_KEY) or [])
    merged = replace(head.request, data={**(head.request.data or {}), RELAY_CALLS_KEY: calls})
    for s in relays:
        s.request = merged
