"""What moves while a page is open: live events for the pages, notifications for new requests.

One `Watcher` per inbox app polls the store every ``poll_interval`` seconds, only while
someone listens (a page's event stream) or notifications are configured:

- **events**: requests that arrived (`InboxIndex.search_pending` over the last minutes) and
  requests that were answered, cancelled or expired (`InboxIndex.list_history` since the last
  look) — by this process or any other — become ``arrived`` / ``resolved`` events, then a
  ``counts`` event, fanned out to every subscriber's queue;
- **notifications**: `InboxIndex.take_unannounced` hands out each new pending request once,
  across every process sharing the store; the watcher calls ``on_request(entry)`` and posts a
  small JSON document to the webhook. A failing hook or webhook is logged, never retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..stores.inbox_index import InboxIndex
from ..stores.requests import PendingEntry

__all__ = ["Event", "Watcher", "request_document"]

log = logging.getLogger("toolnexus.inbox")

ARRIVAL_WINDOW_S = 600.0
"""How far back (by ``created_at``) a poll looks for arrivals: a request saved later than it
was created (a slow halting process, skewed clocks) still shows within this window."""


@dataclass(frozen=True, slots=True)
class Event:
    """One server-sent event: its name and its JSON data."""

    name: str
    data: dict[str, Any]

    def encoded(self) -> str:
        return json.dumps(self.data, separators=(",", ":"), ensure_ascii=False)


OnRequest = Callable[[PendingEntry], Awaitable[None] | None]


def request_document(entry: PendingEntry, url: str | None) -> dict[str, Any]:
    """The JSON document a webhook receives for a new request."""
    return {
        "event": "request",
        "id": entry.request_id,
        "kind": entry.kind,
        "tool": entry.tool,
        "prompt": entry.prompt,
        "conversation_id": entry.conversation_id,
        "created_at": entry.created_at,
        "expires_at": entry.expires_at,
        "url": url,
    }


@dataclass(slots=True)
class Watcher:
    """Polls the store for the pages' live events and the notifications."""

    index: InboxIndex
    poll_interval: float = 1.0
    on_request: OnRequest | None = None
    webhook: str | None = None
    link: Callable[[str], str | None] = field(default=lambda _id: None)
    _subscribers: set[asyncio.Queue[Event]] = field(default_factory=lambda: set())
    _task: asyncio.Task[None] | None = None
    _wake: asyncio.Event = field(default_factory=asyncio.Event)
    _seen: set[str] = field(default_factory=lambda: set())
    _resolved_after: float = 0.0
    _primed: bool = False
    _ready: asyncio.Event = field(default_factory=asyncio.Event)
    _closed: bool = False
    polls: int = 0
    """How many polls ran (for tests and the bench)."""

    @property
    def notifying(self) -> bool:
        return self.on_request is not None or self.webhook is not None

    def subscribe(self) -> asyncio.Queue[Event]:
        """A queue of events for one listener; start polling if nobody did."""
        queue: asyncio.Queue[Event] = asyncio.Queue(maxsize=256)
        self._subscribers.add(queue)
        self.ensure_running()
        return queue

    def unsubscribe(self, queue: asyncio.Queue[Event]) -> None:
        self._subscribers.discard(queue)
        if not self._subscribers:
            self._primed = False  # the next listener starts from what is there then
            self._ready.clear()

    async def primed(self, timeout: float = 10.0) -> None:
        """Wait until the watcher has taken its first look for the current listeners: from then
        on every arrival and every answer is an event, so a listener that waits for this
        before it says hello misses none (one that arrives between subscribing and that
        first look would otherwise be taken as already there). Gives up after ``timeout``
        (a store that does not answer): the stream then starts without the guarantee."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._ready.wait()

    def ensure_running(self) -> None:
        """Start the poll loop (idempotent); it stops by itself when nothing needs it."""
        if self._closed:
            return
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def poke(self) -> None:
        """Poll now (an answer was just recorded through this inbox)."""
        self._wake.set()

    async def aclose(self) -> None:
        """Stop polling. The loop also checks a flag: a store driver may swallow the cancel
        of a query in flight (psycopg's pool can), and the loop must not go on after it."""
        self._closed = True
        self._wake.set()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while not self._closed and (self._subscribers or self.notifying):
            try:
                await self.poll_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                if self._closed:
                    return
                log.exception("toolnexus inbox: polling the store failed")
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll_interval):
                    await self._wake.wait()

    async def poll_once(self) -> None:
        """One look at the store: events to the subscribers, notifications for new requests."""
        self.polls += 1
        if self.notifying:
            for entry in await self.index.take_unannounced(limit=100):
                await self._announce(entry)
        if not self._subscribers and self._primed:
            return
        events: list[Event] = []
        now = time.time()
        arrived = await self.index.search_pending(newer_than=ARRIVAL_WINDOW_S, limit=500)
        resolved = await self.index.list_history(
            answered_after=self._resolved_after or now - 5.0, limit=200
        )
        if self._primed:
            for e in arrived:
                if e.request_id not in self._seen:
                    events.append(
                        Event(
                            "arrived",
                            {
                                "id": e.request_id,
                                "kind": e.kind,
                                "tool": e.tool,
                                "prompt": e.prompt[:200],
                            },
                        )
                    )
            for h in resolved:
                events.append(
                    Event(
                        "resolved",
                        {
                            "id": h.request_id,
                            "status": h.status,
                            "answered_by": h.answered_by,
                            "answered_at": h.answered_at,
                        },
                    )
                )
        self._seen = {e.request_id for e in arrived}
        if resolved:
            self._resolved_after = max(h.answered_at for h in resolved)
        elif not self._primed:
            self._resolved_after = now - 5.0
        self._primed = True
        self._ready.set()
        if events:
            events.append(Event("counts", await self.index.count_pending()))
        for event in events:
            for queue in list(self._subscribers):
                with contextlib.suppress(asyncio.QueueFull):
                    queue.put_nowait(event)

    async def _announce(self, entry: PendingEntry) -> None:
        if self.on_request is not None:
            try:
                outcome = self.on_request(entry)
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                log.exception("toolnexus inbox: on_request failed for %s", entry.request_id)
        if self.webhook is not None:
            await _post_webhook(self.webhook, request_document(entry, self.link(entry.request_id)))


async def _post_webhook(url: str, document: dict[str, Any]) -> None:
    import aiohttp

    try:
        timeout = aiohttp.ClientTimeout(total=10)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(url, json=document) as response,
        ):
            if response.status >= 400:
                log.warning(
                    "toolnexus inbox: the webhook answered %s for %s",
                    response.status,
                    document.get("id"),
                )
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        log.warning("toolnexus inbox: the webhook failed for %s: %s", document.get("id"), exc)
