"""A legacy ``elicitation/create`` that halts the run: the call waits in the live session.

With ``"elicitation": "halt"`` in a server's config and no ``wait_for``, the client advertises
the elicitation capability, and a question the server asks mid-call (the 2025 back channel)
halts the run instead of failing the call::

    tool executes      tools/call sent as a task of its own; its *slot* is open
    server asks        elicitation/create → the slot gets the Request; the tool returns
                       ``pending`` (``data.mcp = {server, tool, held: <request id>}``);
                       the call and the server's question stay open in the session
    run resumes        the tool is re-executed with ``ctx.answer``: the held call is found,
                       the answer is sent back as the ElicitResult, and the call's result
                       (or the next question) is awaited

The halt is durable like any other — the checkpoint keeps the Request — but the MCP side of
it lives in the session: a resume in another process, or after the connection dropped,
finds no held call and gets an error result saying so (the server never got the answer; the
call did not finish). Which call a question belongs to is told by the session only when one
call of that server is in flight; with several at once the question is cancelled (logged).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ..suspension import Request

if TYPE_CHECKING:
    from mcp_types import ElicitResult

__all__ = ["HeldCalls", "Slot"]

log = logging.getLogger("toolnexus")

T = TypeVar("T")


@dataclass(slots=True, eq=False)
class Slot:
    """One in-flight call that may be asked: the question it gets, the reply it sends."""

    asked: asyncio.Future[Request] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    reply: asyncio.Future[ElicitResult] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


@dataclass(slots=True, eq=False)
class Held:
    """A call halted on a question: its task, and the slot the answer goes to."""

    task: asyncio.Future[Any]
    slot: Slot


class Halted(Exception):
    """A call was asked a question: the tool returns ``pending`` for ``request``."""

    def __init__(self, request: Request) -> None:
        super().__init__(request.prompt)
        self.request = request


class HeldCalls:
    """A server link's open slots and held calls (one event loop; no locks needed)."""

    def __init__(self) -> None:
        self._open: list[Slot] = []
        self._held: dict[str, Held] = {}

    def open(self) -> Slot:
        slot = Slot()
        self._open.append(slot)
        return slot

    def _close(self, slot: Slot) -> None:
        if slot in self._open:
            self._open.remove(slot)

    async def run(self, start: Callable[[], Awaitable[T]]) -> T:
        """Run a call; its result, or `Halted` when the server asks first (the call is then
        held, still running, until `take` finds it)."""
        slot = self.open()
        task = asyncio.ensure_future(start())
        return await self.follow(task, slot)

    async def follow(self, task: asyncio.Future[T], slot: Slot) -> T:
        """Wait for ``task`` or a question on ``slot``, whichever comes first."""
        try:
            await asyncio.wait((task, slot.asked), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            self._close(slot)
            task.cancel()
            raise
        if not slot.asked.done():
            self._close(slot)
            slot.asked.cancel()
            return task.result()
        request = slot.asked.result()
        self._held[request.id] = Held(task, slot)
        raise Halted(request)

    def take(self, request_id: str) -> Held | None:
        """The call held on ``request_id`` (removed), or ``None``."""
        return self._held.pop(request_id, None)

    async def ask(self, request: Request) -> ElicitResult:
        """The session's side: give ``request`` to the one open slot, then wait for its
        reply. With no open slot, or several (the session does not say which call asks),
        the question is cancelled."""
        from mcp_types import ElicitResult

        waiting = [s for s in self._open if not s.asked.done()]
        if len(waiting) != 1:
            log.warning(
                "toolnexus: an MCP elicitation arrived with %d calls that could have asked; "
                "cancelled it (only one call of a server may halt on a question at a time)",
                len(waiting),
            )
            return ElicitResult(action="cancel")
        slot = waiting[0]
        self._close(slot)
        slot.asked.set_result(request)
        return await slot.reply

    def drop_all(self) -> None:
        """The session is gone: forget every held call (their resumes get the error)."""
        for held in self._held.values():
            held.task.cancel()
            if not held.slot.reply.done():
                held.slot.reply.cancel()
        self._held.clear()
        self._open.clear()
