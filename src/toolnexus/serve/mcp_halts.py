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
                       mapped to an `Answer`, then ``claim`` (T4) takes the request with it
 re-execute            the tool runs again with ``ctx.answer`` (the loop's one rule:
                       a decline is ``declined/expired: <prompt>``, the same question again
                       ``unresolved: <prompt>``, a *new* question halts afresh)
 settle                ``complete`` (T8) records the result as the request's outcome
====================  =================================================================

A claim lost to a crash lapses back to ``pending`` (T10), so the call can be retried; a claim
held by a live retry makes a racing second retry a JSON-RPC error that changes nothing. A retry
repeated *after* the call settled, with the same answer, gets the recorded result again without
running the tool (a client whose connection dropped before it read the reply); with another
answer it is a conflict. An operator may still ``cancel`` (T11) a halted call, and it shows in
``list_pending``; its checkpoint sits in its own queue (``mcp/<server name>``), so no client
worker ever takes it.

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

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, INVALID_REQUEST

from .._types import Tool, ToolResult, empty_usage
from ..errors import AnswerConflict, CheckpointError, LeaseLost
from ..loop.checkpoint import Checkpoint, Outstanding, result_from_json, result_to_json
from ..loop.transcript import MAX_FOLLOW_UPS, same_question
from ..stores.checks import call_digest, conflict
from ..stores.requests import DEFAULT_LEASE_S, EXPIRED_BY, AnswerRecord, Claim, RunStore
from ..suspend import pending_of
from ..suspension import Answer, Request, expired_decline, is_expired

__all__ = [
    "HALT_KEY",
    "Halted",
    "HaltedCalls",
    "RunTool",
    "invalid_state",
    "parse_reply",
    "resolve_call",
]

log = logging.getLogger("toolnexus")

HALT_KEY = "toolnexus_mcp"
"""The private key of a halted call's transcript message that holds the token's verifier."""
_PREFIX = "tnx1."
_STYLE = "mcp"

RunTool = Callable[[Answer | None, Request | None], Awaitable[ToolResult]]
"""Runs the served tool once, with ``ctx.answer`` / ``ctx.request`` set as given."""

Ask = Callable[[Request], Awaitable[Answer]]


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


async def resolve_call(
    run: RunTool, tool: Tool, request: Request, answer: Answer, ask: Ask | None
) -> ToolResult | Request:
    """Resolve a suspended call with ``answer``: the loop's one rule (see `Engine.resolve`).

    Returns the final result, or — when the re-run asks a *new* question and there is no
    ``ask`` to put it to now — that new `Request` (the call halts on it).
    """
    for rounds in range(MAX_FOLLOW_UPS + 1):
        if not answer.ok and not tool.handles_declines:
            return ToolResult(f"declined/expired: {request.prompt}", True)
        retry = await run(answer, request)
        follow = pending_of(retry)
        if follow is None:
            return retry
        if rounds == MAX_FOLLOW_UPS or same_question(follow, request):
            return ToolResult(f"unresolved: {request.prompt}", True)
        request = follow
        if ask is None:
            return follow
        answer = await ask(request)
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass(frozen=True, slots=True)
class Halted:
    """A halted call found by a valid token.

    Attributes:
        request: the Request the call suspended on.
        note: what the halt keeps beside the call (server name, the token's verifier, the
            request), recorded again with the outcome so a settled call can still be checked.
        digest: `call_digest` of the halted call (tool name and arguments).
        settled: the request's record once it settled (its checkpoint is gone then).
    """

    request: Request
    note: dict[str, Any]
    digest: str
    settled: AnswerRecord | None = None


class HaltedCalls:
    """The halted calls of one served MCP server, in a run store.

    Args:
        runs: the run store (the client's, or one of the server's own).
        server: the served server's name (its queue is ``mcp/<server>``).
        lease_s: how long a retry holds the request; renewed while the tool runs.
    """

    __slots__ = ("lease_s", "queue", "runs", "server")

    def __init__(self, runs: RunStore, server: str, *, lease_s: float = DEFAULT_LEASE_S) -> None:
        self.runs = runs
        self.server = server
        self.queue = f"mcp/{server}"
        self.lease_s = lease_s

    async def halt(
        self, tool: Tool, args: dict[str, Any], request: Request, fingerprint: str
    ) -> str:
        """T1: store the call suspended on ``request``; returns the token for the client."""
        secret = secrets.token_urlsafe(32)
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
        return f"{_PREFIX}{request.id}.{secret}"

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
        return halted

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

    async def claim(self, halted: Halted, answer: Answer, answered_by: str) -> Claim | ToolResult:
        """T4: take the halted call with ``answer`` (the expired decline when it is late).

        Returns the `Claim` to resume under, or — for a retry of a call that already settled
        with this same answer — the recorded result, to be sent again without running the tool.

        Raises:
            MCPError: ``-32600`` naming the conflict (another retry holds it, or it settled
                with another answer).
        """
        request = halted.request
        if is_expired(request):
            answer, answered_by = expired_decline(request.id), EXPIRED_BY
        if halted.settled is not None:
            return self._replay(halted.settled, answer)
        try:
            return await self.runs.claim(
                request.id,
                answer,
                answered_by=answered_by,
                digest=halted.digest,
                lease_s=self.lease_s,
            )
        except AnswerConflict as refused:
            record = await self.runs.answer_record(request.id)
            if record is not None and record.status == "answered":
                # Answered from elsewhere (the approvals inbox, the CLI): that answer applies.
                taken = await self.runs.take(request.id, lease_s=self.lease_s)
                if taken is not None:
                    return taken
            raise MCPError(code=INVALID_REQUEST, message=str(refused)) from None

    @staticmethod
    def _replay(record: AnswerRecord, answer: Answer) -> ToolResult:
        held: Any = (record.outcome or {}).get("result")
        if record.answer == answer and held is not None:
            try:
                return result_from_json(held)
            except CheckpointError:
                log.warning("toolnexus: the recorded result of %s is unreadable", record.request_id)
        raise MCPError(
            code=INVALID_REQUEST,
            message=str(conflict(record.request_id, record.answered_by, record.status)),
        )

    @contextlib.asynccontextmanager
    async def holding(self, claim: Claim) -> AsyncGenerator[Callable[[], Claim]]:
        """Keep ``claim``'s lease alive while the block runs; give it back if the block fails.

        Yields a function returning the current (renewed) claim.
        """
        current = claim

        async def heartbeat() -> None:
            nonlocal current
            while True:
                await asyncio.sleep(self.lease_s / 3)
                try:
                    current = await self.runs.renew(current, lease_s=self.lease_s)
                except LeaseLost:
                    log.warning("toolnexus: lost the claim on %s mid-call", claim.request_id)
                    return
                except Exception:
                    log.warning("toolnexus: could not renew %s", claim.request_id, exc_info=True)

        beat = asyncio.ensure_future(heartbeat())
        try:
            yield lambda: current
        except BaseException:
            beat.cancel()
            with contextlib.suppress(Exception):
                await asyncio.shield(self.runs.release(claim.request_id, current))
            raise
        finally:
            beat.cancel()

    async def settle(self, claim: Claim, halted: Halted, outcome: ToolResult | Request) -> None:
        """T8: record what the call ended with (its result, or the new request it halts on),
        with the halt's note, so a repeated retry can still be checked and answered."""
        recorded: dict[str, Any] = {HALT_KEY: {**halted.note, "request": halted.request.to_dict()}}
        if isinstance(outcome, Request):
            recorded["pending"] = outcome.id
        else:
            recorded["result"] = result_to_json(outcome)
        try:
            await self.runs.complete(claim.request_id, claim, outcome=recorded)
        except LeaseLost:
            log.warning(
                "toolnexus: the claim on %s was overtaken; its outcome was not recorded",
                claim.request_id,
            )


def parse_reply(responses: Any, key: str) -> Any:
    """The client's reply under ``key`` of a retry's ``inputResponses`` (``None`` when absent)."""
    if not isinstance(responses, dict):
        return None
    return cast(dict[str, Any], responses).get(key)
