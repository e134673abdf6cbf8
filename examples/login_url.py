"""Scenario 2 — a login wait: ``auth_required(url)`` and a ``wait_for`` that delivers the link.

There is no auth subsystem: the tool suspends with ``kind="authorization"`` and a ``url``. The
host's ``wait_for`` sends the link to the user (here: prints it) and returns once the world
changed — the session is valid now — so the retried tool simply succeeds.

    python examples/login_url.py
"""

from __future__ import annotations

import asyncio

from _model import llm, tool_outputs

from toolnexus import (
    Answer,
    Request,
    ToolResult,
    auth_required,
    create_client,
    create_toolkit,
    define_tool,
)
from toolnexus.testing import RecordedRequest, Reply, call, text, tool_calls

SESSION = {"authed": False}


@define_tool
def get_balance() -> str | ToolResult:
    """Return the account balance. Requires login first."""
    if not SESSION["authed"]:
        return auth_required("https://bank.example/login?t=abc", "Log in to view your balance")
    return "balance: 67,417 INR"


async def wait_for(req: Request) -> Answer:
    print(f"[{req.kind}] {req.prompt}: open {req.url}")
    await asyncio.sleep(0)  # a real host waits for the OAuth callback here
    SESSION["authed"] = True  # the world changed out of band; the retry now succeeds
    return Answer(id=req.id, ok=True)


def brain(request: RecordedRequest) -> Reply:
    seen = tool_outputs(request)
    if not seen:
        return tool_calls(call("get_balance", {}))
    return text(f"Your {seen[-1]}.")


async def main() -> None:
    toolkit = await create_toolkit(extra_tools=[get_balance], builtins=False)
    async with llm(brain) as endpoint, create_client(**endpoint, wait_for=wait_for) as client:
        result = await client.run("What's my balance?", toolkit)
    print(f"status={result.status}: {result.text}")


if __name__ == "__main__":
    asyncio.run(main())
