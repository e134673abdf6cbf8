"""One turn of a handle: the engine's run, gated by the agent's completion check.

`Turns` is a base of `toolnexus.agents.AgentRuntime`. A turn is one or more engine runs: when
the definition has a ``completion`` and a run answers without verifying, the handle is asked
again (``Your work did not verify: <reason>. Fix it and finish.``) on the same transcript,
under the handle's turn budget (``max_turns`` counts every attempt's model calls).

The gate's progress — the attempt, the failed reason, the tool calls of the earlier attempts —
lives in ``Handle.gate`` and is written with the handle's row, so a turn that suspends inside
the gate (a tool asks a human during attempt 2) resumes from its checkpoint at attempt 2 in
any process, and the verifier still sees every attempt's calls.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

from .._types import RunResult, ToolCallRecord
from ..loop.engine import Engine, Finished, RunState
from .budget import BudgetGuard, limit_text
from .handle import Handle
from .harness import attempts_of, retry_prompt, verdict_of, verifying_note
from .resuming import restamp, stamp_path
from .runtime_base import RuntimeBase
from .types import TaskResult

__all__ = ["Turns"]


class Turns(RuntimeBase):
    """Drive a handle's turn (a base of `AgentRuntime`)."""

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
            finished = await engine.complete(state, resumed=resumed, on_text=h.on_text)
        except BaseException as exc:
            error = exc
            raise
        finally:
            guard.settle()
            metric: dict[str, Any] = {
                "event": "run",
                "model": engine.cfg.model,
                "turns": state.turns,
                "tool_calls": len(state.records),
                "total_tokens": state.usage.get("total_tokens", 0),
                "ms": (time.perf_counter() - started) * 1000,
            }
            if error is not None:
                metric["error"] = f"{type(error).__name__}: {error}"
            self._engines.emit_for(self._def(h), metric)
        return finished

    async def _drive(
        self,
        h: Handle,
        engine: Engine,
        state: RunState,
        guard: BudgetGuard,
        resumed: list[Any] | None,
        fence: Callable[[], Awaitable[Any]] | None = None,
    ) -> TaskResult:
        """One turn of ``h`` to its `TaskResult` (through the completion gate, if any).
        ``fence`` runs right before the transcript is saved (a durable resume checks its claim
        there, so an overtaken resumer writes none)."""
        completion = self._def(h).completion
        while True:
            finished = await self._run_once(h, engine, state, guard, resumed)
            run = finished.result
            resumed = None
            if run.status == "pending" and run.pending is not None:
                request = stamp_path(run.pending, h)
                assert finished.checkpoint is not None
                h.checkpoint = restamp(finished.checkpoint, run.pending.id, request)
                h.pending = request
                return TaskResult(text=request.prompt, status="pending", pending=request)
            h.checkpoint = None
            h.pending = None
            gate = h.gate
            if completion is not None and run.status == "done":
                attempts = attempts_of(completion)
                attempt = int(gate["attempt"]) if gate else 1
                earlier = _records(gate["calls"]) if gate else []
                checked = _with_calls(run, earlier + list(run.tool_calls))
                failed = await verdict_of(completion, checked)
                if failed is not None and attempt < attempts:
                    self.trace.append(
                        f"{h.id}: completion check failed (attempt {attempt}/{attempts}): {failed}"
                    )
                    h.gate = {
                        "attempt": attempt + 1,
                        "reason": failed,
                        "calls": [r.to_dict() for r in checked.tool_calls],
                    }
                    fresh = engine.new_state(
                        retry_prompt(failed),
                        state.tools,
                        state.wire_tools,
                        history=run.messages,
                        cancel=state.cancel,
                    )
                    fresh.conversation_id = state.conversation_id
                    state = fresh
                    continue
                if failed is not None:
                    h.gate = None
                    return await self._final(
                        h,
                        run,
                        fence,
                        TaskResult(
                            text=limit_text("completion"), status="incomplete", limit="completion"
                        ),
                    )
            h.gate = None
            return await self._final(h, run, fence, _result_of(run, gate))

    async def _final(
        self,
        h: Handle,
        run: RunResult,
        fence: Callable[[], Awaitable[Any]] | None,
        result: TaskResult,
    ) -> TaskResult:
        if fence is not None:
            await fence()
        await self._conversations.save(self._conv_id(h), run.messages)
        h.drained = []
        return result


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


def _with_calls(run: RunResult, calls: list[ToolCallRecord]) -> RunResult:
    """``run`` as the verifier sees it: the tool calls of every attempt so far."""
    return RunResult(
        text=run.text,
        messages=run.messages,
        tool_calls=calls,
        tool_call_count=len(calls),
        turns=run.turns,
        usage=run.usage,
        model=run.model,
        status=run.status,
        limit=run.limit,
        pending=run.pending,
        expired=run.expired,
    )


def _result_of(run: RunResult, gate: dict[str, Any] | None) -> TaskResult:
    """A finished run's `TaskResult`; a retry of the gate that stopped on a limit says so."""
    if run.status == "incomplete":
        limit = run.limit or "maxTurns"
        text = run.text or limit_text(limit)
        if run.limit:
            text = limit_text(limit) if not run.text else f"{run.text}\n{limit_text(limit)}"
        if gate:
            text += verifying_note(int(gate["attempt"]), str(gate.get("reason", "")))
        return TaskResult(text=text, status="incomplete", limit=limit)
    return TaskResult(text=run.text, status="done")
