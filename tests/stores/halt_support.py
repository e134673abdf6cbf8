"""A halted run's checkpoint to store, shared by the run-store tests."""

from __future__ import annotations

from toolnexus._types import empty_usage
from toolnexus.loop.checkpoint import Checkpoint, Outstanding
from toolnexus.suspension import Request

T0 = 1_700_000_000.0
ARGS = '{"env": "prod", "n": 2}'


def checkpoint(
    rid: str = "req-1",
    *,
    kind: str = "approval",
    tool: str = "deploy",
    conversation_id: str | None = "conv-1",
    created_at: float = T0,
    prompt: str = "Deploy to prod?",
    expires: str | None = None,
    turn: int = 1,
) -> Checkpoint:
    request = Request(id=rid, kind=kind, prompt=prompt, expiresAt=expires)
    return Checkpoint(
        model="m-1",
        style="openai",
        messages=[
            {"role": "user", "content": "ship it"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": tool, "arguments": ARGS},
                    }
                ],
            },
        ],
        turn=turn,
        usage=empty_usage(),
        tool_calls=[],
        outstanding=[
            Outstanding(
                call_id="call_1", name=tool, arguments=ARGS, state="suspended", request=request
            )
        ],
        pending=request,
        fingerprint="fp",
        conversation_id=conversation_id,
        created_at=created_at,
    )
