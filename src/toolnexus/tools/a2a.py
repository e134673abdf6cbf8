"""Remote A2A agents as tools (CONTRACT §7A): one `Tool` per skill of the agent's card.

::

    helper = agent("https://helper.example/.well-known/agent-card.json", headers={...})
    toolkit = await create_toolkit(agents=[helper])         # or: await toolkit.add_agent(url)

Resolve: ``GET`` the card (headers expanded from ``${ENV}``, never logged). Each skill becomes
``<sanitize(card.name)>_<sanitize(skill.id)>`` taking ``{task: string}``. A call submits the
task and follows it to a terminal state — over SSE when the card advertises streaming, else by
polling ``GetTask`` every ``poll_every`` ms — within ``timeout`` ms (default 300000). The wire
is A2A 1.0 when the card lists a 1.x JSON-RPC interface, with a fallback to the reference wire
and the 0.3 names when the server says so (`toolnexus.tools.a2a_wire`).

Results: completed ⇒ the text parts of the artifacts, joined by ``\\n`` (else the last agent
message); failed / canceled / rejected ⇒ ``A2A task <id> <state>[: <message>]`` as an error;
the budget spent ⇒ ``A2A task <id> timed out after <ms>ms (state=<state>)``. ``metadata`` is
always ``{agent, taskId, state, polls, ms}``.

**Cancelling the run cancels the remote task.** When the run's ``ctx.signal`` is set, the request
in flight (submit, poll or stream) is torn down at once, ``CancelTask`` is sent for a task the
remote has started and not finished, and the result is ``A2A task <id> canceled`` (state
``canceled``; the id is empty when the submit itself was cut short). When the call's own task is
cancelled (an agent interrupted or closed, a host cancelling the run's task), the remote task is
cancelled on the way out and the cancellation goes on.

**A remote agent that asks back.** A task that turns ``input-required`` (``auth-required``)
becomes our own `Request` (kind ``input`` / ``authorization``; the prompt from its status
message, ``data.schema`` when the remote sent a toolnexus Request, and ``data.a2a`` with the
remote task and context ids). It is answered like any suspension: inline by the client's
``wait_for`` — the tool is re-executed with ``ctx.answer``, sends the follow-up (``taskId`` +
``contextId``) and follows the task on — or durably: the run halts, the checkpoint keeps the
Request with the remote ids, and resuming with the Answer (in any process) sends the follow-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

from .._env import expand_env_headers
from .._types import Tool, ToolContext, ToolResult, sanitize
from ..errors import RunCancelled
from ..llm.abort import run_abortable
from ..suspend import pending
from ..suspension import Answer
from .a2a_wire import HttpFailure, Link, RemoteError, Wire

__all__ = [
    "DEFAULT_POLL_EVERY",
    "DEFAULT_POLL_MS",
    "DEFAULT_TIMEOUT",
    "DEFAULT_TIMEOUT_MS",
    "TERMINAL",
    "A2AAgent",
    "A2ATask",
    "Agent",
    "AgentConfig",
    "AgentsConfig",
    "agent",
    "agent_tools",
    "is_enabled",
    "load_agents",
    "parse_agents_config",
]

log = logging.getLogger("toolnexus")
T = TypeVar("T")

DEFAULT_TIMEOUT_MS = 300000
DEFAULT_POLL_MS = 1000
DEFAULT_TIMEOUT = DEFAULT_TIMEOUT_MS
"""The reference's name: a call's budget, in milliseconds."""
DEFAULT_POLL_EVERY = DEFAULT_POLL_MS
"""The reference's name: the polling interval, in milliseconds."""
TERMINAL = frozenset({"completed", "failed", "canceled", "rejected"})
CANCEL_TIMEOUT_S = 5.0
"""How long the ``CancelTask`` sent for a cancelled call may take (it is cleanup)."""

AgentConfig = dict[str, Any]
"""One entry of the ``agents`` config block: ``{card, headers?, timeout?, pollEvery?,
enabled?/disabled?}``."""
AgentsConfig = dict[str, AgentConfig]
"""The ``agents`` config block: ``{"<id>": AgentConfig}`` (the id is only a label)."""
A2ATask = dict[str, Any]
"""A remote task as read from the wire (``{id, contextId?, status: {state, message?},
artifacts?}``)."""
WAITING = frozenset({"input-required", "auth-required"})
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {
            "type": "string",
            "description": "The task to send to the agent, in natural language.",
        }
    },
    "required": ["task"],
    "additionalProperties": False,
}


@dataclass(slots=True)
class A2AAgent:
    """A remote A2A agent: its card URL and how to call it (``timeout`` / ``poll_every`` in
    milliseconds; defaults 300000 and 1000)."""

    card: str
    headers: Mapping[str, str] | None = None
    timeout: float | None = None
    poll_every: float | None = None
    extra: dict[str, Any] = field(default_factory=lambda: {})


Agent = A2AAgent
"""The reference's name for `A2AAgent` (``toolnexus.Agent(card, headers, timeout, poll_every)``)."""


def agent(
    card: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
    poll_every: float | None = None,
) -> A2AAgent:
    """A remote A2A agent for ``create_toolkit(agents=[...])`` / ``toolkit.add_agent``.

    ``card`` is the agent card's URL (a bare base URL gets ``/.well-known/agent-card.json``).
    """
    return A2AAgent(card, headers=headers, timeout=timeout, poll_every=poll_every)


def _card_url(card: str) -> str:
    if card.endswith(".json"):
        return card
    return card.rstrip("/") + "/.well-known/agent-card.json"


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


async def _fetch_card(remote: A2AAgent, headers: dict[str, str]) -> dict[str, Any]:
    import aiohttp

    from .http import _pooled_session  # pyright: ignore[reportPrivateUsage]

    url = _card_url(remote.card)
    seconds = (remote.timeout or DEFAULT_TIMEOUT_MS) / 1000
    session = await _pooled_session()
    async with session.get(
        url, headers=headers, timeout=aiohttp.ClientTimeout(total=seconds)
    ) as response:
        text = await response.text()
        if not 200 <= response.status < 300:
            raise RuntimeError(f"HTTP {response.status}: {text[:500]}")
    try:
        card: Any = json.loads(text)
    except ValueError:
        raise RuntimeError(f"the agent card at {url} is not JSON") from None
    if not isinstance(card, dict):
        raise RuntimeError(f"the agent card at {url} is not a JSON object")
    skills: Any = cast(dict[str, Any], card).get("skills")
    if not isinstance(skills, list):
        raise RuntimeError(f"the agent card at {url} lacks a skills list")
    return cast(dict[str, Any], card)


def _link_of(card: dict[str, Any], card_url: str, headers: dict[str, str], name: str) -> Link:
    interfaces: Any = card.get("supportedInterfaces")
    for raw in cast(list[Any], interfaces) if isinstance(interfaces, list) else []:
        i = cast(dict[str, Any], raw) if isinstance(raw, dict) else {}
        version = str(i.get("protocolVersion") or "")
        if i.get("protocolBinding", "JSONRPC") == "JSONRPC" and version.split(".")[0] == "1":
            url = str(i.get("url") or "") or _origin(card_url) + "/"
            return Link(url, ["1.0", "ref", "0.3"], headers, name)
    url = card.get("url")
    endpoint = url if isinstance(url, str) and url else _origin(card_url) + "/"
    wires: list[Wire] = ["ref", "0.3"]
    return Link(endpoint, wires, headers, name)


async def agent_tools(remote: A2AAgent) -> list[Tool]:
    """Resolve ``remote``'s card and build one tool per skill.

    Raises:
        RuntimeError: the card could not be fetched (``HTTP <code>: <body>``), is not JSON, or
            lacks a skills list.
    """
    headers = expand_env_headers(dict(remote.headers or {}))
    card = await _fetch_card(remote, headers)
    name = str(card.get("name") or "agent")
    link = _link_of(card, _card_url(remote.card), headers, name)
    capabilities: Any = card.get("capabilities")
    streaming = isinstance(capabilities, dict) and (
        cast(dict[str, Any], capabilities).get("streaming") is True
    )
    tools: list[Tool] = []
    for raw in cast(list[Any], card["skills"]):
        if not isinstance(raw, dict):
            continue
        skill = cast(dict[str, Any], raw)
        sid = str(skill.get("id") or skill.get("name") or "")
        if not sid:
            continue
        description = str(skill.get("description") or skill.get("name") or sid)
        caller = _Caller(remote, link, name, streaming)
        tools.append(
            Tool(
                name=f"{sanitize(name)}_{sanitize(sid)}",
                description=description,
                input_schema=INPUT_SCHEMA,
                source="a2a",
                execute=caller.execute,
                handles_declines=True,
            )
        )
    return tools


def parse_agents_config(block: Any) -> list[A2AAgent]:
    """The ``agents`` config block ``{"<id>": {card, headers?, timeout?, pollEvery?,
    enabled?/disabled?}}`` as agents: falsy entries, entries without a string ``card`` and
    disabled ones are skipped (``disabled: true`` beats ``enabled``)."""
    out: list[A2AAgent] = []
    if not isinstance(block, Mapping):
        return out
    for entry in cast(Mapping[str, Any], block).values():
        if not entry or not isinstance(entry, Mapping):
            continue
        e = cast(Mapping[str, Any], entry)
        if not isinstance(e.get("card"), str) or not is_enabled(e):
            continue
        out.append(
            A2AAgent(
                e["card"],
                headers=e.get("headers"),
                timeout=e.get("timeout"),
                poll_every=e.get("pollEvery", e.get("poll_every")),
            )
        )
    return out


def is_enabled(entry: Mapping[str, Any]) -> bool:
    """Whether an ``agents`` entry is on: ``disabled: true`` beats ``enabled``, and an entry
    is on unless ``enabled`` is ``false``."""
    if entry.get("disabled") is True:
        return False
    return entry.get("enabled") is not False


async def load_agents(agents: Iterable[A2AAgent | str]) -> list[Tool]:
    """Resolve every agent concurrently; one that fails is logged and adds no tools."""
    remotes = [a if isinstance(a, A2AAgent) else agent(a) for a in agents]
    found = await asyncio.gather(*(agent_tools(r) for r in remotes), return_exceptions=True)
    tools: list[Tool] = []
    for remote, result in zip(remotes, found, strict=True):
        if isinstance(result, BaseException):
            if not isinstance(result, Exception):
                raise result
            line = f'A2A agent "{remote.card}" failed: {result}'
            log.warning("toolnexus: %s", line)
            print(f"[toolnexus] {line}", file=sys.stderr)
            continue
        tools.extend(result)
    return tools


class _Caller:
    """One skill's tool: submit, follow, map (see the module docs)."""

    __slots__ = ("link", "name", "remote", "streaming")

    def __init__(self, remote: A2AAgent, link: Link, name: str, streaming: bool) -> None:
        self.remote = remote
        self.link = link
        self.name = name
        self.streaming = streaming

    async def execute(self, args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        budget_ms = float(self.remote.timeout or DEFAULT_TIMEOUT_MS)
        if ctx is not None and ctx.timeout is not None:
            budget_ms = min(budget_ms, ctx.timeout * 1000)
        follow = _Follow(self, budget_ms, ctx.signal if ctx is not None else None)
        try:
            remote_ids = _remote_ids(ctx)
            answer = ctx.answer if ctx is not None else None
            if remote_ids is not None and answer is not None:
                parts = _answer_parts(answer)
                return await follow.run(
                    parts, remote_ids.get("taskId"), remote_ids.get("contextId")
                )
            return await follow.run(
                [{"kind": "text", "text": str(args.get("task", ""))}], None, None
            )
        except TimeoutError:
            return follow.timed_out()
        except RunCancelled:
            return await follow.canceled()
        except (RemoteError, HttpFailure) as exc:
            return ToolResult(str(exc), True, follow.metadata())
        except asyncio.CancelledError:
            await follow.abandon()
            raise
        except Exception as exc:
            return ToolResult(str(exc) or type(exc).__name__, True, follow.metadata())


def _remote_ids(ctx: ToolContext | None) -> dict[str, Any] | None:
    request = ctx.request if ctx is not None else None
    data: Any = (request.data or {}).get("a2a") if request is not None else None
    return cast(dict[str, Any], data) if isinstance(data, dict) else None


def _answer_parts(answer: Answer) -> list[dict[str, Any]]:
    data = answer.data or {}
    if answer.ok and set(data) == {"text"} and isinstance(data["text"], str):
        return [{"kind": "text", "text": data["text"]}]
    if answer.ok:
        summary = json.dumps(data, ensure_ascii=False) if data else "approved"
    else:
        summary = f"declined: {answer.reason or 'declined'}"
    wire = {k: v for k, v in answer.to_dict().items() if k != "id"}
    return [{"kind": "text", "text": summary}, {"kind": "data", "data": wire}]


def _texts(parts: Any) -> list[str]:
    return [
        str(p.get("text"))
        for p in cast(list[dict[str, Any]], parts or [])
        if p.get("kind") == "text" and isinstance(p.get("text"), str)
    ]


class _Follow:
    """Following one remote task to where it stops (terminal, or asking back)."""

    def __init__(self, caller: _Caller, budget_ms: float, signal: asyncio.Event | None) -> None:
        self.caller = caller
        self.budget_ms = budget_ms
        self.signal = signal
        self.started = time.perf_counter()
        self.task_id = ""
        self.context_id: str | None = None
        self.state = ""
        self.polls = 0
        self.artifacts: dict[str, list[str]] = {}
        self.known = asyncio.Event()
        """Set once the remote has named the task (a cancel needs its id)."""
        self.submit: asyncio.Future[Any] | None = None

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000

    def left_s(self) -> float:
        return max(0.0, (self.budget_ms - self.elapsed_ms()) / 1000)

    def aborted(self) -> bool:
        return self.signal is not None and self.signal.is_set()

    def metadata(self) -> dict[str, Any]:
        return {
            "agent": self.caller.name,
            "taskId": self.task_id,
            "state": self.state,
            "polls": self.polls,
            "ms": round(self.elapsed_ms(), 3),
        }

    def timed_out(self) -> ToolResult:
        text = (
            f"A2A task {self.task_id} timed out after {int(self.budget_ms)}ms (state={self.state})"
        )
        return ToolResult(text, True, self.metadata())

    def _take(self, task: dict[str, Any]) -> dict[str, Any]:
        self.task_id = str(task.get("id") or self.task_id)
        if self.task_id:
            self.known.set()
        context = task.get("contextId")
        if isinstance(context, str) and context:
            self.context_id = context
        self.state = str(cast(dict[str, Any], task.get("status") or {}).get("state") or "")
        return task

    async def run(
        self, parts: list[dict[str, Any]], task_id: str | None, context_id: str | None
    ) -> ToolResult:
        link = self.caller.link
        task: dict[str, Any] | None = None
        if self.aborted():
            raise RunCancelled("run cancelled")  # before anything is sent
        if self.caller.streaming:
            task = await self._submitting(self._stream(parts, task_id, context_id))
        if task is None and not self.task_id:
            left = self.left_s()
            sent = self._sent(
                link.send(parts, task_id=task_id, context_id=context_id, timeout=left), left
            )
            task = await self._submitting(sent)
        elif task is None:
            task = await self._get()
        while self.state not in TERMINAL and self.state not in WAITING:
            if self.aborted():
                return await self.canceled()
            if self.left_s() <= 0:
                return self.timed_out()
            await self._pause()
            if self.aborted():
                return await self.canceled()
            task = await self._get()
        return self._result(task)

    async def _sent(self, sending: Awaitable[dict[str, Any]], left: float) -> dict[str, Any]:
        return self._take(await asyncio.wait_for(sending, left))

    async def _submitting(self, work: Coroutine[Any, Any, T]) -> T:
        """``work`` submits the task (a send, or the whole stream). A cancel does not cut it
        off before the remote has named the task — `cleanup` waits for that (briefly) so the
        task can be cancelled too.

        Raises:
            RunCancelled: the run's signal was set first.
        """
        self.submit = submit = asyncio.ensure_future(work)

        async def shielded() -> T:
            return await asyncio.shield(submit)

        return await run_abortable(shielded(), cancel=self.signal, deadline=None)

    async def _request(self, call: Callable[[float | None], Awaitable[T]]) -> T:
        """``call(timeout)``, one request to the remote within what is left of the budget,
        torn down the moment the run is cancelled.

        Raises:
            RunCancelled: the run's signal was set first (or already: nothing is sent).
            TimeoutError: the budget ran out.
        """
        left = self.left_s() or None

        async def bounded() -> T:
            return await asyncio.wait_for(call(left), left)

        return await run_abortable(bounded(), cancel=self.signal, deadline=None)

    async def _get(self) -> dict[str, Any]:
        link = self.caller.link
        task = await self._request(lambda left: link.get(self.task_id, timeout=left))
        self.polls += 1
        return self._take(task)

    async def _pause(self) -> None:
        poll_s = float(self.caller.remote.poll_every or DEFAULT_POLL_MS) / 1000
        wait_s = min(poll_s, self.left_s())
        if self.signal is None:
            await asyncio.sleep(wait_s)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.signal.wait(), wait_s)

    async def _stream(
        self, parts: list[dict[str, Any]], task_id: str | None, context_id: str | None
    ) -> dict[str, Any] | None:
        """Follow the task over SSE; ``None`` when the stream ended before the task stopped
        (dropped connection, stream closed early): the caller polls from there."""
        import aiohttp

        link = self.caller.link
        task: dict[str, Any] = {}
        try:
            events = link.stream(
                parts, task_id=task_id, context_id=context_id, timeout=self.left_s()
            )
            # closed as soon as the task settles: the response (and its span) end then
            async with asyncio.timeout(self.left_s()), contextlib.aclosing(events):
                async for kind, event in events:
                    if kind == "task":
                        task = self._take(event)
                        for a in cast(list[dict[str, Any]], task.get("artifacts") or []):
                            self.artifacts[str(a.get("artifactId"))] = [
                                "".join(_texts(a.get("parts")))
                            ]
                    elif kind == "status-update":
                        status = cast(dict[str, Any], event.get("status") or {})
                        task_ref = task or {
                            "id": event.get("taskId"),
                            "contextId": event.get("contextId"),
                        }
                        task = self._take({**task_ref, "status": status})
                    else:
                        artifact = cast(dict[str, Any], event.get("artifact") or {})
                        aid = str(artifact.get("artifactId"))
                        if not event.get("append") or aid not in self.artifacts:
                            self.artifacts[aid] = []
                        self.artifacts[aid].append("".join(_texts(artifact.get("parts"))))
                    if self.state in TERMINAL or self.state in WAITING:
                        return task
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, ConnectionError):
            if not self.task_id:
                raise
            log.info("toolnexus: the stream of A2A task %s dropped; polling", self.task_id)
        return None

    async def canceled(self) -> ToolResult:
        """The run was cancelled: cancel the remote task too, then say so."""
        await self.cleanup()
        self.state = "canceled"
        return ToolResult(f"A2A task {self.task_id} canceled", True, self.metadata())

    async def abandon(self) -> None:
        """The call's own task is being cancelled: cancel the remote task on the way out."""
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(self.cleanup())

    async def cleanup(self) -> None:
        """Stop the submit if it still runs (once the remote has named the task, or after
        `CANCEL_TIMEOUT_S`), then ``CancelTask`` for a task that was started and has not
        finished (best effort: a remote that finished meanwhile, or cannot cancel, is only
        logged)."""
        submit, self.submit = self.submit, None
        if submit is not None and not submit.done():
            if not self.task_id:
                named = asyncio.ensure_future(self.known.wait())
                await asyncio.wait(
                    (submit, named), timeout=CANCEL_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED
                )
                named.cancel()
            submit.cancel()
            await asyncio.wait((submit,))
        if submit is not None and not submit.cancelled():
            submit.exception()  # retrieved: the call is being cancelled anyway
        if not self.task_id or self.state in TERMINAL:
            return
        link = self.caller.link
        try:
            cancel = link.cancel(self.task_id, timeout=CANCEL_TIMEOUT_S)
            self._take(await asyncio.wait_for(cancel, CANCEL_TIMEOUT_S))
        except Exception as exc:
            log.info("toolnexus: cancelling A2A task %s failed: %s", self.task_id, exc)

    def _result(self, task: dict[str, Any]) -> ToolResult:
        status = cast(dict[str, Any], task.get("status") or {})
        message = cast(dict[str, Any], status.get("message") or {})
        if self.state in WAITING:
            return self._ask(message)
        if self.state != "completed":
            note = " ".join(_texts(message.get("parts")))
            text = f"A2A task {self.task_id} {self.state}" + (f": {note}" if note else "")
            return ToolResult(text, True, self.metadata())
        texts: list[str] = []
        for artifact in cast(list[dict[str, Any]], task.get("artifacts") or []):
            texts.extend(_texts(artifact.get("parts")))
        if not texts and self.artifacts:
            texts = ["".join(chunks) for chunks in self.artifacts.values()]
        if not texts:
            history = cast(list[dict[str, Any]], task.get("history") or [])
            agents = [m for m in history if m.get("role") == "agent"] or history[-1:]
            if agents:
                texts = ["".join(_texts(agents[-1].get("parts")))]
        return ToolResult("\n".join(texts), False, self.metadata())

    def _ask(self, message: dict[str, Any]) -> ToolResult:
        """The remote agent asks back: our own Request, carrying the remote ids."""
        parts = cast(list[dict[str, Any]], message.get("parts") or [])
        prompt = "\n".join(_texts(parts)) or f"The agent {self.caller.name} needs your input"
        schema: Any = None
        url: str | None = None
        for part in parts:
            data: Any = part.get("data") if part.get("kind") == "data" else None
            if isinstance(data, dict) and "prompt" in data and "kind" in data:
                inner: Any = cast(dict[str, Any], data).get("data")
                if isinstance(inner, dict):
                    schema = cast(dict[str, Any], inner).get("schema")
                remote_url = cast(dict[str, Any], data).get("url")
                url = remote_url if isinstance(remote_url, str) else None
                prompt = str(cast(dict[str, Any], data).get("prompt") or prompt)
        request_data: dict[str, Any] = {
            "a2a": {
                "agent": self.caller.name,
                "taskId": self.task_id,
                "contextId": self.context_id,
                "state": self.state,
            }
        }
        if isinstance(schema, dict):
            request_data["schema"] = schema
        kind = "authorization" if self.state == "auth-required" else "input"
        asked = pending(kind=kind, prompt=prompt, url=url, data=request_data)
        asked.metadata = {**(asked.metadata or {}), **self.metadata()}
        return asked
