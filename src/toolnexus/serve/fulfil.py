"""Who does the work behind a served task: a client over a toolkit, or an agent tree.

A `Fulfiller` runs a task's text and — when the run halts on a `Request` — takes the caller's
follow-up through the one answering/resumption path, never a replay:

- ``answer(request_id, answer)`` *records* the answer (``client.answer`` /
  ``RunStore.post_answer``: validated, exactly once — a racing second follow-up gets
  `AnswerConflict` and changes nothing);
- the server then takes the recorded answer (``RunStore.take``, under a lease) and
  ``resume_claim(claim)`` resumes the halted run (``client.resume_claim`` /
  ``AgentRuntime.resume_claim``, both through `toolnexus.resumption.Resumption`): the halted
  tool re-executes with ``ctx.answer``, no new user turn;
- ``cancel(request_id)`` abandons the halted run (``client.cancel`` / ``RunStore.cancel``).

Because the answer is recorded before the resume runs, a serving process that dies in between
loses nothing: the next process (or a worker) finds the request answered and resumes it.

``start`` runs a task as the next turn of its context's conversation (a client's conversation
``<contextId>``; an agent tree's handle that ran the context's last task). A streamed task
passes ``on_text`` to ``start`` and, for a follow-up, to ``resume_claim``. `CallbackFulfiller`
wraps a host's own ``run_task`` (``start_a2a_server``): it cannot resume, so a follow-up is
its next turn instead (``resumes = False``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

from ..errors import UsageError
from ..stores.requests import Claim, RunStore
from ..suspension import Answer, Request

if TYPE_CHECKING:
    from ..agents.runtime import AgentRuntime
    from ..client import Client, ToolSet

__all__ = ["AgentFulfiller", "CallbackFulfiller", "ClientFulfiller", "Fulfiller", "Outcome"]

OnText = Callable[[str], Any]


@dataclass(slots=True, kw_only=True)
class Outcome:
    """How a run (or a resumed stretch of it) ended.

    Attributes:
        status: ``done``, ``pending``, ``incomplete`` or ``error`` (and the agent statuses).
        text: the final text (the error text for ``error``).
        pending: the Request the run halted on (``status == "pending"``).
        result: the `RunResult` / `TaskResult` itself (for ``on_task``).
        handle: the agent handle that ran it (agent trees).
    """

    status: str
    text: str
    pending: Request | None = None
    result: Any = None
    handle: str | None = None


class Fulfiller(Protocol):
    """The work behind a served task (see the module docs)."""

    runs: RunStore
    streams_text: bool
    resumes: bool
    """Whether a follow-up is an `Answer` resumed through the run store (``False``: a host
    callback that cannot resume; the follow-up's text is the next turn, as in the reference)."""

    async def start(
        self, text: str, *, context_id: str, handle: str | None, on_text: OnText | None
    ) -> Outcome:
        """Run ``text`` as the next turn of conversation ``context_id`` (an agent tree: of
        ``handle``, the agent that ran the context's last task, when there is one)."""
        ...

    async def answer(self, request_id: str, answer: Answer, *, answered_by: str) -> None: ...

    async def resume_claim(
        self, claim: Claim, *, lease_s: float, on_text: OnText | None = None
    ) -> Outcome: ...

    async def cancel(self, request_id: str, *, reason: str, answered_by: str) -> None: ...


def _of_run(result: Any, handle: str | None = None) -> Outcome:
    status = str(result.status)
    return Outcome(
        status=status, text=str(result.text), pending=result.pending, result=result, handle=handle
    )


class ClientFulfiller:
    """A `toolnexus.Client` over a toolkit: ``ask`` (``run`` without a context), then
    ``answer`` + ``resume`` for follow-ups."""

    def __init__(self, client: Client, toolkit: ToolSet) -> None:
        if client._parks:  # pyright: ignore[reportPrivateUsage]
            raise UsageError(
                "serve: the client parks halted runs (store_wait_for); a served run must halt "
                "so its task can ask the caller — build the client without that wait_for"
            )
        self.client = client
        self.toolkit = toolkit
        self.runs: RunStore = client.run_store
        self.streams_text = not client._in_process  # pyright: ignore[reportPrivateUsage]
        self.resumes = True

    async def start(
        self, text: str, *, context_id: str, handle: str | None, on_text: OnText | None
    ) -> Outcome:
        streaming = on_text if self.streams_text else None
        result = await self.client.ask(text, self.toolkit, id=context_id, on_text=streaming)
        return _of_run(result)

    async def answer(self, request_id: str, answer: Answer, *, answered_by: str) -> None:
        await self.client.answer(request_id, answer, answered_by=answered_by)

    async def resume_claim(
        self, claim: Claim, *, lease_s: float, on_text: OnText | None = None
    ) -> Outcome:
        from ..resumption import Resumption

        using = Resumption(self.runs, lease_s=lease_s)
        streaming = on_text if self.streams_text else None
        result = await self.client.resume_claim(
            self.toolkit, claim, resumption=using, on_text=streaming
        )
        return _of_run(result)

    async def cancel(self, request_id: str, *, reason: str, answered_by: str) -> None:
        await self.client.cancel(request_id, reason=reason, answered_by=answered_by)


class AgentFulfiller:
    """An entry agent of an `AgentRuntime`: each task spawns a handle of it under the root;
    a follow-up records the answer and resumes the tree (the runtime's cascade)."""

    streams_text = True
    resumes = True

    def __init__(self, runtime: AgentRuntime, entry: str) -> None:
        if entry not in runtime.registry:
            raise UsageError(f"serve: the runtime has no agent named {entry!r}")
        self.runtime = runtime
        self.entry = entry
        self.runs: RunStore = runtime.run_store

    async def start(
        self, text: str, *, context_id: str, handle: str | None, on_text: OnText | None
    ) -> Outcome:
        """The context's handle takes another turn (its transcript goes on); a context
        without one — new, or its handle closed — spawns a handle of the entry agent."""
        from ..agents.handle import Handle

        rt = self.runtime
        found = rt.handle(handle) if handle is not None else None
        if found is not None and found.agent == self.entry and found.state != "closed":
            if found.state != "idle":
                return Outcome(
                    status="error",
                    text=f"the agent of this context is {found.state}; try again later",
                    handle=found.id,
                )
            return _of_run(await rt.run_turn(found, text, on_text=on_text), found.id)
        spawned = rt.spawn(rt.root, self.entry)
        if not isinstance(spawned, Handle):
            return Outcome(status="error", text=spawned.error or "could not spawn the agent")
        result = await rt.run_turn(spawned, text, on_text=on_text)
        return _of_run(result, spawned.id)

    async def answer(self, request_id: str, answer: Answer, *, answered_by: str) -> None:
        await self.runs.post_answer(request_id, answer, answered_by=answered_by)

    async def resume_claim(
        self, claim: Claim, *, lease_s: float, on_text: OnText | None = None
    ) -> Outcome:
        from ..resumption import Resumption

        result = await self.runtime.resume_claim(
            claim, Resumption(self.runs, lease_s=lease_s), on_text=on_text
        )
        if result is None:
            return Outcome(status="done", text="")
        return _of_run(result)

    async def cancel(self, request_id: str, *, reason: str, answered_by: str) -> None:
        await self.runs.cancel(request_id, reason=reason, answered_by=answered_by)
        rt = self.runtime
        for view in rt.list():
            h = rt.handle(view.id)
            if h is not None and h.pending is not None and h.pending.id == request_id:
                await rt.interrupt(h)


RunTask = Callable[[str, str], Any]
"""``run_task(text, context_id)`` → an object with ``.status``, ``.pending`` and ``.text`` (a
`RunResult`), or an awaitable of one."""


class CallbackFulfiller:
    """A host's own ``run_task(text, context_id)`` (`toolnexus.serve.start_a2a_server`).

    It has no run store to resume from: a follow-up on a task waiting for input is run as
    the next turn of the task's context — ``run_task(<the follow-up's text>, context_id)``,
    the reference's behaviour — on the same task, once (a racing second one is refused).
    ``context_id`` is always a string: the caller's ``contextId``, or the one the server
    made for the task.
    """

    streams_text = False
    resumes = False

    def __init__(self, run_task: RunTask, *, loop: asyncio.AbstractEventLoop | None = None) -> None:
        if not callable(run_task):
            raise UsageError("start_a2a_server: run_task must be callable")
        from ..stores.runs import InMemoryRunStore

        self.run_task = run_task
        self.loop = loop
        """Where ``run_task``'s coroutine runs (``None``: the serving loop)."""
        self.runs: RunStore = InMemoryRunStore()  # holds nothing: recovery finds nothing

    async def start(
        self, text: str, *, context_id: str, handle: str | None, on_text: OnText | None
    ) -> Outcome:
        import inspect

        value = self.run_task(text, context_id)
        if inspect.isawaitable(value):
            loop = self.loop
            if loop is not None and loop is not asyncio.get_running_loop():
                awaited: Any = value

                async def run() -> Any:
                    return await awaited

                value = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(run(), loop))
            else:
                value = await value
        if value is None:
            return Outcome(status="error", text="run_task returned None")

        def field(name: str, default: Any) -> Any:
            if isinstance(value, Mapping):
                return cast(Mapping[str, Any], value).get(name, default)
            return getattr(value, name, default)

        status = str(field("status", "done"))
        pending: Any = field("pending", None)
        if pending is not None and not isinstance(pending, Request):
            try:
                pending = Request.from_dict(pending)
            except Exception:
                return Outcome(
                    status="error", text="run_task returned a pending that is not a Request"
                )
        if status == "pending" and pending is None:
            return Outcome(status="error", text="run_task returned pending without a Request")
        return Outcome(
            status=status, text=str(field("text", "") or ""), pending=pending, result=value
        )

    async def answer(self, request_id: str, answer: Answer, *, answered_by: str) -> None:
        raise UsageError("a run_task server does not resume: the follow-up is the next turn")

    async def resume_claim(
        self, claim: Claim, *, lease_s: float, on_text: OnText | None = None
    ) -> Outcome:
        raise UsageError("a run_task server does not resume: the follow-up is the next turn")

    async def cancel(self, request_id: str, *, reason: str, answered_by: str) -> None:
        return None  # nothing halted here: the task is simply canceled
