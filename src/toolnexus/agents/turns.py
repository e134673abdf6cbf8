"""`TurnDriver`: how one turn of a handle runs — its engine runs, through the completion gate.

A turn is one or more engine runs: when the definition has a ``completion`` and a run answers
without verifying, the handle is asked again (``Your work did not verify: <reason>. Fix it and
finish.``) on the same transcript, under the handle's turn budget (``max_turns`` counts every
attempt's model calls). The gate is the harness's one (`toolnexus.agents.harness.gate`); a
failed last attempt reads ``hit completion without a final answer`` here (COMPAT §8).

The gate's progress — the attempt, the failed reason, the tool calls of the earlier attempts —
lives in ``Handle.gate`` and is written with the handle's row, so a turn that suspends inside
the gate (a tool asks a human during attempt 2) resumes from its checkpoint at attempt 2 in
any process, and the verifier still sees every attempt's calls.

Each engine run emits its ``run`` metric event (one per ask, as a client's), built by
`toolnexus.observability.run_event` with the error masked by the agent's redactor.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

from .._types import Message, RunResult, Tool, ToolCallRecord
from ..loop.engine import Engine, Finished, RunState
from ..observability import run_event
from ..stores.base import ConversationStore
from .budget import BudgetGuard, limit_text
from .engines import EngineFactory
from .handle import Handle, restamp, stamp_path
from .harness import GateProgress, gate
from .tree import Tree
from .types import TaskResult

__all__ = ["TurnDriver"]


class TurnDriver:
    """Runs a handle's turns: its engine, tools and runs, the gate, the transcript save.

    Args:
        tree: the handles (definitions, conversation ids, the trace).
        engines: one engine per agent definition, and where its metric events go.
        conversations: where each handle's transcript is saved when a turn finishes.
        hooks: the runtime's hooks, for agents without their own.
        delegate: makes the ``task`` tool of a handle whose agent has a team.
    """

    def __init__(
        self,
        *,
        tree: Tree,
        engines: EngineFactory,
        conversations: ConversationStore,
        hooks: Any,
        delegate: Callable[[Handle], Tool],
    ) -> None:
        self._tree = tree
        self._engines = engines
        self._conversations = conversations
        self._hooks = hooks
        self._delegate = delegate

    def engine(self, h: Handle) -> Engine:
        """The engine of ``h``'s agent."""
        return self._engines.engine_for(self._tree.defn(h), self._hooks)

    def state(
        self,
        h: Handle,
        engine: Engine,
        prompt: str | None,
        *,
        cancel: asyncio.Event | None,
        history: Sequence[Message] | None = None,
    ) -> RunState:
        """A fresh run of ``h`` with its tools (``prompt=None``: for a checkpoint to restore)."""
        agent = self._tree.defn(h)
        tools = list(agent.tools or ())
        if agent.task_targets:
            tools.append(self._delegate(h))
        wire = engine.cfg.dialect.render_tools(tools)
        return engine.new_state(prompt, tools, wire, history=history, cancel=cancel)

    async def turn(self, h: Handle, text: str, guard: BudgetGuard) -> TaskResult:
        """A fresh wake's turn on ``h``'s stored transcript; the completion gate starts over."""
        h.gate = None
        engine = self.engine(h)
        conv_id = self._tree.conv_id(h)
        history = await self._conversations.get(conv_id)
        state = self.state(h, engine, text, history=history, cancel=h.cancel)
        result = await self.drive(h, engine, state, guard, resumed=None)
        if result.status == "pending" and history is None:
            # The rewind rule: while parked the store holds the pre-turn transcript (the
            # halted turn lives in the checkpoint) — for a first turn, none yet.
            await self._conversations.save(conv_id, [])
        return result

    async def drive(
        self,
        h: Handle,
        engine: Engine,
        state: RunState,
        guard: BudgetGuard,
        resumed: list[Any] | None,
        fence: Callable[[], Awaitable[Any]] | None = None,
    ) -> TaskResult:
        """One turn of ``h`` to its `TaskResult`, through the completion gate (if any).

        ``resumed`` are the slots of a restored checkpoint, for the first run; ``fence`` runs
        right before the transcript is saved (a durable resume checks its claim there, so an
        overtaken resumer writes none)."""
        current = state
        last: Finished | None = None

        async def attempt(retry: str | None) -> RunResult:
            nonlocal current, last, resumed
            if retry is not None and last is not None:
                fresh = engine.new_state(
                    retry,
                    current.tools,
                    current.wire_tools,
                    history=last.result.messages,
                    cancel=current.cancel,
                )
                fresh.conversation_id = current.conversation_id
                current = fresh
            last = await self._run_once(h, engine, current, guard, resumed)
            resumed = None
            run = last.result
            if run.status == "pending" and run.pending is not None:
                assert last.checkpoint is not None
                request = stamp_path(run.pending, h)
                h.checkpoint = restamp(last.checkpoint, run.pending.id, request)
                h.pending = request
            else:
                h.checkpoint = None
                h.pending = None
            return run

        completion = self._tree.defn(h).completion
        retried = functools.partial(self._retried, h)
        end = await gate(attempt, completion, _progress_of(h.gate), on_retry=retried)
        run = end.result
        if run.status == "pending" and h.pending is not None:
            return TaskResult(text=h.pending.prompt, status="pending", pending=h.pending)
        h.gate = None
        if end.failed is not None:
            result = TaskResult(
                text=limit_text("completion"), status="incomplete", limit="completion"
            )
        else:
            result = _result_of(run, end.progress)
        if fence is not None:
            await fence()
        await self._conversations.save(self._tree.conv_id(h), run.messages)
        h.drained = []
        return result

    def _retried(self, h: Handle, progress: GateProgress, attempts: int) -> None:
        """A failed attempt goes round again: traced, and the progress kept in ``h``'s row."""
        self._tree.trace.append(
            f"{h.id}: completion check failed (attempt {progress.attempt - 1}/{attempts}): "
            f"{progress.reason}"
        )
        h.gate = {
            "attempt": progress.attempt,
            "reason": progress.reason,
            "calls": [cast(ToolCallRecord, r).to_dict() for r in progress.calls],
        }

    async def _run_once(
        self,
        h: Handle,
        engine: Engine,
        state: RunState,
        guard: BudgetGuard,
        resumed: list[Any] | None,
    ) -> Finished:
        """One engine run, with its ``run`` metric event (one per ask, as a client's)."""
        guard.bind(state)
        state.guard = guard
        started = time.perf_counter()
        error: BaseException | None = None
        try:
            return await engine.complete(state, resumed=resumed, on_text=h.on_text)
        except BaseException as exc:
            error = exc
            raise
        finally:
            guard.settle()
            cfg = engine.cfg
            event = run_event(
                state, model=cfg.model, started=started, error=error, mask=cfg.redactor.text
            )
            self._engines.emit_for(self._tree.defn(h), event)


def _progress_of(row: dict[str, Any] | None) -> GateProgress | None:
    """The gate's progress kept in a handle's row (``None``: the gate is at attempt 1)."""
    if not row:
        return None
    return GateProgress(
        attempt=int(row.get("attempt") or 1),
        reason=str(row.get("reason", "")),
        calls=tuple(_records(row.get("calls"))),
    )


def _records(value: Any) -> list[ToolCallRecord]:
    out: list[ToolCallRecord] = []
    for d in cast(list[Any], value or []):
        if isinstance(d, dict):
            item = cast(dict[str, Any], d)
            out.append(
                ToolCallRecord(
                    name=str(item.get("name", "")),
                    args=cast(dict[str, Any], item.get("args") or {}),
                    output=str(item.get("output", "")),
                    is_error=bool(item.get("is_error")),
                    metadata=cast(dict[str, Any] | None, item.get("metadata")),
                    id=str(item.get("id", "")),
                )
            )
    return out


def _result_of(run: RunResult, progress: GateProgress) -> TaskResult:
    """A finished run's `TaskResult`; a retry of the gate that stopped on a limit says so."""
    if run.status == "incomplete":
        limit = run.limit or "maxTurns"
        text = run.text or limit_text(limit)
        if run.limit:
            text = limit_text(limit) if not run.text else f"{run.text}\n{limit_text(limit)}"
        return TaskResult(text=text + progress.note(), status="incomplete", limit=limit)
    return TaskResult(text=run.text, status="done")
