"""Executing one MCP tool: the call, its result as text, and input the server asks for.

``execute(args, ctx)`` sends ``tools/call`` and maps the answer (`to_tool_result`, in
`toolnexus.tools.mcp_content`: text as the output, images, audio and resources as parts). When the
server answers *input required* (protocol 2026-07-28: questions plus an opaque state token):

- with a ``wait_for``, each question is asked inline and the call is retried with the answers;
- without one, the call **suspends durably**: the tool returns ``pending`` with the question as
  a `Request` whose ``data["mcp"]`` keeps the state token. The run halts; on resume the engine
  re-executes the tool with ``ctx.answer`` and ``ctx.request``, and the call is retried with the
  answer. A server that no longer accepts the token (restarted, expired) is asked afresh, and
  when it asks the same question again the held answer is given to it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from .._types import ToolContext, ToolResult
from ..redaction import Redactor
from ..suspend import suspension_result
from ..suspension import Answer, Request, WaitFor, format_timestamp, parse_timestamp
from .mcp_content import to_tool_result
from .mcp_elicit import answer_to_elicit_result, ask_inline, elicitation_to_request
from .mcp_held import Halted
from .mcp_session import CallFailed, ServerLink

if TYPE_CHECKING:
    from mcp_types import CallToolResult, InputRequiredResult, InputResponses

__all__ = ["MAX_ROUNDS", "McpToolRunner", "to_tool_result"]

log = logging.getLogger("toolnexus")

MAX_ROUNDS = 10
"""Input-required rounds one call may take before it is given up."""
MCP_DATA_KEY = "mcp"
"""Where a durable elicitation keeps its continuation in ``Request.data``."""
_INVALID_PARAMS = -32602

_Call = Callable[..., Awaitable["CallToolResult | InputRequiredResult"]]


class McpToolRunner:
    """``Tool.execute`` for one tool of one server."""

    __slots__ = ("link", "tool", "wait_for")

    def __init__(self, link: ServerLink, tool: str, wait_for: WaitFor | None) -> None:
        self.link = link
        self.tool = tool
        self.wait_for = wait_for

    @property
    def redactor(self) -> Redactor:
        """The server's secrets; a toolkit holding this tool masks them in every result."""
        return self.link.redactor

    async def __call__(self, args: dict[str, Any], ctx: ToolContext | None = None) -> ToolResult:
        # What the server sends back is outside text: masked here, where it enters.
        return self.link.redactor.result(await self._call(args, ctx))

    async def _call(self, args: dict[str, Any], ctx: ToolContext | None) -> ToolResult:
        signal = ctx.signal if ctx is not None else None
        deadline = None
        if ctx is not None and ctx.timeout is not None:
            deadline = asyncio.get_running_loop().time() + max(0.0, ctx.timeout)
        bare = partial(self.link.call, self.tool, args, signal=signal, deadline=deadline)
        call = partial(self._send, bare)
        try:
            result = await self._first_call(call, ctx)
            for _ in range(MAX_ROUNDS):
                if not _input_required(result):
                    return to_tool_result(cast("CallToolResult", result), self.link.name)
                asked = cast("InputRequiredResult", result)
                step = await self._answer_round(asked)
                if isinstance(step, ToolResult):
                    return step
                result = await call(responses=step, state=asked.request_state)
        except Halted as halted:
            return self._suspend_held(halted.request)
        except CallFailed as exc:
            return ToolResult(exc.message, True, {"server": self.link.name})
        return ToolResult(
            f"MCP tool {self.tool} asked for input more than {MAX_ROUNDS} times; gave up", True
        )

    async def _send(self, bare: _Call, **kw: Any) -> CallToolResult | InputRequiredResult:
        """One tools/call; with ``"elicitation": "halt"``, run so that a question the server
        asks mid-call halts the run (`toolnexus.tools.mcp_held`)."""
        if not self.link.halts:
            return await bare(**kw)
        return await self.link.held.run(partial(bare, **kw))

    async def _first_call(
        self, call: _Call, ctx: ToolContext | None
    ) -> CallToolResult | InputRequiredResult:
        live = self._held_question(ctx)
        if live is not None:
            return await self._resume_held(*live)
        held = self._continuation(ctx)
        if held is None:
            return await call()
        key, state, request, answer = held
        response = answer_to_elicit_result(answer, request)
        try:
            return await call(responses={key: response}, state=state)
        except CallFailed as exc:
            if exc.code != _INVALID_PARAMS:
                raise
            log.info(
                "toolnexus: MCP server %r refused the held state of request %s; asking again",
                self.link.name,
                request.id,
            )
        fresh = await call()
        same = _same_question(fresh, request) if _input_required(fresh) else None
        if same is None:
            return fresh
        asked = cast("InputRequiredResult", fresh)
        return await call(responses={same: response}, state=asked.request_state)

    def _continuation(
        self, ctx: ToolContext | None
    ) -> tuple[str, str | None, Request, Answer] | None:
        """The held question this call resumes, when ``ctx`` carries an answer to one of ours."""
        if ctx is None or ctx.answer is None or ctx.request is None:
            return None
        held: Any = (ctx.request.data or {}).get(MCP_DATA_KEY)
        if not isinstance(held, dict):
            return None
        data = cast(dict[str, Any], held)
        key, state = data.get("key"), data.get("state")
        if data.get("server") != self.link.name or data.get("tool") != self.tool:
            return None
        if not isinstance(key, str) or not (state is None or isinstance(state, str)):
            return None
        return key, state, ctx.request, ctx.answer

    def _held_question(self, ctx: ToolContext | None) -> tuple[Request, Answer] | None:
        """The question held in the live session this call resumes, when ``ctx`` answers one."""
        if ctx is None or ctx.answer is None or ctx.request is None:
            return None
        held: Any = (ctx.request.data or {}).get(MCP_DATA_KEY)
        if not isinstance(held, dict):
            return None
        data = cast(dict[str, Any], held)
        if data.get("server") != self.link.name or data.get("tool") != self.tool:
            return None
        if data.get("held") != ctx.request.id:
            return None
        return ctx.request, ctx.answer

    async def _resume_held(
        self, request: Request, answer: Answer
    ) -> CallToolResult | InputRequiredResult:
        """Send the answer to the call waiting in the session and follow the call on.

        Raises:
            CallFailed: no call waits on it here (another process, or the session ended since).
        """
        held = self.link.held.take(request.id)
        if held is None or (held.task.done() and held.task.cancelled()):
            raise CallFailed(
                f'MCP server "{self.link.name}" asked "{request.prompt}" in a session that is '
                f"gone (this process restarted, or the connection was lost since): the answer "
                f"was not delivered and tool {self.tool} did not finish; call it again to be "
                "asked afresh"
            )
        if not held.task.done():
            follow = self.link.held.open()  # open before replying: a next question lands here
            held.slot.reply.set_result(answer_to_elicit_result(answer, request))
            return await self.link.held.follow(held.task, follow)
        return held.task.result()  # it ended without the answer (failed, or gave up asking)

    def _suspend_held(self, request: Request) -> ToolResult:
        data = dict(request.data or {})
        data[MCP_DATA_KEY] = {"server": self.link.name, "tool": self.tool, "held": request.id}
        return suspension_result(replace(request, data=data))

    async def _answer_round(self, asked: InputRequiredResult) -> InputResponses | ToolResult:
        from mcp_types import ElicitRequest, ListRootsRequest, ListRootsResult

        requests = asked.input_requests or {}
        if not requests:
            await asyncio.sleep(0.05)  # a state-only round: the server wants a plain retry
        responses: InputResponses = {}
        for key, item in requests.items():
            if isinstance(item, ListRootsRequest):
                responses[key] = ListRootsResult(roots=[])
                continue
            if not isinstance(item, ElicitRequest):
                return ToolResult(
                    f"MCP server {self.link.name} asked tool {self.tool} to sample a model; "
                    "toolnexus does not serve MCP sampling",
                    True,
                )
            request = replace(elicitation_to_request(item.params), expiresAt=_expiry(asked))
            if self.wait_for is None:
                return self._suspend(key, request, asked)
            answer = await ask_inline(self.wait_for, request)
            responses[key] = answer_to_elicit_result(answer, request)
        return responses

    def _suspend(self, key: str, request: Request, asked: InputRequiredResult) -> ToolResult:
        data = dict(request.data or {})
        data[MCP_DATA_KEY] = {
            "server": self.link.name,
            "tool": self.tool,
            "key": key,
            "state": asked.request_state,
        }
        return suspension_result(replace(request, data=data))


def _input_required(result: object) -> bool:
    return getattr(result, "result_type", None) == "input_required"


def _same_question(fresh: object, held: Request) -> str | None:
    """The key under which ``fresh`` asks exactly what ``held`` asked, if it does."""
    from mcp_types import ElicitRequest

    asked = cast("InputRequiredResult", fresh)
    for key, item in (asked.input_requests or {}).items():
        if not isinstance(item, ElicitRequest):
            continue
        again = elicitation_to_request(item.params, id=held.id)
        if (again.kind, again.prompt, again.url) == (held.kind, held.prompt, held.url) and (
            (again.data or {}).get("schema") == (held.data or {}).get("schema")
        ):
            return key
    return None


def _expiry(asked: InputRequiredResult) -> str | None:
    """``expiresAt`` from the result's ``_meta`` (``expiresAt`` RFC 3339 or ``ttlMs``), if any.

    The 2026-07-28 protocol itself carries no lifetime for the state token; servers that know
    it can say so in ``_meta``.
    """
    meta: dict[str, Any] = dict(asked.meta or {})
    stamp, ttl = meta.get("expiresAt"), meta.get("ttlMs")
    if isinstance(stamp, str):
        try:
            return format_timestamp(parse_timestamp(stamp))
        except ValueError:
            log.debug("toolnexus: ignoring an unreadable expiresAt in an MCP result")
    if isinstance(ttl, int | float) and not isinstance(ttl, bool) and ttl > 0:
        return format_timestamp(datetime.now(UTC) + timedelta(milliseconds=ttl))
    return None
