"""Durable MCP elicitation (protocol 2026-07-28): a served tool call halted in the run store.

When a served tool suspends on a 2026-07-28 connection, the call is *halted*: saved in the run
store (`toolnexus.stores.requests`, the same state machine as a halted run) and answered with an
input-required result carrying the question and a ``requestState`` token. The client retries the
call with its answer and the token — perhaps minutes later, perhaps against a restarted server
process — and the retry resumes the halted call **exactly once**:

====================  =================================================================
 step                  what happens
====================  =================================================================
 halt                  ``save_halt`` (T1) a one-call checkpoint: the call (tool name and
                       arguments) suspended on the tool's `Request`
 retry                 the token is checked against the stored row (below), the reply is
                       mapped to its `Answer` by the intake (`toolnexus.serve.mcp_ask`)
 resume                the one resumption (`toolnexus.resumption.Resumption`): claim (T4)
                       with that answer — or take (T5) the answer another surface recorded
                       — heartbeat, the approved call bound to the recorded digest, the tool
                       re-executed with ``ctx.answer`` by a tools-only engine
                       (`toolnexus.loop.tool_engine`, the loop's one rule: a decline is
                       ``declined/expired: <prompt>``, the same question again
                       ``unresolved: <prompt>``, a *new* question halts afresh), progress
                       recorded (T7)
 settle                ``complete`` (T8): the result — or the new question — as the
                       request's outcome
====================  =================================================================

A claim lost to a crash lapses back to ``pending`` (T10), so the call can be retried; a claim
held by a live retry makes a racing second retry a JSON-RPC error that changes nothing. A retry
repeated *after* the call settled, with the same answer, gets the first reply again without
running the tool — the recorded result, or the same follow-up question with the same token (the
next token's secret is derived from the secret that answered, so it needs no storing): a client
whose connection dropped before it read the reply. With another answer it is a conflict, as is
a retry whose answer differs from one another surface (the inbox, the CLI) recorded first; a
retry with no answer takes the recorded one. An operator may still ``cancel`` (T11) a halted
call, and it shows in ``list_pending``; its checkpoint sits in its own queue (``mcp/<server
name>``), so no client worker ever takes it.

**The token.** ``tnx1.<request id>.<secret>``: 256 random bits whose sha256 is kept with the
halted call (under the private ``toolnexus_mcp`` key of its transcript), compared in constant
time. The token carries no state of its own — the store holds it — so it needs no server key
and survives any restart that keeps the store. The retry must name the same tool with the same
arguments as the halted call. Anything else (malformed, unknown id, wrong secret, another tool,
other arguments, a settled request) is refused with the SDK's own frozen wire error
(``-32602 Invalid or expired requestState``; the reason goes to the log only).

Why not the SDK's ``RequestStateBoundary``: it seals the state under a key that, by default,
lives only as long as the process, with a 10-minute lifetime — right for state that rides in
the token, wrong for a call whose state is in a durable store and may wait for days. The wire
itself (``InputRequiredResult``, ``ElicitRequest``, ``inputResponses``) is the SDK's.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, INVALID_REQUEST

from .._types import Tool, ToolResult, empty_usage
from ..errors import AnswerConflict, CheckpointError, InvalidAnswer, UnknownRequest
from ..loop.checkpoint import Checkpoint, Outstanding, result_from_json, result_to_json
from ..loop.tool_engine import tool_engine
from ..redaction import Redactor
from ..resumption import Outcome, Resumed, Resumption
from ..stores.checks import call_digest, conflict
from ..stores.requests import DEFAULT_LEASE_S, AnswerRecord, Claim, RunStore
from ..suspension import Answer, Request

__all__ = [
    "HALT_KEY",
    "Halted",
    "HaltedCalls",
    "invalid_state",
    "parse_reply",
]

log = logging.getLogger("toolnexus")

HALT_KEY = "toolnexus_mcp"
"""The private key of a halted call's transcript message that holds the token's verifier."""
_PREFIX = "tnx1."
_STYLE = "mcp"


def invalid_state(reason: str) -> MCPError:
    """The refusal of a ``requestState``: the SDK's frozen wire error, the reason logged."""
    log.warning("toolnexus: MCP requestState refused: %s", reason)
    return MCPError(
        code=INVALID_PARAMS,
        message="Invalid or expired requestState",
        data={"reason": "invalid_request_state"},
    )


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _canonical(args: dict[str, Any]) -> str:
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Halted:
    """A halted call found by a valid token.

    Attributes:
        request: the Request the call suspended on.
        note: what the halt keeps beside the call (server name, the token's verifier, the
            request), recorded again with the outcome so a settled call can still be checked.
        digest: `call_digest` of the halted call (tool name and arguments).
        secret: the token's secret (the next question's token is derived from it).
        settled: the request's record once it settled (its checkpoint is gone then).
    """

    request: Request
    note: dict[str, Any]
    digest: str
    secret: str = ""
    settled: AnswerRecord | None = None


Resumed_ = ToolResult | tuple[Request, str]
"""What a retry comes to: the call's result, or the new question it halts on and its token."""


class HaltedCalls:
    """The halted calls of one served MCP server, in a run store.

    Args:
        runs: the run store (the client's, or one of the server's own).
        server: the served server's name (its queue is ``mcp/<server>``).
        lease_s: how long a retry holds the request; its resumption renews it while the tool
            runs.
    """

    __slots__ = ("queue", "resumption", "runs", "server")

    def __init__(self, runs: RunStore, server: str, *, lease_s: float = DEFAULT_LEASE_S) -> None:
        self.runs = runs
        self.server = server
        self.queue = f"mcp/{server}"
        self.resumption = Resumption(runs, lease_s=lease_s)
        """The one resumption every retry resumes its call through."""

    async def halt(
        self,
        tool: Tool,
        args: dict[str, Any],
        request: Request,
        fingerprint: str,
        *,
        secret: str | None = None,
    ) -> str:
        """T1: store the call suspended on ``request``; returns the token for the client.

        ``secret``: the token's secret (a new random one when ``None``)."""
        secret = secret or secrets.token_urlsafe(32)
        arguments = _canonical(args)
        call_id = f"mcp-{request.id}"
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": tool.name, "arguments": arguments},
                }
            ],
            HALT_KEY: {"server": self.server, "verifier": _digest(secret)},
        }
        checkpoint = Checkpoint(
            model="",
            style=_STYLE,
            messages=[message],
            turn=0,
            usage=empty_usage(),
            tool_calls=[],
            # The client's call, retried with the same arguments: an approvals page may not
            # edit them (``input_schema=False``: see `toolnexus.loop.edits`).
            outstanding=[
                Outstanding(
                    call_id, tool.name, arguments, "suspended", request=request, input_schema=False
                )
            ],
            pending=request,
            fingerprint=fingerprint,
            queue=self.queue,
        )
        await self.runs.save_halt(checkpoint)
        return _token(request.id, secret)

    async def find(self, token: object, name: str, args: dict[str, Any]) -> Halted:
        """The halted call ``token`` names, checked against the retry's tool and arguments.

        Raises:
            MCPError: ``-32602 Invalid or expired requestState`` for anything that does not
                match a halted call of this server exactly (a cancelled call included: its
                token can no longer be checked).
        """
        if not isinstance(token, str) or not token.startswith(_PREFIX):
            raise invalid_state("malformed token")
        rid, dot, secret = token[len(_PREFIX) :].rpartition(".")
        if not dot or not rid or not secret:
            raise invalid_state("malformed token")
        try:
            halted = await self._load(rid)
        except (CheckpointError, ValueError, TypeError) as exc:
            raise invalid_state(f"unreadable halted call ({type(exc).__name__})") from None
        if halted is None:
            raise invalid_state("no halted call with that id")
        verifier = halted.note.get("verifier")
        if halted.note.get("server") != self.server or not isinstance(verifier, str):
            raise invalid_state("the halted call belongs to another server")
        if not hmac.compare_digest(verifier.encode(), _digest(secret).encode()):
            raise invalid_state("wrong secret")
        if halted.digest != call_digest(name, _canonical(args)):
            raise invalid_state("the retry names another tool or other arguments")
        return Halted(halted.request, halted.note, halted.digest, secret, halted.settled)

    async def _load(self, rid: str) -> Halted | None:
        checkpoint = await self.runs.load_halt(rid)
        if checkpoint is not None:
            if checkpoint.style != _STYLE or not checkpoint.messages:
                return None
            held: Any = checkpoint.messages[0].get(HALT_KEY)
            slot = checkpoint.outstanding[0]
            note = cast(dict[str, Any], held) if isinstance(held, dict) else {}
            return Halted(
                request=slot.request or checkpoint.pending,
                note=note,
                digest=call_digest(slot.name, slot.arguments),
            )
        record = await self.runs.answer_record(rid)
        kept: Any = (record.outcome or {}).get(HALT_KEY) if record is not None else None
        if record is None or not isinstance(kept, dict):
            return None
        note = cast(dict[str, Any], kept)
        return Halted(
            request=Request.from_dict(note["request"]),
            note=note,
            digest=record.digest,
            settled=record,
        )

    async def resume(
        self,
        halted: Halted,
        tools: tuple[Sequence[Tool], dict[str, Tool]],
        args: dict[str, Any],
        answer: Answer | None,
        answered_by: str,
        *,
        redactor: Redactor,
        fingerprint: str,
    ) -> Resumed_ | None:
        """A retry: resume the halted call through the one resumption, then settle it.

        ``answer`` is the client's (already through the intake); ``None`` takes the answer
        another surface recorded. Returns the result, the new question (halted, with its token)
        — or ``None`` when nobody has answered yet (the client is asked again).

        Raises:
            MCPError: ``-32600`` naming the conflict (another retry holds it; it settled or was
                answered elsewhere with another answer), ``-32602`` for an answer the request
                does not take.
        """
        request = halted.request
        rid = request.id
        if halted.settled is not None:
            return await self._replay(halted, answer, tools[1], args)
        claim: Claim | None = None
        if answer is None:
            claim = await self.runs.take(rid, lease_s=self.resumption.lease_s)
            if claim is None:
                record = await self.runs.answer_record(rid)
                if record is None:
                    return None  # still waiting: ask again
                raise MCPError(
                    code=INVALID_REQUEST,
                    message=str(conflict(rid, record.answered_by, record.status)),
                )
        try:
            resumed = await self._begin(halted, tools, claim, answer, answered_by, redactor)
        except AnswerConflict as refused:
            if answer is None:
                raise MCPError(code=INVALID_REQUEST, message=str(refused)) from None
            record = await self.runs.answer_record(rid)
            if record is None or record.status != "answered" or record.answer != answer:
                raise MCPError(code=INVALID_REQUEST, message=str(refused)) from None
            # This client's own answer, recorded by its earlier retry that failed: go on.
            claim = await self.runs.take(rid, lease_s=self.resumption.lease_s)
            if claim is None:
                raise MCPError(code=INVALID_REQUEST, message=str(refused)) from None
            resumed = await self._begin(halted, tools, claim, None, answered_by, redactor)
        return await self._settle(
            resumed, halted, tools[1][resumed.slots[0].name], args, fingerprint
        )

    async def _begin(
        self,
        halted: Halted,
        tools: tuple[Sequence[Tool], dict[str, Tool]],
        claim: Claim | None,
        answer: Answer | None,
        answered_by: str,
        redactor: Redactor,
    ) -> Resumed:
        rid = halted.request.id
        using = self.resumption
        try:
            checkpoint = await (using.load(claim) if claim is not None else self._stored(rid))
        except (CheckpointError, UnknownRequest) as exc:
            raise invalid_state(
                f"the halted call cannot be resumed ({type(exc).__name__})"
            ) from None
        engine = tool_engine(redactor=redactor, style=_STYLE)
        listed, by_name = tools
        state = engine.new_state(None, list(listed), [], by_name=by_name)
        given = claim.answer if claim is not None else answer
        assert given is not None
        try:
            return await using.begin(
                engine, state, checkpoint, given, claim=claim, answered_by=answered_by
            )
        except InvalidAnswer as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None

    async def _stored(self, rid: str) -> Checkpoint:
        checkpoint = await self.runs.load_halt(rid)
        if checkpoint is None:
            raise UnknownRequest(f'no halted call waits on request "{rid}"')
        return checkpoint

    async def _settle(
        self,
        resumed: Resumed,
        halted: Halted,
        tool: Tool,
        args: dict[str, Any],
        fingerprint: str,
    ) -> Resumed_:
        """T8: record what the call ended with — its result, or the new question it halts on
        (saved first, with the token derived from the one that answered) — with the halt's
        note, so a repeated retry can still be checked and answered."""
        slot = resumed.slots[0]
        note = {**halted.note, "request": halted.request.to_dict()}
        follow = slot.request
        if follow is not None:
            secret = _next_secret(halted.secret, follow.id)
            token = await self.halt(tool, args, follow, fingerprint, secret=secret)
            outcome = Outcome(status="pending", pending=follow.id, extra={HALT_KEY: note})
            await self.resumption.settle(resumed, outcome)
            return follow, token
        result = slot.result
        assert result is not None
        extra = {HALT_KEY: note, "result": result_to_json(result)}
        await self.resumption.settle(
            resumed, Outcome(status="done", text=result.output, extra=extra)
        )
        return result

    async def _replay(
        self,
        halted: Halted,
        answer: Answer | None,
        by_name: dict[str, Tool],
        args: dict[str, Any],
    ) -> Resumed_:
        """A retry of a call that settled already: with the same answer (or none), the first
        reply again — the recorded result, or the follow-up question with the same token —
        without running the tool; with another answer, a conflict."""
        record = halted.settled
        assert record is not None
        outcome = record.outcome or {}
        if answer is None or record.answer == answer:
            held: Any = outcome.get("result")
            if held is not None:
                try:
                    return result_from_json(held)
                except CheckpointError:
                    log.warning(
                        "toolnexus: the recorded result of %s is unreadable", record.request_id
                    )
            follow: Any = outcome.get("pending")
            if isinstance(follow, str) and halted.secret:
                asked = await self._load(follow)
                if asked is not None and asked.settled is None:
                    return asked.request, _token(follow, _next_secret(halted.secret, follow))
        raise MCPError(
            code=INVALID_REQUEST,
            message=str(conflict(record.request_id, record.answered_by, record.status)),
        )


def _token(request_id: str, secret: str) -> str:
    return f"{_PREFIX}{request_id}.{secret}"


def _next_secret(secret: str, request_id: str) -> str:
    """The secret of the token of the question a retry halted on: derived from the secret that
    answered the one before (so a repeated retry gets the same token; nothing is stored)."""
    mac = hmac.new(secret.encode(), f"next:{request_id}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def parse_reply(responses: Any, key: str) -> Any:
    """The client's reply under ``key`` of a retry's ``inputResponses`` (``None`` when absent)."""
    if not isinstance(responses, dict):
        return None
    return cast(dict[str, Any], responses).get(key)
