"""Calling a remote A2A agent that asks back: its question becomes our own Request.

    python examples/a2a_asks_back.py [state.db]

Two roles in one script. *Remote*: a toolnexus agent served over A2A whose ``ship`` tool needs
a shipping address. *Local*: a run whose toolkit holds the remote agent
(``create_toolkit(agents=[agent(url)])``). The remote task turns ``input-required``; for the
local run that is an ordinary `Request` (kind ``input``, the remote's prompt and schema,
``data.a2a`` with the remote task and context ids), so the local run halts and its checkpoint
goes to SQLite. Later — here a moment, in practice any process, any day — the host resumes
with the Answer: the tool sends it to the remote task as the follow-up, the remote run resumes
and completes, and the local model reports. Needs the ``serve`` extra.

The remote is served with a bearer token (``SHIPPER_TOKEN``, else one made up for this run),
which the local side sends as a header of the remote agent.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
import tempfile
from pathlib import Path

from _model import llm, tool_outputs

from toolnexus import (
    Answer,
    SkillDef,
    ToolContext,
    ToolResult,
    agent,
    create_client,
    create_toolkit,
    define_tool,
    pending,
)
from toolnexus.testing import RecordedRequest, Reply, call, text, tool_calls

TOKEN = os.environ.get("SHIPPER_TOKEN") or secrets.token_urlsafe(24)
ADDRESS = {"type": "object", "properties": {"address": {"type": "string"}}, "required": ["address"]}


@define_tool
def ship(item: str, ctx: ToolContext | None = None) -> str | ToolResult:
    """Ship an item (asks where to)."""
    if ctx is None or ctx.answer is None:
        return pending(
            kind="input", prompt=f"Where should the {item} go?", data={"schema": ADDRESS}
        )
    return f"{item} shipped to {(ctx.answer.data or {})['address']}"


def remote_brain(request: RecordedRequest) -> Reply:
    seen = tool_outputs(request)
    return text(f"Shipping: {seen[-1]}") if seen else tool_calls(call("ship", {"item": "lamp"}))


def local_brain(request: RecordedRequest) -> Reply:
    seen = tool_outputs(request)
    if not seen:
        return tool_calls(call("shipper_ship", {"task": "Ship the lamp."}))
    return text(f"The shipper says: {seen[-1]}")


async def main(db: Path) -> None:
    # The card lists the toolkit's skills (never its raw tools): one skill, "ship".
    shipping = SkillDef(name="ship", description="Ships an item", content="Use the ship tool.")
    remote_tools = await create_toolkit(extra_tools=[ship], skills=[shipping], builtins=False)
    async with llm(remote_brain) as remote_llm, create_client(**remote_llm) as remote_model:
        card = {"name": "shipper", "skills": ["ship"]}
        served = await remote_tools.serve("127.0.0.1:0", client=remote_model, a2a=card, token=TOKEN)
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        async with served, llm(local_brain) as local_llm:
            store = f"sqlite:///{db}"
            toolkit = await create_toolkit(
                agents=[agent(served.url, headers=bearer, poll_every=20)], builtins=False
            )
            async with create_client(**local_llm, store=store) as local:
                halted = await local.run("Get the lamp shipped.", toolkit)
                request = halted.pending
                assert request is not None
                print(
                    f"status={halted.status}: the remote asks {request.prompt!r} ({request.kind})"
                )
                print(f"remote task: {request.data['a2a']['taskId']}")
            async with create_client(**local_llm, store=store) as later:
                answer = Answer(id=request.id, ok=True, data={"address": "1 Harbour Rd"})
                done = await later.resume(toolkit, answer)
                print(f"status={done.status}: {done.text}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        asyncio.run(main(Path(sys.argv[1])))
    else:
        with tempfile.TemporaryDirectory() as folder:
            asyncio.run(main(Path(folder) / "state.db"))
