"""The agent runtime: a tree of handles driven by six verbs, durable across processes.

::

    rt = AgentRuntime(registry={"asker": AgentDef(name="asker", tools=[check_secret])},
                      llm={"base_url": url, "style": "openai", "model": "m", "api_key": "k"})
    h = rt.spawn(rt.root, "asker")
    rt.wake(h, "get the secret")
    r = await rt.wait(h)              # status "pending": the handle is suspended
    await rt.resume(Answer(id=r.pending.id, ok=True))
    done = await rt.wait(h)

Each handle runs the §8 loop (the same engine as `Client`) with its agent's soul and tools. A
suspension travels up one hop at a time — the nearest ``wait_for`` answers it; with none, the
root's result is ``pending`` — and `resume` delivers the Answer to the exact outstanding call of
the deepest suspended handle, then cascades up; each parent's ``task`` call reattaches to its
existing child. With a durable ``store`` the whole tree (handles, transcripts, checkpoints, the
pending request) is persisted, and `AgentRuntime.restore` rebuilds it in a fresh process.

`AgentRuntime` is a facade over the objects that do the work; it builds each one, in this
order, with what it needs::

    ModelSlots      the model calls in flight across the runtime (``max_concurrent_turns``)
    Tree            the handles: states and legal moves, rows, pending index, waiters, views
    TurnDriver      a turn: its engine runs (each with its ``run`` metric), the completion
                    gate, the transcript save
    TurnScheduler   when turns run: wakes, a parent's concurrency queue, settling a turn
    Stopper         interrupt, close
    TreeResumer     resume, resume_claim, the cascade, resume_handle, the worker
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._types import Tool
from ..errors import UsageError
from ..observability import Metrics, deliver
from ..resumption import Resumption
from ..stores.base import ConversationStore
from ..stores.runs import Claim, InMemoryRunStore, RunStore
from ..stores.url import resolve_store
from ..suspension import Answer
from .clock import AsyncioClock, Clock
from .engines import ClientFactory, EngineFactory, LlmConfig
from .handle import Handle
from .persistence import as_runtime_store
from .resuming import TreeResumer
from .scheduling import ModelSlots, TurnScheduler
from .stopping import Stopper
from .task_tool import task_tool
from .tree import Tree
from .turns import TurnDriver
from .types import (
    DEFAULT_MAX_CONCURRENT,
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_TURNS,
    LIMIT_COMPLETION,
    LIMIT_MAX_CHILDREN,
    LIMIT_MAX_CONCURRENT,
    LIMIT_MAX_DEPTH,
    LIMIT_MAX_TOKENS,
    LIMIT_MAX_TOOL_CALLS,
    LIMIT_MAX_TURNS,
    LIMIT_MAX_WALL_MS,
    LIMIT_TIMEOUT,
    LIMITS,
    TASK_STATUS_CLOSED,
    TASK_STATUS_DONE,
    TASK_STATUS_ERROR,
    TASK_STATUS_INCOMPLETE,
    TASK_STATUS_INTERRUPTED,
    TASK_STATUS_PENDING,
    TASK_STATUS_TIMEOUT,
    TASK_STATUSES,
    AgentDef,
    Budget,
    CloseReason,
    HandleState,
    HandleView,
    InboxItem,
    PostResult,
    SpawnError,
    TaskResult,
)

if TYPE_CHECKING:
    from ..worker import Worker

# The package's `toolnexus.agents.runtime` names (COMPAT §1) are re-exported here too.
__all__ = [
    "DEFAULT_MAX_CONCURRENT",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_TURNS",
    "LIMITS",
    "LIMIT_COMPLETION",
    "LIMIT_MAX_CHILDREN",
    "LIMIT_MAX_CONCURRENT",
    "LIMIT_MAX_DEPTH",
    "LIMIT_MAX_TOKENS",
    "LIMIT_MAX_TOOL_CALLS",
    "LIMIT_MAX_TURNS",
    "LIMIT_MAX_WALL_MS",
    "LIMIT_TIMEOUT",
    "TASK_STATUSES",
    "TASK_STATUS_CLOSED",
    "TASK_STATUS_DONE",
    "TASK_STATUS_ERROR",
    "TASK_STATUS_INCOMPLETE",
    "TASK_STATUS_INTERRUPTED",
    "TASK_STATUS_PENDING",
    "TASK_STATUS_TIMEOUT",
    "AgentDef",
    "AgentRuntime",
    "AsyncioClock",
    "Budget",
    "Clock",
    "Handle",
    "HandleState",
    "HandleView",
    "InboxItem",
    "PostResult",
    "SpawnError",
    "TaskResult",
]


class AgentRuntime:
    """Owns a tree of agent handles, their store, their clock and the global turn gate.

    ``llm`` is where the agents' model lives: a mapping / `LlmConfig` (``base_url``, ``style``,
    ``model``, ``api_key``, retries, timeout), or a client factory ``(AgentDef) -> Client``
    whose endpoint, model and transport an agent's runs use (the runtime adds the agent's soul,
    seams, ``wait_for`` and its turn gate). ``in_process=generate`` runs every agent on a host
    function instead (as `create_in_process_client`); it excludes ``transport`` and ``llm``.
    """

    def __init__(
        self,
        *,
        registry: Mapping[str, AgentDef],
        llm: LlmConfig | Mapping[str, Any] | ClientFactory | None = None,
        transport: Any = None,
        http_transport: Any = None,
        in_process: Callable[[dict[str, Any]], Any] | None = None,
        store: Any = None,
        clock: Clock | None = None,
        inbox_cap: int = 8,
        max_concurrent_turns: int = 8,
        shutdown_ms: int = 200,
        hooks: Any = None,
        on_metric: Callable[[dict[str, Any]], Any] | None = None,
        runtime_id: str = "default",
        budget: Budget | None = None,
    ) -> None:
        if inbox_cap < 1 or max_concurrent_turns < 1 or shutdown_ms < 0:
            raise UsageError("inbox_cap and max_concurrent_turns must be ≥ 1, shutdown_ms ≥ 0")
        if in_process is not None:
            transport, llm = _in_process(in_process, transport or http_transport, llm)
            http_transport = None
        self.registry: dict[str, AgentDef] = dict(registry)
        for name, d in self.registry.items():
            if not isinstance(d, AgentDef):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise UsageError(f"registry[{name!r}] must be an AgentDef")
        self.clock: Clock = clock or AsyncioClock()
        self.runtime_id = runtime_id
        self.metrics = Metrics()
        self._on_metric = on_metric
        self._metric_tasks: set[asyncio.Future[Any]] = set()
        backend = resolve_store(store)
        self._backend = backend
        self._owns_store = isinstance(store, str)
        self._conversations: ConversationStore = backend
        self._runs: RunStore = backend if isinstance(backend, RunStore) else InMemoryRunStore()
        self._slots = ModelSlots(max_concurrent_turns)
        self._engines = EngineFactory(
            llm=llm,
            transport=transport if transport is not None else http_transport,
            gate=self._slots.hold,
            emit=self._emit,
            runtime_metric=on_metric is not None,
        )
        self._tree = Tree(
            registry=self.registry,
            clock=self.clock,
            runtime_id=runtime_id,
            inbox_cap=inbox_cap,
            budget=budget or Budget(),
            rows=as_runtime_store(backend),
            runs=self._runs,
            own=self._own,
        )
        self.root: Handle = self._tree.root
        self.trace: list[str] = self._tree.trace
        self._driver = TurnDriver(
            tree=self._tree,
            engines=self._engines,
            conversations=self._conversations,
            hooks=hooks,
            delegate=self._task_tool,
        )
        self._scheduler = TurnScheduler(tree=self._tree, driver=self._driver, clock=self.clock)
        self._stopper = Stopper(tree=self._tree, scheduler=self._scheduler, shutdown_ms=shutdown_ms)
        self._resumer = TreeResumer(
            tree=self._tree,
            driver=self._driver,
            scheduler=self._scheduler,
            runs=self._runs,
            resumption=Resumption(self._runs),
            clock=self.clock,
        )

    @classmethod
    async def restore(
        cls,
        *,
        registry: Mapping[str, AgentDef],
        store: Any,
        runtime_id: str = "default",
        **options: Any,
    ) -> AgentRuntime:
        """Rebuild a runtime's tree from its store in a fresh process.

        Suspended handles come back suspended with their checkpoints and pending request (so
        `resume` finishes the run); a handle that was running when the process died comes
        back idle with an ``interrupted`` result.

        Raises:
            UsageError: the stored tree names an agent the registry lacks.
        """
        rt = cls(registry=registry, store=store, runtime_id=runtime_id, **options)
        await rt._tree.restore()
        return rt

    # -- what it holds ------------------------------------------------------------------------

    @property
    def conversation_store(self) -> ConversationStore:
        """The one conversation store of this runtime (conversation id = handle id)."""
        return self._conversations

    @property
    def run_store(self) -> RunStore:
        """Where the tree's halted requests, their answers and the pending index live."""
        return self._runs

    @property
    def queue(self) -> str:
        """The run-store queue this tree's halted requests wait in (``agents/<runtime id>``)."""
        return self._tree.queue

    @property
    def inbox_cap(self) -> int:
        """The items a handle's inbox holds."""
        return self._tree.inbox_cap

    @property
    def shutdown_ms(self) -> int:
        """How long `close` lets a running turn finish before aborting it."""
        return self._stopper.shutdown_ms

    @property
    def max_observed_concurrent_turns(self) -> int:
        """The most model calls that were in flight at once (``max_concurrent_turns`` caps it)."""
        return self._slots.max_observed

    def handle(self, id: str) -> Handle | None:
        """The handle with ``id`` (closed ones included), or ``None``."""
        return self._tree.handle(id)

    def inspect(self, h: Handle) -> HandleView:
        """A read-only view of ``h``."""
        return self._tree.inspect(h)

    def list(self, h: Handle | None = None) -> list[HandleView]:
        """Views of every handle below ``h`` (default: the whole tree), closed ones included."""
        return self._tree.list(h)

    def state_of(self, h: Handle) -> HandleState:
        return h.state

    async def transcript(self, h: Handle) -> list[Any]:
        """``h``'s transcript as far as it goes: while it is parked, the halted turn's (from its
        checkpoint); otherwise what the conversation store holds (``[]`` for none yet)."""
        if h.state == "suspended" and h.checkpoint is not None:
            return list(h.checkpoint.messages)
        return list(await self._conversations.get(self._tree.conv_id(h)) or [])

    # -- the verbs ----------------------------------------------------------------------------

    def spawn(
        self, parent: Handle, def_name: str, budget: Budget | None = None
    ) -> Handle | SpawnError:
        """Create a child of ``parent`` (never raises: a refusal is a `SpawnError`).

        The host that spawns a handle may `wait` on it wherever it sits in the tree."""
        child = self._tree.spawn(parent, def_name, budget)
        if isinstance(child, Handle):
            child.by_host = True
        return child

    def post(self, h: Handle, item: InboxItem) -> PostResult:
        """Append to the inbox (no transition). Closed or full ⇒ an error value."""
        return self._tree.post(h, item)

    def wake(self, h: Handle, prompt: str | None = None) -> PostResult:
        """Start a turn on an idle handle: its input is ``prompt`` plus the drained inbox.

        Waking a running handle is a no-op (the prompt is buffered for its next turn); waking a
        suspended one only buffers. Over the parent's ``max_concurrent`` the wake queues FIFO.
        """
        return self._scheduler.wake(h, prompt)

    async def wait(
        self, h: Handle, timeout_ms: float | None = None, *, waiter: Handle | None = None
    ) -> TaskResult:
        """The next result of ``h`` — or, when it is settled, its last one right away.

        Only the spawner may wait: the host (``waiter=None``) for the handles it spawned,
        wherever they sit in the tree, an agent for the children its ``task`` calls spawned.
        """
        return await self._tree.wait(h, timeout_ms, waiter=waiter)

    def interrupt(self, h: Handle) -> asyncio.Future[None]:
        """Abort the in-flight turn, or cancel a pending request — at once (synchronous).

        A running handle goes idle now with its drained inbox put back at the front, and its
        waiters get an ``interrupted`` result; the turn's task unwinds behind. A suspended one
        goes idle now too. Never a kill: the handle stays usable. The returned future resolves
        to ``None`` once the handle has settled (``await rt.interrupt(h)`` waits for that)."""
        return self._stopper.interrupt(h)

    async def close(
        self, h: Handle, *, force: bool = False, reason: CloseReason | None = None
    ) -> list[InboxItem]:
        """Close ``h`` and, leaf-first, its children. A running turn may finish within
        ``shutdown_ms`` (at once with ``force``), then it is aborted: the items it had drained
        go back to the front of the inbox. ``close(rt.root)`` stops everything. The final state
        stays queryable.

        Returns:
            ``h``'s unprocessed inbox items (those an aborted turn had drained first).
        """
        return await self._stopper.close(h, force=force, reason=reason)

    async def run_turn(
        self, h: Handle, prompt: str, *, on_text: Callable[[str], Any] | None = None
    ) -> TaskResult:
        """Wake ``h`` with ``prompt`` and wait for the result.

        ``on_text`` receives ``h``'s model text deltas (sync or async) as they stream — its
        own, not its sub-agents'."""
        h.on_text = on_text
        try:
            posted = self.wake(h, prompt)
            if not posted.ok:
                return TaskResult(
                    text=posted.error or "", status="error", is_error=True, runtime=self
                )
            return await self.wait(h, waiter=h.parent)
        finally:
            h.on_text = None

    # -- resuming -----------------------------------------------------------------------------

    async def resume(
        self, answer: Answer | Mapping[str, Any], *, answered_by: str | None = None
    ) -> TaskResult:
        """Deliver ``answer`` to the deepest suspended handle, then cascade up; return the
        `TaskResult` of the last turn the cascade ran (the outermost resumed ancestor, or the
        leaf). The deepest handle's halted call is re-executed with ``ctx.answer``; each
        suspended ancestor then resumes its own halted ``task`` call (see
        `toolnexus.agents.resuming.TreeResumer.resume`).

        Raises:
            NoSuspendedHandle: nothing is suspended (a `ResumeError` and a ``RuntimeError``).
            AnswerMismatch: the answer does not echo the pending request id.
            InvalidAnswer: the answer's fields have the wrong types.
            AnswerConflict: the request was already answered (here or in another process),
                also when the tree has finished since.
        """
        return await self._resumer.resume(answer, answered_by=answered_by)

    async def resume_claim(
        self,
        claim: Claim,
        resumption: Resumption | None = None,
        *,
        on_text: Callable[[str], Any] | None = None,
    ) -> TaskResult | None:
        """Resume the tree with a request taken from the store (`RunStore.take`): what the
        runtime's worker does with each answered request of this tree.

        Returns the result of the highest handle the cascade reached, or ``None`` when no
        handle waits on the request any more: its cascade ran to the end and only settling it
        failed (the store was down, the process died just before) — it is settled now, and
        nothing runs again. ``on_text`` receives the top-level handle's model text deltas as
        the resumed turn streams them (a served task's follow-up).
        """
        return await self._resumer.resume_claim(claim, resumption, on_text=on_text)

    async def resume_handle(self, h: Handle, answer: Answer) -> TaskResult:
        """Resume ``h``'s halted turn with ``answer`` inline (retry-with-answer from its
        checkpoint): the ``task`` tool's path when a ``wait_for`` up the chain answered."""
        return await self._resumer.resume_handle(h, answer)

    def worker(self, **options: Any) -> Worker:
        """A worker that resumes this tree whenever one of its requests is answered, from any
        process sharing the store: typically ``AgentRuntime.restore(...)`` then
        ``async with rt.worker(): ...``.

        ``options``: ``lease_s``, ``poll_interval``, ``retry_s``, ``concurrency``,
        ``on_result`` (see `toolnexus.worker.Worker`); it takes only this tree's requests
        (its `queue`).
        """
        return self._resumer.worker(**options)

    # -- resources ----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Release the process's resources: abort in-flight turns, close the HTTP sessions.

        The tree itself is left as it is in the store — suspended handles stay suspended, so a
        later process can `restore` and `resume` them. Use ``close(rt.root)`` to stop the
        tree for good.
        """
        running = [h.task for h in self._tree.handles() if h.task is not None]
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        if self._tree.background:
            await asyncio.gather(*self._tree.background, return_exceptions=True)
        await self._engines.aclose()
        closer = getattr(self._backend, "aclose", None)
        if self._owns_store and closer is not None:
            await closer()

    async def __aenter__(self) -> AgentRuntime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- what its parts are given -------------------------------------------------------------

    def _own(self, result: TaskResult) -> None:
        """Mark ``result`` as this runtime's (``TaskResult.runtime``)."""
        result.runtime = self

    def _task_tool(self, h: Handle) -> Tool:
        """The ``task`` tool of ``h``, an agent with a team (delegating uses every verb)."""
        return task_tool(self, h, spawn=self._tree.spawn)

    def _emit(
        self, event: dict[str, Any], on_metric: Callable[[dict[str, Any]], Any] | None
    ) -> None:
        """Record a metric event, then hand it to the agent's sink, else the runtime's."""
        self.metrics.record(event)
        sink = on_metric if on_metric is not None else self._on_metric
        if sink is not None:
            deliver(sink, event, self._metric_tasks)


def _in_process(generate: Any, transport: Any, llm: Any) -> tuple[Any, Any]:
    """The transport and model settings of ``AgentRuntime(in_process=generate)``."""
    from ..llm.inprocess import InProcessTransport

    if transport is not None:
        raise InProcessValueError(
            "toolnexus.agents: `transport` and `in_process` are mutually exclusive — set one, "
            "not both"
        )
    if llm is not None:
        raise InProcessValueError(
            "toolnexus.agents: `llm` and `in_process` are mutually exclusive — an in-process "
            "model has no wire endpoint for `llm` to point at"
        )
    config = LlmConfig(
        base_url="http://in-process.local", model="in-process", api_key="unused", retries=0
    )
    return InProcessTransport(generate), config


class InProcessValueError(UsageError, ValueError):  # merge: move to _compat
    """``in_process`` given with ``transport`` or ``llm``."""
