"""The unified LLM client: ``run`` / ``ask`` / ``stream`` over OpenAI- and Anthropic-style APIs.

::

    client = create_client(base_url="https://api.openai.com/v1", style="openai", model="gpt-4o")
    async with client:
        result = await client.run("What is 2 + 3?", toolkit)
        print(result.text)

Without a ``wait_for``, a tool that suspends halts the run with ``status="pending"``; with one,
the host answers inline and the run goes on.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from ._types import Message, RunResult, Tool
from .errors import ResumeError, UnknownRequest, UsageError
from .llm.openai import OpenAIDialect
from .loop.checkpoint import Checkpoint
from .loop.engine import Engine, EngineConfig, RunState, Slot
from .loop.resume import (
    as_answer,
    as_request,
    check_echo,
    check_relay_payload,
    check_tools,
    checkpoint_from_transcript,
)
from .observability import Metrics
from .stores.base import ConversationStore
from .stores.runs import (
    InMemoryRunStore,
    PendingEntry,
    RunStore,
    call_digest,
    conflict,
    halted_call,
)
from .suspension import Answer, Request, is_expired
from .toolkit import Toolkit
from .translate import TranslateResult
from .translate_call import translate_once

__all__ = ["Client", "Conversation", "ToolSet"]

log = logging.getLogger("toolnexus")

ToolSet = Toolkit | Sequence[Tool] | None


class Conversation:
    """A multi-turn conversation held in memory: ``await conv.send(prompt)``."""

    def __init__(self, client: Client, toolkit: ToolSet) -> None:
        self._client = client
        self._toolkit = toolkit
        self.messages: list[Message] = []

    async def send(self, prompt: str) -> RunResult:
        """Send one user message; the transcript carries over to the next ``send``."""
        result = await self._client.run(prompt, self._toolkit, history=self.messages)
        self.messages = result.messages
        return result

    def reset(self) -> None:
        """Forget the transcript."""
        self.messages = []


class Client:
    """Runs the tool-calling loop against one model endpoint. Build with `create_client`."""

    def __init__(
        self,
        config: EngineConfig,
        *,
        store: ConversationStore,
        in_process: bool = False,
        owns_store: bool = False,
    ) -> None:
        self._cfg = config
        self._metrics = Metrics()
        self._on_metric = config.on_metric
        self._engine = Engine(config, self._emit)
        self._store = store
        self._in_process = in_process
        self._runs: RunStore = store if isinstance(store, RunStore) else InMemoryRunStore()
        self._owns_store = owns_store
        self._metric_tasks: set[asyncio.Future[Any]] = set()

    # -- properties ----------------------------------------------------------------------

    @property
    def model(self) -> str:
        return self._cfg.model

    @property
    def style(self) -> str:
        return self._cfg.style

    @property
    def engine_config(self) -> EngineConfig:
        """The loop configuration this client runs with (the agent runtime builds on it)."""
        return self._cfg

    @property
    def conversation_store(self) -> ConversationStore:
        """The `ConversationStore` behind ``ask(id=...)``."""
        return self._store

    @property
    def run_store(self) -> RunStore:
        """Where halted runs wait for their answer (the store itself when it is durable)."""
        return self._runs

    async def list_pending(
        self,
        *,
        kind: str | None = None,
        tool: str | None = None,
        conversation_id: str | None = None,
        older_than: float | None = None,
        newer_than: float | None = None,
        limit: int = 100,
    ) -> list[PendingEntry]:
        """Requests still waiting for an answer, oldest first (the approvals inbox).

        ``older_than`` / ``newer_than`` are ages in seconds.
        """
        return await self._runs.list_pending(
            kind=kind,
            tool=tool,
            conversation_id=conversation_id,
            older_than=older_than,
            newer_than=newer_than,
            limit=limit,
        )

    def metrics(self) -> str:
        """Prometheus text for every LLM call, tool call and run so far."""
        return self._metrics.render()

    def _emit(self, event: dict[str, Any]) -> None:
        self._metrics.record(event)
        if self._on_metric is not None:
            try:
                value = self._on_metric(event)
                if inspect.isawaitable(value):
                    task = asyncio.ensure_future(value)
                    self._metric_tasks.add(task)
                    task.add_done_callback(self._metric_tasks.discard)
            except Exception:
                log.warning("toolnexus: on_metric raised", exc_info=True)

    # -- state ---------------------------------------------------------------------------

    def _state(
        self,
        prompt: str | None,
        toolkit: ToolSet,
        history: Sequence[Message] | None,
        cancel: asyncio.Event | None,
    ) -> RunState:
        by_name: dict[str, Tool] | None = None
        if isinstance(toolkit, Toolkit):
            tools, by_name = toolkit.run_tools()
            wire = toolkit.to_anthropic() if self._cfg.style == "anthropic" else toolkit.to_openai()
            skills_prompt = toolkit.skills_prompt()
        elif toolkit is None:
            tools, wire, skills_prompt = [], [], ""
        else:
            tools = list(toolkit)
            for t in tools:
                if not isinstance(t, Tool):  # pyright: ignore[reportUnnecessaryIsInstance]
                    raise UsageError(
                        f"toolkit must be a Toolkit or a list of toolnexus.Tool, got a "
                        f"{type(t).__name__} in the list"
                    )
            wire = self._cfg.dialect.render_tools(tools)
            skills_prompt = ""
        return self._engine.new_state(
            prompt,
            tools,
            wire,
            skills_prompt=skills_prompt,
            history=history,
            cancel=cancel,
            by_name=by_name,
        )

    async def _drive(
        self,
        state: RunState,
        *,
        stream: bool,
        resumed: list[Slot] | None = None,
        started: float | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        started = time.perf_counter() if started is None else started
        try:
            async for event in self._engine.drive(state, stream=stream, resumed=resumed):
                if event["type"] == "done" and state.checkpoint is not None:
                    await self._runs.save_halt(state.checkpoint)
                yield event
        except BaseException as exc:
            self._run_event(state, started, error=exc)
            raise
        self._run_event(state, started, error=None)

    def _run_event(self, state: RunState, started: float, error: BaseException | None) -> None:
        event: dict[str, Any] = {
            "event": "run",
            "model": self._cfg.model,
            "turns": state.turns,
            "tool_calls": len(state.records),
            "total_tokens": state.usage["total_tokens"],
            "ms": (time.perf_counter() - started) * 1000,
        }
        if error is not None:
            event["error"] = f"{type(error).__name__}: {error}"
        self._emit(event)

    async def _final(
        self, state: RunState, resumed: list[Slot] | None = None, started: float | None = None
    ) -> RunResult:
        """`_drive` without streaming: no events to pass through, just the result."""
        with _Observed(self, state, started):
            result = await self._engine.complete(state, resumed=resumed)
            if state.checkpoint is not None:
                await self._runs.save_halt(state.checkpoint)
        return result

    # -- the loop ------------------------------------------------------------------------

    async def run(
        self,
        prompt: str,
        toolkit: ToolSet = None,
        history: Sequence[Message] | None = None,
        cancel: asyncio.Event | None = None,
    ) -> RunResult:
        """Run the tool-calling loop on ``prompt`` until the model answers.

        Args:
            prompt: the user message.
            toolkit: a `Toolkit` (or a list of tools, or ``None`` for none).
            history: an earlier transcript (``RunResult.messages``) to continue.
            cancel: an `asyncio.Event`; setting it aborts the in-flight request
                (`toolnexus.errors.RunCancelled`).

        Returns:
            A `RunResult`; ``status`` is ``done``, ``pending`` (a tool suspended and there is
            no ``wait_for``) or ``incomplete`` (``max_turns`` ran out).
        """
        # `_final`, inlined: a run parked on a human keeps one coroutine frame fewer.
        state = self._state(prompt, toolkit, history, cancel)
        with _Observed(self, state, None):
            result = await self._engine.complete(state)
            if state.checkpoint is not None:
                await self._runs.save_halt(state.checkpoint)
        return result

    async def ask(
        self,
        prompt: str,
        toolkit: ToolSet = None,
        *,
        id: str | None = None,
        on_text: Callable[[str], Any] | None = None,
        cancel: asyncio.Event | None = None,
    ) -> RunResult:
        """``run`` with memory: with ``id`` the transcript is loaded before and saved after.

        ``on_text`` receives text deltas as they stream; a `RunResult` is still returned.
        """
        history = await self._load(id)
        state = self._state(prompt, toolkit, history, cancel)
        if state.checkpoint is None:
            state.conversation_id = id
        if on_text is None:
            result = await self._final(state)
        else:
            if self._in_process:
                raise UsageError("the in-process client does not stream; call ask without on_text")
            result = None
            async for event in self._drive(state, stream=True):
                if event["type"] == "text":
                    value = on_text(event["delta"])
                    if inspect.isawaitable(value):
                        await value
                elif event["type"] == "done":
                    result = event["result"]
            assert result is not None
        if id is not None:
            await self._store.save(id, result.messages)
        return result

    async def stream(
        self,
        prompt: str,
        toolkit: ToolSet = None,
        *,
        id: str | None = None,
        cancel: asyncio.Event | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Stream one run as event dicts.

        Per turn: ``text`` deltas; then either ``usage`` + ``done`` (no tool calls), or one
        ``tool_call`` per call followed, per call in order, by ``pending`` (before
        ``wait_for`` runs) and/or ``tool_result``. The last event is always
        ``{"type": "done", "result": RunResult}``. With ``id`` the transcript is loaded
        before and saved on ``done``.
        """
        if self._in_process:
            raise UsageError("the in-process client does not stream; use run() or ask()")
        history = await self._load(id)
        state = self._state(prompt, toolkit, history, cancel)
        state.conversation_id = id
        async for event in self._drive(state, stream=True):
            if event["type"] == "done" and id is not None:
                await self._store.save(id, event["result"].messages)
            yield event

    # -- durable resume --------------------------------------------------------------------

    async def _prepare_resume(
        self,
        toolkit: ToolSet,
        history: History,
        pending: Request | Mapping[str, Any],
        answer: Answer | Mapping[str, Any],
        *,
        conversation_id: str | None,
        answered_by: str | None,
        cancel: asyncio.Event | None,
        checkpoint: Checkpoint | None = None,
    ) -> _Resumption:
        """Everything a resume does before the loop goes on: check the answer against the
        halted run, claim the request, apply the answer, record the resolved calls.

        Nothing is written until every check passed; once the claim is taken, a failure
        gives it back (`RunStore.release`) before raising.
        """
        request = as_request(pending)
        reply = as_answer(answer)
        check_echo(request, reply)
        if checkpoint is None:
            checkpoint = await self._runs.load_halt(request.id)
        if checkpoint is None:
            await self._refuse_if_answered(request.id)
            transcript = await history() if callable(history) else history
            checkpoint = checkpoint_from_transcript(
                transcript or [], request, model=self._cfg.model, style=self._cfg.style
            )
            checkpoint.conversation_id = conversation_id
        state = self._state(None, toolkit, None, cancel)
        check_tools(checkpoint, state.by_name)
        check_relay_payload(checkpoint, reply, state.by_name)
        if checkpoint.fingerprint and checkpoint.fingerprint != state.tool_fingerprint():
            log.warning(
                "toolnexus: the tool set changed since request %s halted; resuming anyway",
                request.id,
            )
        halted_request = next(
            (o.request for o in checkpoint.outstanding if o.request and o.request.id == request.id),
            checkpoint.pending,
        )
        effective = reply
        if is_expired(halted_request):
            effective = Answer(id=request.id, ok=False, reason="expired")
            state.expired = True
        name, arguments = halted_call(checkpoint)
        await self._runs.claim(
            request.id, reply, answered_by=answered_by, digest=call_digest(name, arguments)
        )
        started = time.perf_counter()
        try:
            slots = self._engine.restore(state, checkpoint)
            state.conversation_id = checkpoint.conversation_id or conversation_id
            await self._engine.apply_answer(state, slots, halted_request, effective)
            # Record the resolved calls before going on: a resume that fails from here (or a
            # process that dies) and is retried never executes them twice.
            progress = self._engine.snapshot(state, slots, checkpoint.pending)
            progress.created_at = checkpoint.created_at
            await self._runs.save_halt(progress)
        except BaseException:
            await _release(self._runs, request.id)
            raise
        return _Resumption(request.id, state, slots, started, conversation_id)

    async def _finish_resume(self, resumed: _Resumption, result: RunResult) -> None:
        """The resumed run ended (done, incomplete or halted again): settle its request."""
        await self._runs.complete(resumed.request_id)
        if resumed.conversation_id is not None:
            await self._store.save(resumed.conversation_id, result.messages)

    async def _resume(self, prepare: Awaitable[_Resumption]) -> RunResult:
        """A resume to its `RunResult` (the non-streaming entry points)."""
        resumed = await prepare
        try:
            result = await self._final(resumed.state, resumed.slots, resumed.started)
            await self._finish_resume(resumed, result)
        except BaseException:
            await _release(self._runs, resumed.request_id)
            raise
        return result

    async def _resume_stream(
        self, prepare: Awaitable[_Resumption]
    ) -> AsyncIterator[dict[str, Any]]:
        """A resume as a stream of events (the streaming entry points)."""
        resumed = await prepare
        try:
            async for event in self._drive(
                resumed.state, stream=True, resumed=resumed.slots, started=resumed.started
            ):
                if event["type"] == "done":
                    await self._finish_resume(resumed, event["result"])
                yield event
        except BaseException:
            await _release(self._runs, resumed.request_id)
            raise

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
            ResumeError: no transcript, no halted turn, a missing tool, or an ``ok`` relay
                answer without output (nothing changed).
        """
        return await self._resume(
            self._prepare_resume(
                toolkit,
                history,
                pending,
                answer,
                conversation_id=None,
                answered_by=answered_by,
                cancel=cancel,
            )
        )

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
        """`run_with_answer` for a conversation kept in the store: load, resume, save."""
        history = self._history_for_resume(id)
        return await self._resume(
            self._prepare_resume(
                toolkit,
                history,
                pending,
                answer,
                conversation_id=id,
                answered_by=answered_by,
                cancel=cancel,
            )
        )

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
        if self._in_process:
            raise UsageError("the in-process client does not stream; use run_with_answer()")
        prepare = self._prepare_resume(
            toolkit,
            history,
            pending,
            answer,
            conversation_id=None,
            answered_by=answered_by,
            cancel=cancel,
        )
        async for event in self._resume_stream(prepare):
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
        if self._in_process:
            raise UsageError("the in-process client does not stream; use ask_with_answer()")
        history = self._history_for_resume(id)
        prepare = self._prepare_resume(
            toolkit,
            history,
            pending,
            answer,
            conversation_id=id,
            answered_by=answered_by,
            cancel=cancel,
        )
        async for event in self._resume_stream(prepare):
            yield event

    async def resume(
        self,
        toolkit: ToolSet,
        answer: Answer | Mapping[str, Any],
        *,
        answered_by: str | None = None,
        cancel: asyncio.Event | None = None,
    ) -> RunResult:
        """Resume whichever stored run waits on ``answer.id`` — the answer is all you need.

        This is what a webhook or an approvals inbox calls: the checkpoint (and the
        conversation it belongs to) comes from the run store.

        Raises:
            UnknownRequest: no stored run waits on that id.
            AnswerConflict: it was already answered.
        """
        reply = as_answer(answer)
        checkpoint = await self._runs.load_halt(reply.id)
        if checkpoint is None:
            await self._refuse_if_answered(reply.id)
            raise UnknownRequest(f'no halted run waits on request "{reply.id}"')
        request = next(
            (o.request for o in checkpoint.outstanding if o.request and o.request.id == reply.id),
            checkpoint.pending,
        )
        return await self._resume(
            self._prepare_resume(
                toolkit,
                None,
                request,
                reply,
                conversation_id=checkpoint.conversation_id,
                answered_by=answered_by,
                cancel=cancel,
                checkpoint=checkpoint,
            )
        )

    async def _refuse_if_answered(self, request_id: str) -> None:
        record = await self._runs.answer_record(request_id)
        if record is not None:
            raise conflict(request_id, record.answered_by)

    def _history_for_resume(self, id: str) -> Callable[[], Awaitable[list[Message] | None]]:
        """The stored transcript, read only if no stored checkpoint makes it unnecessary."""
        if not isinstance(id, str) or not id:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ResumeError("toolnexus: cannot resume — ask_with_answer needs a conversation id")
        return functools.partial(self._store.get, id)

    def conversation(self, toolkit: ToolSet = None) -> Conversation:
        """An in-memory multi-turn conversation over ``toolkit``."""
        return Conversation(self, toolkit)

    async def translate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        toolkit: ToolSet = None,
        tool_choice: Any = None,
        system: str | None = None,
        max_tokens: int = 0,
        cancel: asyncio.Event | None = None,
    ) -> TranslateResult:
        """One provider call, no loop, no tool execution: OpenAI-shaped in, result out."""
        if isinstance(toolkit, Toolkit):
            declared = toolkit.to_openai()
        elif toolkit is None:
            declared = []
        else:
            declared = OpenAIDialect().render_tools(list(toolkit))
        return await translate_once(
            self._engine,
            messages,
            declared=declared,
            tools=list(tools or ()),
            tool_choice=tool_choice,
            system=system,
            max_tokens=max_tokens,
            cancel=cancel,
        )

    async def _load(self, id: str | None) -> list[Message] | None:
        if id is None:
            return None
        return await self._store.get(id)

    # -- lifecycle -------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the pooled HTTP session (and a store the client opened from a URL)."""
        await self._cfg.transport.aclose()
        closer = getattr(self._store, "aclose", None)
        if closer is not None and self._owns_store:
            await closer()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


History = (
    Sequence[Message] | Callable[[], Awaitable[list[Message] | None]] | None
)  # a transcript, or how to load one when it is needed


class _Observed:
    """Emits a run's ``run`` metric event when the block around it ends, however it ends.

    A small object rather than a ``try`` in a helper coroutine: it is what every parked run
    keeps while it waits.
    """

    __slots__ = ("client", "started", "state")

    def __init__(self, client: Client, state: RunState, started: float | None) -> None:
        self.client = client
        self.state = state
        self.started = time.perf_counter() if started is None else started

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.client._run_event(self.state, self.started, error=exc)  # pyright: ignore[reportPrivateUsage]


@dataclass(frozen=True, slots=True)
class _Resumption:
    """A claimed request whose answer is applied: the run, ready to go on."""

    request_id: str
    state: RunState
    slots: list[Slot]
    started: float
    conversation_id: str | None  # where the transcript is saved when the run ends


async def _release(runs: RunStore, request_id: str) -> None:
    try:
        await runs.release(request_id)
    except Exception:
        log.warning("toolnexus: could not release the claim on %s", request_id, exc_info=True)
