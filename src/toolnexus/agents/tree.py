"""`Tree`: the handles of one runtime, their states and legal moves, their rows and waiters.

The tree owns what every other part of the runtime reads or changes about a handle: where it
sits (spawn, lookup, views), which state it is in (`Tree.move`, the only way to change it, and
the trace line each move writes), who waits for its result (`Tree.wait`, `Tree.notify`), its
stored row (`Tree.persist`, in call order) and, once a whole chain is suspended, its question
in the run store's pending index (`Tree.index`). It starts no turn: that is
`toolnexus.agents.scheduling.TurnScheduler`'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from ..errors import UsageError
from ..loop.checkpoint import Checkpoint
from ..stores.runs import RunStore, halted_call
from .budget import carve, exhausted, max_depth_of
from .clock import Clock
from .handle import ROOT_ID, Handle
from .persistence import NullRuntimeStore, RuntimeStore, rebuild
from .types import (
    AgentDef,
    Budget,
    HandleState,
    HandleView,
    InboxItem,
    PostResult,
    SpawnError,
    TaskResult,
)

__all__ = ["Tree", "stamp_totals"]

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


class Tree:
    """The handles under one synthetic root (see the module docstring).

    Args:
        registry: the agent definitions, by name.
        clock: the runtime's clock (budgets' wall time, wait timeouts).
        runtime_id: the tree's name in the stores.
        inbox_cap: the items a handle's inbox holds.
        budget: the root's budget, a pool the whole tree shares.
        rows: where the handle rows live (a `NullRuntimeStore` keeps none).
        runs: the run store whose pending index lists the tree's durable questions.
        own: marks a result as the runtime's (``TaskResult.runtime``).
    """

    def __init__(
        self,
        *,
        registry: dict[str, AgentDef],
        clock: Clock,
        runtime_id: str,
        inbox_cap: int,
        budget: Budget,
        rows: RuntimeStore,
        runs: RunStore,
        own: Callable[[TaskResult], None],
    ) -> None:
        self.registry = registry
        self.clock = clock
        self.runtime_id = runtime_id
        self.inbox_cap = inbox_cap
        self.trace: list[str] = []
        self.root = Handle(ROOT_ID, "root", None, budget)
        self.background: set[asyncio.Task[None]] = set()
        self._handles: dict[str, Handle] = {ROOT_ID: self.root}
        self._rows = rows
        self._runs = runs
        self._own = own
        self._persisting = not isinstance(rows, NullRuntimeStore)
        self._saving: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        """Handle rows are written one save at a time, in the order `persist` was called
        (the lock of the loop this runtime runs on; see `_save_lock`)."""

    # -- lookup -------------------------------------------------------------------------------

    @property
    def queue(self) -> str:
        """The run-store queue this tree's halted requests wait in (``agents/<runtime id>``)."""
        return f"agents/{self.runtime_id}"

    def handle(self, handle_id: str) -> Handle | None:
        """The handle with ``handle_id`` (closed ones included), or ``None``."""
        return self._handles.get(handle_id)

    def handles(self) -> list[Handle]:
        """Every handle, the root first."""
        return list(self._handles.values())

    def defn(self, h: Handle) -> AgentDef:
        """``h``'s agent definition."""
        return self.registry[h.agent]

    def conv_id(self, h: Handle) -> str:
        """``h``'s conversation id (its id, prefixed by the runtime id when not default)."""
        return h.id if self.runtime_id == "default" else f"{self.runtime_id}:{h.id}"

    def keep(self, job: Coroutine[Any, Any, None]) -> None:
        """Run ``job`` in the background; `AgentRuntime.aclose` waits for it."""
        task = asyncio.get_running_loop().create_task(job)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    # -- states -------------------------------------------------------------------------------

    def move(self, h: Handle, to: HandleState, why: str | None = None) -> None:
        """Change ``h``'s state; the trace line is ``<id>: <from>→<to>`` and the reason in
        parentheses (a reason starting with a word and `` (`` tags the move, as ``DURABLE``).

        Raises:
            UsageError: the move is not one of the legal ones.
        """
        if (h.state, to) not in _ALLOWED:
            raise UsageError(f"illegal transition {h.state}→{to} for {h.id}")
        line = f"{h.id}: {h.state}→{to}"
        if why:
            line += f" {why}" if why.startswith("DURABLE ") else f" ({why})"
        self.trace.append(line)
        h.state = to

    def stamp(self, h: Handle, result: TaskResult) -> TaskResult:
        """``result`` with ``h``'s lifetime totals, as the runtime's."""
        stamp_totals(h, result)
        self._own(result)
        return result

    # -- spawn and post -----------------------------------------------------------------------

    def spawn(
        self, parent: Handle, def_name: str, budget: Budget | None = None
    ) -> Handle | SpawnError:
        """A new idle child of ``parent`` (never raises: a refusal is a `SpawnError`); its row
        is saved in the background."""
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
        self.persist_soon(child, parent)
        return child

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

    # -- waiters ------------------------------------------------------------------------------

    async def wait(
        self, h: Handle, timeout_ms: float | None = None, *, waiter: Handle | None = None
    ) -> TaskResult:
        """The next result of ``h`` — or, when it is settled, its last one right away.

        Only the spawner may wait: the host (``waiter=None``) for the handles it spawned,
        wherever they sit in the tree, an agent for the children its ``task`` calls spawned.
        """
        allowed = h.parent is waiter if waiter is not None else h.parent is self.root or h.by_host
        if not allowed:
            spawner = h.parent.id if h.parent else "-"
            refused = TaskResult(
                text=f"only the spawner ({spawner}) may wait on {h.id}",
                status="error",
                is_error=True,
            )
            self._own(refused)
            return refused
        if h.state == "suspended" and h.result is not None:
            return h.result
        if h.state == "closed":
            if h.result is not None:
                return h.result
            closed = TaskResult(text=f"{h.id} is closed", status="closed")
            self._own(closed)
            return closed
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
        )
        return self.stamp(h, result)

    def notify(self, h: Handle, result: TaskResult) -> None:
        """Hand ``result`` to everyone waiting on ``h``."""
        waiters, h.waiters = h.waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(result)

    # -- rows ---------------------------------------------------------------------------------

    async def persist(self, *handles: Handle, as_state: HandleState | None = None) -> None:
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
            await self._rows.save_handles(self.runtime_id, rows)

    def persist_soon(self, *handles: Handle) -> None:
        """`persist` in the background (from synchronous code; nothing without a loop)."""
        if not self._persisting:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self.keep(self.persist(*handles))

    def _save_lock(self) -> asyncio.Lock:
        """The lock that orders handle saves, made for the running loop (a runtime may outlive
        the loop it was first used on; an asyncio lock may not)."""
        loop = asyncio.get_running_loop()
        if self._saving is None or self._saving[0] is not loop:
            self._saving = (loop, asyncio.Lock())
        return self._saving[1]

    async def restore(self) -> None:
        """Rebuild the tree from its stored rows (a fresh process), then index every question
        of it the run store lost.

        Raises:
            UsageError: the stored tree names an agent the registry lacks.
        """
        rows = await self._rows.load_handles(self.runtime_id)
        if not rows:
            return
        missing = sorted(
            {str(r.get("agent")) for r in rows if r.get("id") != ROOT_ID} - set(self.registry)
        )
        if missing:
            raise UsageError(
                f"cannot restore runtime {self.runtime_id!r}: the registry lacks agent(s) "
                f"{', '.join(missing)} present in the stored tree"
            )
        for h in rebuild(self.root, rows):
            self._handles[h.id] = h
        await self._reindex()

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
                await self.index(top)

    # -- the pending index --------------------------------------------------------------------

    def answered_inline(self, h: Handle) -> bool:
        """Whether a ``wait_for`` between ``h`` and the root answers ``h``'s questions."""
        return any(self.registry[a.agent].wait_for for a in h.ancestors()[1:-1])

    async def index(self, top: Handle) -> None:
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
        if name == "task" or self.answered_inline(h):
            return
        indexed = Checkpoint.loads(checkpoint.dumps())
        indexed.conversation_id = h.id
        indexed.queue = self.queue
        await self._runs.save_halt(indexed)

    # -- views --------------------------------------------------------------------------------

    def inspect(self, h: Handle) -> HandleView:
        """A read-only view of ``h``."""
        suspended = h.state == "suspended"
        return HandleView(
            id=h.id,
            agent=h.agent,
            state=h.state,
            tokens=h.tokens,
            turns=h.turns,
            inbox=len(h.inbox),
            pending_kind=h.pending.kind if h.pending is not None and suspended else None,
            pending=h.pending if suspended else None,
            children=tuple(c.id for c in h.children),
        )

    def list(self, h: Handle | None = None) -> list[HandleView]:
        """Views of every handle below ``h`` (default: the whole tree), closed ones included."""
        out: list[HandleView] = []

        def walk(node: Handle) -> None:
            for c in node.children:
                out.append(self.inspect(c))
                walk(c)

        walk(h or self.root)
        return out


def stamp_totals(h: Handle, result: TaskResult) -> None:
    """Every result carries the handle's lifetime totals: its turns, its subtree's tokens
    (cumulative, never shrinking) and its own; an incomplete one always names its limit."""
    result.turns = h.turns
    result.total_tokens = h.tokens
    result.own_tokens = h.own_tokens
    if result.status == "incomplete" and result.limit is None:
        result.limit = "maxTurns"


def _asker(top: Handle, request_id: str) -> Handle:
    """The handle under ``top`` (or ``top`` itself) whose own call asked ``request_id``: the
    deepest one waiting on it (its parents relay it through ``task``)."""
    for child in top.children:
        pending = child.pending
        if child.state == "suspended" and pending is not None and pending.id == request_id:
            return _asker(child, request_id)
    return top
