"""`ACPClient`: an Agent Client Protocol agent (``gemini --acp``, ``devin acp``, …) over stdio.

::

    acp = load_acp(ACPOptions("my-agent", ["acp"], wait_for=ask_a_human))
    client = create_in_process_client(model="acp", generate=acp.agenerate)
    result = await client.run("Tidy the notes folder.")
    acp.close()

The agent is a *model source*: each ``generate(request)`` sends the whole transcript as one
``session/prompt`` and returns the agent's message chunks as ``{"content": ...}``. It is also a
*tool source*: `ACPClient.as_tool` hands a prompt to the agent from inside your own loop.

Permissions go through the suspension primitive (`Request` / `Answer`) instead of the package's
auto-allow: a ``session/request_permission`` becomes a ``Request(kind="approval")`` whose
``data["acp"]`` holds the session, the tool call and the options. ``ACPOptions.wait_for``
answers it inline. With none, the turn is parked in this process (`ACPClient.pending`) and the
run halts durably: `generate` returns ``{"pending": Request}`` — the client's halt at the model
call, its checkpoint saved like any other — and the call that resumes it passes the Answer
(``request["answer"]``), which goes to the agent and continues the same turn. Through
`as_tool`, the tool call suspends instead. ``ACPOptions(permission="allow")`` restores the
package's behaviour (the first ``allow*`` option, at once).

A resume that finds no parked turn for its answer — this process restarted, or it is another
process, so the agent that asked is gone — sends the transcript again as a new prompt (and
says so on stderr): the answer is never applied to a question it did not answer, and the agent
asks anew if it still needs to, which halts the run on a new Request. A resume on a client
whose child is gone (`close`, a crash) fails with `ACPError` and the stored run is unchanged.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import queue
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from .._compat import warn_stderr
from .._types import Tool, ToolContext, ToolResult
from ..errors import AnswerMismatch, CallbackError, UsageError
from ..intake import intake
from ..suspend import suspension_result
from ..suspension import Answer, Request, WaitFor, cancelled_answer, new_request_id
from ._wire import ACPError, ACPPermissionTimeoutError, ACPSessionGone, Connection, result_of

__all__ = ["ACPClient", "ACPOptions", "load_acp"]

HANDSHAKE_TIMEOUT = 30.0
DEFAULT_PERMISSION_PROMPT = "ACP agent requests permission"


@dataclass(slots=True)
class ACPOptions:
    """How to start and drive an ACP agent.

    Attributes:
        command / args: the agent's executable and its arguments.
        cwd: the session's working directory (made absolute; default: this process's).
        env: merged over ``os.environ`` for the child.
        protocol_version: sent in ``initialize``.
        permission_timeout: seconds a turn may hear nothing from the agent before it fails
            with `ACPPermissionTimeoutError` (time waiting for a human does not count).
        mode: a session mode to set after ``session/new``.
        wait_for: answers permission requests inline (sync or async), as a client's.
        permission: ``"ask"`` (the default: a `Request`) or ``"allow"`` (auto-allow).
    """

    command: str
    args: Sequence[str] = field(default_factory=lambda: [])
    cwd: str | None = None
    env: Mapping[str, str] | None = None
    protocol_version: int = 1
    permission_timeout: float = 5.0
    mode: str | None = None
    wait_for: WaitFor | None = None
    permission: Literal["ask", "allow"] = "ask"


class _Turn:
    """One ``session/prompt`` in flight: its chunks, its events, its open permission."""

    def __init__(self) -> None:
        self.events: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self.chunks: list[str] = []
        self.call: Any = None
        self.asked: tuple[Any, list[dict[str, Any]], Request] | None = None  # rpc id, options


class ACPClient:
    """A started ACP agent with one session. Build with `load_acp`."""

    def __init__(self, opts: ACPOptions) -> None:
        if opts.permission not in ("ask", "allow"):
            raise UsageError(
                f'ACPOptions.permission must be "ask" or "allow", got {opts.permission!r}'
            )
        if not isinstance(opts.command, str) or not opts.command:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UsageError("ACPOptions.command must be a non-empty string")
        if opts.permission_timeout <= 0:
            raise UsageError("ACPOptions.permission_timeout must be positive")
        args: Any = opts.args
        if isinstance(args, str) or not all(isinstance(a, str) for a in args):
            raise UsageError("ACPOptions.args must be a list of strings")
        env: Any = opts.env or {}
        if any(not isinstance(k, str) or not isinstance(v, str) for k, v in env.items()):
            raise UsageError("ACPOptions.env must map strings to strings")
        self.options = opts
        self.cwd = os.path.abspath(opts.cwd or os.getcwd())
        self.session_id = ""
        self._turn: _Turn | None = None
        self._held: dict[
            str, _Turn
        ] = {}  # request id -> its parked turn (a halted run's or tool's)
        self._parked: _Turn | None = None  # the model turn a halted run waits on
        self._state = threading.Lock()
        self._busy = threading.Lock()
        self._closed = False
        env = {**os.environ, **dict(opts.env or {})}
        self._conn = Connection(
            [opts.command, *opts.args], cwd=self.cwd, env=env, on_message=self._incoming
        )

    # -- lifecycle -----------------------------------------------------------------------

    def _handshake(self) -> None:
        opts = self.options
        self._conn.request(
            "initialize",
            {
                "protocolVersion": opts.protocol_version,
                "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}},
            },
            HANDSHAKE_TIMEOUT,
        )
        created = self._conn.request(
            "session/new", {"cwd": self.cwd, "mcpServers": []}, HANDSHAKE_TIMEOUT
        )
        session: Any = (
            cast(dict[str, Any], created).get("sessionId") if isinstance(created, dict) else None
        )
        if not isinstance(session, str) or not session:
            raise ACPError("acp: session/new answered without a sessionId")
        self.session_id = session
        if opts.mode is not None:
            self._conn.request(
                "session/set_mode", {"sessionId": session, "modeId": opts.mode}, HANDSHAKE_TIMEOUT
            )

    def is_alive(self) -> bool:
        """The child runs and its connection is open."""
        return not self._closed and self._conn.alive()

    @property
    def pid(self) -> int:
        return self._conn.pid

    def close(self) -> None:
        """Close stdin, terminate, wait 5 s, kill (idempotent). Parked turns are dropped."""
        with self._state:
            if self._closed:
                return
            self._closed = True
        self._conn.close()
        self._release_held()

    def __enter__(self) -> ACPClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- incoming ------------------------------------------------------------------------

    def _incoming(self, method: str, params: Any, rid: Any) -> None:
        """The reader thread: chunks and permission requests go to the turn in flight."""
        turn = self._turn
        p: dict[str, Any] = cast(dict[str, Any], params) if isinstance(params, dict) else {}
        if method == "$/eof":
            self._release_held()
            return
        if method == "session/update":
            update = p.get("update")
            if (
                turn is None
                or p.get("sessionId") != self.session_id
                or not isinstance(update, dict)
            ):
                return
            u = cast(dict[str, Any], update)
            content = u.get("content")
            if u.get("sessionUpdate") == "agent_message_chunk" and isinstance(content, dict):
                chunk = cast(dict[str, Any], content).get("text")
                if isinstance(chunk, str):
                    turn.chunks.append(chunk)
            turn.events.put(("activity",))
            return
        if rid is None:
            return
        if method == "session/request_permission":
            options = _options_of(p)
            if self.options.permission == "allow":
                self._conn.respond(rid, _auto_allow(options))
            elif turn is None or p.get("sessionId") != self.session_id:
                self._conn.respond(rid, _CANCELLED)
            else:
                turn.events.put(("permission", rid, p, options))
            return
        self._conn.respond(rid, {})

    def _release_held(self) -> None:
        """The session is gone: nothing parked can be answered any more."""
        with self._state:
            held, self._held, self._parked = list(self._held.values()), {}, None
        for turn in held:
            self._end(turn)  # the session lock it held is free again

    # -- a turn --------------------------------------------------------------------------

    def _begin(self, text: str, patient: bool = True) -> _Turn:
        """Open a turn. ``patient`` waits for the turn in flight (a model turn, as the
        package); otherwise (a tool call) up to ``permission_timeout``, since a suspended tool
        call may hold the session for as long as its human takes."""
        if self._closed:
            raise ACPError("acp: the client is closed")
        timeout = -1 if patient else self.options.permission_timeout
        if not self._busy.acquire(timeout=timeout):
            raise ACPError("acp: the session is busy with another turn")
        if self._closed:
            self._busy.release()
            raise ACPError("acp: the client is closed")
        turn = _Turn()
        self._turn = turn
        try:
            _, turn.call = self._conn.start(
                "session/prompt",
                {"sessionId": self.session_id, "prompt": [{"type": "text", "text": text}]},
                on_done=lambda: turn.events.put(("done",)),
            )
        except BaseException:
            self._end(turn)
            raise
        return turn

    def _end(self, turn: _Turn) -> None:
        if self._turn is turn:
            self._turn = None
            self._busy.release()

    def _abandon(self, turn: _Turn) -> None:
        """We gave up on ``turn`` (our error): cancel it at the agent and read it to its end,
        refusing any further permission, so nothing of it leaks into the next turn."""
        try:
            if turn.asked is not None:
                self._conn.respond(turn.asked[0], _CANCELLED)
                turn.asked = None
            if self._conn.alive():
                self._conn.notify("session/cancel", {"sessionId": self.session_id})
            deadline = time.monotonic() + self.options.permission_timeout
            while not turn.call.done.is_set():
                try:
                    event = turn.events.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if event[0] == "permission":
                    self._conn.respond(event[1], _CANCELLED)
        except ACPError:
            pass
        finally:
            self._end(turn)

    def _advance(self, turn: _Turn) -> Request | None:
        """Read the turn on until it ends (``None``) or a permission needs an answer."""
        timeout = self.options.permission_timeout
        deadline = time.monotonic() + timeout
        while True:
            try:
                event = turn.events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise ACPPermissionTimeoutError(
                    "acp: turn hung waiting on a reply (possibly an unanswered "
                    f"session/request_permission) after {timeout:g}s"
                ) from None
            if event[0] == "activity":
                deadline = time.monotonic() + timeout
            elif event[0] == "done":
                result_of(turn.call)
                return None
            else:
                _, rid, params, options = event
                request = Request(
                    id=new_request_id(),
                    kind="approval",
                    prompt=_title_of(params) or DEFAULT_PERMISSION_PROMPT,
                    data={
                        "acp": {
                            "sessionId": self.session_id,
                            "toolCall": params.get("toolCall"),
                            "options": options,
                        }
                    },
                )
                turn.asked = (rid, options, request)
                return request

    def _reply(self, turn: _Turn, answer: Answer) -> None:
        """Send the agent the outcome ``answer`` chose for the open permission."""
        assert turn.asked is not None
        rid, options, request = turn.asked
        turn.asked = None
        if answer.id != request.id:
            self._conn.respond(rid, _CANCELLED)
            raise AnswerMismatch(
                f'answer id "{answer.id}" does not echo the pending request id "{request.id}"'
            )
        self._conn.respond(rid, outcome_for(answer, options))

    def _run(self, turn: _Turn, loop: asyncio.AbstractEventLoop | None) -> Request | None:
        """Drive ``turn`` to its end, answering permissions inline through ``wait_for``;
        without one, stop at the first permission and return its request (the turn stays
        open for the answer)."""
        wait_for = self.options.wait_for
        while (request := self._advance(turn)) is not None:
            if wait_for is None:
                return request
            try:
                answer = intake(request, _ask(wait_for, request, loop))
            except BaseException:
                self._reply(turn, cancelled_answer(request.id))
                raise
            self._reply(turn, answer)
        return None

    def _park(self, turn: _Turn, request: Request, *, model: bool) -> None:
        with self._state:
            self._held[request.id] = turn
            if model:
                self._parked = turn

    def _unpark(self, request_id: str) -> _Turn | None:
        with self._state:
            turn = self._held.pop(request_id, None)
            if turn is not None and turn is self._parked:
                self._parked = None
            return turn

    # -- the model source ----------------------------------------------------------------

    def generate(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """One turn: the transcript in ``request["messages"]`` as one prompt; the agent's
        message chunks as ``{"content": ...}``. Blocking; one turn at a time per session.

        A permission request with no ``wait_for`` parks the turn and returns
        ``{"pending": Request}``: call again with ``request["answer"]`` (what the client's
        resume does) to send the agent the outcome and finish the same turn.

        Raises:
            ACPError: the agent answered an error, went away, or the turn timed out
                (`ACPPermissionTimeoutError`); an answer for an agent that is gone is
                `ACPSessionGone` (also a `ResumeError`).
            UsageError: ``request["answer"]`` is not an `Answer` (or its wire dict).
        """
        return self._generate(request, None)

    async def agenerate(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """`generate` without blocking the event loop (the turn runs in a worker thread; an
        async ``wait_for`` runs on this loop)."""
        return await asyncio.to_thread(self._generate, request, asyncio.get_running_loop())

    def _generate(
        self, request: Mapping[str, Any], loop: asyncio.AbstractEventLoop | None
    ) -> dict[str, Any]:
        answer = _answer_of(request.get("answer"))
        turn = self._resumed_turn(answer)
        if turn is None:
            turn = self._begin(prompt_text(request.get("messages") or []))
        try:
            asked = self._run(turn, loop)
        except BaseException:
            self._abandon(turn)
            raise
        if asked is not None:
            self._park(turn, asked, model=True)
            return {"pending": asked}
        self._end(turn)
        return {"content": "".join(turn.chunks)}

    def _resumed_turn(self, answer: Answer | None) -> _Turn | None:
        """The parked model turn ``answer`` answers, the outcome sent; ``None``: start a new
        turn. A parked turn the call does not answer is cancelled at the agent first (its run
        went another way: cancelled, or resumed elsewhere)."""
        with self._state:  # taken atomically: two resumes never both reply to one turn
            parked, self._parked = self._parked, None
            if parked is not None and parked.asked is not None:
                self._held.pop(parked.asked[2].id, None)
        if parked is not None and parked.asked is not None:
            if answer is not None and parked.asked[2].id == answer.id and self.is_alive():
                try:
                    self._reply(parked, answer)
                except BaseException:
                    self._abandon(parked)
                    raise
                return parked
            self._abandon(parked)
        if answer is not None:
            if self._closed or not self._conn.alive():
                raise ACPSessionGone(
                    f"acp: the agent that asked {answer.id} is gone (the client is closed); "
                    "nothing was sent"
                )
            note = (
                f"acp: no session here holds request {answer.id} (the agent that asked is "
                "gone); sending the prompt again"
            )
            warn_stderr(note)
        return None

    # -- pending requests ----------------------------------------------------------------

    def pending(self) -> list[Request]:
        """The permission requests whose turns are parked now (a halted run's or a
        suspended tool call's)."""
        with self._state:
            turns = list(self._held.values())
        return [t.asked[2] for t in turns if t.asked is not None]

    # -- the tool source -----------------------------------------------------------------

    def as_tool(self, name: str = "acp_agent", description: str | None = None) -> Tool:
        """The agent as a tool ``{prompt}`` of your own loop: one ACP turn per call, the
        agent's reply as the output. A permission request (with no ``wait_for`` here) suspends
        the call with its `Request`; the retry with the answer continues the same turn."""

        async def execute(args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
            loop = asyncio.get_running_loop()
            answer = ctx.answer if ctx is not None else None
            if answer is not None:
                turn = self._unpark(answer.id)
                if turn is None or not self.is_alive():
                    return ToolResult(
                        f"acp: the session that asked {answer.id} is gone; nothing was sent", True
                    )
                try:
                    self._reply(turn, answer)
                except AnswerMismatch:
                    await asyncio.to_thread(self._abandon, turn)
                    raise
            else:
                turn = await asyncio.to_thread(self._begin, str(args.get("prompt", "")), False)
            try:
                request = await asyncio.to_thread(self._run, turn, loop)
            except BaseException:
                await asyncio.to_thread(self._abandon, turn)
                raise
            if request is not None:
                self._park(turn, request, model=False)
                return suspension_result(request)
            self._end(turn)
            return ToolResult("".join(turn.chunks))

        return Tool(
            name=name,
            description=description or "Hand a task to the ACP agent; returns its reply.",
            input_schema={
                "type": "object",
                "properties": {"prompt": {"type": "string", "description": "The task."}},
                "required": ["prompt"],
            },
            source="custom",
            execute=execute,
            handles_declines=True,  # a decline must reach the agent as its reject option
        )


def load_acp(opts: ACPOptions | Mapping[str, Any]) -> ACPClient:
    """Start the agent and open its session (``initialize``, ``session/new``, the mode).

    Raises:
        ACPError: the agent cannot start, or a handshake step failed or took over 30 s (the
            child is stopped first).
        UsageError: bad options.
    """
    options = opts if isinstance(opts, ACPOptions) else ACPOptions(**dict(opts))
    client = ACPClient(options)
    try:
        client._handshake()  # pyright: ignore[reportPrivateUsage]
    except BaseException:
        client.close()
        raise
    return client


# -- pure helpers -----------------------------------------------------------------------------

_CANCELLED: dict[str, Any] = {"outcome": {"outcome": "cancelled"}}


def _selected(option_id: str) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option_id}}


def _options_of(params: Mapping[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    raw = params.get("options")
    for o in cast(list[Any], raw) if isinstance(raw, list) else []:
        if isinstance(o, dict) and isinstance(cast(dict[str, Any], o).get("optionId"), str):
            d = cast(dict[str, Any], o)
            out.append(
                {
                    "optionId": d["optionId"],
                    "name": str(d.get("name", "")),
                    "kind": str(d.get("kind", "")),
                }
            )
    return out


def _title_of(params: Mapping[str, Any]) -> str:
    call = params.get("toolCall")
    title = cast(dict[str, Any], call).get("title") if isinstance(call, dict) else None
    return title if isinstance(title, str) else ""


def _first(options: list[dict[str, Any]], prefix: str, preferred: str) -> str | None:
    kinds = [o for o in options if str(o["kind"]).startswith(prefix)]
    best = next((o for o in kinds if o["kind"] == preferred), kinds[0] if kinds else None)
    return str(best["optionId"]) if best is not None else None


def _auto_allow(options: list[dict[str, Any]]) -> dict[str, Any]:
    """The package's rule: the first ``allow*`` option, else cancelled."""
    chosen = next((o["optionId"] for o in options if str(o["kind"]).startswith("allow")), None)
    return _selected(chosen) if chosen is not None else _CANCELLED


def outcome_for(answer: Answer, options: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``session/request_permission`` result an Answer stands for.

    ``ok`` with a ``data.optionId`` among the options selects it (one that is not among them
    cancels); ``ok`` without one selects the first ``allow*`` option, ``allow_once``
    preferred; ``ok=False, reason="declined"`` the first ``reject*`` (``reject_once``
    preferred); anything else, or no such option, cancels.
    """
    if answer.ok:
        wanted = (answer.data or {}).get("optionId")
        if wanted is not None:
            ids = {o["optionId"] for o in options}
            return _selected(wanted) if isinstance(wanted, str) and wanted in ids else _CANCELLED
        chosen = _first(options, "allow", "allow_once")
    elif answer.reason == "declined":
        chosen = _first(options, "reject", "reject_once")
    else:
        chosen = None
    return _selected(chosen) if chosen is not None else _CANCELLED


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in cast(list[Any], content):
            if isinstance(part, dict) and cast(dict[str, Any], part).get("type") == "text":
                value = cast(dict[str, Any], part).get("text")
                if isinstance(value, str):
                    parts.append(value)
        return "".join(parts)
    return ""


def prompt_text(messages: Sequence[Any]) -> str:
    """The whole transcript as ``<role>: <text>`` lines (empty messages left out), then
    ``SUPERSEDES-ALL-PRIOR: <last user text>``."""
    lines: list[str] = []
    last_user: str | None = None
    for m in messages:
        if not isinstance(m, dict):
            continue
        msg = cast(dict[str, Any], m)
        text = _text_of(msg.get("content"))
        if not text:
            continue
        role = str(msg.get("role", ""))
        lines.append(f"{role}: {text}")
        if role == "user":
            last_user = text
    if last_user is not None:
        lines.append(f"SUPERSEDES-ALL-PRIOR: {last_user}")
    return "\n".join(lines)


def _answer_of(value: Any) -> Answer | None:
    """``request["answer"]``: an `Answer`, its wire dict, or nothing."""
    if value is None or isinstance(value, Answer):
        return value
    if isinstance(value, Mapping):
        try:
            return Answer.from_dict(cast(Mapping[str, Any], value))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"acp: request['answer'] is not an Answer: {exc}") from exc
    raise UsageError(f"acp: request['answer'] must be an Answer, got {type(value).__name__}")


def _ask(wait_for: WaitFor, request: Request, loop: asyncio.AbstractEventLoop | None) -> Answer:
    """Call a sync or async ``wait_for`` from a worker thread (an async one on ``loop``)."""
    try:
        value: Any = wait_for(request)
        if inspect.isawaitable(value):
            if loop is not None and loop.is_running():
                value = asyncio.run_coroutine_threadsafe(_wrap(value), loop).result()
            else:
                value = _run_apart(value)
    except Exception as exc:
        raise CallbackError(f"wait_for raised {type(exc).__name__}: {exc}") from exc
    if isinstance(value, Mapping):
        value = Answer.from_dict(cast(Mapping[str, Any], value))
    if not isinstance(value, Answer):
        raise CallbackError(f"wait_for must return an Answer, got {type(value).__name__}")
    return value


async def _wrap(awaitable: Any) -> Any:
    return await awaitable


def _run_apart(awaitable: Any) -> Any:
    """Run ``awaitable`` to its end on a fresh loop in a thread of its own."""
    box: list[Any] = []
    failed: list[BaseException] = []

    def main() -> None:
        try:
            box.append(asyncio.run(_wrap(awaitable)))
        except BaseException as exc:
            failed.append(exc)

    worker = threading.Thread(target=main, name="toolnexus-acp-wait-for")
    worker.start()
    worker.join()
    if failed:
        raise failed[0]
    return box[0]
