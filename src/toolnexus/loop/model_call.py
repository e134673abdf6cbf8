"""The engine's model-call step: build the request body, post it (retries, abort, deadline),
parse the reply, emit the ``llm`` metric, run the ``after_llm`` hook, trace the ``chat`` span.

One step for the turn loop (`toolnexus.loop.engine.Engine`, streaming or not) and for
``translate``; `Engine` inherits it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from functools import partial
from typing import Any

from .._compat import warn_stderr
from ..errors import BadResponse, ProviderError, TransportError
from ..llm.abort import abortable_iter, run_abortable
from ..llm.base import ModelTurn, SSEEvent
from ..llm.model_halt import ModelSuspended, answering
from ..llm.parts_wire import transcript_parts
from ..llm.retry import call_with_retries, retry_after
from ..llm.transport import attempt_timeout, attempt_within
from ..suspension import Request
from . import transcript as tx
from .hooks import call_callback, llm_change
from .state import EngineConfig, RunState, TranscriptDialect

__all__ = ["ModelCalls"]

log = logging.getLogger("toolnexus")

Event = dict[str, Any]
_STRIPPED_PARAMS = ("messages", "tools", "stream")
MAX_MODEL_QUESTIONS = 64  # questions one model call may ask (a model halt's rounds)


class ModelCalls:
    """The model-call step of one client configuration."""

    def __init__(self, config: EngineConfig, emit: Callable[[dict[str, Any]], None]) -> None:
        self.cfg = config
        self._emit = emit
        dialect = config.dialect
        self._new_transcript = (
            dialect.new_transcript if isinstance(dialect, TranscriptDialect) else None
        )

    async def _prepare(self, state: RunState, stream: bool) -> dict[str, Any]:
        cfg = self.cfg
        wire_tools = state.wire_tools
        hooks = cfg.hooks
        model = cfg.model
        if hooks.before_llm is not None:
            info = {
                "messages": state.messages,
                "tools": wire_tools,
                "model": cfg.model,
                "turn": state.turns,
            }
            change = llm_change(await call_callback("before_llm hook", hooks.before_llm, info))
            if change.messages is not None:
                state.messages = change.messages
            if change.tools is not None:
                wire_tools = change.tools
            if change.model is not None:
                model = change.model  # this turn only
        body = await self.finish_body(self._build_body(state, wire_tools, stream, model))
        return self._sent(state, body, model)

    def _plain_body(self, state: RunState, stream: bool) -> dict[str, Any]:
        """`_prepare` for a client without a ``before_llm`` hook or a ``body_transform``:
        nothing to await."""
        cfg = self.cfg
        body = self._with_params(self._build_body(state, state.wire_tools, stream, cfg.model))
        return self._sent(state, body, cfg.model)

    @staticmethod
    def _sent(state: RunState, body: dict[str, Any], model: str) -> dict[str, Any]:
        sent = body.get("model")
        state.sent_model = sent if isinstance(sent, str) else model
        return body

    async def finish_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """The last touches of every request body: ``request_params``, then ``body_transform``
        (the loop's calls and ``translate`` alike)."""
        cfg = self.cfg
        body = self._with_params(body)
        if cfg.body_transform is not None:
            changed = await call_callback("body_transform", cfg.body_transform, body)
            if isinstance(changed, dict):
                body = changed  # pyright: ignore[reportUnknownVariableType]
        return body

    def _with_params(self, body: dict[str, Any]) -> dict[str, Any]:
        cfg = self.cfg
        if cfg.request_params:
            for key, value in cfg.request_params.items():
                if key in _STRIPPED_PARAMS:
                    if key not in cfg.warned:
                        cfg.warned.add(key)
                        warn_stderr(
                            f'request_params key "{key}" is not allowed — ignored'
                            " (use body_transform)"
                        )
                    continue
                body[key] = value
        return body

    def _build_body(
        self, state: RunState, tools: list[dict[str, Any]], stream: bool, model: str
    ) -> dict[str, Any]:
        cfg = self.cfg
        # A hook that sees the transcript or the body may edit a message in place, so with one
        # every body is rendered afresh; otherwise each message is rendered once per run.
        hooked = cfg.hooks.before_llm is not None or cfg.body_transform is not None
        # The loop asks for "auto" explicitly on the OpenAI wire (COMPAT §7).
        choice = "auto" if cfg.style == "openai" else None
        if self._new_transcript is None or hooked:
            return cfg.dialect.build_body(
                model=model, messages=state.messages, tools=tools, stream=stream, tool_choice=choice
            )
        bodies = state.bodies
        if bodies is None:
            bodies = self._new_transcript()
            # [parked-run memory] kept from the second turn on: the first turn's rendering is
            # cheap to redo, and a run in its first call (thousands at once, and a run that
            # goes on to park) does not hold a rendering cache.
            if state.turns:
                state.bodies = bodies
        return bodies.build_body(
            model=model, messages=state.messages, tools=tools, stream=stream, tool_choice=choice
        )

    async def finish_call(
        self,
        turn: ModelTurn,
        started: float,
        turn_index: int,
        parts: list[Any] | None = None,
        model: str | None = None,
    ) -> None:
        """Emit the ``llm`` metric and run ``after_llm`` for a finished model call (``model``:
        the one sent, when a hook overrode the configured one for this turn)."""
        cfg = self.cfg
        model = model or cfg.model
        self._llm_event("ok", started, turn.usage, parts, model)
        if cfg.hooks.after_llm is not None:
            info = {"response": turn.raw, "model": model, "turn": turn_index}
            await call_callback("after_llm hook", cfg.hooks.after_llm, info)

    def emit_llm_error(
        self,
        started: float,
        error: BaseException | None = None,
        parts: list[Any] | None = None,
        model: str | None = None,
    ) -> None:
        """Emit the ``llm`` metric for a failed model call; mask secrets in ``error``."""
        if error is not None:
            self.cfg.redactor.scrub(error)
        self._llm_event("error", started, {}, parts, model)

    def _llm_event(
        self,
        status: str,
        started: float,
        usage: Mapping[str, int],
        parts: list[Any] | None,
        model: str | None = None,
    ) -> None:
        """The ``llm`` metric; ``parts`` (summaries of the content parts sent) when any."""
        event: dict[str, Any] = {
            "event": "llm",
            "model": model or self.cfg.model,
            "status": status,
            "ms": (time.perf_counter() - started) * 1000,
            "prompt_tokens": usage.get("prompt_tokens", 0),
            "completion_tokens": usage.get("completion_tokens", 0),
        }
        if parts:
            event["parts"] = parts
        self._emit(event)

    def call_model(self, state: RunState) -> Awaitable[ModelTurn]:
        """One non-streaming model call of the loop (hooks, then `send`); the call after a
        halt at the model carries its Answer (`toolnexus.llm.model_halt`).

        Not a coroutine itself [parked-run memory] (see `toolnexus.loop.engine`): without a
        ``before_llm`` hook, a ``body_transform`` or a model question in play, the body is
        built here and the caller awaits `send` directly, one frame fewer for every run in
        its model call.
        """
        cfg = self.cfg
        if (
            cfg.hooks.before_llm is not None
            or cfg.body_transform is not None
            or state.model_answer is not None
            or state.model_asked
        ):
            return self._call_model_full(state)
        return self._send_turn(state, self._plain_body(state, stream=False))

    async def _call_model_full(self, state: RunState) -> ModelTurn:
        body = await self._prepare(state, stream=False)
        answer, state.model_answer = state.model_answer, None
        call = self._send_turn(state, body)
        if answer is None:
            turn = await call
        else:
            with answering(answer):  # the coroutine runs in this context when awaited
                turn = await call
        state.model_asked = ()
        return turn

    def _send_turn(self, state: RunState, body: dict[str, Any]) -> Awaitable[ModelTurn]:
        # [parked-run memory] ``None``, not an empty list, for the common body without parts.
        parts = transcript_parts(state.messages) or None
        return self.send(
            body,
            cancel=state.cancel,
            deadline=state.deadline,
            turn=state.turns,
            span=state.span,
            parts=parts,
        )

    def model_question(self, state: RunState, request: Request) -> None:
        """Check a question the model call asked (`toolnexus.llm.model_halt`): a model that
        asks again what was answered, or asks without end, is a broken model source.

        Raises:
            BadResponse: ``request`` repeats an answered one, or the call asked more than
                `MAX_MODEL_QUESTIONS` questions.
        """
        if request.id in state.model_asked:
            raise BadResponse(f"the model asked {request.id} again after it was answered")
        if len(state.model_asked) >= MAX_MODEL_QUESTIONS:
            raise BadResponse(
                f"the model asked more than {MAX_MODEL_QUESTIONS} questions in one call"
            )

    async def send(
        self,
        body: dict[str, Any],
        *,
        cancel: asyncio.Event | None,
        deadline: float | None,
        turn: int,
        span: Any = None,
        parts: list[Any] | None = None,
    ) -> ModelTurn:
        """Post one finished body and parse the reply: retries with ``Retry-After``, abort on
        ``cancel`` / ``deadline`` (loop time) / ``timeout_ms``, the ``llm`` metric and the
        ``after_llm`` hook. The model-call step of the loop and of ``translate``. With the
        run's ``span`` (traced runs), the call gets its ``chat`` span under it."""
        cfg = self.cfg
        tracing = cfg.tracing if span is not None else None
        chat = tracing.start_chat(span, body) if tracing is not None else None
        started = time.perf_counter()
        try:
            if cancel is None and deadline is None:
                # [parked-run memory] nothing can abort the call: the first attempt is awaited
                # right here and the retry loop is entered only after a failure, so that a
                # run in flight holds no more than it needs (thousands may be in flight).
                try:
                    payload = await cfg.transport.post(cfg.url, cfg.headers, body, timeout=None)
                except (ProviderError, TransportError) as error:
                    attempt = partial(cfg.transport.post, cfg.url, cfg.headers, body, timeout=None)
                    payload = await retry_after(error, attempt, cfg.retry)
            else:
                attempt = attempt_within(cfg.transport, cfg.url, cfg.headers, body, deadline)
                payload = await run_abortable(
                    call_with_retries(attempt, cfg.retry),
                    cancel=cancel,
                    deadline=deadline,
                    timeout_ms=cfg.timeout_ms,
                )
            reply = cfg.dialect.parse_reply(payload)
        except ModelSuspended:
            if tracing is not None:
                tracing.end_chat(chat, None, None)
            raise  # a question, not a failed call: no ``llm`` error event
        except BaseException as exc:
            self.emit_llm_error(started, exc, parts, _model_of(body))
            if tracing is not None:
                tracing.end_chat(chat, None, exc)
            raise
        if tracing is not None:
            tracing.end_chat(chat, reply, None)
        await self.finish_call(reply, started, turn, parts, _model_of(body))
        return reply

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
        tracing = cfg.tracing if state.span is not None else None
        chat = tracing.start_chat(state.span, body) if tracing is not None else None
        parts = transcript_parts(state.messages)
        started = time.perf_counter()
        transport = cfg.transport
        url, headers = cfg.url, cfg.headers

        async def open_stream() -> tuple[AsyncIterator[SSEEvent], SSEEvent | None]:
            # A host's synchronous transport gets what is left of timeout_ms for its open().
            timeout = attempt_timeout(transport, state.deadline)
            events = transport.stream(url, headers, body, timeout=timeout)
            try:
                first = await anext(events)
            except StopAsyncIteration:
                return events, None
            except BaseException:
                await tx.aclose(events)
                raise
            return events, first

        try:
            events, first = await run_abortable(
                call_with_retries(open_stream, cfg.retry),
                cancel=state.cancel,
                deadline=state.deadline,
                timeout_ms=cfg.timeout_ms,
            )
        except BaseException as exc:
            self.emit_llm_error(started, exc, parts, state.sent_model)
            if tracing is not None:
                tracing.end_chat(chat, None, exc)
            raise
        assembler = cfg.dialect.new_stream()
        try:
            if first is not None:
                delta = assembler.feed(first)
                if delta:
                    yield {"type": "text", "delta": delta}
            if not assembler.complete:
                # Close the wrapper ourselves when we stop early: left to the garbage
                # collector, it would close the stream a second time from another task.
                rest = abortable_iter(
                    events, cancel=state.cancel, deadline=state.deadline, timeout_ms=cfg.timeout_ms
                )
                try:
                    async for event in rest:
                        delta = assembler.feed(event)
                        if delta:
                            yield {"type": "text", "delta": delta}
                        if assembler.complete:
                            break
                finally:
                    await rest.aclose()
            turn = assembler.finish()
        except BaseException as exc:
            self.emit_llm_error(started, exc, parts, state.sent_model)
            if tracing is not None:
                tracing.end_chat(chat, None, exc)
            raise
        finally:
            await tx.aclose(events)
        if tracing is not None:
            tracing.end_chat(chat, turn, None)
        await self.finish_call(turn, started, state.turns, parts, state.sent_model)
        yield turn


def _model_of(body: Mapping[str, Any]) -> str | None:
    model = body.get("model")
    return model if isinstance(model, str) else None
