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
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._types import Tool
from ..errors import UsageError
from ..loop.checkpoint import Checkpoint
from ..observability import Metrics, deliver
from ..resumption import Resumption
from ..stores.base import ConversationStore
from ..stores.runs import InMemoryRunStore, RunStore, halted_call
from ..stores.url import resolve_store
from .budget import BudgetGuard, carve, exhausted, limit_text, max_depth_of, max_turns_of
from .clock import AsyncioClock, Clock
from .engines import ClientFactory, EngineFactory, LlmConfig
from .handle import ROOT_ID, Handle, render_inbox
from .persistence import NullRuntimeStore, RuntimeStore, as_runtime_store, handle_from_json
from .resuming import Resuming
from .stopping import Stopping, stamp_totals
from .task_tool import task_tool
from .turns import Turns
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
    HandleState,
    HandleView,
    InboxItem,
    PostResult,
    SpawnError,
    TaskResult,
)

if TYPE_CHECKING:
    pass

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


_ALLOWED: set[tuple[HandleState, HandleState]] = {
    ("idle", "running"),
    ("running", "idle"),
    ("running", "suspended"),
    ("running", "closed"),
    ("idle", "closed"),
    ("suspended", "closed"),
    ("suspended", "running"),
    ("suspended", "idle"),
}


class AgentRuntime(Stopping, Turns, Resuming):
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
        self.inbox_cap = inbox_cap
        self.shutdown_ms = shutdown_ms
        self.runtime_id = runtime_id
        self.trace: list[str] = []
        self.metrics = Metrics()
        self._hooks = hooks
        self._on_metric = on_metric
        backend = resolve_store(store)
        self._conversations: ConversationStore = backend
        self._runs: RunStore = backend if isinstance(backend, RunStore) else InMemoryRunStore()
        self._tree: RuntimeStore = as_runtime_store(backend)
        self._resumption = Resumption(self._runs)
        self._persisting = not isinstance(self._tree, NullRuntimeStore)
        self._saving: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        """Handle rows are written one save at a time, in the order `_persist` was called
        (the lock of the loop this runtime runs on; see `_save_lock`)."""
        self._owns_store = isinstance(store, str)
        self._backend = backend
        self._gate = asyncio.Semaphore(max_concurrent_turns)
        self._in_flight = 0
        self.max_observed_concurrent_turns = 0
        self._engines = EngineFactory(
            llm=llm,
            transport=transport if transport is not None else http_transport,
            gate=self._gated,
            emit=self._emit,
            runtime_metric=on_metric is not None,
        )
        self.root = Handle(ROOT_ID, "root", None, budget or Budget())
        self._handles: dict[str, Handle] = {ROOT_ID: self.root}
        self._queues: dict[str, list[Handle]] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._metric_tasks: set[asyncio.Future[Any]] = set()

    # -- class-level restore ------------------------------------------------------------------

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
        rows = await rt._tree.load_handles(runtime_id)
        if not rows:
            return rt
        by_id = {str(r.get("id")): r for r in rows}
        missing = sorted(
            {str(r.get("agent")) for r in rows if r.get("id") != ROOT_ID} - set(rt.registry)
        )
        if missing:
            raise UsageError(
                f"cannot restore runtime {runtime_id!r}: the registry lacks agent(s) "
                f"{', '.join(missing)} present in the stored tree"
            )
        root_row = by_id.get(ROOT_ID)
        if root_row is not None:
            rt.root.next_child = int(root_row.get("next_child") or 1)
            rt.root.tokens = int(root_row.get("tokens") or 0)

        # Lineage comes from each row's parent; siblings keep their spawn order (the ``.n``).
        kids: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            if row.get("id") != ROOT_ID:
                kids.setdefault(str(row.get("parent") or ROOT_ID), []).append(row)

        def build(parent: Handle) -> None:
            for row in sorted(kids.get(parent.id, []), key=_spawn_order):
                h = handle_from_json(row, parent)
                parent.children.append(h)
                rt._handles[h.id] = h
                if h.state == "running":
                    h.state = "idle"
                    h.result = TaskResult(
                        text="the process stopped while this handle was running",
                        status="interrupted",
                        is_error=True,
                    )
                build(h)

        build(rt.root)
        await rt._reindex()
        return rt

    async def _reindex(self) -> None:
        """Put back in the pending index every question of the restored tree that the run
        store does not hold: its process died after the tree was saved suspended and before
        the request was indexed."""
        for top in list(self.root.children):
            pending = top.pending
            if top.state != "suspended" or pending is None:
                continue
            known = await self._runs.answer_record(pending.id) is not None
            if not known and await self._runs.load_halt(pending.id) is None:
                await self._index(top)

    # -- plumbing -----------------------------------------------------------------------------

    @property
    def conversation_store(self) -> ConversationStore:
        """The one conversation store of this runtime (conversation id = handle id)."""
        return self._conversations

    @property
    def run_store(self) -> RunStore:
        return self._runs

    def _emit(
        self, event: dict[str, Any], on_metric: Callable[[dict[str, Any]], Any] | None
    ) -> None:
        self.metrics.record(event)
        sink = on_metric if on_metric is not None else self._on_metric
        if sink is not None:
            deliver(sink, event, self._metric_tasks)

    async def _gated(self, call: Callable[[], Any]) -> Any:
        """The global turn gate: wraps only the LLM HTTP call; released when its holder dies."""
        async with self._gate:
            self._in_flight += 1
            self.max_observed_concurrent_turns = max(
                self.max_observed_concurrent_turns, self._in_flight
            )
            try:
                return await call()
            finally:
                self._in_flight -= 1

    def _conv_id(self, h: Handle) -> str:
        return h.id if self.runtime_id == "default" else f"{self.runtime_id}:{h.id}"

    def _move(self, h: Handle, to: HandleState, why: str | None = None) -> None:
        """Change ``h``'s state; the trace line is ``<id>: <from>→<to>`` and the reason in
        parentheses (a reason starting with a word and `` (`` tags the move, as ``DURABLE``)."""
        if (h.state, to) not in _ALLOWED:
            raise UsageError(f"illegal transition {h.state}→{to} for {h.id}")
        line = f"{h.id}: {h.state}→{to}"
        if why:
            line += f" {why}" if why.startswith("DURABLE ") else f" ({why})"
        self.trace.append(line)
        h.state = to

    async def _persist(self, *handles: Handle, as_state: HandleState | None = None) -> None:
        """Write these handles' rows (and the root's when a top-level handle changed).

        ``as_state`` writes that state instead of the current one: a handle mid-resume is
        stored ``suspended`` (with its progress), so a process that dies mid-resume leaves a
        tree that resumes from there rather than one marked interrupted.

        The rows are taken now and written in call order, one save at a time: the save a
        spawn schedules in the background must never land after a later one (a suspension)
        and put an older row back — on a pooled store two saves in flight could commit in
        either order, and the tree would restore the handle as it was before it suspended.
        """
        if not self._persisting:
            return
        rows = [h.to_json() for h in handles if h is not self.root]
        if as_state is not None:
            for row in rows:
                row["state"] = as_state
        if any(h.parent is self.root or h is self.root for h in handles):
            rows.append(self.root.to_json())
        async with self._save_lock():
            await self._tree.save_handles(self.runtime_id, rows)

    def _save_lock(self) -> asyncio.Lock:
        """The lock that orders handle saves, made for the running loop (a runtime may outlive
        the loop it was first used on; an asyncio lock may not)."""
        loop = asyncio.get_running_loop()
        if self._saving is None or self._saving[0] is not loop:
            self._saving = (loop, asyncio.Lock())
        return self._saving[1]

    async def transcript(self, h: Handle) -> list[Any]:
        """``h``'s transcript as far as it goes: while it is parked, the halted turn's (from its
        checkpoint); otherwise what the conversation store holds (``[]`` for none yet)."""
        if h.state == "suspended" and h.checkpoint is not None:
            return list(h.checkpoint.messages)
        return list(await self._conversations.get(self._conv_id(h)) or [])

    def handle(self, id: str) -> Handle | None:
        """The handle with ``id`` (closed ones included), or ``None``."""
        return self._handles.get(id)

    def _handle_of(self, handle_id: str) -> Handle | None:
        return self._handles.get(handle_id)

    def _def(self, h: Handle) -> AgentDef:
        return self.registry[h.agent]

    # -- spawn --------------------------------------------------------------------------------

    def spawn(
        self, parent: Handle, def_name: str, budget: Budget | None = None
    ) -> Handle | SpawnError:
        """Create a child of ``parent`` (never raises: a refusal is a `SpawnError`).

        The host that spawns a handle may `wait` on it wherever it sits in the tree."""
        child = self._spawn(parent, def_name, budget)
        if isinstance(child, Handle):
            child.by_host = True
        return child

    def _spawn(
        self, parent: Handle, def_name: str, budget: Budget | None = None
    ) -> Handle | SpawnError:
        if parent.state == "closed":
            return SpawnError("parent closed")
        agent = self.registry.get(def_name)
        if agent is None:
            known = ", ".join(sorted(self.registry)) or "none"
            return SpawnError(f'unknown agent "{def_name}" (known: {known})')
        max_depth = max_depth_of(parent.budget)
        if parent.depth + 1 > max_depth:
            return SpawnError(f"maxDepth {max_depth} exceeded")
        if (
            parent.budget.max_children is not None
            and len(parent.children) >= parent.budget.max_children
        ):
            return SpawnError(f"maxChildren {parent.budget.max_children} exceeded")
        spent = exhausted(parent, self.clock.now())
        if spent is not None:
            return SpawnError(f"budget exhausted ({spent}); incomplete")
        own = (agent.budget or Budget()).merged(budget)
        child = Handle(
            f"{parent.id}/{def_name}.{parent.next_child}", def_name, parent, carve(own, parent)
        )
        child.defn = agent
        parent.next_child += 1
        parent.children.append(child)
        self._handles[child.id] = child
        tokens = child.pool.tokens
        shown = "inf" if tokens == float("inf") else f"{tokens:g}"
        self.trace.append(f"{child.id}: spawned (depth {child.depth}, tokens {shown})")
        self._schedule_persist(child, parent)
        return child

    def _schedule_persist(self, *handles: Handle) -> None:
        if not self._persisting:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(self._persist(*handles))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- post / wake --------------------------------------------------------------------------

    def post(self, h: Handle, item: InboxItem) -> PostResult:
        """Append to the inbox (no transition). Closed or full ⇒ an error value."""
        if h.state == "closed":
            return PostResult(False, f"inbox closed: {h.id}")
        if len(h.inbox) >= self.inbox_cap:
            self.trace.append(
                f"{h.id}: post REJECTED (inbox full, cap {self.inbox_cap}) from {item.from_}"
            )
            return PostResult(False, f"inbox full: {h.id}")
        h.inbox.append(item)
        return PostResult(True)

    def wake(self, h: Handle, prompt: str | None = None) -> PostResult:
        """Start a turn on an idle handle: its input is ``prompt`` plus the drained inbox.

        Waking a running handle is a no-op (the prompt is buffered for its next turn); waking a
        suspended one only buffers. Over the parent's ``max_concurrent`` the wake queues FIFO.
        """
        if h.state == "closed":
            return PostResult(False, "closed")
        if h is self.root:
            return PostResult(False, "the root is not an agent; wake its children")
        if h.state in ("running", "suspended") or h.queued:
            if prompt:
                h.inbox.append(
                    InboxItem(
                        from_=h.parent.id if h.parent else "external", channel="wake", text=prompt
                    )
                )
            return PostResult(True)
        parent = h.parent
        assert parent is not None
        limit = parent.budget.max_concurrent
        if limit is not None and parent.running_children >= limit:
            h.queued = True
            h.queued_prompt = prompt
            self._queues.setdefault(parent.id, []).append(h)
            self.trace.append(f"{h.id}: wake QUEUED (parent concurrency {limit})")
            return PostResult(True)
        self._admit(h, prompt)
        return PostResult(True)

    def _admit(self, h: Handle, prompt: str | None) -> None:
        """Atomic admission: drain, cancel seam, state flip, start."""
        items = list(h.inbox)
        h.inbox.clear()
        h.drained = items
        ancestors = {a.id for a in h.ancestors()[1:]} | {"clock"}
        text = (prompt or "") + render_inbox(items, ancestors)
        h.cancel = asyncio.Event()
        h.run_turns = 0
        if h.started_at is None:
            h.started_at = self.clock.now()
        self._move(h, "running", "wake")
        h.task = asyncio.get_running_loop().create_task(self._turn(h, text))

    def _release_slot(self, h: Handle) -> None:
        parent = h.parent
        if parent is None:
            return
        queue = self._queues.get(parent.id)
        while queue:
            nxt = queue.pop(0)
            nxt.queued = False
            if nxt.state != "idle":
                continue
            self.trace.append(f"{nxt.id}: DEQUEUED wake (slot freed)")
            self._admit(nxt, nxt.queued_prompt)
            nxt.queued_prompt = None
            return

    # -- turns --------------------------------------------------------------------------------

    def _tools_for(self, h: Handle) -> list[Tool]:
        agent = self._def(h)
        tools = list(agent.tools or ())
        if agent.task_targets:
            tools.append(task_tool(self, h))
        return tools

    async def _on_spawn(self, h: Handle) -> None:
        if h.spawned:
            return
        h.spawned = True
        callback = self._def(h).on_spawn
        if callback is not None:
            value = callback(h)
            if inspect.isawaitable(value):
                await value

    async def _turn(self, h: Handle, text: str) -> None:
        result: TaskResult
        try:
            await self._on_spawn(h)
            guard = BudgetGuard(h, self.clock.now)
            stop = guard.before_call()
            if stop is not None:
                result = TaskResult(text=limit_text(stop), status="incomplete", limit=stop)
                h.inbox[:0] = h.drained
                h.drained = []
            else:
                h.gate = None  # a fresh wake starts the completion gate over
                engine = self._engines.engine_for(self._def(h), self._hooks)
                history = await self._conversations.get(self._conv_id(h))
                tools = self._tools_for(h)
                state = engine.new_state(
                    text,
                    tools,
                    engine.cfg.dialect.render_tools(tools),
                    history=history,
                    cancel=h.cancel,
                )
                result = await self._drive(h, engine, state, guard, resumed=None)
                if result.status == "pending" and history is None:
                    # The rewind rule: while parked the store holds the pre-turn transcript
                    # (the halted turn lives in the checkpoint) — for a first turn, none yet.
                    await self._conversations.save(self._conv_id(h), [])
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            result = TaskResult(text=f"{type(exc).__name__}: {exc}", status="error", is_error=True)
        await self._settle(h, result)

    async def _settle(self, h: Handle, result: TaskResult) -> None:
        h.task = None
        if h.state == "closed":
            return
        stamp_totals(h, result)
        result.runtime = self
        h.result = result
        # Durable first, visible second: the rows (and, for a question, the pending index) are
        # written before the state changes, so whoever sees the new state — `wait` returns at
        # once for a settled handle — finds it in the store too. The tree is written before
        # the index: a request that can be answered always has a durable suspended handle
        # (`restore` indexes one whose process died between the two).
        if result.status == "pending":
            await self._persist(h, as_state="suspended")
            await self._index(h)
            self._move(h, "suspended", self._suspension_why(h, result))
        elif h.state == "running":
            await self._persist(h, as_state="idle")
            self._move(h, "idle", _settled_why(h, result))
        else:
            await self._persist(h)
        self._notify(h, result)
        if h.state != "running":
            self._release_slot(h)

    def _suspension_why(self, h: Handle, result: TaskResult) -> str:
        request = result.pending
        kind = request.kind if request is not None else ""
        inline = any(self.registry[a.agent].wait_for for a in h.ancestors()[1:-1])
        if inline:
            return f'pending "{kind}": {request.prompt if request is not None else ""}'
        return f'DURABLE (pending "{kind}", path preserved)'

    async def _index(self, top: Handle) -> None:
        """Put a durable suspension in the run store's pending index (the approvals inbox).

        Called when a handle settles ``pending``; it acts once the whole chain is suspended —
        when ``top`` is a top-level handle — so every request that can be answered has its
        whole chain persisted suspended. The handle whose own call asked is indexed (its
        parents relay the same request through ``task``), and only when no ``wait_for`` up the
        chain will answer it inline.
        """
        if top.parent is not self.root or top.pending is None:
            return
        h = _asker(top, top.pending.id)
        if h.checkpoint is None or h.pending is None:
            return
        checkpoint = h.checkpoint
        name, _ = halted_call(checkpoint)
        if name == "task" or any(self.registry[a.agent].wait_for for a in h.ancestors()[1:-1]):
            return
        indexed = Checkpoint.loads(checkpoint.dumps())
        indexed.conversation_id = h.id
        indexed.queue = self.queue
        await self._runs.save_halt(indexed)

    def _notify(self, h: Handle, result: TaskResult) -> None:
        waiters, h.waiters = h.waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(result)

    # -- wait / interrupt / close -------------------------------------------------------------

    async def wait(
        self, h: Handle, timeout_ms: float | None = None, *, waiter: Handle | None = None
    ) -> TaskResult:
        """The next result of ``h`` — or, when it is settled, its last one right away.

        Only the spawner may wait: the host (``waiter=None``) for the handles it spawned,
        wherever they sit in the tree, an agent for the children its ``task`` calls spawned.
        """
        allowed = h.parent is waiter if waiter is not None else h.parent is self.root or h.by_host
        if not allowed:
            return TaskResult(
                text=f"only the spawner ({h.parent.id if h.parent else '-'}) may wait on {h.id}",
                status="error",
                is_error=True,
                runtime=self,
            )
        if h.state == "suspended" and h.result is not None:
            return h.result
        if h.state == "closed":
            return h.result or TaskResult(text=f"{h.id} is closed", status="closed", runtime=self)
        if h.state == "idle" and h.result is not None and not h.queued:
            return h.result
        future: asyncio.Future[TaskResult] = asyncio.get_running_loop().create_future()
        h.waiters.append(future)
        if timeout_ms is None:
            return await future
        sleeper = asyncio.ensure_future(self.clock.sleep(timeout_ms / 1000))
        done, _ = await asyncio.wait({future, sleeper}, return_when=asyncio.FIRST_COMPLETED)
        if future in done:
            sleeper.cancel()
            return future.result()
        if future in h.waiters:
            h.waiters.remove(future)
        future.cancel()
        result = TaskResult(
            text=f"wait timeout after {timeout_ms:g}ms (child still {h.state})",
            status="timeout",
            is_error=True,
            limit="timeout",
            runtime=self,
        )
        stamp_totals(h, result)
        return result

    # -- views --------------------------------------------------------------------------------

    def inspect(self, h: Handle) -> HandleView:
        """A read-only view of ``h``."""
        return HandleView(
            id=h.id,
            agent=h.agent,
            state=h.state,
            tokens=h.tokens,
            turns=h.turns,
            inbox=len(h.inbox),
            pending_kind=h.pending.kind
            if h.pending is not None and h.state == "suspended"
            else None,
            pending=h.pending if h.state == "suspended" else None,
            children=tuple(c.id for c in h.children),
        )

    def list(self, h: Handle | None = None) -> list[HandleView]:
        """Views of every handle below ``h`` (default: the whole tree), closed ones included."""
        start = h or self.root
        out: list[HandleView] = []

        def walk(node: Handle) -> None:
            for c in node.children:
                out.append(self.inspect(c))
                walk(c)

        walk(start)
        return out

    def state_of(self, h: Handle) -> HandleState:
        return h.state

    # -- conveniences -------------------------------------------------------------------------

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

    async def aclose(self) -> None:
        """Release the process's resources: abort in-flight turns, close the HTTP sessions.

        The tree itself is left as it is in the store — suspended handles stay suspended, so a
        later process can `restore` and `resume` them. Use ``close(rt.root)`` to stop the
        tree for good.
        """
        running = [h.task for h in self._handles.values() if h.task is not None]
        for task in running:
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        await self._engines.aclose()
        closer = getattr(self._backend, "aclose", None)
        if self._owns_store and closer is not None:
            await closer()

    async def __aenter__(self) -> AgentRuntime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _settled_why(h: Handle, result: TaskResult) -> str:
    """The package's reason for a running→idle move."""
    if result.status == "done":
        return f"done, turns={h.turns}, tokens={h.tokens}"
    if result.status == "incomplete":
        if result.limit == "maxTurns":
            return f"INCOMPLETE at maxTurns {max_turns_of(h.budget)}"
        return f"INCOMPLETE at {result.limit}"
    return f"{result.status}: {result.text}"


def _asker(top: Handle, request_id: str) -> Handle:
    """The handle under ``top`` (or ``top`` itself) whose own call asked ``request_id``: the
    deepest one waiting on it (its parents relay it through ``task``)."""
    for child in top.children:
        pending = child.pending
        if child.state == "suspended" and pending is not None and pending.id == request_id:
            return _asker(child, request_id)
    return top


def _spawn_order(row: dict[str, Any]) -> int:
    """The per-parent counter at the end of a handle id (``root/a.3`` ⇒ 3)."""
    tail = str(row.get("id", "")).rsplit(".", 1)[-1]
    return int(tail) if tail.isdigit() else 0


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
